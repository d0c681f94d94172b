"""The TLS identity of the embedded API server's HTTPS listener (for ``kubectl``).

client-go only sends kubeconfig credentials over TLS (``clientcmd`` reads the user's auth
"only if we are secure"), so ``kubectl`` needs HTTPS to authenticate with a bearer token.
This is a fixed, public test identity: a CA and a server certificate for ``127.0.0.1``,
``::1`` and ``localhost`` (P-256 keys, valid 2000-2100). It protects nothing; never use it
outside tests.
"""

from __future__ import annotations

import atexit
import os
import shutil
import ssl
import tempfile
import threading

__all__ = ["CA_CERT_PEM", "SERVER_CERT_PEM", "ca_file", "server_context"]

CA_CERT_PEM = """\
-----BEGIN CERTIFICATE-----
MIIBcjCCARigAwIBAgICEAAwCgYIKoZIzj0EAwIwHzEdMBsGA1UEAwwUaW5mb3Jt
ZXJzLXRlc3RpbmctY2EwIBcNMDAwMTAxMDAwMDAwWhgPMjEwMDAxMDEwMDAwMDBa
MB8xHTAbBgNVBAMMFGluZm9ybWVycy10ZXN0aW5nLWNhMFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAE1UZ2zA904vDV6O6e5YxLldhOHi7bZg/6zTGAitifwmocDrEl
ASmnXzUyQK2rWtKh2UbLd9SxpFrzdnIJnmpI8qNCMEAwDwYDVR0TAQH/BAUwAwEB
/zAOBgNVHQ8BAf8EBAMCAQYwHQYDVR0OBBYEFDtM/HQW8XuoL//suZFRMrKM9DDL
MAoGCCqGSM49BAMCA0gAMEUCIBdxwWKMa+6BlCXhUwS1ejxRLTY0RC2TtdpVT93+
//UPAiEAlrDhP4UxN0HLdKIuJGBUjmp1tKNghkEFQk3ceXvEE1I=
-----END CERTIFICATE-----
"""

SERVER_CERT_PEM = """\
-----BEGIN CERTIFICATE-----
MIIB3DCCAYKgAwIBAgICEAEwCgYIKoZIzj0EAwIwHzEdMBsGA1UEAwwUaW5mb3Jt
ZXJzLXRlc3RpbmctY2EwIBcNMDAwMTAxMDAwMDAwWhgPMjEwMDAxMDEwMDAwMDBa
MCYxJDAiBgNVBAMMG2luZm9ybWVycy10ZXN0aW5nLWFwaXNlcnZlcjBZMBMGByqG
SM49AgEGCCqGSM49AwEHA0IABIUfii0gyXVsQ3lyf1I3U90jeoXJEYc9H/tWnLk7
7Z88/rrZAOxJF28p1QlU+OVXTOFoR5c4gPG6p7b14jO8sxOjgaQwgaEwDAYDVR0T
AQH/BAIwADAOBgNVHQ8BAf8EBAMCBaAwEwYDVR0lBAwwCgYIKwYBBQUHAwEwLAYD
VR0RBCUwI4cEfwAAAYcQAAAAAAAAAAAAAAAAAAAAAYIJbG9jYWxob3N0MB8GA1Ud
IwQYMBaAFDtM/HQW8XuoL//suZFRMrKM9DDLMB0GA1UdDgQWBBTFTgcyZql9XzpO
+5vWXx+hxZzGPTAKBggqhkjOPQQDAgNIADBFAiEAzU1q/yF3t+IwfK31ZUhdmvjv
Mts7ocbylTlCBIXS/HACIHmc2j/xIXEiPidnEHDVM7pBtYWPVJbqMsE707UZxHmO
-----END CERTIFICATE-----
"""

_SERVER_KEY_PEM = """\
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgrKt4qWRsjXC4Aib/
0VaJlAQTqKQBNhNLiINIBKbnICKhRANCAASFH4otIMl1bEN5cn9SN1PdI3qFyRGH
PR/7Vpy5O+2fPP662QDsSRdvKdUJVPjlV0zhaEeXOIDxuqe29eIzvLMT
-----END PRIVATE KEY-----
"""

_lock = threading.Lock()
_files: dict[str, str] = {}


def _file(name: str, text: str) -> str:
    # ssl only loads certificates and keys from files: write them once per process.
    with _lock:
        path = _files.get(name)
        if path is None or not os.path.exists(path):
            directory = tempfile.mkdtemp(prefix="informers-testing-tls-")
            atexit.register(shutil.rmtree, directory, ignore_errors=True)
            path = os.path.join(directory, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
            _files[name] = path
        return path


def ca_file() -> str:
    """Path of the CA certificate (for ``ssl_ca_cert`` of a Python client)."""
    return _file("ca.crt", CA_CERT_PEM)


def server_context() -> ssl.SSLContext:
    """A server-side context presenting the test certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(
        _file("server.crt", SERVER_CERT_PEM + CA_CERT_PEM), _file("server.key", _SERVER_KEY_PEM)
    )
    return context
