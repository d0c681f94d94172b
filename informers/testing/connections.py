"""Tracks the embedded API server's open connections and watches, and reaps abandoned watches.

The handler threads report every connection and watch they open and close; the server cuts
them all on :meth:`~informers.testing.ApiServer.stop` and
:meth:`~informers.testing.ApiServer.restart`, and tests wait for watches to open or close. A
reaper thread ends a watch as soon as its client hangs up, as kube-apiserver learns it from the
request context.
"""

from __future__ import annotations

import selectors
import socket
import threading
from collections.abc import Callable

from informers.clock import REAL_CLOCK
from informers.testing.storage import Storage
from informers.testing.watch import WatchHandle

__all__ = ["Connections"]


class Connections:
    """The open connections and watches of one embedded API server.

    Thread-safe: handler threads call the ``*_opened``/``*_closed`` methods, the server's
    controlling thread calls :meth:`cut`, :meth:`start_reaper` and :meth:`stop_reaper`, tests
    wait from theirs. Waits are in real seconds (the server's clock may be a fake one that
    nobody steps). The reaper runs from :meth:`start_reaper` until ``stopping`` is set and
    :meth:`stop_reaper` is called.

    Args:
        storage: woken (``notify_all``) whenever a watch is dropped, so its stream notices.
        stopping: the server's stop event; the reaper ends once it is set.
    """

    def __init__(self, storage: Storage, stopping: threading.Event) -> None:
        self._storage = storage
        self._stopping = stopping
        self._state = threading.Condition()
        self._watches: set[WatchHandle] = set()
        self._connections: set[socket.socket] = set()
        self._reaper: threading.Thread | None = None
        self._wake_reaper: socket.socket | None = None

    # -- reported by the handler -----------------------------------------------------------------

    def connection_opened(self, connection: socket.socket) -> None:
        """A client connected."""
        with self._state:
            self._connections.add(connection)

    def connection_closed(self, connection: socket.socket) -> None:
        """A connection ended (either side closed it)."""
        with self._state:
            self._connections.discard(connection)
            self._state.notify_all()

    def watch_opened(self, handle: WatchHandle) -> None:
        """A watch sent its 200 and fixed its starting point."""
        with self._state:
            self._watches.add(handle)
            self._state.notify_all()
        self._nudge_reaper()

    def watch_closed(self, handle: WatchHandle) -> None:
        """A watch ended."""
        with self._state:
            self._watches.discard(handle)
            self._state.notify_all()
        self._nudge_reaper()

    # -- used by the server ----------------------------------------------------------------------

    def watches(self, resource: str | None = None) -> list[WatchHandle]:
        """The open watches (of ``resource``, a plural, if given)."""
        with self._state:
            return [h for h in self._watches if resource is None or h.rt.plural == resource]

    def watch_count(self, resource: str | None = None) -> int:
        """How many watches (of ``resource``, a plural, if given) are open."""
        with self._state:
            return sum(1 for h in self._watches if resource is None or h.rt.plural == resource)

    def wait_for_watch_count(
        self, done: Callable[[int], bool], resource: str | None, timeout: float
    ) -> bool:
        """Wait until ``done(n)`` holds for the number ``n`` of open watches (of
        ``resource``, if given); re-checked whenever a watch opens or closes."""
        with self._state:
            return _wait_real(self._state, lambda: done(self.watch_count(resource)), timeout)

    def cut(self) -> None:
        """Drop every watch and shut every connection down (their threads then end)."""
        with self._state:
            watches = list(self._watches)
            connections = list(self._connections)
        for handle in watches:
            handle.drop()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._storage.notify_all()

    def wait_closed(self, timeout: float) -> bool:
        """Wait until no connection is open."""
        with self._state:
            return _wait_real(self._state, lambda: not self._connections, timeout)

    # -- the reaper ------------------------------------------------------------------------------

    def start_reaper(self) -> None:
        """Start the reaper thread (``stopping`` must be clear)."""
        wake_read, self._wake_reaper = socket.socketpair()
        self._wake_reaper.setblocking(False)
        self._reaper = threading.Thread(
            target=self._reap_watches, args=(wake_read,),
            name="informers-testing-apiserver-reaper", daemon=True,
        )
        self._reaper.start()

    def stop_reaper(self) -> None:
        """Wake the reaper (``stopping`` must be set) and wait for it to end."""
        self._nudge_reaper()
        if self._reaper is not None:
            self._reaper.join()
            self._reaper = None
        if self._wake_reaper is not None:
            self._wake_reaper.close()
            self._wake_reaper = None

    def _nudge_reaper(self) -> None:
        """Make the reaper re-read the set of open watches (or notice ``stopping``)."""
        wake = self._wake_reaper
        if wake is not None:
            try:
                wake.send(b"\0")
            except OSError:  # full (a nudge is pending anyway) or closed (stopped)
                pass

    def _reap_watches(self, wake: socket.socket) -> None:
        """End the watches whose client hung up, as soon as it does: Go's server learns it
        from the request context, the stream itself only on its next write, which may be
        minutes away. Waits (no polling) on every open watch's socket, which turns readable
        when the client closes it, and on ``wake``, which :meth:`_nudge_reaper` writes when
        the set of watches changes. The watch's thread, and so its connection's, then ends
        within milliseconds of the client closing its connection pool."""
        selector = selectors.DefaultSelector()
        selector.register(wake, selectors.EVENT_READ, None)
        watched: dict[WatchHandle, int] = {}
        try:
            while not self._stopping.is_set():
                with self._state:
                    current = {h for h in self._watches if not (h.dropped or h.ending)}
                for handle in [h for h in watched if h not in current]:
                    try:  # unregister before registering: a closed fd may be reused
                        selector.unregister(watched.pop(handle))
                    except (KeyError, ValueError):
                        pass
                for handle in current.difference(watched):
                    fd = handle.fileno()
                    if fd >= 0:
                        try:
                            selector.register(fd, selectors.EVENT_READ, handle)
                            watched[handle] = fd
                        except (KeyError, ValueError, OSError):
                            pass
                for key, _ in selector.select():
                    if key.data is None:
                        try:
                            wake.recv(4096)
                        except OSError:
                            pass
                    elif not (key.data.dropped or key.data.ending):
                        key.data.drop()  # readable: the client hung up (WatchHandle.fileno)
                        self._storage.notify_all()
        finally:
            selector.close()
            wake.close()


def _wait_real(cond: threading.Condition, predicate: Callable[[], bool], timeout: float) -> bool:
    """Wait on ``cond`` (held by the caller) in real time until ``predicate()``."""
    deadline = REAL_CLOCK.now() + timeout
    while not predicate():
        remaining = deadline - REAL_CLOCK.now()
        if remaining <= 0:
            return False
        REAL_CLOCK.wait_condition(cond, remaining)
    return True
