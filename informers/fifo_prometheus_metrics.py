"""Exports the informer FIFO metrics to Prometheus through ``prometheus_client``.

The counterpart of k8s.io/component-base ``metrics/prometheus/clientgo/fifo/metrics.go``: the
same names, help texts, labels (``name``, ``group``, ``version``, ``resource``) and buckets.
Needs the ``metrics`` extra; ``prometheus_client`` is imported only when a provider is created.
"""

from __future__ import annotations

from typing import Any

from informers.fifo_metrics import (
    PROCESSING_LATENCY_BUCKETS,
    PROCESSING_LATENCY_METRIC,
    QUEUED_ITEMS_METRIC,
    STORE_RESOURCE_VERSION_METRIC,
    HistogramMetric,
    InformerNameAndResource,
    SettableGaugeMetric,
)

__all__ = ["PrometheusInformerMetricsProvider"]

_LABELS = ("name", "group", "version", "resource")


class PrometheusInformerMetricsProvider:
    """An :class:`~informers.fifo_metrics.InformerMetricsProvider` backed by
    ``prometheus_client``; install it with
    :func:`~informers.fifo_metrics.set_informer_metrics_provider` before informers start.

    The constructor registers the three families in ``registry`` (default: the
    ``prometheus_client`` default registry); one provider per registry. Thread-safe.

    Raises:
        ImportError: ``prometheus_client`` is not installed (the message names the extra).
    """

    def __init__(self, registry: Any = None) -> None:
        try:
            import prometheus_client as pc
        except ImportError as err:
            raise ImportError(
                "PrometheusInformerMetricsProvider needs the prometheus_client package; "
                "install the metrics extra: pip install 'kube-informers[metrics]'"
            ) from err
        if registry is None:
            registry = pc.REGISTRY
        self.registry = registry
        self._queued = pc.Gauge(
            QUEUED_ITEMS_METRIC, "Number of items currently queued in the FIFO.", _LABELS,
            registry=registry)
        self._latency = pc.Histogram(
            PROCESSING_LATENCY_METRIC,
            "Time taken to process events after popping from the queue.", _LABELS,
            buckets=PROCESSING_LATENCY_BUCKETS, registry=registry)
        self._store_rv = pc.Gauge(
            STORE_RESOURCE_VERSION_METRIC,
            "The 15 least significant digits of the resource version of the store.", _LABELS,
            registry=registry)

    def new_queued_item_metric(self, id: InformerNameAndResource) -> SettableGaugeMetric:
        return self._queued.labels(*id)

    def new_processing_latency_metric(self, id: InformerNameAndResource) -> HistogramMetric:
        return self._latency.labels(*id)

    def new_store_resource_version_metric(
        self, id: InformerNameAndResource
    ) -> SettableGaugeMetric:
        return self._store_rv.labels(*id)
