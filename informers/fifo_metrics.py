"""The informer FIFO's metrics: the provider hook, its no-op default and the per-FIFO handles.

Mirrors client-go v0.36 ``tools/cache/fifo_metrics.go`` (``InformerMetricsProvider``,
``newFIFOMetrics``, ``newStoreMetrics``) and the metric names of
``k8s.io/component-base/metrics/prometheus/clientgo/fifo/metrics.go`` (subsystem ``informer``;
labels ``name``, ``group``, ``version``, ``resource``).

Metrics are published only for a *named* informer (client-go: ``id.Reserved()``, an identifier
with a non-empty name); an unnamed FIFO gets ``None`` and pays nothing per operation.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from informers.global_provider import GlobalProvider

__all__ = [
    "PROCESSING_LATENCY_BUCKETS",
    "PROCESSING_LATENCY_METRIC",
    "QUEUED_ITEMS_METRIC",
    "STORE_RESOURCE_VERSION_METRIC",
    "FIFOMetrics",
    "InformerMetricsProvider",
    "InformerNameAndResource",
    "NoopInformerMetricsProvider",
    "get_informer_metrics_provider",
    "parse_rv_for_metrics",
    "set_informer_metrics_provider",
]

QUEUED_ITEMS_METRIC = "informer_queued_items"
"""Gauge: deltas queued in the FIFO (for a RealFIFO, every individual event)."""
PROCESSING_LATENCY_METRIC = "informer_processing_latency_seconds"
"""Histogram: seconds taken to process what one pop took from the queue."""
STORE_RESOURCE_VERSION_METRIC = "informer_store_resource_version"
"""Gauge: the 15 least significant digits of the store's last written resourceVersion."""
PROCESSING_LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
"""The buckets of ``processing_latency_seconds`` (component-base ``fifo/metrics.go``)."""


class InformerNameAndResource(NamedTuple):
    """Identifies an informer's FIFO and store for metrics (client-go
    ``InformerNameAndResource``): a non-empty ``name`` turns metrics on."""

    name: str
    group: str = ""
    version: str = ""
    resource: str = ""


class SettableGaugeMetric(Protocol):
    def set(self, value: float) -> None: ...


class HistogramMetric(Protocol):
    def observe(self, value: float) -> None: ...


class InformerMetricsProvider(Protocol):
    """Creates the metrics of one named informer (client-go ``InformerMetricsProvider``)."""

    def new_queued_item_metric(self, id: InformerNameAndResource) -> SettableGaugeMetric: ...

    def new_processing_latency_metric(self, id: InformerNameAndResource) -> HistogramMetric: ...

    def new_store_resource_version_metric(
        self, id: InformerNameAndResource
    ) -> SettableGaugeMetric: ...


class _Noop:
    __slots__ = ()

    def set(self, value: float) -> None:
        pass

    def observe(self, value: float) -> None:
        pass


class NoopInformerMetricsProvider:
    """The default provider: every metric is a no-op."""

    def new_queued_item_metric(self, id: InformerNameAndResource) -> SettableGaugeMetric:
        return _Noop()

    def new_processing_latency_metric(self, id: InformerNameAndResource) -> HistogramMetric:
        return _Noop()

    def new_store_resource_version_metric(
        self, id: InformerNameAndResource
    ) -> SettableGaugeMetric:
        return _Noop()


_PROVIDER: GlobalProvider[InformerMetricsProvider] = GlobalProvider(
    NoopInformerMetricsProvider()
)


def set_informer_metrics_provider(provider: InformerMetricsProvider) -> InformerMetricsProvider:
    """Use ``provider`` for FIFOs created from now on (client-go ``SetInformerMetricsProvider``,
    where only the first call counts; here a later call replaces it). Returns the previous one."""
    return _PROVIDER.set(provider)


def get_informer_metrics_provider() -> InformerMetricsProvider:
    """The provider FIFOs created now would use."""
    return _PROVIDER.get()


class FIFOMetrics:
    """The two metrics of one FIFO (client-go ``fifoMetrics``).

    Use :meth:`for_identifier`, which gives ``None`` for an unnamed identifier.
    """

    __slots__ = ("processing_latency", "queued_items")

    def __init__(
        self, queued_items: SettableGaugeMetric, processing_latency: HistogramMetric
    ) -> None:
        self.queued_items = queued_items
        self.processing_latency = processing_latency

    @classmethod
    def for_identifier(
        cls,
        id: InformerNameAndResource | None,
        provider: InformerMetricsProvider | None = None,
    ) -> FIFOMetrics | None:
        """The metrics of the FIFO ``id`` names, from ``provider`` (default: the process-wide
        one); ``None`` when ``id`` is ``None`` or its name is empty (client-go
        ``newFIFOMetrics``)."""
        if id is None or not id.name:
            return None
        if provider is None:
            provider = _PROVIDER.get()
        return cls(
            provider.new_queued_item_metric(id), provider.new_processing_latency_metric(id)
        )


def parse_rv_for_metrics(rv: str) -> int | None:
    """The 15 least significant digits of a resourceVersion as an int, or ``None`` when it is
    not a decimal number; ``""`` is 0 (client-go ``parseRVForMetricsWithTruncation``: a
    float64 holds 15 decimal digits exactly)."""
    if not rv:
        return 0
    if not rv.isdigit() or not rv.isascii():
        return None
    return int(rv[-15:])
