"""Tests for informers.workqueue.metrics with a recording provider and a FakeClock."""

from __future__ import annotations

import threading

import pytest
from helpers import wait_until

from informers.clock import FakeClock
from informers.workqueue import (
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    NoopMetricsProvider,
    Queue,
    RateLimitingQueue,
    get_provider,
    set_provider,
)
from informers.workqueue.metrics import (
    ADDS_METRIC,
    DEPTH_METRIC,
    DURATION_BUCKETS,
    LONGEST_RUNNING_PROCESSOR_METRIC,
    QUEUE_LATENCY_METRIC,
    RETRIES_METRIC,
    UNFINISHED_WORK_METRIC,
    WORK_DURATION_METRIC,
    QueueMetrics,
    new_queue_metrics,
)


class Metric:
    def __init__(self) -> None:
        self.value = 0.0
        self.observations: list[float] = []
        self.sets: list[float] = []

    def inc(self) -> None:
        self.value += 1

    def dec(self) -> None:
        self.value -= 1

    def set(self, value: float) -> None:
        self.value = value
        self.sets.append(value)

    def observe(self, value: float) -> None:
        self.observations.append(value)


class RecordingProvider:
    def __init__(self) -> None:
        self.created: list[tuple[str, str]] = []
        self.metrics: dict[tuple[str, str], Metric] = {}

    def _new(self, kind: str, name: str) -> Metric:
        self.created.append((kind, name))
        return self.metrics.setdefault((kind, name), Metric())

    def new_depth_metric(self, name):
        return self._new("depth", name)

    def new_adds_metric(self, name):
        return self._new("adds", name)

    def new_latency_metric(self, name):
        return self._new("latency", name)

    def new_work_duration_metric(self, name):
        return self._new("work_duration", name)

    def new_unfinished_work_seconds_metric(self, name):
        return self._new("unfinished", name)

    def new_longest_running_processor_seconds_metric(self, name):
        return self._new("longest", name)

    def new_retries_metric(self, name):
        return self._new("retries", name)

    def __getitem__(self, key: tuple[str, str]) -> Metric:
        return self.metrics[key]


def metric_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"workqueue-metrics-{name}"]


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def provider():
    return RecordingProvider()


def test_metric_names_and_buckets_match_client_go():
    assert DEPTH_METRIC == "workqueue_depth"
    assert ADDS_METRIC == "workqueue_adds_total"
    assert QUEUE_LATENCY_METRIC == "workqueue_queue_duration_seconds"
    assert WORK_DURATION_METRIC == "workqueue_work_duration_seconds"
    assert UNFINISHED_WORK_METRIC == "workqueue_unfinished_work_seconds"
    assert LONGEST_RUNNING_PROCESSOR_METRIC == "workqueue_longest_running_processor_seconds"
    assert RETRIES_METRIC == "workqueue_retries_total"
    # ExponentialBuckets(10e-9, 10, 10), with Go's float64 rounding (as kube's /metrics shows)
    assert DURATION_BUCKETS == (
        1e-08, 1e-07, 1e-06, 9.999999999999999e-06, 9.999999999999999e-05,
        0.001, 0.01, 0.1, 1.0, 10.0,
    )


def test_queue_creates_one_metric_of_each_kind_named_after_it(provider, clock):
    q = Queue("pods", metrics_provider=provider, clock=clock)
    q.shut_down()
    assert sorted(provider.created) == sorted(
        (kind, "pods")
        for kind in (
            "depth", "adds", "latency", "work_duration", "unfinished", "longest", "retries",
        )
    )


def test_adds_depth_latency_and_work_duration(provider, clock):
    q = Queue("q", metrics_provider=provider, clock=clock)
    try:
        q.add("a")
        q.add("b")
        q.add("a")  # coalesced: not an add
        assert provider["adds", "q"].value == 2
        assert provider["depth", "q"].value == 2
        clock.step(1)
        assert q.get() == ("a", False)
        assert provider["depth", "q"].value == 1
        assert provider["latency", "q"].observations == [1.0]
        clock.step(2)
        q.add("a")  # dirty while processing: counted, depth includes it
        assert provider["adds", "q"].value == 3
        assert provider["depth", "q"].value == 2
        q.done("a")
        assert provider["work_duration", "q"].observations == [2.0]
        assert q.get() == ("b", False)
        assert q.get() == ("a", False)
        assert provider["depth", "q"].value == 0
        assert provider["latency", "q"].observations == [1.0, 3.0, 0.0]
        clock.step(0.5)
        q.done("b")
        q.done("a")
        assert provider["work_duration", "q"].observations == [2.0, 0.5, 0.5]
        q.done("a")  # not processing: no observation
        assert provider["work_duration", "q"].observations == [2.0, 0.5, 0.5]
    finally:
        q.shut_down()


