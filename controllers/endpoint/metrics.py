"""Counts the endpoint controller's syncs by result and records how long they take.

Plain, dependency-free counters and a histogram that the controller updates from its worker
threads; an exporter (for example a Prometheus collector) reads :meth:`SyncMetrics.snapshot`
or subscribes with :meth:`SyncMetrics.add_listener` to forward each observation as it happens.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_DURATION_BUCKETS",
    "SYNC_RESULTS",
    "HistogramSnapshot",
    "SyncMetrics",
    "SyncMetricsSnapshot",
]

logger = logging.getLogger(__name__)

SYNC_RESULTS: tuple[str, ...] = (
    "created",  # an Endpoints was created
    "updated",  # an Endpoints was replaced
    "deleted",  # the Service is gone; its Endpoints was deleted (or already absent)
    "unchanged",  # the Endpoints already matched: no write
    "skipped",  # nothing to manage: ExternalName, no selector, bad input, namespace terminating
    "error",  # the sync failed and was retried or dropped
)
"""Every value of a sync's ``result`` label."""

DEFAULT_DURATION_BUCKETS: tuple[float, ...] = tuple(0.001 * 2**i for i in range(15))
"""Upper bounds in seconds: 1 ms doubling to ~16 s (client-go workqueue's
``queue_duration_seconds`` uses exponential buckets from 1 ms too; ours double instead of
decupling, to resolve the sub-second range a sync lives in)."""


@dataclass(frozen=True)
class HistogramSnapshot:
    """Cumulative counts per upper bound (as Prometheus exposes them), plus sum and count."""

    buckets: tuple[tuple[float, int], ...]
    sum: float
    count: int


@dataclass(frozen=True)
class SyncMetricsSnapshot:
    """A consistent copy of every metric."""

    syncs: dict[str, int] = field(default_factory=dict)
    duration: HistogramSnapshot = HistogramSnapshot((), 0.0, 0)
    dropped: int = 0
    retries: int = 0


SyncListener = Callable[[str, float], None]
"""Called with ``(result, seconds)`` after every sync, from the worker that ran it."""


class SyncMetrics:
    """Sync counters by result, a duration histogram, retry and drop counters.

    Thread safety: every method may be called from any thread; one lock guards the numbers.
    Listeners are called outside the lock, from the worker thread, and must be quick; one that
    raises is logged and otherwise ignored.

    Args:
        buckets: histogram upper bounds in seconds, ascending (default
            :data:`DEFAULT_DURATION_BUCKETS`); ``+Inf`` is implicit.
    """

    def __init__(self, buckets: tuple[float, ...] = DEFAULT_DURATION_BUCKETS) -> None:
        if list(buckets) != sorted(buckets):
            raise ValueError(f"histogram buckets must be ascending, got {buckets!r}")
        self._lock = threading.Lock()
        self._bounds = tuple(buckets)
        self._bucket_counts = [0] * (len(self._bounds) + 1)
        self._sum = 0.0
        self._count = 0
        self._syncs = dict.fromkeys(SYNC_RESULTS, 0)
        self._dropped = 0
        self._retries = 0
        self._listeners: list[SyncListener] = []

    def add_listener(self, listener: SyncListener) -> None:
        """Also send every later observation to ``listener(result, seconds)``."""
        with self._lock:
            self._listeners.append(listener)

    def observe_sync(self, result: str, seconds: float) -> None:
        """Record one sync that ended with ``result`` (one of :data:`SYNC_RESULTS`)."""
        with self._lock:
            self._syncs[result] = self._syncs.get(result, 0) + 1
            self._bucket_counts[bisect.bisect_left(self._bounds, seconds)] += 1
            self._sum += seconds
            self._count += 1
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(result, seconds)
            except Exception:
                logger.exception("sync metrics listener %r failed", listener)

    def observe_retry(self) -> None:
        """Record that a failed sync was re-queued with rate limiting."""
        with self._lock:
            self._retries += 1

    def observe_drop(self) -> None:
        """Record that a key was dropped after exhausting its retries."""
        with self._lock:
            self._dropped += 1

    def snapshot(self) -> SyncMetricsSnapshot:
        """A consistent copy of all numbers."""
        with self._lock:
            cumulative = []
            running = 0
            for bound, count in zip(self._bounds, self._bucket_counts[:-1], strict=True):
                running += count
                cumulative.append((bound, running))
            cumulative.append((float("inf"), running + self._bucket_counts[-1]))
            return SyncMetricsSnapshot(
                syncs=dict(self._syncs),
                duration=HistogramSnapshot(tuple(cumulative), self._sum, self._count),
                dropped=self._dropped,
                retries=self._retries,
            )
