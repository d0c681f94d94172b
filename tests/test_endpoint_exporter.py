"""Tests of the Prometheus collector of the endpoint controller's syncs and informers."""

from __future__ import annotations

import pytest

from controllers.endpoint.exporter import EndpointControllerCollector
from controllers.endpoint.metrics import SyncMetrics
from informers.reflector import ReflectorMetrics

prometheus_client = pytest.importorskip("prometheus_client")


class _Informer:
    def __init__(self, metrics):
        self._metrics = metrics

    def reflector_metrics(self):
        return self._metrics


def _samples(registry):
    text = prometheus_client.generate_latest(registry).decode()
    return {line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
            for line in text.splitlines() if line and not line.startswith("#")}


def test_sync_and_reflector_series():
    sync = SyncMetrics(buckets=(0.01, 0.1))
    sync.observe_sync("created", 0.005)
    sync.observe_sync("updated", 0.05)
    sync.observe_sync("updated", 0.5)
    sync.observe_retry()
    sync.observe_drop()
    informers = {
        "pods": _Informer(ReflectorMetrics(lists_total=2, list_errors_total=1, watches_total=3,
                                           watch_errors_total=1, events_total=40)),
        "services": _Informer(None),  # not started yet
    }
    registry = prometheus_client.CollectorRegistry()
    registry.register(EndpointControllerCollector(sync, lambda: informers))
    informers["endpoints"] = _Informer(ReflectorMetrics(lists_total=1))  # created later
    assert _samples(registry) == {
        'endpoint_controller_syncs_total{result="created"}': 1.0,
        'endpoint_controller_syncs_total{result="updated"}': 2.0,
        'endpoint_controller_syncs_total{result="deleted"}': 0.0,
        'endpoint_controller_syncs_total{result="unchanged"}': 0.0,
        'endpoint_controller_syncs_total{result="skipped"}': 0.0,
        'endpoint_controller_syncs_total{result="error"}': 0.0,
        'endpoint_controller_sync_duration_seconds_bucket{le="0.01"}': 1.0,
        'endpoint_controller_sync_duration_seconds_bucket{le="0.1"}': 2.0,
        'endpoint_controller_sync_duration_seconds_bucket{le="+Inf"}': 3.0,
        "endpoint_controller_sync_duration_seconds_count": 3.0,
        "endpoint_controller_sync_duration_seconds_sum": pytest.approx(0.555),
        "endpoint_controller_sync_retries_total": 1.0,
        "endpoint_controller_sync_dropped_total": 1.0,
        'reflector_lists_total{name="endpoints"}': 1.0,
        'reflector_lists_total{name="pods"}': 2.0,
        'reflector_lists_total{name="services"}': 0.0,
        'reflector_list_errors_total{name="endpoints"}': 0.0,
        'reflector_list_errors_total{name="pods"}': 1.0,
        'reflector_list_errors_total{name="services"}': 0.0,
        'reflector_watches_total{name="endpoints"}': 0.0,
        'reflector_watches_total{name="pods"}': 3.0,
        'reflector_watches_total{name="services"}': 0.0,
        'reflector_watch_errors_total{name="endpoints"}': 0.0,
        'reflector_watch_errors_total{name="pods"}': 1.0,
        'reflector_watch_errors_total{name="services"}': 0.0,
        'reflector_watch_events_total{name="endpoints"}': 0.0,
        'reflector_watch_events_total{name="pods"}': 40.0,
        'reflector_watch_events_total{name="services"}': 0.0,
    }


def test_a_result_outside_the_known_ones_is_still_exported():
    sync = SyncMetrics()
    sync.observe_sync("surprise", 0.001)
    registry = prometheus_client.CollectorRegistry()
    registry.register(EndpointControllerCollector(sync, dict))
    assert _samples(registry)['endpoint_controller_syncs_total{result="surprise"}'] == 1.0
