"""Cuts an HTTP exchange made with ``requests`` short: at a whole-exchange deadline, or on stop.

``requests``' ``timeout`` bounds each socket operation (the connect, then each wait for
bytes), not the exchange: a server that sends one byte every two seconds keeps a GET alive
for as long as it likes, and a thread blocked in ``recv`` does not see a stop event. The
kubelet's manifest URL client bounds the whole exchange (``pkg/kubelet/config/http.go``:
``http.Client{Timeout: 10 * time.Second}``, which covers connecting, the headers and reading
the body). This module gives the URL source the same bound, and a prompt stop:

* an :class:`Exchange` is one attempt of a GET. The connections of a :class:`CuttableAdapter`
  report their socket to the exchange running on the current thread
  (:func:`exchange_context`), when they connect and when a kept-alive connection is reused.
* :meth:`Exchange.abort` (called by a deadline or a stop from another thread) shuts the
  sockets down, so a blocked ``recv`` returns at once and the exchange fails; a socket
  reported after the abort is shut down as it is reported. ``aborted`` says why, so the
  caller can tell a cut from a server that closed the connection (and must check it after
  reading a body delimited by the end of the connection, which a cut makes look complete).

Thread safety: an exchange may be aborted from any thread; the adapter is used by one source.
HTTPS connections are cut below TLS (the TCP socket is shut down). SOCKS proxies are not
cut (their connections are of another class); the per-operation timeout still applies.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import requests.adapters
import urllib3
import urllib3.connection

__all__ = ["CuttableAdapter", "Exchange", "exchange_context"]

_local = threading.local()


class Exchange:
    """One attempt of an HTTP exchange, which another thread may cut.

    Attributes:
        aborted: why it was cut (the ``reason`` given to :meth:`abort`), or ``None``.
        done: set by the owner when the exchange is over (wakes a deadline watcher).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.aborted: str | None = None
        self.done = threading.Event()

    def adopt(self, sock: socket.socket | None) -> None:
        """Record a socket of this exchange; shut it down at once if already aborted."""
        if sock is None:
            return
        with self._lock:
            if sock not in self._sockets:
                self._sockets.append(sock)
            aborted = self.aborted is not None
        if aborted:
            _shutdown(sock)

    def abort(self, reason: str) -> None:
        """Cut the exchange (the first reason sticks); idempotent, from any thread."""
        with self._lock:
            if self.aborted is None:
                self.aborted = reason
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    try:
        # Below TLS: SSLSocket.shutdown would also drop the TLS state a reader is using.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


@contextlib.contextmanager
def exchange_context(exchange: Exchange) -> Iterator[Exchange]:
    """Make ``exchange`` the one the current thread's cuttable connections report to."""
    previous = getattr(_local, "exchange", None)
    _local.exchange = exchange
    try:
        yield exchange
    finally:
        _local.exchange = previous


def _adopt(sock: socket.socket | None) -> None:
    exchange = getattr(_local, "exchange", None)
    if exchange is not None:
        exchange.adopt(sock)


class _HTTPConnection(urllib3.connection.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _adopt(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _adopt(self.sock)  # a kept-alive connection being reused
        super().request(*args, **kwargs)
        _adopt(self.sock)


class _HTTPSConnection(urllib3.connection.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _adopt(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _adopt(self.sock)
        super().request(*args, **kwargs)
        _adopt(self.sock)


class _HTTPConnectionPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSConnectionPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOL_CLASSES = {"http": _HTTPConnectionPool, "https": _HTTPSConnectionPool}


class CuttableAdapter(requests.adapters.HTTPAdapter):
    """A ``requests`` transport adapter whose connections can be cut by an :class:`Exchange`.

    Mount it on a session for the URLs concerned; outside :func:`exchange_context` it behaves
    as the default adapter.
    """

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOL_CLASSES)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = dict(_POOL_CLASSES)
        return manager
