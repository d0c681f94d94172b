"""Fans an informer's notifications out to its listeners (client-go ``sharedProcessor``)."""

from __future__ import annotations

import threading

from informers.clock import REAL_CLOCK, Clock
from informers.processor_listener import (
    Notification,
    ProcessorListener,
    determine_resync_period,
)

__all__ = ["SharedProcessor"]


class SharedProcessor:
    """The set of :class:`ProcessorListener` of one informer, and their resync schedule.

    Contract:

    * :meth:`distribute` is the hot path: it reads an immutable snapshot of the listeners (no
      lock) and appends the notification to each eligible listener's buffer; it never waits
      for a handler. Non-sync notifications go to every listener; sync notifications (resync,
      or a relist of an unchanged object) only to listeners the last :meth:`should_resync`
      marked as due (client-go ``sharedProcessor.distribute``).
    * Listeners added before :meth:`run` are buffered and started by it (client-go needed a
      condition variable here to avoid a deadlock on its unbuffered channels, kubernetes
      ``TestListenerResyncPeriodsDelayed``; an unbounded deque cannot block).
    * Add, remove, resync bookkeeping and stop are serialised by one lock and may be called
      from any thread. :meth:`remove_listener` is idempotent.
    """

    def __init__(self, *, clock: Clock = REAL_CLOCK) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._listeners: tuple[ProcessorListener, ...] = ()
        self._started = False
        self._stopped = False

    def add_listener(self, listener: ProcessorListener) -> ProcessorListener:
        """Register ``listener``; start its thread at once if the processor runs."""
        with self._lock:
            self._listeners = (*self._listeners, listener)
            if self._started and not self._stopped:
                listener.start()
        return listener

    def remove_listener(self, listener: ProcessorListener) -> bool:
        """Unregister and end ``listener`` (its queued notifications are dropped).

        Returns:
            ``False`` if it was not registered here (already removed, or foreign).
        """
        with self._lock:
            if not any(x is listener for x in self._listeners):
                return False
            self._listeners = tuple(x for x in self._listeners if x is not listener)
        listener.remove()
        return True

    def listeners(self) -> tuple[ProcessorListener, ...]:
        return self._listeners

    def distribute(self, notification: Notification, sync: bool) -> None:
        """Queue ``notification`` for every listener (only syncing ones if ``sync``)."""
        if sync:
            for listener in self._listeners:
                if listener.syncing:
                    listener.add(notification)
        else:
            for listener in self._listeners:
                listener.add(notification)

    def run(self) -> None:
        """Start every registered listener's thread (and later ones on registration)."""
        with self._lock:
            if self._started:
                return
            self._started = True
            if self._stopped:
                return
            listeners = self._listeners
        for listener in listeners:
            listener.start()

    def stop(self) -> None:
        """Let every listener deliver what it has queued, then join their threads.

        Blocks until every handler call in progress and queued has returned (as client-go's
        processor waits for its listeners); a handler that never returns blocks this. Then
        the listeners are dropped: their handlers often refer back to the informer, and a
        stopped informer must not be kept alive by that cycle (``gc.freeze()`` would make it
        permanent). Idempotent.
        """
        with self._lock:
            self._stopped = True
            listeners = self._listeners
        for listener in listeners:
            listener.stop()
        for listener in listeners:
            listener.join()
        with self._lock:
            self._listeners = ()

    def should_resync(self) -> bool:
        """Mark the listeners whose resync is due; return whether any is.

        Called by the reflector on every resync tick (client-go ``sharedProcessor.shouldResync``):
        each due listener is marked ``syncing`` and its next resync is scheduled one period
        from now; every other listener is unmarked. The store is resynced only when this
        returns true.
        """
        with self._lock:
            now = self._clock.now()
            needed = False
            for listener in self._listeners:
                due = listener.should_resync(now)
                listener.syncing = due
                if due:
                    needed = True
                    listener.determine_next_resync(now)
            return needed

    def resync_check_period_changed(self, resync_check_period: float) -> None:
        """Recompute every listener's period for a new informer check period."""
        with self._lock:
            for listener in self._listeners:
                listener.set_resync_period(
                    determine_resync_period(listener.requested_resync_period, resync_check_period)
                )
