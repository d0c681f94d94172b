"""Tests for informers.workqueue.prometheus_metrics on a fresh CollectorRegistry."""

from __future__ import annotations

import sys

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from informers.clock import FakeClock
from informers.workqueue import DelayingQueue, PrometheusMetricsProvider, Queue


@pytest.fixture
def registry():
    return CollectorRegistry()


def test_families_are_registered_with_client_go_names(registry):
    PrometheusMetricsProvider(registry)
    families = {family.name: family.type for family in registry.collect()}
    assert families == {
        "workqueue_depth": "gauge",
        "workqueue_adds": "counter",  # exposed as workqueue_adds_total
        "workqueue_queue_duration_seconds": "histogram",
        "workqueue_work_duration_seconds": "histogram",
        "workqueue_unfinished_work_seconds": "gauge",
        "workqueue_longest_running_processor_seconds": "gauge",
        "workqueue_retries": "counter",  # exposed as workqueue_retries_total
    }


def test_queue_operations_reach_prometheus(registry):
    clock = FakeClock()
    provider = PrometheusMetricsProvider(registry)
    q = DelayingQueue("pods", metrics_provider=provider, clock=clock)
    try:
        q.add("a")
        q.add("b")
        q.add("a")
        clock.step(0.25)
        assert q.get() == ("a", False)
        clock.step(2)
        q.done("a")
        q.add_after("c", 0)
        q.add_after("d", 60)

        def sample(name, **labels):
            return registry.get_sample_value(name, {"name": "pods", **labels})

        assert sample("workqueue_adds_total") == 3.0
        assert sample("workqueue_depth") == 2.0
        assert sample("workqueue_retries_total") == 2.0
        assert sample("workqueue_queue_duration_seconds_count") == 1.0
        assert sample("workqueue_queue_duration_seconds_sum") == 0.25
        assert sample("workqueue_queue_duration_seconds_bucket", le="0.1") == 0.0
        assert sample("workqueue_queue_duration_seconds_bucket", le="1.0") == 1.0
        assert sample("workqueue_work_duration_seconds_count") == 1.0
        assert sample("workqueue_work_duration_seconds_sum") == 2.0
        assert sample("workqueue_work_duration_seconds_bucket", le="9.999999999999999e-06") == 0
        assert sample("workqueue_work_duration_seconds_bucket", le="10.0") == 1.0
        text = generate_latest(registry).decode()
        assert 'workqueue_adds_total{name="pods"} 3.0' in text
        assert 'workqueue_depth{name="pods"} 2.0' in text
    finally:
        q.shut_down()


def test_queues_with_the_same_name_share_series(registry):
    provider = PrometheusMetricsProvider(registry)
    first = Queue("shared", metrics_provider=provider)
    second = Queue("shared", metrics_provider=provider)
    other = Queue("other", metrics_provider=provider)
    try:
        first.add("a")
        second.add("a")
        other.add("a")
        assert registry.get_sample_value("workqueue_adds_total", {"name": "shared"}) == 2.0
        assert registry.get_sample_value("workqueue_adds_total", {"name": "other"}) == 1.0
    finally:
        for q in (first, second, other):
            q.shut_down()


def test_second_provider_on_one_registry_fails(registry):
    PrometheusMetricsProvider(registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        PrometheusMetricsProvider(registry)


def test_default_registry_is_prometheus_client_registry():
    provider = PrometheusMetricsProvider()
    try:
        assert provider.registry is prometheus_client.REGISTRY
        names = {f.name for f in prometheus_client.REGISTRY.collect()}
        assert "workqueue_depth" in names
    finally:
        for metric in (
            provider._depth, provider._adds, provider._latency, provider._work_duration,
            provider._unfinished, provider._longest, provider._retries,
        ):
            prometheus_client.REGISTRY.unregister(metric)


def test_missing_prometheus_client_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(ImportError, match=r"kube-informers\[metrics\]"):
        PrometheusMetricsProvider()
