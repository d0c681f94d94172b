"""Adds items to a work queue after a delay, keeping only the earliest deadline per item.

The Python counterpart of client-go ``util/workqueue/delaying_queue.go``.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from typing import Any

from informers.clock import REAL_CLOCK, Clock
from informers.workqueue.metrics import MetricsProvider
from informers.workqueue.queue import Queue, T

__all__ = ["MAX_WAIT", "DelayingQueue"]

MAX_WAIT = 10.0
"""Heartbeat of the waiting thread in seconds: it wakes at least this often even with nothing
due (client-go delaying_queue.go ``maxWait = 10 * time.Second``, "insurance against weird
things happening")."""


class DelayingQueue(Queue[T]):
    """A :class:`Queue` with :meth:`add_after` (client-go ``DelayingInterface``).

    Waiting items are kept in a min-heap on their ready time plus a dict from item to its heap
    entry, so an item waits at most once: a second :meth:`add_after` of a waiting item moves it
    earlier when the new deadline is earlier and is ignored otherwise. Entries replaced by an
    earlier deadline stay in the heap marked stale and are skipped when they surface.

    One daemon thread (``workqueue-delaying-<name>``) sleeps on a condition variable until the
    earliest deadline, a new earliest entry, the 10 s heartbeat (:data:`MAX_WAIT`) or shutdown,
    and then :meth:`Queue.add` s every due item in deadline order (ties in call order), so the
    queue's usual dedup applies. It starts with the queue, as client-go's goroutine does, and is
    joined by :meth:`shut_down`; items still waiting at shutdown are dropped.

    Thread safety: every method may be called from any thread. The waiting state has its own
    lock, taken before (never after) the queue's lock.

    Args:
        name: The queue name (metrics label); empty means no metrics.
        metrics_provider: Where metrics go; ``None`` means the global provider.
        clock: Time source for deadlines and every wait.
    """

    def __init__(
        self,
        name: str = "",
        metrics_provider: MetricsProvider | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        super().__init__(name=name, metrics_provider=metrics_provider, clock=clock)
        self._waiting_cond = threading.Condition(threading.Lock())
        # Heap entries are [ready_at, sequence, item]; the sequence breaks ties in call order and
        # keeps items (which need not be orderable) out of comparisons.
        self._heap: list[list[Any]] = []
        self._waiting: dict[T, list[Any]] = {}
        self._sequence = itertools.count()
        self._waiting_stopped = False
        self._waiting_thread = threading.Thread(
            target=self._waiting_loop,
            name=f"workqueue-delaying-{name}" if name else "workqueue-delaying",
            daemon=True,
        )
        self._waiting_thread.start()

    def add_after(self, item: T, seconds: float) -> None:
        """Add ``item`` to the queue once ``seconds`` have passed on the queue's clock.

        Ignored after shutdown. ``seconds <= 0`` adds the item right away. If the item is
        already waiting, the earlier of the two deadlines is kept; the item is never queued
        twice because of it. Every call (while not shut down) counts as a retry in the metrics.
        """
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retry()
        if seconds <= 0:
            self.add(item)
            return
        cond = self._waiting_cond
        with cond:
            if self._waiting_stopped:
                return
            ready_at = self._clock.now() + seconds
            existing = self._waiting.get(item)
            if existing is not None and existing[0] <= ready_at:
                return
            entry: list[Any] = [ready_at, next(self._sequence), item]
            self._waiting[item] = entry
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                cond.notify()

    def waiting_len(self) -> int:
        """How many items wait for their ``add_after`` deadline (not yet in the queue).

        For tests and diagnostics: a test that steps a fake clock can first wait until the item
        it expects to be delayed is really waiting, so the step cannot race the ``add_after``.
        """
        with self._waiting_cond:
            return len(self._waiting)

    def _waiting_loop(self) -> None:
        cond = self._waiting_cond
        heap = self._heap
        waiting = self._waiting
        clock = self._clock
        with cond:
            while not self._waiting_stopped:
                now = clock.now()
                ready: list[T] = []
                while heap:
                    entry = heap[0]
                    item = entry[2]
                    if waiting.get(item) is not entry:  # replaced by an earlier deadline
                        heapq.heappop(heap)
                        continue
                    ready_at: float = entry[0]
                    if ready_at > now:
                        break
                    heapq.heappop(heap)
                    del waiting[item]
                    ready.append(item)
                if ready:
                    self._add_all(ready)
                timeout = MAX_WAIT
                if heap:
                    timeout = min(heap[0][0] - now, MAX_WAIT)
                clock.wait_condition(cond, timeout)

    def _stop_waiting(self) -> None:
        with self._waiting_cond:
            self._waiting_stopped = True
            self._waiting_cond.notify_all()
        if self._waiting_thread is not threading.current_thread():
            self._waiting_thread.join()

    def shut_down(self) -> None:
        """:meth:`Queue.shut_down`, then stop and join the waiting thread."""
        super().shut_down()
        self._stop_waiting()

    def shut_down_with_drain(self) -> None:
        """Stop the waiting thread (dropping waiting items), then drain like the base queue."""
        self._stop_waiting()
        super().shut_down_with_drain()
