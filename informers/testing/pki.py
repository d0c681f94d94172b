"""Makes the throwaway PKI of the real control plane with the ``openssl`` command.

A CA, a serving certificate for kube-apiserver (``127.0.0.1``, ``::1``, ``localhost`` and the
in-cluster names of the ``kubernetes`` Service) and a service-account signing key pair, as files
in one directory. The embedded server's fixed test identity is :mod:`informers.testing.tls`.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from informers.testing.errors import ControlPlaneError

__all__ = ["make_certificates"]

_CA_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = kube-informers-control-plane-ca
[ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
"""

_SERVER_EXTENSIONS = """\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = IP:127.0.0.1, IP:::1, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, \
DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local, IP:10.0.0.1
"""


def make_certificates(directory: str) -> None:
    """Write ``ca.crt``/``ca.key``, ``server.crt``/``server.key`` and ``sa.key``/``sa.pub``
    (with the openssl inputs and the certificate request beside them) into ``directory``.

    Raises:
        ControlPlaneError: there is no ``openssl`` command, or one of its steps failed.
    """
    if shutil.which("openssl") is None:
        raise ControlPlaneError("the 'openssl' command is needed to make test certificates")

    def path(name: str) -> str:
        return os.path.join(directory, name)

    with open(path("openssl.cnf"), "w") as handle:
        handle.write(_CA_CONFIG)
    with open(path("server.ext"), "w") as handle:
        handle.write(_SERVER_EXTENSIONS)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    commands = [
        ["req", "-x509", *ec, "-keyout", path("ca.key"), "-out", path("ca.crt"),
         "-days", "3650", "-config", path("openssl.cnf"), "-extensions", "ext"],
        ["req", "-new", *ec, "-keyout", path("server.key"), "-out", path("server.csr"),
         "-subj", "/CN=kube-apiserver"],
        ["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.crt"),
         "-CAkey", path("ca.key"), "-set_serial", "2", "-days", "3650",
         "-extfile", path("server.ext"), "-out", path("server.crt")],
        ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
         "-out", path("sa.key")],
        ["pkey", "-in", path("sa.key"), "-pubout", "-out", path("sa.pub")],
    ]
    for command in commands:
        done = subprocess.run(["openssl", *command], capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            raise ControlPlaneError(
                f"openssl {command[0]} failed (exit {done.returncode}): {done.stderr.strip()}")