def test_unfinished_work_and_longest_running_processor_update_every_half_second(provider, clock):
    q = Queue("slow", metrics_provider=provider, clock=clock)
    try:
        q.add("a")
        q.add("b")
        assert q.get() == ("a", False)
        assert clock.wait_for_waiters(1)
        wait_until(lambda: clock.next_deadline() == 0.5)
        clock.step(0.5)
        wait_until(lambda: provider["unfinished", "slow"].sets == [0.5])
        assert provider["longest", "slow"].sets == [0.5]
        assert q.get() == ("b", False)  # started at 0.5
        wait_until(lambda: clock.next_deadline() == 1.0)
        clock.step(0.5)
        wait_until(lambda: len(provider["unfinished", "slow"].sets) == 2)
        assert provider["unfinished", "slow"].sets == [0.5, 1.5]
        assert provider["longest", "slow"].sets == [0.5, 1.0]
        q.done("a")
        q.done("b")
        wait_until(lambda: clock.next_deadline() == 1.5)
        clock.step(0.5)
        wait_until(lambda: len(provider["unfinished", "slow"].sets) == 3)
        assert provider["unfinished", "slow"].sets[-1] == 0.0
        assert provider["longest", "slow"].sets[-1] == 0.0
    finally:
        q.shut_down()


def test_update_unfinished_work_computes_total_and_oldest(provider, clock):
    metrics = QueueMetrics("m", provider, clock)
    metrics.add("a")
    metrics.get("a")
    clock.step(2)
    metrics.add("b")
    metrics.get("b")
    clock.step(1)
    metrics.update_unfinished_work()
    assert provider["unfinished", "m"].value == 4.0  # 3 s + 1 s
    assert provider["longest", "m"].value == 3.0


def test_metrics_thread_is_named_and_stops_at_shutdown(provider, clock):
    q = Queue("stopper", metrics_provider=provider, clock=clock)
    (thread,) = metric_threads("stopper")
    assert thread.daemon is True
    q.shut_down()
    assert not thread.is_alive()


def test_metrics_thread_stops_at_shutdown_with_drain(provider, clock):
    q = Queue("drainer", metrics_provider=provider, clock=clock)
    (thread,) = metric_threads("drainer")
    q.shut_down_with_drain()
    assert not thread.is_alive()


def test_retries_count_every_add_after_call_until_shutdown(provider, clock):
    q = DelayingQueue("d", metrics_provider=provider, clock=clock)
    q.add_after("a", 0)
    q.add_after("b", 1)
    q.add_after("b", 2)
    assert provider["retries", "d"].value == 3
    assert provider["adds", "d"].value == 1
    q.shut_down()
    q.add_after("c", 1)
    q.add_after("c", 0)
    assert provider["retries", "d"].value == 3


def test_add_rate_limited_counts_a_retry(provider, clock):
    q = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(0.0, 0.0), name="r", metrics_provider=provider,
        clock=clock,
    )
    try:
        q.add_rate_limited("a")
        q.add_rate_limited("a")
        assert provider["retries", "r"].value == 2
        assert provider["adds", "r"].value == 1
        assert provider["depth", "r"].value == 1
    finally:
        q.shut_down()


def test_metrics_are_off_for_an_unnamed_queue(provider, clock):
    q = DelayingQueue("", metrics_provider=provider, clock=clock)
    q.add("a")
    q.add_after("b", 0)
    q.get()
    q.done("a")
    q.shut_down()
    assert provider.created == []
    assert q._metrics is None
    assert q._metrics_thread is None


def test_metrics_are_off_with_the_noop_provider(clock):
    assert new_queue_metrics("x", NoopMetricsProvider(), clock) is None
    q = Queue("noop-queue", clock=clock)  # the global default is the no-op provider
    assert q._metrics is None
    assert metric_threads("noop-queue") == []
    q.shut_down()


def test_noop_metrics_accept_every_call():
    provider = NoopMetricsProvider()
    provider.new_depth_metric("x").inc()
    provider.new_depth_metric("x").dec()
    provider.new_unfinished_work_seconds_metric("x").set(1.0)
    provider.new_latency_metric("x").observe(1.0)
    provider.new_retries_metric("x").inc()


def test_set_provider_applies_to_queues_created_afterwards(provider, clock):
    before = Queue("global", clock=clock)
    previous = set_provider(provider)
    try:
        assert isinstance(previous, NoopMetricsProvider)
        assert get_provider() is provider
        after = Queue("global", clock=clock)
        before.add("a")
        after.add("a")
        assert provider["adds", "global"].value == 1  # only the queue created after
        after.shut_down()
    finally:
        assert set_provider(previous) is provider
        before.shut_down()
    assert get_provider() is previous
