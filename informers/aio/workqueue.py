"""A rate-limited work queue for tasks: the threaded queue's rules, awaited instead of blocked on.

The fairness and stinginess (an item added several times before a worker takes it is handed out
once; never to two workers at once; re-added while processed, it is queued again on
:meth:`AsyncWorkQueue.done`) are :class:`informers.workqueue.Queue`'s own: this queue holds one
and only takes from it when it is not empty, so its ``get`` never blocks the event loop. The
delays come from the same :mod:`informers.workqueue.rate_limiters` (client-go
``DefaultControllerRateLimiter`` by default), and so does the low-priority lane of
controller-runtime v0.23's priority queue (``add(key, low_priority=True)``: served only when
no other key waits). Delayed adds wait in tasks of the task group given
to :meth:`AsyncWorkQueue.start`.

One event loop.
"""

from __future__ import annotations

from typing import Any

import anyio

from informers.workqueue.queue import Queue
from informers.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = ["AsyncWorkQueue"]


class AsyncWorkQueue:
    """Keys handed to worker tasks (``await get()`` ... ``done(key)``), with delayed and
    rate-limited adds.

    Args:
        rate_limiter: the delays of :meth:`add_rate_limited`; default
            :func:`~informers.workqueue.default_controller_rate_limiter`.
        name: the queue's metrics name (``""``: no metrics).
    """

    def __init__(self, rate_limiter: RateLimiter | None = None, name: str = "") -> None:
        self._queue: Queue[str] = Queue(name)
        self.rate_limiter = (rate_limiter if rate_limiter is not None
                             else default_controller_rate_limiter())
        self._wake = anyio.Event()
        self._task_group: Any = None
        self._early: list[tuple[str, float]] = []
        self._shut_down = False

    def start(self, task_group: Any) -> None:
        """Run delayed adds in ``task_group`` from now on (and those asked for before)."""
        self._task_group = task_group
        early, self._early = self._early, []
        for key, seconds in early:
            self.add_after(key, seconds)

    def add(self, key: str, low_priority: bool = False) -> None:
        """Queue ``key`` (:meth:`informers.workqueue.Queue.add`): ``low_priority`` keys wait in
        the low-priority lane, handed out only when no other key is queued, and a normal add
        of a key waiting there raises it (controller-runtime v0.23 priority queue)."""
        self._queue.add(key, low_priority)
        self._wake.set()

    def add_after(self, key: str, seconds: float) -> None:
        """Add ``key`` once ``seconds`` have passed (at once if ``<= 0``)."""
        if self._shut_down:
            return
        if seconds <= 0:
            self.add(key)
        elif self._task_group is None:
            self._early.append((key, seconds))
        else:
            self._task_group.start_soon(self._add_later, key, seconds)

    async def _add_later(self, key: str, seconds: float) -> None:
        await anyio.sleep(seconds)
        self.add(key)

    def add_rate_limited(self, key: str) -> None:
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: str) -> None:
        self.rate_limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        return self.rate_limiter.num_requeues(key)

    async def get(self) -> str | None:
        """The next key (the caller owns it until :meth:`done`); ``None`` once shut down."""
        queue = self._queue
        while True:
            if self._shut_down:
                return None
            if len(queue):
                key, _ = queue.get()  # does not block: the queue is not empty
                return key
            wake = self._wake
            await wake.wait()
            if self._wake is wake:  # the first of the woken workers arms a new one
                self._wake = anyio.Event()

    def done(self, key: str) -> None:
        self._queue.done(key)
        if len(self._queue):
            self._wake.set()

    def __len__(self) -> int:
        return len(self._queue)

    def shut_down(self) -> None:
        """Hand out nothing more; workers waiting in :meth:`get` get ``None``."""
        self._shut_down = True
        self._queue.shut_down()
        self._wake.set()
