"""Maps transport failures to :class:`~informers.errors.ApiConnectionError` and aborts
connections under a blocked reader.

Shared by :mod:`informers.client.transport` and :mod:`informers.client.watch_stream`: whether a
failure was a refused connection or a timeout (the reflector's rules differ for them), and how to
wake a thread blocked reading a socket that another thread wants to abandon (a cancelled list, a
closed watch).
"""

from __future__ import annotations

import errno
import socket
from typing import Any

from informers.errors import ApiConnectionError

__all__ = ["connection_error", "is_refused", "shutdown_response", "shutdown_socket"]


def is_refused(exc: BaseException) -> bool:
    """Whether ``exc`` or anything in its chain of causes is a refused connection."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ConnectionRefusedError):
            return True
        if isinstance(cur, OSError) and cur.errno == errno.ECONNREFUSED:
            return True
        if "Connection refused" in str(cur):
            return True
        cur = cur.__cause__ or cur.__context__ or getattr(cur, "reason", None)
        if not isinstance(cur, BaseException):
            cur = None
    return False


def connection_error(exc: BaseException, what: str) -> ApiConnectionError:
    """``exc`` as an ApiConnectionError about ``what``, flagged refused or timed out."""
    import urllib3.exceptions as u3

    refused = is_refused(exc)
    timeout = isinstance(exc, (u3.TimeoutError, socket.timeout, TimeoutError))
    return ApiConnectionError(f"{what}: {exc}", refused=refused, timeout=timeout)


def shutdown_socket(sock: Any) -> None:
    """Shut ``sock`` down (bypassing ``SSLSocket.shutdown``, which would drop its TLS state
    under a reader) so that a thread blocked reading it returns at once."""
    if sock is None:
        return
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, TypeError):
        pass


def shutdown_response(resp: Any) -> None:
    """Shut the socket of a urllib3 response down so a reader blocked in ``recv`` returns."""
    shutdown = getattr(resp, "shutdown", None)  # urllib3 >= 2.3: made for this
    if shutdown is not None:
        try:
            shutdown()
            return
        except (ValueError, RuntimeError, OSError):
            pass
    sock = getattr(getattr(resp, "connection", None), "sock", None)
    if sock is None:  # a "Connection: close" response owns the socket through its file
        raw = getattr(getattr(getattr(resp, "_fp", None), "fp", None), "raw", None)
        sock = getattr(raw, "_sock", None)
    shutdown_socket(sock)
