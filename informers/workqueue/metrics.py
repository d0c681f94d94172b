"""Work-queue metrics: the provider hook, its no-op default and the per-queue bookkeeping.

Mirrors client-go ``util/workqueue/metrics.go``. A :class:`MetricsProvider` hands out one metric
object per queue name; the queue calls them through :class:`QueueMetrics`, which keeps the
per-item timestamps needed for the latency, work-duration and unfinished-work metrics.

Metrics are **off** (``new_queue_metrics`` returns ``None``) when the queue name is empty, as in
client-go (``newQueueMetrics``: "if len(name) == 0 return noMetrics"), and also when the provider
is the no-op provider, so an unnamed or unobserved queue pays nothing per operation: it makes no
clock call and runs no updater thread.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from informers.clock import Clock
from informers.global_provider import GlobalProvider

__all__ = [
    "ADDS_METRIC",
    "DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD",
    "DEPTH_METRIC",
    "DURATION_BUCKETS",
    "LONGEST_RUNNING_PROCESSOR_METRIC",
    "QUEUE_LATENCY_METRIC",
    "RETRIES_METRIC",
    "UNFINISHED_WORK_METRIC",
    "WORK_DURATION_METRIC",
    "CounterMetric",
    "GaugeMetric",
    "HistogramMetric",
    "MetricsProvider",
    "NoopMetricsProvider",
    "QueueMetrics",
    "SettableGaugeMetric",
    "get_provider",
    "new_queue_metrics",
    "set_provider",
]

# Metric names: k8s.io/component-base/metrics/prometheus/workqueue/metrics.go (subsystem
# "workqueue"); every metric carries the single label ``name`` (the queue name).
DEPTH_METRIC = "workqueue_depth"
ADDS_METRIC = "workqueue_adds_total"
QUEUE_LATENCY_METRIC = "workqueue_queue_duration_seconds"
WORK_DURATION_METRIC = "workqueue_work_duration_seconds"
UNFINISHED_WORK_METRIC = "workqueue_unfinished_work_seconds"
LONGEST_RUNNING_PROCESSOR_METRIC = "workqueue_longest_running_processor_seconds"
RETRIES_METRIC = "workqueue_retries_total"


def _exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus ``ExponentialBuckets``: ``count`` upper bounds, ``start`` times ``factor^i``."""
    buckets = []
    for _ in range(count):
        buckets.append(start)
        start *= factor
    return tuple(buckets)


DURATION_BUCKETS: tuple[float, ...] = _exponential_buckets(10e-9, 10, 10)
"""Histogram buckets of the two duration metrics, 10 ns to 10 s: component-base
``ExponentialBuckets(10e-9, 10, 10)``."""

DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD = 0.5
"""Seconds between recomputations of the unfinished-work and longest-running gauges
(client-go queue.go ``defaultUnfinishedWorkUpdatePeriod = 500 * time.Millisecond``)."""


class GaugeMetric(Protocol):
    """A gauge that goes up and down by one (client-go ``GaugeMetric``)."""

    def inc(self) -> None: ...

    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    """A gauge set to a value (client-go ``SettableGaugeMetric``)."""

    def set(self, value: float) -> None: ...


class CounterMetric(Protocol):
    """A monotonically increasing counter (client-go ``CounterMetric``)."""

    def inc(self) -> None: ...


class HistogramMetric(Protocol):
    """A distribution of observed values (client-go ``HistogramMetric``)."""

    def observe(self, value: float) -> None: ...


class MetricsProvider(Protocol):
    """Creates the metrics of one named queue (client-go ``MetricsProvider``).

    Each method is called once per queue, with the queue's name. The returned objects are
    called while the queue holds its lock, except the retries counter, which ``add_after``
    increments without it: every returned metric must be cheap and thread-safe
    (prometheus_client's are).
    """

    def new_depth_metric(self, name: str) -> GaugeMetric: ...

    def new_adds_metric(self, name: str) -> CounterMetric: ...

    def new_latency_metric(self, name: str) -> HistogramMetric: ...

    def new_work_duration_metric(self, name: str) -> HistogramMetric: ...

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_retries_metric(self, name: str) -> CounterMetric: ...


class _NoopMetric:
    """Every metric kind at once, doing nothing."""

    __slots__ = ()

    def inc(self) -> None:
        pass

    def dec(self) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, value: float) -> None:
        pass


_NOOP_METRIC = _NoopMetric()


class NoopMetricsProvider:
    """The default provider: every metric is a no-op (client-go ``noopMetricsProvider``).

    A queue whose provider is a ``NoopMetricsProvider`` skips metric bookkeeping entirely.
    """

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return _NOOP_METRIC

    def new_adds_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_retries_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC


_provider: GlobalProvider[MetricsProvider] = GlobalProvider(NoopMetricsProvider())


def set_provider(provider: MetricsProvider) -> MetricsProvider:
    """Set the process-wide provider used by queues created without ``metrics_provider``.

    Like client-go's ``workqueue.SetProvider``, it affects only queues created afterwards.
    Unlike client-go (whose ``sync.Once`` keeps the first provider), a later call replaces the
    provider: Python tests and embedding applications can swap it back.

    Returns:
        The provider that was set before.
    """
    return _provider.set(provider)


def get_provider() -> MetricsProvider:
    """The process-wide provider set by :func:`set_provider` (a no-op provider by default)."""
    return _provider.get()


class QueueMetrics:
    """The metrics of one queue: client-go ``defaultQueueMetrics``.

    Not thread-safe by itself: the queue calls :meth:`add`, :meth:`get`, :meth:`done` and
    :meth:`update_unfinished_work` under its own lock. :meth:`retry` only increments a counter
    (thread-safe by the provider's contract).
    """

    __slots__ = (
        "_add_times",
        "_adds",
        "_clock",
        "_depth",
        "_latency",
        "_longest_running",
        "_processing_start_times",
        "_retries",
        "_unfinished_work",
        "_work_duration",
    )

    def __init__(self, name: str, provider: MetricsProvider, clock: Clock) -> None:
        self._clock = clock
        self._depth = provider.new_depth_metric(name)
        self._adds = provider.new_adds_metric(name)
        self._latency = provider.new_latency_metric(name)
        self._work_duration = provider.new_work_duration_metric(name)
        self._unfinished_work = provider.new_unfinished_work_seconds_metric(name)
        self._longest_running = provider.new_longest_running_processor_seconds_metric(name)
        self._retries = provider.new_retries_metric(name)
        self._add_times: dict[Hashable, float] = {}
        self._processing_start_times: dict[Hashable, float] = {}

    def add(self, item: Hashable) -> None:
        """An item became dirty: one more add, one deeper; remember when it was first queued."""
        self._adds.inc()
        self._depth.inc()
        if item not in self._add_times:
            self._add_times[item] = self._clock.now()

    def get(self, item: Hashable) -> None:
        """An item was handed to a worker: observe how long it waited."""
        self._depth.dec()
        now = self._clock.now()
        self._processing_start_times[item] = now
        added = self._add_times.pop(item, None)
        if added is not None:
            self._latency.observe(now - added)

    def done(self, item: Hashable) -> None:
        """A worker finished an item: observe how long the work took."""
        started = self._processing_start_times.pop(item, None)
        if started is not None:
            self._work_duration.observe(self._clock.now() - started)

    def update_unfinished_work(self) -> None:
        """Set the unfinished-work total and the longest-running age of in-flight items."""
        now = self._clock.now()
        total = 0.0
        oldest = 0.0
        for started in self._processing_start_times.values():
            age = now - started
            total += age
            if age > oldest:
                oldest = age
        self._unfinished_work.set(total)
        self._longest_running.set(oldest)

    def retry(self) -> None:
        """``add_after`` was called (client-go counts every call, also with a delay <= 0)."""
        self._retries.inc()


def new_queue_metrics(
    name: str, provider: MetricsProvider | None, clock: Clock
) -> QueueMetrics | None:
    """The metrics of a queue, or ``None`` when metrics are off.

    Args:
        name: The queue name; empty means no metrics (client-go ``newQueueMetrics``).
        provider: The provider; ``None`` means the global one (:func:`get_provider`).
        clock: The queue's clock, used for every timestamp.
    """
    if not name:
        return None
    if provider is None:
        provider = get_provider()
    if isinstance(provider, NoopMetricsProvider):
        return None
    return QueueMetrics(name, provider, clock)
