"""Throwaway certificates for webhooks in development and tests: a CA and serving certificates.

What envtest's ``WebhookInstallOptions`` does for Go authors (controller-runtime
``pkg/envtest/webhook.go`` with ``pkg/internal/testing/certs/tinyca.go``): make a CA, issue a
serving certificate for the webhook server's names and addresses, and hand out the CA's PEM as
the ``caBundle`` that webhook configurations and CRD conversion settings carry (base64 of the PEM
in YAML/JSON, as kube-apiserver's ``ClientConfig.caBundle`` ``[]byte`` field is encoded).

Keys are ECDSA P-256 (what tinyca uses); certificates are X.509 v3 with the extensions
kube-apiserver's Go TLS client checks: the serving certificate names its hosts as subject
alternative names (IP addresses as IP SANs, the rest as DNS SANs; Go ignores the common name),
has ``serverAuth`` extended key usage and is signed by the CA. Validity defaults to one year from
``now`` (tinyca's default), back-dated one minute against clock skew.

Everything here is pure computation on the arguments plus the ``cryptography`` package (the
``webhook`` extra): no files are written unless :meth:`KeyPair.write` is called, and time comes
from the ``now`` argument when given, so tests can make expired or not-yet-valid certificates.
Objects are immutable and safe to share between threads.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CertificateAuthority", "KeyPair", "ca_bundle"]

_DEFAULT_VALIDITY = datetime.timedelta(days=365)  # tinyca.go: defaultCertValidity
_SKEW = datetime.timedelta(minutes=1)


def _crypto() -> Any:
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "informers.certificates needs the 'cryptography' package: "
            "pip install 'kube-informers[webhook]'") from error

    class _Modules:
        pass

    mods: Any = _Modules()
    mods.x509, mods.hashes, mods.serialization, mods.ec = x509, hashes, serialization, ec
    mods.ExtendedKeyUsageOID, mods.NameOID = ExtendedKeyUsageOID, NameOID
    return mods


def _now(now: datetime.datetime | None) -> datetime.datetime:
    if now is None:
        return datetime.datetime.now(datetime.timezone.utc)
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    return now


@dataclass(frozen=True)
class KeyPair:
    """A PEM certificate and its PEM (PKCS#8, unencrypted) private key."""

    cert_pem: bytes
    key_pem: bytes

    def write(self, directory: str, cert_name: str = "tls.crt",
              key_name: str = "tls.key") -> tuple[str, str]:
        """Write the pair into ``directory`` (created if missing) under the names a
        ``kubernetes.io/tls`` Secret mounts (``tls.crt``/``tls.key``, what cert-manager and
        controller-runtime's webhook server expect); the key file is mode 0600. The writes
        replace the files atomically (a rename), so a server watching them never reads half a
        certificate. Returns the two paths."""
        os.makedirs(directory, exist_ok=True)
        paths = []
        for name, data, mode in ((cert_name, self.cert_pem, 0o644),
                                 (key_name, self.key_pem, 0o600)):
            path = os.path.join(directory, name)
            temporary = f"{path}.tmp-{os.getpid()}"
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, path)
            paths.append(path)
        return paths[0], paths[1]


def ca_bundle(ca_pem: bytes) -> str:
    """The ``caBundle`` value of a webhook configuration or CRD conversion for ``ca_pem``: the
    base64 of the PEM, as the ``[]byte`` field is written in JSON and YAML."""
    return base64.b64encode(ca_pem).decode("ascii")


class CertificateAuthority:
    """A self-signed CA that issues serving certificates (tinyca's ``NewTinyCA`` and
    ``NewServingCert``).

    Args:
        common_name: the CA's subject CN.
        now: the moment validity starts from (default: the current UTC time).
        validity: how long the CA certificate is valid.
    """

    def __init__(self, common_name: str = "kube-informers-webhook-ca", *,
                 now: datetime.datetime | None = None,
                 validity: datetime.timedelta = _DEFAULT_VALIDITY) -> None:
        c = _crypto()
        start = _now(now) - _SKEW
        self._key = c.ec.generate_private_key(c.ec.SECP256R1())
        name = c.x509.Name([c.x509.NameAttribute(c.NameOID.COMMON_NAME, common_name)])
        public = self._key.public_key()
        self._cert = (
            c.x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(public)
            .serial_number(c.x509.random_serial_number())
            .not_valid_before(start).not_valid_after(start + validity)
            .add_extension(c.x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(c.x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False), critical=True)
            .add_extension(c.x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .sign(self._key, c.hashes.SHA256()))
        self.pair = KeyPair(_cert_pem(c, self._cert), _key_pem(c, self._key))

    @property
    def cert_pem(self) -> bytes:
        """The CA certificate (what clients trust)."""
        return self.pair.cert_pem

    @property
    def ca_bundle(self) -> str:
        """The CA as a ``caBundle`` field value (see :func:`ca_bundle`)."""
        return ca_bundle(self.pair.cert_pem)

    def issue(self, hosts: Sequence[str] = ("127.0.0.1", "localhost"), *,
              common_name: str | None = None, now: datetime.datetime | None = None,
              validity: datetime.timedelta = _DEFAULT_VALIDITY) -> KeyPair:
        """A serving certificate for ``hosts`` (IP literals become IP SANs, the rest DNS SANs),
        signed by this CA. ``now``/``validity`` set the window, so a test can issue an expired
        certificate (``now`` two years back)."""
        if not hosts:
            raise ValueError("a serving certificate needs at least one host")
        c = _crypto()
        start = _now(now) - _SKEW
        key = c.ec.generate_private_key(c.ec.SECP256R1())
        names: list[Any] = []
        for host in hosts:
            try:
                names.append(c.x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(c.x509.DNSName(host))
        subject = c.x509.Name([c.x509.NameAttribute(c.NameOID.COMMON_NAME,
                                                    common_name or hosts[0])])
        ca_public = self._key.public_key()
        cert = (
            c.x509.CertificateBuilder()
            .subject_name(subject).issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(c.x509.random_serial_number())
            .not_valid_before(start).not_valid_after(start + validity)
            .add_extension(c.x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(c.x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=True,
                data_encipherment=False, key_agreement=False, key_cert_sign=False,
                crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(c.x509.ExtendedKeyUsage([c.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(c.x509.SubjectAlternativeName(names), critical=False)
            .add_extension(c.x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_public),
                           critical=False)
            .sign(self._key, c.hashes.SHA256()))
        return KeyPair(_cert_pem(c, cert), _key_pem(c, key))


def _cert_pem(c: Any, cert: Any) -> bytes:
    return bytes(cert.public_bytes(c.serialization.Encoding.PEM))


def _key_pem(c: Any, key: Any) -> bytes:
    return bytes(key.private_bytes(c.serialization.Encoding.PEM,
                                   c.serialization.PrivateFormat.PKCS8,
                                   c.serialization.NoEncryption()))
