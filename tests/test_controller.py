"""Tests for informers.controller.controller: result handling, retries, sync wait, drain.

Delays and backoff run on a FakeClock: a test waits until the controller's queue waits for the
expected deadline (``expect_wait``) and then steps the clock by exactly that much.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

import pytest
from runtime_drivers import DRIVERS, ControllerDriver

from informers.clock import FakeClock
from informers.controller import (
    DEFAULT_MAX_RETRIES,
    LEADERSHIP_POLL,
    Controller,
    EnqueueRequestForObject,
    GenerationChangedPredicate,
    PrometheusMetricsProvider,
    Result,
    TerminalError,
)
from informers.errors import AlreadyStartedError
from informers.workqueue import ItemExponentialFailureRateLimiter, NoopMetricsProvider
from informers.workqueue.delaying_queue import MAX_WAIT


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.001)


def expect_wait(clock: FakeClock, delay: float) -> None:
    """Wait until the earliest pending deadline on ``clock`` is exactly ``delay`` from now."""

    def ok():
        nd = clock.next_deadline()
        return nd is not None and abs(nd - (clock.now() + delay)) < 1e-9

    wait_until(ok)


def advance(clock: FakeClock, delay: float) -> None:
    """``expect_wait(clock, delay)``, then move the clock exactly onto that deadline."""
    expect_wait(clock, delay)
    clock.set(clock.next_deadline())


def alive_workers(name: str) -> int:
    prefix = f"controller-{name}-worker-"
    return sum(t.name.startswith(prefix) and t.is_alive() for t in threading.enumerate())


class RecordingMetrics:
    def __init__(self, workers):
        self.workers = workers
        self.results = Counter()
        self.errors = 0
        self.terminal = 0
        self.dropped_count = 0
        self.active = 0
        self.durations = []

    def reconciled(self, result, seconds):
        self.results[result] += 1
        self.durations.append(seconds)

    def reconcile_error(self, terminal):
        self.errors += 1
        self.terminal += int(terminal)

    def dropped(self):
        self.dropped_count += 1

    def active_workers(self, delta):
        self.active += delta


class RecordingProvider:
    def __init__(self):
        self.metrics = {}

    def new_controller_metrics(self, controller, workers):
        m = self.metrics[controller] = RecordingMetrics(workers)
        return m

    def workqueue_metrics_provider(self):
        return NoopMetricsProvider()


class Runner:
    """Runs ``controller.run`` on a thread; ``stop()`` sets the event and joins."""

    def __init__(self, controller):
        self.controller = controller
        self.stop_event = threading.Event()
        self.returned = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.returned = self.controller.run(self.stop_event)

    def stop(self, timeout=10.0):
        self.stop_event.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive()
        return self.returned


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def provider():
    return RecordingProvider()


# -- result handling ---------------------------------------------------------------------------


def test_success_forgets_the_key(clock, provider):
    calls = []

    def reconcile(key):
        calls.append((key, clock.now()))
        if len(calls) == 1:
            raise RuntimeError("first attempt fails")
        return None

    c = Controller("fg", reconcile, clock=clock, metrics=provider)
    c.enqueue("ns/a")
    r = Runner(c)
    try:
        wait_until(lambda: len(calls) == 1)
        wait_until(lambda: c.queue.num_requeues("ns/a") == 1)
        advance(clock, 0.005)
        wait_until(lambda: provider.metrics["fg"].results["success"] == 1)
        assert calls == [("ns/a", 0.0), ("ns/a", 0.005)]
        assert c.queue.num_requeues("ns/a") == 0
        assert len(c.queue) == 0
        # Nothing is scheduled any more: only the delaying queue's heartbeat waits.
        expect_wait(clock, MAX_WAIT)
    finally:
        assert r.stop() == ()
    m = provider.metrics["fg"]
    assert m.results == Counter({"error": 1, "success": 1})
    assert (m.errors, m.terminal, m.dropped_count, m.active) == (1, 0, 0, 0)


def test_result_zero_is_success(clock, provider):
    done = threading.Event()

    def reconcile(key):
        done.set()
        return Result()

    c = Controller("zero", reconcile, clock=clock, metrics=provider)
    c.enqueue("a")
    r = Runner(c)
    try:
        assert done.wait(5)
        wait_until(lambda: provider.metrics["zero"].results["success"] == 1)
    finally:
        r.stop()
    assert provider.metrics["zero"].results == Counter({"success": 1})


def test_requeue_after_forgets_and_adds_after_the_delay(clock, provider):
    calls = []

    def reconcile(key):
        calls.append(clock.now())
        if len(calls) == 1:
            raise RuntimeError("transient")
        if len(calls) == 2:
            return Result(requeue_after=7.5)
        return None

    c = Controller("ra", reconcile, clock=clock, metrics=provider)
    c.enqueue("ns/a")
    r = Runner(c)
    try:
        advance(clock, 0.005)
        wait_until(lambda: len(calls) == 2)
        expect_wait(clock, 7.5)
        assert c.queue.num_requeues("ns/a") == 0  # forgotten: the failure count is reset
        clock.step(7.4)
        expect_wait(clock, 0.1)
        assert len(calls) == 2
        advance(clock, 0.1)
        wait_until(lambda: len(calls) == 3)
        wait_until(lambda: provider.metrics["ra"].results["success"] == 1)
    finally:
        r.stop()
    assert calls == pytest.approx([0.0, 0.005, 7.505], abs=1e-9)
    assert provider.metrics["ra"].results == Counter(
        {"error": 1, "requeue_after": 1, "success": 1}
    )


def test_requeue_true_uses_the_rate_limiter(clock, provider):
    calls = []

    def reconcile(key):
        calls.append(clock.now())
        return Result(requeue=True) if len(calls) < 3 else None

    c = Controller("rq", reconcile, clock=clock, metrics=provider)
    c.enqueue("a")
    r = Runner(c)
    try:
        expect_wait(clock, 0.005)
        assert c.queue.num_requeues("a") == 1
        advance(clock, 0.005)
        wait_until(lambda: len(calls) == 2)
        expect_wait(clock, 0.01)
        assert c.queue.num_requeues("a") == 2
        advance(clock, 0.01)
        wait_until(lambda: provider.metrics["rq"].results["success"] == 1)
        assert c.queue.num_requeues("a") == 0
    finally:
        r.stop()
    assert calls == pytest.approx([0.0, 0.005, 0.015], abs=1e-9)
    assert provider.metrics["rq"].results == Counter({"requeue": 2, "success": 1})


def test_retry_with_default_backoff_then_drop(clock, provider, caplog):
    calls = []

    def reconcile(key):
        calls.append(clock.now())
        raise RuntimeError("boom")

    c = Controller("bo", reconcile, clock=clock, metrics=provider, max_retries=4)
    c.enqueue("ns/a")
    r = Runner(c)
    try:
        # client-go DefaultControllerRateLimiter: 5 ms doubling per failure.
        for i, delay in enumerate([0.005, 0.01, 0.02, 0.04], start=1):
            wait_until(lambda i=i: len(calls) == i)
            advance(clock, delay)
        wait_until(lambda: provider.metrics["bo"].dropped_count == 1)
        assert c.queue.num_requeues("ns/a") == 0
        expect_wait(clock, MAX_WAIT)
        clock.step(1000.0)
        expect_wait(clock, MAX_WAIT)
        assert len(calls) == 5
        assert len(c.queue) == 0
    finally:
        r.stop()
    assert calls == pytest.approx([0.0, 0.005, 0.015, 0.035, 0.075], abs=1e-9)
    m = provider.metrics["bo"]
    assert m.results == Counter({"error": 5})
    assert (m.errors, m.terminal, m.dropped_count) == (5, 0, 1)
    dropped = [r for r in caplog.records if "dropping ns/a out of the queue" in r.getMessage()]
    assert len(dropped) == 1
    assert dropped[0].levelno == logging.ERROR
    assert "after 4 retries: boom" in dropped[0].getMessage()


def test_always_failing_reconcile_is_bounded_by_default_max_retries(clock, provider):
    calls = []

    def reconcile(key):
        calls.append(clock.now())
        raise ValueError("never works")

    # Delays 1 ms doubling, capped at 1 s: every wait is shorter than the queue's heartbeat.
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    c = Controller("bound", reconcile, clock=clock, metrics=provider, rate_limiter=limiter)
    assert c.max_retries == DEFAULT_MAX_RETRIES == 15
    c.enqueue("k")
    r = Runner(c)
    try:
        # No busy loop: without a clock step there is exactly one call.
        wait_until(lambda: len(calls) == 1)
        time.sleep(0.05)
        assert len(calls) == 1
        delays = [min(0.001 * 2**i, 1.0) for i in range(15)]
        for i, delay in enumerate(delays, start=1):
            wait_until(lambda i=i: len(calls) == i)
            advance(clock, delay)
        wait_until(lambda: provider.metrics["bound"].dropped_count == 1)
        for _ in range(5):
            advance(clock, MAX_WAIT)
        expect_wait(clock, MAX_WAIT)
    finally:
        r.stop()
    assert len(calls) == 16
    assert provider.metrics["bound"].results == Counter({"error": 16})


def test_unlimited_retries_with_max_retries_none(clock, provider):
    calls = []

    def reconcile(key):
        calls.append(clock.now())
        raise RuntimeError("x")

    limiter = ItemExponentialFailureRateLimiter(0.5, 0.5)
    c = Controller("inf", reconcile, clock=clock, metrics=provider, max_retries=None,
                   rate_limiter=limiter)
    c.enqueue("k")
    r = Runner(c)
    try:
        for i in range(1, 31):
            wait_until(lambda i=i: len(calls) == i)
            advance(clock, 0.5)
        wait_until(lambda: len(calls) == 31)
    finally:
        r.stop()
    assert provider.metrics["inf"].dropped_count == 0
    assert c.queue.num_requeues("k") == 31


def test_terminal_error_is_not_retried(clock, provider, caplog):
    calls = []

    def reconcile(key):
        calls.append(key)
        raise TerminalError("spec is invalid")

    c = Controller("term", reconcile, clock=clock, metrics=provider)
    c.enqueue("ns/bad")
    r = Runner(c)
    try:
        wait_until(lambda: provider.metrics["term"].terminal == 1)
        expect_wait(clock, MAX_WAIT)
        clock.step(100.0)
        expect_wait(clock, MAX_WAIT)
        assert calls == ["ns/bad"]
        assert c.queue.num_requeues("ns/bad") == 0
        # A new event enqueues it again.
        c.enqueue("ns/bad")
        wait_until(lambda: len(calls) == 2)
    finally:
        r.stop()
    m = provider.metrics["term"]
    assert m.results == Counter({"error": 2})
    assert (m.errors, m.terminal, m.dropped_count) == (2, 2, 0)
    assert any(
        "terminal error reconciling ns/bad, not retrying: spec is invalid" in r.getMessage()
        for r in caplog.records
    )


def test_a_wrong_return_value_counts_as_an_error(clock, provider):
    calls = []

    def reconcile(key):
        calls.append(key)
        return 42 if len(calls) == 1 else None

    c = Controller("wrong", reconcile, clock=clock, metrics=provider)
    c.enqueue("a")
    r = Runner(c)
    try:
        advance(clock, 0.005)
        wait_until(lambda: provider.metrics["wrong"].results["success"] == 1)
    finally:
        r.stop()
    assert provider.metrics["wrong"].results == Counter({"error": 1, "success": 1})


def test_result_validation():
    assert Result().is_zero()
    assert not Result(requeue=True).is_zero()
    assert not Result(requeue_after=1).is_zero()
    for bad in (-1.0, float("nan"), float("inf"), "5"):
        with pytest.raises(ValueError):
            Result(requeue_after=bad)


# -- concurrency -------------------------------------------------------------------------------


def test_no_concurrent_reconcile_of_one_key_under_many_workers():
    lock = threading.Lock()
    active: set[str] = set()
    violations = []
    counts = Counter()
    peak = [0]

    def reconcile(key):
        with lock:
            if key in active:
                violations.append(key)
            active.add(key)
            peak[0] = max(peak[0], len(active))
            counts[key] += 1
        time.sleep(0.0005)
        with lock:
            active.discard(key)

    keys = [f"ns/k{i}" for i in range(6)]
    c = Controller("conc", reconcile, workers=8, metrics=RecordingProvider())

    def producer(seed):
        for i in range(500):
            c.enqueue(keys[(i + seed) % len(keys)])

    r = Runner(c)
    try:
        producers = [threading.Thread(target=producer, args=(s,)) for s in range(4)]
        for t in producers:
            t.start()
        for t in producers:
            t.join()
        # Every key is reconciled after its last add: the queue ends empty and idle.
        final = Counter(counts)
        for key in keys:
            c.enqueue(key)
        wait_until(lambda: all(counts[k] > final[k] for k in keys))
    finally:
        r.stop()
    assert violations == []
    assert peak[0] > 1  # different keys did run in parallel
    assert set(counts) == set(keys)


# -- cache sync --------------------------------------------------------------------------------


class FakeSynced:
    def __init__(self):
        self.synced = False
        self.polls = 0

    def has_synced(self):
        self.polls += 1
        return self.synced


def test_no_reconcile_before_the_caches_synced(clock, provider):
    calls = []
    informer = FakeSynced()
    c = Controller("sync", lambda k: calls.append(k), informers=[informer], clock=clock,
                   metrics=provider)
    c.enqueue("a")
    r = Runner(c)
    try:
        for _ in range(5):
            advance(clock, 0.1)  # wait_for_cache_sync polls every 100 ms
        time.sleep(0.05)
        assert calls == []
        assert informer.polls >= 5
        informer.synced = True
        advance(clock, 0.1)
        wait_until(lambda: calls == ["a"])
    finally:
        r.stop()


def test_stop_before_the_caches_synced_reconciles_nothing(clock, provider):
    calls = []
    c = Controller("nosync", lambda k: calls.append(k), informers=[FakeSynced()], clock=clock,
                   metrics=provider)
    c.enqueue("a")
    r = Runner(c)
    expect_wait(clock, 0.1)
    assert r.stop() == ()
    assert calls == []
    assert c.queue.shutting_down()


class FakeRegistration:
    def __init__(self):
        self.synced = False

    def has_synced(self):
        return self.synced


class FakeInformer:
    def __init__(self):
        self.handlers = []
        self.registration = FakeRegistration()

    def add_event_handler(self, handler, resync_period=None):
        self.handlers.append((handler, resync_period))
        return self.registration

    def has_synced(self):
        return True


def test_watch_waits_for_the_registration_and_wires_events(clock, provider):
    calls = []
    c = Controller("watch", lambda k: calls.append(k), clock=clock, metrics=provider)
    inf = FakeInformer()
    reg = c.watch(inf, EnqueueRequestForObject, GenerationChangedPredicate())
    assert reg is inf.registration
    (handler, resync), = inf.handlers
    assert resync is None
    old = {"metadata": {"name": "a", "namespace": "ns", "generation": 1}}
    new = {"metadata": {"name": "a", "namespace": "ns", "generation": 1, "labels": {"x": "y"}}}
    handler.on_update(old, new)  # same generation: filtered out
    assert len(c.queue) == 0
    handler.on_add(old, True)
    assert len(c.queue) == 1
    r = Runner(c)
    try:
        advance(clock, 0.1)
        expect_wait(clock, 0.1)
        assert calls == []
        inf.registration.synced = True
        advance(clock, 0.1)
        wait_until(lambda: calls == ["ns/a"])
    finally:
        r.stop()
    with pytest.raises(AlreadyStartedError):
        c.watch(inf, EnqueueRequestForObject)


def test_watch_accepts_a_handler_instance_and_a_resync_period(provider):
    c = Controller("inst", lambda k: None, metrics=provider)
    inf = FakeInformer()
    handler = EnqueueRequestForObject(c)
    c.watch(inf, handler, resync_period=30.0)
    assert inf.handlers == [(handler, 30.0)]


# -- stopping ----------------------------------------------------------------------------------


def test_stop_drains_the_reconcile_in_flight_and_skips_queued_keys(clock, provider):
    entered = threading.Event()
    release = threading.Event()
    calls = []

    def reconcile(key):
        calls.append(key)
        entered.set()
        release.wait(10)

    c = Controller("drain", reconcile, clock=clock, metrics=provider, drain_timeout=30.0)
    c.enqueue("a")
    c.enqueue("b")
    r = Runner(c)
    assert entered.wait(5)
    r.stop_event.set()
    expect_wait(clock, 30.0)  # the drain waits, at most 30 s on the controller's clock
    assert r.thread.is_alive()
    release.set()
    r.thread.join(5)
    assert not r.thread.is_alive()
    assert r.returned == ()
    assert c.hanging_keys == ()
    assert calls == ["a"]  # "b" was queued when the stop came: not started
    assert clock.now() == 0.0  # returned because the reconcile finished, not by the timeout
    assert provider.metrics["drain"].results == Counter({"success": 1})
    assert c.queue.shutting_down()
    c.enqueue("c")
    assert len(c.queue) == 0  # adds after a stop are ignored


# -- leadership ----------------------------------------------------------------------------------


def test_no_key_is_handed_out_while_leadership_is_in_doubt(clock, provider):
    leading = threading.Event()
    leading.set()
    calls = []
    c = Controller("gate", calls.append, clock=clock, metrics=provider, workers=2,
                   leader_check=leading.is_set)
    c.enqueue("a")
    r = Runner(c)
    try:
        wait_until(lambda: calls == ["a"])
        leading.clear()  # e.g. the renewal is overdue
        c.enqueue("b")  # a worker blocked in get() receives it, and puts it back
        expect_wait(clock, LEADERSHIP_POLL)
        wait_until(lambda: clock.waiter_count() >= 3)  # both workers poll, plus the queue
        for _ in range(3):
            advance(clock, LEADERSHIP_POLL)
            wait_until(lambda: clock.waiter_count() >= 3)
            expect_wait(clock, LEADERSHIP_POLL)
        assert calls == ["a"]
        assert len(c.queue) == 1 and c.queue.num_requeues("b") == 0
        leading.set()  # a renewal confirmed it
        advance(clock, LEADERSHIP_POLL)
        wait_until(lambda: calls == ["a", "b"])
        leading.clear()
        c.enqueue("c")
        expect_wait(clock, LEADERSHIP_POLL)
    finally:
        assert r.stop() == ()  # workers waiting for leadership stop at once
    assert calls == ["a", "b"]
    assert clock.now() == pytest.approx(4 * LEADERSHIP_POLL)  # the stop waited for no poll
    assert provider.metrics["gate"].results == Counter({"success": 2})
    assert alive_workers("gate") == 0


def test_a_key_taken_as_leadership_lapses_is_put_back(clock, provider):
    # The check before get(), the one after it, then the one of the wait that follows.
    answers = iter([True, False, False])

    def check():
        return next(answers, True)

    calls = []
    c = Controller("putback", calls.append, clock=clock, metrics=provider, leader_check=check)
    c.enqueue("a")
    r = Runner(c)
    try:
        expect_wait(clock, LEADERSHIP_POLL)  # "a" was taken, put back, and the worker waits
        assert calls == [] and len(c.queue) == 1
        advance(clock, LEADERSHIP_POLL)
        wait_until(lambda: calls == ["a"])
    finally:
        r.stop()
    assert c.queue.num_requeues("a") == 0


def test_a_hanging_reconcile_is_reported_and_stop_completes(clock, provider, caplog):
    entered = threading.Event()
    release = threading.Event()

    def reconcile(key):
        entered.set()
        release.wait(30)

    c = Controller("hang", reconcile, clock=clock, metrics=provider, workers=3,
                   drain_timeout=12.0)
    c.enqueue("ns/stuck")
    r = Runner(c)
    try:
        assert entered.wait(5)
        r.stop_event.set()
        expect_wait(clock, 12.0)
        # The idle workers have exited; only the stuck one remains.
        wait_until(lambda: alive_workers("hang") == 1)
        advance(clock, 12.0)
        r.thread.join(5)
        assert not r.thread.is_alive()
        assert r.returned == ("ns/stuck",)
        assert c.hanging_keys == ("ns/stuck",)
        msgs = [rec.getMessage() for rec in caplog.records if rec.levelno == logging.ERROR]
        assert any(
            "reconcile of ns/stuck still running after the 12.0s drain timeout" in m for m in msgs
        )
    finally:
        release.set()
    wait_until(lambda: provider.metrics["hang"].results["success"] == 1)


def test_run_twice_is_refused(clock, provider):
    c = Controller("twice", lambda k: None, clock=clock, metrics=provider)
    r = Runner(c)
    expect_wait(clock, MAX_WAIT)
    with pytest.raises(AlreadyStartedError):
        c.run(threading.Event())
    r.stop()


@pytest.mark.parametrize(
    "kwargs",
    [{"workers": 0}, {"max_retries": -1}, {"drain_timeout": -1.0}],
)
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        Controller("bad", lambda k: None, **kwargs)
    with pytest.raises(ValueError):
        Controller("", lambda k: None)


# -- metrics -----------------------------------------------------------------------------------


def test_prometheus_metrics_by_result():
    prometheus_client = pytest.importorskip("prometheus_client")
    registry = prometheus_client.CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    seen = Counter()
    lock = threading.Lock()

    def reconcile(key):
        with lock:
            seen[key] += 1
            n = seen[key]
        if key == "fail":
            raise RuntimeError("always")
        if key == "term":
            raise TerminalError("never")
        if key == "later":
            return Result(requeue_after=3600)
        if key == "again" and n == 1:
            return Result(requeue=True)
        return None

    # Zero delays: retries are immediate, so the real clock needs no waiting.
    c = Controller("m", reconcile, workers=2, max_retries=2, metrics=provider,
                   rate_limiter=ItemExponentialFailureRateLimiter(0.0, 0.0))

    def sample(name, **labels):
        return registry.get_sample_value(name, {"controller": "m", **labels})

    # Every series exists at zero before the first reconcile (controller-runtime initMetrics).
    for result in ("success", "error", "requeue", "requeue_after"):
        assert sample("controller_runtime_reconcile_total", result=result) == 0.0
    assert sample("controller_runtime_reconcile_errors_total") == 0.0
    assert sample("controller_runtime_terminal_reconcile_errors_total") == 0.0
    assert sample("controller_runtime_reconcile_dropped_total") == 0.0
    assert sample("controller_runtime_active_workers") == 0.0
    assert sample("controller_runtime_max_concurrent_reconciles") == 2.0

    for key in ("ok", "fail", "term", "later", "again"):
        c.enqueue(key)
    r = Runner(c)
    try:
        wait_until(lambda: sample("controller_runtime_reconcile_time_seconds_count") == 8.0)
    finally:
        r.stop()
    assert dict(seen) == {"ok": 1, "fail": 3, "term": 1, "later": 1, "again": 2}
    assert sample("controller_runtime_reconcile_total", result="success") == 2.0
    assert sample("controller_runtime_reconcile_total", result="error") == 4.0
    assert sample("controller_runtime_reconcile_total", result="requeue") == 1.0
    assert sample("controller_runtime_reconcile_total", result="requeue_after") == 1.0
    assert sample("controller_runtime_reconcile_errors_total") == 4.0
    assert sample("controller_runtime_terminal_reconcile_errors_total") == 1.0
    assert sample("controller_runtime_reconcile_dropped_total") == 1.0
    assert sample("controller_runtime_active_workers") == 0.0
    # The work queue reports under the controller's name: 5 adds + 2 retries + 1 requeue.
    assert registry.get_sample_value("workqueue_adds_total", {"name": "m"}) == 8.0
    # add_after calls: 2 retries of "fail", 1 requeue of "again", 1 requeue_after of "later".
    assert registry.get_sample_value("workqueue_retries_total", {"name": "m"}) == 4.0
    # A second provider on the same registry shares the families.
    assert PrometheusMetricsProvider(registry).workqueue_metrics_provider() is (
        provider.workqueue_metrics_provider()
    )


# -- the same behaviour on every runtime: threads, and AsyncController on asyncio and trio -------
#
# One body per test, run by tests/runtime_drivers.py's ControllerDriver: the threaded Controller
# on a thread, or informers.aio's AsyncController awaiting the same reconcile body in a worker
# thread. Real time with a fast rate limiter (the async runtime has no injectable clock); the
# exact delays on a FakeClock are pinned by the threaded tests above.


def fast_limiter() -> ItemExponentialFailureRateLimiter:
    return ItemExponentialFailureRateLimiter(0.001, 0.004)


@pytest.fixture(params=DRIVERS)
def runtime(request):
    driver = ControllerDriver(request.param)
    yield driver
    driver.close()


def test_runtime_success_forgets_the_key(runtime, provider):
    calls = []

    def reconcile(key):
        calls.append(key)
        if len(calls) == 1:
            raise RuntimeError("first attempt fails")

    runtime.make("fg", reconcile, metrics=provider, rate_limiter=fast_limiter())
    runtime.enqueue("ns/a")
    runtime.start()
    wait_until(lambda: provider.metrics["fg"].results["success"] == 1)
    assert runtime.num_requeues("ns/a") == 0
    assert runtime.queue_length() == 0
    runtime.stop()
    m = provider.metrics["fg"]
    assert calls == ["ns/a", "ns/a"]
    assert m.results == Counter({"error": 1, "success": 1})
    assert (m.errors, m.terminal, m.dropped_count, m.active) == (1, 0, 0, 0)


def test_runtime_result_zero_is_success(runtime, provider):
    runtime.make("zero", lambda key: Result(), metrics=provider)
    runtime.enqueue("a")
    runtime.start()
    wait_until(lambda: provider.metrics["zero"].results["success"] == 1)
    runtime.stop()
    assert provider.metrics["zero"].results == Counter({"success": 1})


def test_runtime_requeue_after_forgets_and_adds_after_the_delay(runtime, provider):
    calls = []

    def reconcile(key):
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise RuntimeError("transient")
        if len(calls) == 2:
            return Result(requeue_after=0.2)
        return None

    runtime.make("ra", reconcile, metrics=provider, rate_limiter=fast_limiter())
    runtime.enqueue("ns/a")
    runtime.start()
    wait_until(lambda: len(calls) == 2)
    wait_until(lambda: provider.metrics["ra"].results["requeue_after"] == 1)
    assert runtime.num_requeues("ns/a") == 0  # forgotten: the failure count is reset
    wait_until(lambda: provider.metrics["ra"].results["success"] == 1)
    runtime.stop()
    assert len(calls) == 3
    assert calls[2] - calls[1] >= 0.2
    assert provider.metrics["ra"].results == Counter(
        {"error": 1, "requeue_after": 1, "success": 1})


def test_runtime_requeue_true_uses_the_rate_limiter(runtime, provider):
    calls = []
    requeues = []

    def reconcile(key):
        calls.append(key)
        requeues.append(runtime.controller.queue.num_requeues(key))
        return Result(requeue=True) if len(calls) < 3 else None

    runtime.make("rq", reconcile, metrics=provider, rate_limiter=fast_limiter())
    runtime.enqueue("a")
    runtime.start()
    wait_until(lambda: provider.metrics["rq"].results["success"] == 1)
    assert runtime.num_requeues("a") == 0
    runtime.stop()
    assert requeues == [0, 1, 2]  # each requeue went through the limiter
    assert provider.metrics["rq"].results == Counter({"requeue": 2, "success": 1})


def test_runtime_retries_through_the_limiter_then_drops(runtime, provider, caplog):
    calls = []

    def reconcile(key):
        calls.append(key)
        raise RuntimeError("boom")

    runtime.make("bo", reconcile, metrics=provider, rate_limiter=fast_limiter(),
                 max_retries=4)
    runtime.enqueue("ns/a")
    runtime.start()
    wait_until(lambda: provider.metrics["bo"].dropped_count == 1)
    time.sleep(0.05)  # nothing more comes
    assert runtime.num_requeues("ns/a") == 0
    assert runtime.queue_length() == 0
    runtime.stop()
    assert len(calls) == 5
    m = provider.metrics["bo"]
    assert m.results == Counter({"error": 5})
    assert (m.errors, m.terminal, m.dropped_count) == (5, 0, 1)
    dropped = [r for r in caplog.records if "dropping ns/a out of the queue" in r.getMessage()]
    assert len(dropped) == 1
    assert dropped[0].levelno == logging.ERROR
    assert "after 4 retries: boom" in dropped[0].getMessage()


def test_runtime_unlimited_retries_with_max_retries_none(runtime, provider):
    calls = []

    def reconcile(key):
        calls.append(key)
        raise RuntimeError("x")

    runtime.make("inf", reconcile, metrics=provider, max_retries=None,
                 rate_limiter=ItemExponentialFailureRateLimiter(0.001, 0.001))
    runtime.enqueue("k")
    runtime.start()
    wait_until(lambda: len(calls) >= 31)
    runtime.stop()
    assert provider.metrics["inf"].dropped_count == 0
    assert runtime.num_requeues("k") >= 31


def test_runtime_terminal_error_is_not_retried(runtime, provider, caplog):
    calls = []

    def reconcile(key):
        calls.append(key)
        raise TerminalError("spec is invalid")

    runtime.make("term", reconcile, metrics=provider, rate_limiter=fast_limiter())
    runtime.enqueue("ns/bad")
    runtime.start()
    wait_until(lambda: provider.metrics["term"].terminal == 1)
    time.sleep(0.05)
    assert calls == ["ns/bad"]
    assert runtime.num_requeues("ns/bad") == 0
    runtime.enqueue("ns/bad")  # a new event enqueues it again
    wait_until(lambda: len(calls) == 2)
    runtime.stop()
    m = provider.metrics["term"]
    assert m.results == Counter({"error": 2})
    assert (m.errors, m.terminal, m.dropped_count) == (2, 2, 0)
    assert any(
        "terminal error reconciling ns/bad, not retrying: spec is invalid" in r.getMessage()
        for r in caplog.records)


def test_runtime_a_wrong_return_value_counts_as_an_error(runtime, provider):
    calls = []

    def reconcile(key):
        calls.append(key)
        return 42 if len(calls) == 1 else None

    runtime.make("wrong", reconcile, metrics=provider, rate_limiter=fast_limiter())
    runtime.enqueue("a")
    runtime.start()
    wait_until(lambda: provider.metrics["wrong"].results["success"] == 1)
    runtime.stop()
    assert provider.metrics["wrong"].results == Counter({"error": 1, "success": 1})


def test_runtime_no_concurrent_reconcile_of_one_key_under_many_workers(runtime):
    lock = threading.Lock()
    active: set[str] = set()
    violations = []
    counts = Counter()
    peak = [0]

    def reconcile(key):
        with lock:
            if key in active:
                violations.append(key)
            active.add(key)
            peak[0] = max(peak[0], len(active))
            counts[key] += 1
        time.sleep(0.001)
        with lock:
            active.discard(key)

    keys = [f"ns/k{i}" for i in range(6)]
    runtime.make("conc", reconcile, workers=8, metrics=RecordingProvider())
    runtime.start()
    for i in range(300):
        runtime.enqueue(keys[i % len(keys)])
    final = Counter(counts)
    for key in keys:  # every key is reconciled after its last add
        runtime.enqueue(key)
    wait_until(lambda: all(counts[k] > final[k] for k in keys))
    runtime.stop()
    assert violations == []
    assert peak[0] > 1  # different keys did run in parallel
    assert set(counts) == set(keys)


def test_runtime_no_reconcile_before_the_caches_synced(runtime, provider):
    calls = []
    informer = FakeSynced()
    runtime.make("sync", calls.append, synced=informer, metrics=provider)
    runtime.enqueue("a")
    runtime.start()
    wait_until(lambda: informer.polls >= 2)
    time.sleep(0.05)
    assert calls == []
    informer.synced = True
    wait_until(lambda: calls == ["a"])
    runtime.stop()


def test_runtime_stop_before_the_caches_synced_reconciles_nothing(runtime, provider):
    calls = []
    informer = FakeSynced()
    runtime.make("nosync", calls.append, synced=informer, metrics=provider)
    runtime.enqueue("a")
    runtime.start()
    wait_until(lambda: informer.polls >= 1)
    start = time.monotonic()
    runtime.stop()
    assert time.monotonic() - start < 1.0
    assert calls == []
    assert provider.metrics["nosync"].results == Counter()


def test_runtime_stop_drains_the_reconcile_in_flight_and_skips_queued_keys(runtime, provider):
    entered = threading.Event()
    release = threading.Event()
    calls = []

    def reconcile(key):
        calls.append(key)
        entered.set()
        release.wait(10)

    runtime.make("drain", reconcile, metrics=provider, drain_timeout=30.0)
    runtime.enqueue("a")
    runtime.enqueue("b")
    runtime.start()
    assert entered.wait(5)
    stopper = threading.Thread(target=runtime.stop, daemon=True)
    stopper.start()
    stopper.join(0.2)
    assert stopper.is_alive()  # the drain waits for the reconcile in flight
    release.set()
    stopper.join(5)
    assert not stopper.is_alive()
    assert calls == ["a"]  # "b" was queued when the stop came: not started
    assert provider.metrics["drain"].results == Counter({"success": 1})


def test_runtime_a_hanging_reconcile_does_not_hold_the_stop_past_the_drain_timeout(
        runtime, provider):
    entered = threading.Event()
    release = threading.Event()

    def reconcile(key):
        entered.set()
        release.wait(30)

    runtime.make("hang", reconcile, metrics=provider, workers=3, drain_timeout=0.3)
    runtime.enqueue("ns/stuck")
    runtime.start()
    try:
        assert entered.wait(5)
        start = time.monotonic()
        runtime.stop(timeout=5)
        assert 0.3 <= time.monotonic() - start < 2.0
    finally:
        release.set()


def test_runtime_run_twice_is_refused(runtime, provider):
    runtime.make("twice", lambda key: None, metrics=provider)
    runtime.start()
    with pytest.raises(AlreadyStartedError):
        if runtime.portal is None:
            runtime.controller.run(threading.Event())
        else:
            runtime.portal.call(runtime.controller.run)
    runtime.stop()


@pytest.mark.parametrize(
    "kwargs",
    [{"workers": 0}, {"max_retries": -1}, {"drain_timeout": -1.0}],
)
def test_runtime_bad_arguments(runtime, kwargs):
    with pytest.raises(ValueError):
        runtime.make("bad", lambda key: None, **kwargs)
    with pytest.raises(ValueError):
        runtime.make("", lambda key: None)
