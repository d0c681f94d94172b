"""Delivers one handler's notifications on its own thread (client-go ``processorListener``).

A notification is a plain tuple ``(kind, a, b)``: ``(ADD, obj, is_in_initial_list)``,
``(UPDATE, old, new)`` or ``(DELETE, obj, None)``. Tuples keep the per-event cost of the
informer's fan-out to one allocation.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from informers.clock import REAL_CLOCK, Clock
from informers.handlers import ResourceEventHandler
from informers.keys import DeletedFinalStateUnknown, deletion_handling_meta_namespace_key_func
from informers.object_codec import Encoded, decoded

__all__ = [
    "ADD",
    "BACKLOG_TRACE_THRESHOLD",
    "DELETE",
    "SLOW_CALL_TRACE_SECONDS",
    "UPDATE",
    "YIELD_BACKLOG",
    "YIELD_MAX_BACKLOG",
    "Notification",
    "ProcessorListener",
    "determine_resync_period",
    "notification_key",
]

_LAZY = (Encoded, DeletedFinalStateUnknown)  # what a compact cache's notifications may hold

logger = logging.getLogger(__name__)

ADD = 0
UPDATE = 1
DELETE = 2

Notification = tuple[int, Any, Any]
"""``(ADD, obj, is_in_initial_list)``, ``(UPDATE, old, new)`` or ``(DELETE, obj, None)``."""

BACKLOG_TRACE_THRESHOLD = 1024
"""Backlog above which slow handler calls are traced (client-go ``processorListener.run``
traces when the pending buffer is larger than its initial size, ``initialBufferSize = 1024``)."""

SLOW_CALL_TRACE_SECONDS = 0.1
"""A call this long is traced while the backlog is large (client-go: trace ``LogIfLong(100ms)``)."""


YIELD_BACKLOG = 8
"""Every this many notifications queued and not yet taken, :meth:`ProcessorListener.add`
yields the GIL once when the notification keeps an old decoded object alive (see the class
docstring). Small, so that an update's old object is freed soon after its successor is
decoded."""

YIELD_MAX_BACKLOG = 64
"""No yield once this many notifications wait (queued, or taken and not yet delivered): the
handler is slow, not starved of the GIL, and yielding would only slow the informer down to
its pace (see the class docstring)."""

_yield_gil = time.sleep  # called with 0: lets a runnable thread have the GIL; never waits

_DEFAULT_FULL_THRESHOLD = 10
"""CPython's third GC threshold (``gc.get_threshold()`` of a fresh interpreter): a full
collection per 10 generation-1 collections, once enough new objects survived."""


def determine_resync_period(desired: float, check: float) -> float:
    """The resync period a listener gets (client-go ``determineResyncPeriod``).

    ``0`` when the handler wants none, or when the informer resyncs never (``check == 0``);
    otherwise at least the informer's check period.
    """
    if desired == 0:
        return 0.0
    if check == 0:
        logger.warning(
            "the specified resync period %ss is invalid because this shared informer "
            "doesn't support resyncing",
            desired,
        )
        return 0.0
    if desired < check:
        logger.warning(
            "the specified resync period %ss is being increased to the minimum "
            "resync check period %ss",
            desired,
            check,
        )
        return check
    return desired


def notification_key(notification: Notification) -> str:
    """The key of the object a notification is about (the new one of an update), for logs."""
    kind, a, b = notification
    try:
        return deletion_handling_meta_namespace_key_func(b if kind == UPDATE else a)
    except Exception:
        return "<unknown key>"


class ProcessorListener:
    """One handler registration: an unbounded FIFO buffer drained by a daemon thread.

    Contract:

    * **Never blocks the producer.** :meth:`add` appends to an unbounded ``deque`` under this
      listener's one condition and wakes the thread only if it sleeps. A stalled handler
      grows its own backlog without bound (client-go: "a failing/stalled listener will have
      infinite pendingNotifications added until we OOM") and delays no one else.
    * **Yields to the listener's thread.** When the notification just queued keeps alive a
      decoded object the cache no longer holds (an update's old ``dict``, a deleted
      ``dict``; not an add, a resync or a compact cache's encoded objects) and
      :data:`YIELD_BACKLOG`, or a multiple of it, are queued, :meth:`add` ends with
      ``time.sleep(0)``: the producer gives up the GIL (it waits for nothing), so the thread
      delivering them can run. Otherwise CPython lets the producer run for its whole switch
      interval (5 ms, ``sys.getswitchinterval``), hundreds of events ahead of the handler;
      the old objects those updates keep alive beside the new cached ones make the objects
      allocated outgrow those freed, and the cyclic GC runs over and over, promoting the
      cached objects until it walks the whole cache. Go has no such cost; here it was most
      of the CPU of a watch burst into a plain cache with the process's GC left as it is.
      No yield once :data:`YIELD_MAX_BACKLOG` wait in all (a slow handler keeps its backlog
      and its share of the GIL, as before), nor when the GC is disabled or its third
      threshold raised above CPython's default (as :class:`~informers.memory.MemoryTuning`
      does when it freezes the heap after the first sync): full collections are then rare,
      and the thread switches would cost more than they save.
    * **Strict FIFO per handler**: one thread calls the handler, one call at a time, in
      :meth:`add` order.
    * **A raising handler** is logged (ERROR, with the object key) and keeps receiving the
      next notifications. client-go crashes the process by default and, with crashing off,
      sleeps 1 s after a panic; we do neither. A failed initial-list add still counts as
      finished for :meth:`has_synced` (client-go issue #129024 leaves such a handler unsynced
      forever); that is, "synced" means every initial add was *delivered*, not that the
      handler processed it successfully.
    * **Slow-call trace**: when the backlog exceeds :data:`BACKLOG_TRACE_THRESHOLD` and a call
      takes longer than :data:`SLOW_CALL_TRACE_SECONDS` (measured on ``clock``), an INFO
      line names the handler, the key and the backlog.
    * **Sync tracking** (client-go ``synctrack.SingleFileTracker``): every queued
      ``(ADD, obj, True)`` counts as pending until the handler call for it returned.
      :meth:`has_synced` is ``upstream_has_synced() and nothing initial pending``.
    * **Resync bookkeeping** (``resync_period``, ``next_resync``, ``syncing``) is owned by the
      :class:`~informers.shared_processor.SharedProcessor` and mutated under its lock only.
    * **Stopping**: :meth:`stop` lets the thread deliver everything already queued, then end;
      :meth:`remove` drops what is queued and ends after the call in progress. Both are
      idempotent; :meth:`join` waits for the thread.

    Args:
        handler: the registration's handler.
        requested_resync_period: what the caller asked for (seconds, 0 = none).
        resync_period: the effective period (see :func:`determine_resync_period`).
        now: the clock's time at registration; the first resync is due at
            ``now + resync_period``.
        upstream_has_synced: the informer's ``has_synced``.
        clock: for resync times and the slow-call trace.
        name: the thread name.
    """

    def __init__(
        self,
        handler: ResourceEventHandler,
        requested_resync_period: float,
        resync_period: float,
        now: float,
        upstream_has_synced: Callable[[], bool],
        *,
        clock: Clock = REAL_CLOCK,
        name: str = "processor-listener",
    ) -> None:
        self.handler = handler
        self.requested_resync_period = requested_resync_period
        self.resync_period = resync_period
        self.next_resync = now + resync_period
        # client-go sharedProcessor.addListener: "p.listeners[listener] = true". A listener gets
        # sync updates (a relist of unchanged objects) until the first resync tick decides;
        # with no resync period there is no tick, so it always gets them.
        self.syncing = True
        self.name = name
        self._clock = clock
        self._upstream_has_synced = upstream_has_synced
        self._cond = threading.Condition(threading.Lock())
        self._buf: deque[Notification] = deque()
        self._batch: deque[Notification] = deque()  # taken by the thread, not yet delivered
        self._waiting = False
        self._stopping = False
        self._removed = False
        self._pending_initial = 0
        self._thread: threading.Thread | None = None

    # -- producer side -------------------------------------------------------------------------

    def add(self, notification: Notification) -> None:
        """Queue a notification; never blocks on the handler (it may yield the GIL, see the
        class docstring). Ignored once removed."""
        with self._cond:
            if self._removed:
                return
            buf = self._buf
            buf.append(notification)
            if notification[0] == ADD and notification[2]:
                self._pending_initial += 1
            if self._waiting:
                self._cond.notify()
            queued = len(buf)
        if (queued and not queued % YIELD_BACKLOG
                and queued + len(self._batch) <= YIELD_MAX_BACKLOG):
            kind, a, b = notification
            if (kind != ADD and a.__class__ is dict and a is not b and gc.isenabled()
                    and gc.get_threshold()[2] <= _DEFAULT_FULL_THRESHOLD):
                _yield_gil(0)

    def pending(self) -> int:
        """Notifications queued and not yet taken by the thread (a snapshot)."""
        return len(self._buf)

    # -- resync bookkeeping (caller holds the processor's lock) --------------------------------

    def should_resync(self, now: float) -> bool:
        """Whether a resync is due at ``now`` (client-go ``processorListener.shouldResync``)."""
        return self.resync_period != 0 and now >= self.next_resync

    def determine_next_resync(self, now: float) -> None:
        self.next_resync = now + self.resync_period

    def set_resync_period(self, resync_period: float) -> None:
        self.resync_period = resync_period

    # -- sync tracking -------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """True when the informer synced and every initial-list add was delivered."""
        if not self._upstream_has_synced():
            return False
        return self._pending_initial == 0

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the delivery thread (once; later calls do nothing)."""
        with self._cond:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to deliver what is queued, then end."""
        with self._cond:
            self._stopping = True
            self._cond.notify()

    def remove(self) -> None:
        """Drop what is queued and end after the call in progress; :meth:`add` is ignored."""
        with self._cond:
            self._removed = True
            self._buf.clear()
            self._pending_initial = 0
            self._cond.notify()

    def join(self) -> None:
        """Wait for the thread to end (no-op if never started or called from the thread)."""
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()

    def is_current_thread(self) -> bool:
        return self._thread is threading.current_thread()

    def is_alive(self) -> bool:
        t = self._thread
        return t is not None and t.is_alive()

    # -- delivery thread -----------------------------------------------------------------------

    def _run(self) -> None:
        cond = self._cond
        clock = self._clock
        handler = self.handler
        on_add = handler.on_add
        on_update = handler.on_update
        on_delete = handler.on_delete
        while True:
            with cond:
                while not self._buf and not self._stopping and not self._removed:
                    self._waiting = True
                    clock.wait_condition(cond, None)
                    self._waiting = False
                if self._removed or not self._buf:
                    return
                batch = self._buf
                self._buf = deque()
                self._batch = batch  # for add()'s view of the whole backlog
            popleft = batch.popleft
            while batch:
                if self._removed:
                    return
                notification = popleft()
                kind, a, b = notification
                if a.__class__ in _LAZY or b.__class__ is Encoded:  # a compact cache's
                    a, b = decoded(a, b)
                traced = len(batch) + len(self._buf) > BACKLOG_TRACE_THRESHOLD
                start = clock.now() if traced else 0.0
                try:
                    if kind == UPDATE:
                        on_update(a, b)
                    elif kind == ADD:
                        on_add(a, b)
                    else:
                        on_delete(a)
                except Exception:
                    logger.exception(
                        "%s: handler %r failed on %s of %s; it keeps receiving",
                        self.name,
                        handler,
                        ("add", "update", "delete")[kind],
                        notification_key(notification),
                    )
                finally:
                    if kind == ADD and b:
                        with cond:
                            if self._pending_initial > 0:
                                self._pending_initial -= 1
                if traced:
                    took = clock.now() - start
                    if took > SLOW_CALL_TRACE_SECONDS:
                        logger.info(
                            "%s: handler %r took %.3fs on %s with %d notifications pending",
                            self.name,
                            handler,
                            took,
                            notification_key(notification),
                            len(batch) + len(self._buf),
                        )
