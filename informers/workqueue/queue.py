"""Hands out work items to workers, never one item to two workers at once.

The Python counterpart of client-go ``util/workqueue/queue.go`` (``Typed``/``Interface``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable
from typing import TYPE_CHECKING, Generic

from informers.clock import REAL_CLOCK, Clock
from informers.workqueue.metrics import (
    DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD,
    MetricsProvider,
    QueueMetrics,
    new_queue_metrics,
)

__all__ = ["Queue"]

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    T = TypeVar("T", bound=Hashable, default=Hashable)
else:
    from typing import TypeVar

    T = TypeVar("T", bound=Hashable)
"""The item type of a queue; unparameterised queues hold any hashable item."""


class Queue(Generic[T]):
    """A fair, stingy work queue (client-go ``workqueue.Typed``).

    * **Fair**: items are handed out in the order they were added.
    * **Stingy**: an item added several times before a worker gets it is processed once, and
      an item is never handed to two workers at once. An item re-added while a worker processes
      it is not lost: it is queued again when the worker calls :meth:`done`.
    * **Shutdown**: after :meth:`shut_down`, :meth:`add` is ignored, :meth:`get` keeps handing out
      the items still queued and then returns ``(None, True)``; :meth:`done` still re-queues items
      that became dirty during processing, so a worker must keep calling :meth:`get` until it
      returns ``shutdown=True``.

    Three structures keep the invariant of client-go: ``dirty`` (every item that needs
    processing), ``processing`` (items handed out and not yet done) and the FIFO ``queue``.
    Every queued item is dirty and not processing.

    Items must be hashable; object keys (``"ns/name"`` strings) are the usual items, and
    ``Queue[str]`` tells a type checker so (unparameterised, the item type is ``Hashable``).

    Thread safety: every method may be called from any thread. One lock and one condition
    variable guard all state; :meth:`get` waits on the condition only while the queue is empty.

    When the queue has a name and a metrics provider other than the no-op one, it runs one daemon
    thread that recomputes the unfinished-work and longest-running-processor gauges every
    0.5 s (client-go ``updateUnfinishedWorkLoop``); the thread starts with the queue, like
    client-go's goroutine, and stops at shutdown.

    Args:
        name: The queue name, the ``name`` label of its metrics. Empty means no metrics.
        metrics_provider: Where metrics go; ``None`` means the global provider
            (:func:`informers.workqueue.set_provider`).
        clock: Time source for metrics timestamps and every wait.
    """

    def __init__(
        self,
        name: str = "",
        metrics_provider: MetricsProvider | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.name = name
        self._clock = clock
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque[T] = deque()
        self._low: deque[T] = deque()  # low-priority lane, served after _queue
        self._low_dirty: set[T] = set()  # dirty items whose every pending add was low
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        # Number of threads blocked in get(): add/done notify only when someone waits.
        self._get_waiters = 0
        self._metrics: QueueMetrics | None = new_queue_metrics(name, metrics_provider, clock)
        self._metrics_stop = threading.Event()
        self._metrics_thread: threading.Thread | None = None
        if self._metrics is not None:
            self._metrics_thread = threading.Thread(
                target=self._update_unfinished_work_loop,
                name=f"workqueue-metrics-{name}",
                daemon=True,
            )
            self._metrics_thread.start()

    # -- the work loop -------------------------------------------------------------------------

    def add(self, item: T, low_priority: bool = False) -> None:
        """Mark ``item`` as needing processing.

        A no-op after shutdown and when the item is already dirty (except that a normal add
        of an item waiting with low priority raises it). An item being processed is only
        marked dirty; :meth:`done` queues it again.

        ``low_priority`` items wait in a second lane served only when no other item is
        queued (controller-runtime v0.23's priority queue with ``LowPriority``; its
        ``WithLowPriorityWhenUnchanged`` uses it for initial-list adds and resyncs).
        """
        with self._lock:
            if self._shutting_down:
                return
            if item in self._dirty:
                if not low_priority and item in self._low_dirty:
                    self._low_dirty.discard(item)
                    if item not in self._processing:
                        self._low.remove(item)
                        self._queue.append(item)
                return
            self._dirty.add(item)
            if low_priority:
                self._low_dirty.add(item)
            if self._metrics is not None:
                self._metrics.add(item)
            if item in self._processing:
                return
            (self._low if low_priority else self._queue).append(item)
            if self._get_waiters:
                self._cond.notify()

    def _add_all(self, items: list[T]) -> None:
        """:meth:`add` each item in order, under one acquisition of the lock."""
        with self._lock:
            if self._shutting_down:
                return
            dirty = self._dirty
            processing = self._processing
            queue = self._queue
            metrics = self._metrics
            for item in items:
                if item in dirty:
                    continue
                dirty.add(item)
                if metrics is not None:
                    metrics.add(item)
                if item not in processing:
                    queue.append(item)
            if self._get_waiters and queue:
                self._cond.notify(self._get_waiters)

    def get(self) -> tuple[T | None, bool]:
        """Block until an item is queued, and hand it to the caller.

        Returns:
            ``(item, False)``; the caller owns the item until it calls :meth:`done`. Once the
            queue is shut down and empty: ``(None, True)``.
        """
        with self._lock:
            queue, low = self._queue, self._low
            if not queue and not low:
                while not queue and not low and not self._shutting_down:
                    self._get_waiters += 1
                    try:
                        self._clock.wait_condition(self._cond, None)
                    finally:
                        self._get_waiters -= 1
                if not queue and not low:
                    return None, True
            if queue:
                item = queue.popleft()
            else:
                item = low.popleft()
                self._low_dirty.discard(item)
            self._processing.add(item)
            self._dirty.discard(item)
            if self._metrics is not None:
                self._metrics.get(item)
            return item, False

    def done(self, item: T) -> None:
        """Mark ``item`` as processed; queue it again if it was re-added meanwhile.

        Also after shutdown (client-go: dirty items are still re-queued by ``Done``). An item
        that is not being processed is ignored (client-go would queue a dirty item twice).
        """
        with self._lock:
            processing = self._processing
            if item not in processing:
                return
            processing.remove(item)
            if self._metrics is not None:
                self._metrics.done(item)
            if item in self._dirty:
                (self._low if item in self._low_dirty else self._queue).append(item)
                if self._get_waiters:
                    self._cond.notify()
            if self._drain and not processing:
                self._cond.notify_all()

    def __len__(self) -> int:
        """The number of queued items (not counting items being processed)."""
        return len(self._queue) + len(self._low)

    # -- shutdown ------------------------------------------------------------------------------

    def shut_down(self) -> None:
        """Ignore further adds; :meth:`get` drains what is queued, then reports shutdown.

        Does not wait for items being processed. Interrupts a :meth:`shut_down_with_drain`
        that is waiting. Idempotent.
        """
        with self._lock:
            self._drain = False
            self._shutting_down = True
            self._cond.notify_all()
        self._stop_metrics()

    def shut_down_with_drain(self) -> None:
        """Like :meth:`shut_down`, then block until every handed-out item is :meth:`done`.

        Workers must keep calling :meth:`get` and :meth:`done` until ``get`` reports shutdown,
        or this never returns. A concurrent :meth:`shut_down` stops the wait.
        """
        with self._lock:
            self._drain = True
            self._shutting_down = True
            self._cond.notify_all()
            while self._processing and self._drain:
                self._clock.wait_condition(self._cond, None)
        self._stop_metrics()

    def shutting_down(self) -> bool:
        """True once :meth:`shut_down` or :meth:`shut_down_with_drain` was called."""
        return self._shutting_down

    # -- metrics -------------------------------------------------------------------------------

    def _update_unfinished_work_loop(self) -> None:
        metrics = self._metrics
        assert metrics is not None
        while not self._clock.wait_event(self._metrics_stop, DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD):
            with self._lock:
                if self._shutting_down:
                    return
                metrics.update_unfinished_work()

    def _stop_metrics(self) -> None:
        self._metrics_stop.set()
        thread = self._metrics_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} name={self.name!r} queued={len(self._queue)} "
            f"processing={len(self._processing)} shutting_down={self._shutting_down}>"
        )
