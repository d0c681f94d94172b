"""Re-queues failed work items after a delay chosen by a rate limiter.

The Python counterpart of client-go ``util/workqueue/rate_limiting_queue.go``.
"""

from __future__ import annotations

from informers.clock import REAL_CLOCK, Clock
from informers.workqueue.delaying_queue import DelayingQueue
from informers.workqueue.metrics import MetricsProvider
from informers.workqueue.queue import T
from informers.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimitingQueue"]


class RateLimitingQueue(DelayingQueue[T]):
    """A :class:`DelayingQueue` whose retries wait as long as a :class:`RateLimiter` says.

    The usual worker loop (client-go ``examples/workqueue``)::

        item, shutdown = queue.get()
        if shutdown:
            return
        try:
            sync(item)
        except Exception:
            queue.add_rate_limited(item)   # retry later, backing off
        else:
            queue.forget(item)             # success: reset the item's backoff
        finally:
            queue.done(item)               # always: forget does not replace done

    Thread safety: as :class:`DelayingQueue`; the limiter must be thread-safe (all limiters in
    :mod:`informers.workqueue.rate_limiters` are).

    Args:
        rate_limiter: Chooses retry delays; ``None`` means
            :func:`~informers.workqueue.rate_limiters.default_controller_rate_limiter` on ``clock``
            (client-go ``DefaultControllerRateLimiter``).
        name: The queue name (metrics label); empty means no metrics.
        metrics_provider: Where metrics go; ``None`` means the global provider.
        clock: Time source for delays and every wait.
    """

    def __init__(
        self,
        rate_limiter: RateLimiter | None = None,
        name: str = "",
        metrics_provider: MetricsProvider | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        super().__init__(name=name, metrics_provider=metrics_provider, clock=clock)
        self.rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock)
        )

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the limiter's delay; this records one more failure of it."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset the limiter's record of ``item``. The caller must still call :meth:`done`."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many times ``item`` was rate-limited since it was last forgotten."""
        return self.rate_limiter.num_requeues(item)
