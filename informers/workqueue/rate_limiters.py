"""Decides how long a failed work item waits before it is retried.

The Python counterpart of client-go ``util/workqueue/default_rate_limiters.go``. Delays are
float seconds. Every limiter here is thread-safe.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from informers.clock import REAL_CLOCK, Clock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]


@runtime_checkable
class RateLimiter(Protocol):
    """client-go ``TypedRateLimiter``."""

    def when(self, item: Hashable) -> float:
        """Record a failure of ``item`` and return how many seconds it should wait."""

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item`` (it succeeded or was given up); its backoff starts over."""

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of ``item`` are recorded (calls to :meth:`when` since forget)."""


class ItemExponentialFailureRateLimiter:
    """Per-item exponential backoff: ``base_delay * 2**failures``, capped at ``max_delay``.

    client-go ``ItemExponentialFailureRateLimiter``: the first :meth:`when` returns
    ``base_delay``, each further one doubles it; the result saturates at ``max_delay`` and never
    overflows, however many failures are recorded. :meth:`forget` clears the item's count.
    Thread-safe.
    """

    def __init__(self, base_delay: float, max_delay: float) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            exp = self._failures.get(item, 0)
            self._failures[item] = exp + 1
        try:
            backoff = math.ldexp(self.base_delay, exp)  # exact base * 2**exp
        except OverflowError:
            return self.max_delay
        return min(backoff, self.max_delay)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)


class ItemFastSlowRateLimiter:
    """``fast_delay`` for the first ``max_fast_attempts`` failures of an item, then ``slow_delay``.

    client-go ``ItemFastSlowRateLimiter``. Thread-safe.
    """

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            failures = self._failures.get(item, 0) + 1
            self._failures[item] = failures
        return self.fast_delay if failures <= self.max_fast_attempts else self.slow_delay

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)


class BucketRateLimiter:
    """An overall token bucket shared by all items: ``qps`` tokens per second, ``burst`` at most.

    client-go ``BucketRateLimiter``, whose ``When`` is ``golang.org/x/time/rate``
    ``Limiter.Reserve().Delay()``: every call takes a token, even when the bucket is empty, and
    returns how long until that token will have accrued (0 while tokens remain). The bucket
    starts full. :meth:`num_requeues` is always 0 and :meth:`forget` does nothing: the bucket
    does not track items. Thread-safe.

    Edge cases follow ``x/time/rate``: ``qps == math.inf`` never delays; ``qps <= 0`` allows
    ``burst`` calls and then returns ``math.inf`` (as does any call when ``burst < 1``, where
    Go's reservation is not OK and ``Delay()`` is ``InfDuration``).
    """

    def __init__(self, qps: float, burst: int, clock: Clock = REAL_CLOCK) -> None:
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock.now()

    def when(self, item: Hashable) -> float:
        qps = self.qps
        with self._lock:
            if qps == math.inf:
                return 0.0
            if qps <= 0:  # no refill: the initial burst is all there is
                if self._tokens >= 1.0:
                    self._tokens -= 1.0
                    return 0.0
                return math.inf
            if self.burst < 1:
                return math.inf
            now = self._clock.now()
            last = min(self._last, now)  # time never runs backwards for the bucket
            tokens = min(self._tokens + (now - last) * qps, float(self.burst)) - 1.0
            self._last = now
            self._tokens = tokens
        return -tokens / qps if tokens < 0 else 0.0

    def num_requeues(self, item: Hashable) -> int:
        return 0

    def forget(self, item: Hashable) -> None:
        pass


class MaxOfRateLimiter:
    """The most pessimistic of several limiters (client-go ``MaxOfRateLimiter``).

    :meth:`when` calls **every** limiter (each records the failure) and returns the largest
    delay; :meth:`num_requeues` is the largest count; :meth:`forget` forgets in all of them.
    Thread-safe when its limiters are.
    """

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters: tuple[RateLimiter, ...] = limiters

    def when(self, item: Hashable) -> float:
        return max([limiter.when(item) for limiter in self.limiters])

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)


class WithMaxWaitRateLimiter:
    """Caps another limiter's delay at ``max_delay`` (client-go ``WithMaxWaitRateLimiter``)."""

    def __init__(self, limiter: RateLimiter, max_delay: float) -> None:
        self.limiter = limiter
        self.max_delay = max_delay

    def when(self, item: Hashable) -> float:
        return min(self.limiter.when(item), self.max_delay)

    def num_requeues(self, item: Hashable) -> int:
        return self.limiter.num_requeues(item)

    def forget(self, item: Hashable) -> None:
        self.limiter.forget(item)


def default_item_based_rate_limiter() -> ItemExponentialFailureRateLimiter:
    """1 ms doubling to 1000 s per item (client-go ``DefaultItemBasedRateLimiter``)."""
    return ItemExponentialFailureRateLimiter(0.001, 1000.0)


def default_controller_rate_limiter(clock: Clock = REAL_CLOCK) -> MaxOfRateLimiter:
    """The limiter of a controller's queue (client-go ``DefaultControllerRateLimiter``).

    Both per-item and overall limiting: the larger of per-item exponential backoff, 5 ms
    doubling to 1000 s, and one token bucket of 10 qps with a burst of 100 shared by all items.
    It only delays items added with ``add_rate_limited``.

    Args:
        clock: The bucket's clock.
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )
