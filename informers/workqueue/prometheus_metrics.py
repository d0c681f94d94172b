"""Exports work-queue metrics to Prometheus through ``prometheus_client``.

The counterpart of k8s.io/component-base ``metrics/prometheus/workqueue/metrics.go``: the same
names, help texts, ``name`` label and buckets. Needs the ``metrics`` extra
(``pip install 'kube-informers[metrics]'``); ``prometheus_client`` is imported only when a
provider is created.
"""

from __future__ import annotations

from typing import Any

from informers.workqueue.metrics import (
    ADDS_METRIC,
    DEPTH_METRIC,
    DURATION_BUCKETS,
    LONGEST_RUNNING_PROCESSOR_METRIC,
    QUEUE_LATENCY_METRIC,
    RETRIES_METRIC,
    UNFINISHED_WORK_METRIC,
    WORK_DURATION_METRIC,
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    SettableGaugeMetric,
)

__all__ = ["PrometheusMetricsProvider"]

_LABELS = ("name",)


def _import_prometheus_client() -> Any:
    try:
        import prometheus_client
    except ImportError as err:
        raise ImportError(
            "PrometheusMetricsProvider needs the prometheus_client package; install the "
            "metrics extra: pip install 'kube-informers[metrics]'"
        ) from err
    return prometheus_client


class PrometheusMetricsProvider:
    """A :class:`~informers.workqueue.metrics.MetricsProvider` backed by ``prometheus_client``.

    The constructor registers the seven metric families (labelled by queue ``name``) in
    ``registry``; each ``new_*_metric(name)`` returns the family's child for that name, so
    queues with the same name share their series. Create one provider per registry: a second
    one on the same registry fails with prometheus_client's duplicate-registration error.

    Thread-safe (prometheus_client metrics are).

    Args:
        registry: A ``prometheus_client.CollectorRegistry``; ``None`` means the default
            ``prometheus_client.REGISTRY``.

    Raises:
        ImportError: ``prometheus_client`` is not installed (the message names the extra).
    """

    def __init__(self, registry: Any = None) -> None:
        pc = _import_prometheus_client()
        if registry is None:
            registry = pc.REGISTRY
        self.registry = registry
        self._depth = pc.Gauge(
            DEPTH_METRIC, "Current depth of workqueue", _LABELS, registry=registry
        )
        self._adds = pc.Counter(
            ADDS_METRIC, "Total number of adds handled by workqueue", _LABELS, registry=registry
        )
        self._latency = pc.Histogram(
            QUEUE_LATENCY_METRIC,
            "How long in seconds an item stays in workqueue before being requested.",
            _LABELS,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self._work_duration = pc.Histogram(
            WORK_DURATION_METRIC,
            "How long in seconds processing an item from workqueue takes.",
            _LABELS,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self._unfinished = pc.Gauge(
            UNFINISHED_WORK_METRIC,
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce "
            "the number of stuck threads by observing the rate at which this increases.",
            _LABELS,
            registry=registry,
        )
        self._longest = pc.Gauge(
            LONGEST_RUNNING_PROCESSOR_METRIC,
            "How many seconds has the longest running processor for workqueue been running.",
            _LABELS,
            registry=registry,
        )
        self._retries = pc.Counter(
            RETRIES_METRIC, "Total number of retries handled by workqueue", _LABELS,
            registry=registry,
        )

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self._depth.labels(name)

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self._adds.labels(name)

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self._latency.labels(name)

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self._work_duration.labels(name)

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._unfinished.labels(name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._longest.labels(name)

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self._retries.labels(name)
