"""Delivers one handler's notifications on the thread that writes the informer's cache.

The counterpart of :class:`~informers.processor_listener.ProcessorListener` for handlers
registered with ``add_event_handler(handler, synchronous=True)``. client-go has no such mode:
a goroutine hand-off costs well under a microsecond. In Python each hand-off wakes an OS
thread that then waits for the GIL, 0.1-0.5 ms on a busy two-core machine, and a controller
whose handlers only enqueue keys pays it on every event (kube-rs runs its controllers' trigger
mappers inline in the watch stream for the same reason).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from informers.object_codec import Encoded, decoded
from informers.processor_listener import (
    _LAZY,
    ADD,
    SLOW_CALL_TRACE_SECONDS,
    UPDATE,
    Notification,
    ProcessorListener,
    notification_key,
)

__all__ = ["SynchronousListener"]

logger = logging.getLogger(__name__)


class SynchronousListener(ProcessorListener):
    """One handler registration called inline by whoever delivers a notification.

    Contract:

    * **Inline.** :meth:`add` calls the handler before it returns, on the caller's thread: the
      thread that applied the change to the cache (the informer's process thread, or its
      watch thread when the FIFO hands an event over directly), and the registering thread
      for the initial adds of a handler registered on a running informer. All of them hold
      the informer's delta lock, so calls never overlap and arrive in cache order, as for a
      threaded listener.
    * **The handler must not block.** It holds up the informer's cache and every other
      handler of the informer while it runs; meant for handlers that only enqueue keys. A
      call longer than :data:`~informers.processor_listener.SLOW_CALL_TRACE_SECONDS` is
      logged at INFO with the handler and the key.
    * **A raising handler** is logged (ERROR, with the object key) and keeps receiving.
    * **Sync tracking** is that of the threaded listener: an initial-list add is pending until
      its call returned, so :meth:`has_synced` is true once the informer synced and the last
      of them was delivered.
    * **Stopping**: after :meth:`stop` or :meth:`remove` the handler is not called again;
      :meth:`join` waits for a call in progress on another thread (not for one on the
      calling thread, so a handler may shut its own registration down).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Takes the arguments of :class:`~informers.processor_listener.ProcessorListener`;
        ``name`` names the listener in logs only (there is no thread)."""
        kwargs.setdefault("name", "synchronous-listener")
        super().__init__(*args, **kwargs)
        handler = self.handler
        self._call_lock = threading.Lock()
        self._caller: int | None = None
        self._calls = (handler.on_add, handler.on_update, handler.on_delete)

    def add(self, notification: Notification) -> None:
        """Call the handler for ``notification`` now; ignored once stopped or removed."""
        kind, a, b = notification
        initial = kind == ADD and bool(b)
        if a.__class__ in _LAZY or b.__class__ is Encoded:  # a compact cache's
            a, b = decoded(a, b)
        with self._call_lock:
            if self._removed or self._stopping:
                return
            if initial:
                self._pending_initial += 1
            self._caller = threading.get_ident()
            clock = self._clock
            start = clock.now()
            try:
                if kind == UPDATE:
                    self._calls[1](a, b)
                elif kind == ADD:
                    self._calls[0](a, b)
                else:
                    self._calls[2](a)
            except Exception:
                logger.exception(
                    "%s: handler %r failed on %s of %s; it keeps receiving",
                    self.name,
                    self.handler,
                    ("add", "update", "delete")[kind],
                    notification_key(notification),
                )
            finally:
                self._caller = None
                if initial:
                    self._pending_initial -= 1
            took = clock.now() - start
        if took > SLOW_CALL_TRACE_SECONDS:
            logger.info(
                "%s: synchronous handler %r took %.3fs on %s and held up the informer",
                self.name,
                self.handler,
                took,
                notification_key(notification),
            )

    def pending(self) -> int:
        """Always 0: nothing is ever queued."""
        return 0

    def start(self) -> None:
        """Nothing to start: there is no thread."""

    def stop(self) -> None:
        """No further calls (a call in progress on another thread finishes)."""
        self._stopping = True

    def remove(self) -> None:
        """No further calls (a call in progress on another thread finishes)."""
        self._removed = True
        self._pending_initial = 0

    def join(self) -> None:
        """Wait for a call in progress on another thread; return at once from the handler."""
        if self._caller == threading.get_ident():
            return
        with self._call_lock:
            pass

    def is_current_thread(self) -> bool:
        """Whether the handler is being called on this thread."""
        return self._caller == threading.get_ident()

    def is_alive(self) -> bool:
        """Whether the handler may still be called (neither stopped nor removed)."""
        return not (self._removed or self._stopping)
