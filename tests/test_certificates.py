"""informers.certificates: a CA and serving certificates a real TLS client accepts."""

from __future__ import annotations

import base64
import datetime
import os
import socket
import ssl
import stat
import threading

import pytest

from informers.certificates import CertificateAuthority, ca_bundle


def _handshake(pair_dir: str, ca_pem: bytes, server_name: str) -> str:
    """Serve one TLS handshake with the pair in ``pair_dir``; return what the client saw."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(os.path.join(pair_dir, "tls.crt"), os.path.join(pair_dir, "tls.key"))
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"ok")
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve)
    thread.start()
    client_ctx = ssl.create_default_context(cadata=ca_pem.decode())
    try:
        with socket.create_connection(("127.0.0.1", port)) as raw, \
                client_ctx.wrap_socket(raw, server_hostname=server_name) as tls:
            return tls.recv(2).decode()
    except ssl.SSLCertVerificationError as error:
        return error.verify_message
    finally:
        thread.join(5)
        listener.close()


def test_serving_certificate_verifies_for_its_ip_and_dns_names(tmp_path):
    ca = CertificateAuthority()
    ca.issue(["127.0.0.1", "webhook.default.svc"]).write(str(tmp_path))
    assert _handshake(str(tmp_path), ca.cert_pem, "127.0.0.1") == "ok"
    assert _handshake(str(tmp_path), ca.cert_pem, "webhook.default.svc") == "ok"
    assert "mismatch" in _handshake(str(tmp_path), ca.cert_pem, "other.example")


def test_expired_certificate_is_refused_by_the_client(tmp_path):
    ca = CertificateAuthority()
    two_years_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=730)
    ca.issue(["127.0.0.1"], now=two_years_ago).write(str(tmp_path))
    assert _handshake(str(tmp_path), ca.cert_pem, "127.0.0.1") == "certificate has expired"


def test_another_ca_does_not_verify(tmp_path):
    ca, other = CertificateAuthority(), CertificateAuthority()
    ca.issue(["127.0.0.1"]).write(str(tmp_path))
    assert _handshake(str(tmp_path), other.cert_pem, "127.0.0.1") == \
        "unable to get local issuer certificate"


def test_ca_bundle_is_the_base64_of_the_pem():
    ca = CertificateAuthority()
    assert base64.b64decode(ca.ca_bundle) == ca.cert_pem
    assert ca_bundle(b"PEM") == "UEVN"
    assert ca.cert_pem.startswith(b"-----BEGIN CERTIFICATE-----\n")


def test_write_replaces_files_and_keeps_the_key_private(tmp_path):
    ca = CertificateAuthority()
    first = ca.issue(["localhost"])
    cert_path, key_path = first.write(str(tmp_path / "certs"))
    second = ca.issue(["localhost"])
    assert second.write(str(tmp_path / "certs")) == (cert_path, key_path)
    with open(cert_path, "rb") as handle:
        assert handle.read() == second.cert_pem
    assert stat.S_IMODE(os.stat(key_path).st_mode) == 0o600
    assert sorted(os.listdir(tmp_path / "certs")) == ["tls.crt", "tls.key"]


def test_bad_arguments_are_refused():
    ca = CertificateAuthority()
    with pytest.raises(ValueError, match="at least one host"):
        ca.issue([])
    with pytest.raises(ValueError, match="timezone-aware"):
        ca.issue(["localhost"], now=datetime.datetime(2026, 1, 1))
