"""Exports the endpoint controller's sync metrics and reflector counts to Prometheus.

A ``prometheus_client`` custom collector: every scrape reads a consistent
:meth:`~controllers.endpoint.metrics.SyncMetrics.snapshot` and the informers'
:class:`~informers.reflector.ReflectorMetrics`, so nothing is updated on the hot path.
Series (all created at zero, so they exist before the first sync):

* ``endpoint_controller_syncs_total{result}``: syncs by result (one of
  :data:`~controllers.endpoint.metrics.SYNC_RESULTS`);
* ``endpoint_controller_sync_duration_seconds``: histogram of sync durations;
* ``endpoint_controller_sync_retries_total`` / ``endpoint_controller_sync_dropped_total``:
  failed syncs re-queued with rate limiting, and keys dropped after their last retry;
* ``reflector_lists_total{name}``, ``reflector_list_errors_total{name}``,
  ``reflector_watches_total{name}``, ``reflector_watch_errors_total{name}``,
  ``reflector_watch_events_total{name}`` (added when each watch ends): per informer
  (``name`` is the resource, e.g. ``pods``); the names of client-go's former reflector
  metrics (``reflector_lists_total``, ``reflector_watches_total``, removed in 1.18) where one
  existed.

The work-queue series (``workqueue_depth{name="endpoint"}``, ...) come from the queue itself
through :class:`informers.workqueue.PrometheusMetricsProvider`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from controllers.endpoint.metrics import SYNC_RESULTS, SyncMetrics

__all__ = ["EndpointControllerCollector"]

InformersSource = Callable[[], Mapping[str, Any]]
"""Returns the informers to report, by name (e.g. ``SharedInformerFactory.informers``)."""

_REFLECTOR_COUNTERS = (
    ("reflector_lists", "lists_total", "Total number of list operations of a reflector."),
    ("reflector_list_errors", "list_errors_total", "Total number of failed list operations."),
    ("reflector_watches", "watches_total", "Total number of watch requests of a reflector."),
    ("reflector_watch_errors", "watch_errors_total", "Total number of failed watches."),
    ("reflector_watch_events", "events_total",
     "Total number of watch events received, counted when each watch ends."),
)


def _bound(value: float) -> str:
    return "+Inf" if math.isinf(value) else repr(float(value))


class EndpointControllerCollector:
    """Collects the sync metrics of one controller and the counters of a set of informers.

    Thread safety: :meth:`collect` runs in a scrape's thread and only reads snapshots.
    Register it with ``registry.register(collector)``; one per registry.

    Args:
        sync_metrics: the controller's :class:`SyncMetrics`.
        informers: returns the informers to report by name, read at every scrape (so
            informers created later are included).
    """

    def __init__(self, sync_metrics: SyncMetrics, informers: InformersSource) -> None:
        self._sync_metrics = sync_metrics
        self._informers = informers

    def collect(self) -> Iterator[Any]:
        """Yield the metric families (prometheus_client's collector protocol)."""
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        snap = self._sync_metrics.snapshot()
        syncs = CounterMetricFamily(
            "endpoint_controller_syncs", "Total number of Endpoints syncs by result.",
            labels=["result"],
        )
        results = list(SYNC_RESULTS) + sorted(set(snap.syncs) - set(SYNC_RESULTS))
        for result in results:
            syncs.add_metric([result], snap.syncs.get(result, 0))
        yield syncs
        yield HistogramMetricFamily(
            "endpoint_controller_sync_duration_seconds",
            "How long one Endpoints sync takes, in seconds.",
            buckets=[(_bound(le), count) for le, count in snap.duration.buckets],
            sum_value=snap.duration.sum,
        )
        yield CounterMetricFamily(
            "endpoint_controller_sync_retries",
            "Total number of failed syncs re-queued with rate limiting.", value=snap.retries,
        )
        yield CounterMetricFamily(
            "endpoint_controller_sync_dropped",
            "Total number of Services dropped from the queue after their last retry.",
            value=snap.dropped,
        )

        families = {
            attr: CounterMetricFamily(name, help_text, labels=["name"])
            for name, attr, help_text in _REFLECTOR_COUNTERS
        }
        for name, informer in sorted(self._informers().items()):
            get_metrics = getattr(informer, "reflector_metrics", None)
            counters = get_metrics() if callable(get_metrics) else None
            for attr, family in families.items():
                family.add_metric([name], getattr(counters, attr, 0) if counters else 0)
        yield from families.values()
