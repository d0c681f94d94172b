"""Keeps a TLS server context in step with a certificate and key on disk.

controller-runtime ``pkg/certwatcher/certwatcher.go`` for Python's ``ssl``: the files are read at
start and then polled every ``interval`` seconds (``defaultWatchInterval = 10 * time.Second``;
controller-runtime also listens to fsnotify, we only poll, so rotation takes effect within one
interval); when their bytes change, a new ``ssl.SSLContext`` is built from them and published.
The server takes :attr:`CertificateWatcher.context` for each new connection, so new handshakes
use the new certificate while connections already open keep theirs: a rotation fails no
request.

A rotation is taken only when the pair loads: a certificate whose key does not match (a writer
that replaced one file and not yet the other) or a half-written file is logged and the previous
context stays in use; the next poll tries again (certwatcher's ``ReadCertificate`` error path).
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
import threading
from collections.abc import Callable

from informers.clock import REAL_CLOCK, Clock

__all__ = ["DEFAULT_WATCH_INTERVAL", "CertificateWatcher", "server_context"]

logger = logging.getLogger(__name__)

DEFAULT_WATCH_INTERVAL = 10.0
"""Seconds between polls of the files (certwatcher.go ``defaultWatchInterval``)."""


def server_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A server-side context serving ``cert_pem`` (the chain, leaf first) with ``key_pem``:
    TLS 1.2 minimum (controller-runtime's webhook server: ``tls.Config{MinVersion:
    tls.VersionTLS12}``), the ``ssl`` module's default ciphers, HTTP/1.1 over ALPN.

    Raises:
        ssl.SSLError: the key does not match the certificate, or either is not PEM.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    # load_cert_chain takes paths only: write the PEMs to a private temporary directory.
    with tempfile.TemporaryDirectory(prefix="webhook-cert-") as directory:
        cert_path = os.path.join(directory, "tls.crt")
        key_path = os.path.join(directory, "tls.key")
        for path, data in ((cert_path, cert_pem), (key_path, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        context.load_cert_chain(cert_path, key_path)
    return context


class CertificateWatcher:
    """Loads ``cert_path``/``key_path`` into a server ``ssl.SSLContext`` and reloads it when
    the files change.

    Args:
        cert_path: the PEM certificate chain (``tls.crt``).
        key_path: the PEM private key (``tls.key``).
        interval: seconds between polls (:data:`DEFAULT_WATCH_INTERVAL`).
        clock: time source of the poll loop (a ``FakeClock`` steps it in tests).
        on_change: called with the new certificate PEM after each reload that took (not for
            the first load); exceptions it raises are logged.

    Thread safety: :attr:`context` may be read from any thread at any time; :meth:`check`
    and :meth:`run` may run concurrently (a lock serializes the reloads).

    Raises (constructor):
        OSError: a file cannot be read.
        ssl.SSLError: the first pair does not load.
    """

    def __init__(self, cert_path: str, key_path: str, *,
                 interval: float = DEFAULT_WATCH_INTERVAL, clock: Clock = REAL_CLOCK,
                 on_change: Callable[[bytes], None] | None = None) -> None:
        self.cert_path = cert_path
        self.key_path = key_path
        self.interval = interval
        self.on_change = on_change
        self._clock = clock
        self._lock = threading.Lock()
        cert, key = self._read()
        self._context = server_context(cert, key)
        self._loaded = (cert, key)
        self.reloads = 0
        """How many rotations were taken since the first load."""

    @property
    def context(self) -> ssl.SSLContext:
        """The context of the newest pair that loaded."""
        return self._context

    @property
    def cert_pem(self) -> bytes:
        """The certificate the current context serves."""
        return self._loaded[0]

    def _read(self) -> tuple[bytes, bytes]:
        with open(self.cert_path, "rb") as cert_file:
            cert = cert_file.read()
        with open(self.key_path, "rb") as key_file:
            key = key_file.read()
        return cert, key

    def check(self) -> bool:
        """Poll once: reload when the files' bytes differ from the loaded pair. True when a
        new context was published; False when nothing changed or the new pair does not load
        (logged; the previous context stays)."""
        with self._lock:
            try:
                pair = self._read()
            except OSError as err:
                logger.warning("certificate watcher: cannot read %s / %s: %s; keeping the "
                               "current certificate", self.cert_path, self.key_path, err)
                return False
            if pair == self._loaded:
                return False
            try:
                context = server_context(*pair)
            except (ssl.SSLError, ValueError) as err:
                logger.warning("certificate watcher: %s / %s do not load (%s); keeping the "
                               "current certificate, retrying in %ss", self.cert_path,
                               self.key_path, err, self.interval)
                return False
            self._context = context
            self._loaded = pair
            self.reloads += 1
        logger.info("certificate watcher: reloaded %s", self.cert_path)
        if self.on_change is not None:
            try:
                self.on_change(pair[0])
            except Exception:
                logger.exception("certificate watcher: on_change failed for %s",
                                 self.cert_path)
        return True

    def run(self, stop: threading.Event) -> None:
        """Poll every :attr:`interval` seconds until ``stop`` is set (certwatcher ``Start``)."""
        while not self._clock.wait_event(stop, self.interval):
            self.check()
