"""Tests for informers.leaderelection.metrics."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from informers.leaderelection import LeaderElector, LeaseLock
from informers.leaderelection.metrics import (
    NoopMetricsProvider,
    PrometheusMetricsProvider,
    get_provider,
    set_provider,
)


def _noop(*_args):
    pass


def test_default_provider_is_noop_and_replaceable():
    assert isinstance(get_provider(), NoopMetricsProvider)
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    previous = set_provider(provider)
    try:
        assert get_provider() is provider
        LeaderElector(
            LeaseLock(None, "ns", "l", "me"),
            on_started_leading=_noop,
            on_stopped_leading=_noop,
            name="global",
        )
        # An elector starts as "not leader" for its name.
        assert registry.get_sample_value(
            "leader_election_master_status", {"name": "global"}
        ) == 0
    finally:
        assert set_provider(previous) is provider
    assert get_provider() is previous


def test_prometheus_metrics_on_off_and_slowpath():
    registry = CollectorRegistry()
    metric = PrometheusMetricsProvider(registry).new_leader_metric()
    metric.on("a")
    metric.off("b")
    metric.slowpath_exercised("a")
    metric.slowpath_exercised("a")
    assert registry.get_sample_value("leader_election_master_status", {"name": "a"}) == 1
    assert registry.get_sample_value("leader_election_master_status", {"name": "b"}) == 0
    assert registry.get_sample_value("leader_election_slowpath_total", {"name": "a"}) == 2
    metric.off("a")
    assert registry.get_sample_value("leader_election_master_status", {"name": "a"}) == 0


def test_providers_on_one_registry_share_the_families():
    registry = CollectorRegistry()
    first = PrometheusMetricsProvider(registry).new_leader_metric()
    second = PrometheusMetricsProvider(registry).new_leader_metric()  # no duplicate error
    first.slowpath_exercised("x")
    second.slowpath_exercised("x")
    assert registry.get_sample_value("leader_election_slowpath_total", {"name": "x"}) == 2


def test_noop_metric_accepts_every_call():
    metric = NoopMetricsProvider().new_leader_metric()
    metric.on("a")
    metric.off("a")
    metric.slowpath_exercised("a")
