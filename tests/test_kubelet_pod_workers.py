"""Tests for controllers.kubelet.pod_workers: one worker per UID, coalescing, kills, backoff."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import eventually

from controllers.kubelet.pod_update import SyncPodType
from controllers.kubelet.pod_workers import (
    DEFAULT_BACKOFF_PERIOD,
    PodWorkers,
    UpdatePodOptions,
    default_pod_worker_rate_limiter,
)
from informers.clock import FakeClock
from informers.workqueue import ItemExponentialFailureRateLimiter


def pod(uid: str, version: int = 1) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "name": f"p-{uid}", "namespace": "default",
                         "resourceVersion": str(version)}}


class Recorder:
    """A sync_pod that records calls, can hold them at a gate, and can fail."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, str, str, str]] = []  # uid, version, type, thread name
        self.gates: dict[str, threading.Event] = {}
        self.entered: dict[str, threading.Event] = {}
        self.failures: dict[str, int] = {}
        self.active: dict[str, int] = {}
        self.overlaps = 0

    def hold(self, uid: str) -> None:
        self.gates[uid] = threading.Event()
        self.entered[uid] = threading.Event()

    def release(self, uid: str) -> None:
        self.gates.pop(uid).set()

    def __call__(self, options: UpdatePodOptions) -> None:
        uid = options.uid
        with self.lock:
            if self.active.get(uid):
                self.overlaps += 1
            self.active[uid] = self.active.get(uid, 0) + 1
            self.calls.append((uid, options.pod["metadata"]["resourceVersion"],
                               str(options.update_type), threading.current_thread().name))
            gate = self.gates.get(uid)
            entered = self.entered.get(uid)
        try:
            if entered is not None:
                entered.set()
            if gate is not None:
                assert gate.wait(10)
            with self.lock:
                if self.failures.get(uid, 0) > 0:
                    self.failures[uid] -= 1
                    raise RuntimeError(f"sync of {uid} failed")
        finally:
            with self.lock:
                self.active[uid] -= 1

    def of(self, uid: str) -> list[tuple[str, str]]:
        with self.lock:
            return [(v, t) for u, v, t, _ in self.calls if u == uid]


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def workers(rec: Recorder, clock: FakeClock) -> Iterator[PodWorkers]:
    w = PodWorkers(rec, clock=clock)
    yield w
    for uid in list(rec.gates):
        rec.release(uid)
    w.shut_down(5)


def test_default_backoff_is_the_kubelets():
    limiter = default_pod_worker_rate_limiter()
    assert [limiter.when("x") for _ in range(7)] == [10, 20, 40, 80, 160, 300, 300]


def test_each_uid_gets_its_own_worker_and_pods_sync_in_parallel(rec, workers):
    rec.hold("a")
    rec.hold("b")
    workers.update_pod(pod("a"), SyncPodType.CREATE)
    workers.update_pod(pod("b"), SyncPodType.CREATE)
    assert rec.entered["a"].wait(5) and rec.entered["b"].wait(5)  # both inside sync at once
    assert workers.worker_uids() == ["a", "b"]
    assert workers.is_working("a") and not workers.idle()
    rec.release("a")
    rec.release("b")
    assert eventually(workers.idle)
    threads = {(u, name) for u, _, _, name in rec.calls}
    assert threads == {("a", "pod-worker-a"), ("b", "pod-worker-b")}


def test_updates_for_a_busy_pod_coalesce_to_the_latest(rec, workers):
    rec.hold("a")
    workers.update_pod(pod("a", 1), SyncPodType.CREATE)
    assert rec.entered["a"].wait(5)
    for version in (2, 3, 4):
        workers.update_pod(pod("a", version), SyncPodType.UPDATE)
    rec.release("a")
    assert eventually(workers.idle)
    assert rec.of("a") == [("1", "create"), ("4", "update")]
    assert rec.overlaps == 0


def test_a_pending_kill_is_never_overwritten(rec, workers):
    rec.hold("a")
    workers.update_pod(pod("a", 1), SyncPodType.CREATE)
    assert rec.entered["a"].wait(5)
    workers.update_pod(pod("a", 2), SyncPodType.KILL)
    workers.update_pod(pod("a", 3), SyncPodType.UPDATE)
    workers.update_pod(pod("a", 4), SyncPodType.SYNC)
    rec.release("a")
    assert eventually(workers.idle)
    assert rec.of("a") == [("1", "create"), ("2", "kill")]
    workers.update_pod(pod("a", 5), SyncPodType.UPDATE)  # not pending any more: runs
    assert eventually(lambda: len(rec.of("a")) == 3)
    assert rec.of("a")[-1] == ("5", "update")


def test_a_newer_kill_replaces_a_pending_kill(rec, workers):
    rec.hold("a")
    workers.update_pod(pod("a", 1), SyncPodType.CREATE)
    assert rec.entered["a"].wait(5)
    workers.update_pod(pod("a", 2), SyncPodType.KILL)
    workers.update_pod(pod("a", 3), SyncPodType.KILL)
    rec.release("a")
    assert eventually(workers.idle)
    assert rec.of("a") == [("1", "create"), ("3", "kill")]


def test_failures_are_retried_with_per_pod_backoff_on_the_clock(rec, workers, clock):
    rec.failures["a"] = 2
    workers.update_pod(pod("a"), SyncPodType.CREATE)
    # 1st failure at t=0: retry due at t=10
    assert eventually(lambda: len(rec.of("a")) == 1 and clock.next_deadline() == 10.0)
    assert workers.rate_limiter.num_requeues("a") == 1
    assert not workers.idle()
    clock.step(DEFAULT_BACKOFF_PERIOD)
    # retried as a SYNC, fails again at t=10: next retry 20 s later, at t=30
    assert eventually(lambda: len(rec.of("a")) == 2)
    assert eventually(lambda: workers.rate_limiter.num_requeues("a") == 2)
    clock.step(10.0)  # t=20: the queue's heartbeat only
    assert eventually(lambda: clock.next_deadline() == 30.0)
    assert len(rec.of("a")) == 2
    clock.step(10.0)  # t=30: the retry succeeds
    assert eventually(lambda: len(rec.of("a")) == 3)
    assert eventually(workers.idle)
    assert rec.of("a") == [("1", "create"), ("1", "sync"), ("1", "sync")]
    assert workers.rate_limiter.num_requeues("a") == 0  # forgotten on success


def test_backoff_is_per_pod(rec, clock):
    limiter = ItemExponentialFailureRateLimiter(1.0, 100.0)
    workers = PodWorkers(rec, clock=clock, rate_limiter=limiter)
    try:
        rec.failures["a"] = 3
        workers.update_pod(pod("a"))
        assert eventually(lambda: len(rec.of("a")) == 1)
        clock.step(1.0)
        assert eventually(lambda: len(rec.of("a")) == 2)
        workers.update_pod(pod("b"))  # b succeeds at once; a's backoff does not touch it
        assert eventually(lambda: len(rec.of("b")) == 1)
        assert (limiter.num_requeues("a"), limiter.num_requeues("b")) == (2, 0)
    finally:
        workers.shut_down(5)


def test_a_failed_kill_is_retried_as_a_kill(rec, workers, clock):
    rec.failures["a"] = 1
    workers.update_pod(pod("a"), SyncPodType.KILL)
    assert eventually(lambda: clock.next_deadline() == 10.0 and len(rec.of("a")) == 1)
    clock.step(10.0)
    assert eventually(lambda: len(rec.of("a")) == 2)
    assert rec.of("a") == [("1", "kill"), ("1", "kill")]


def test_a_newer_update_supersedes_a_scheduled_retry(rec, workers, clock):
    rec.failures["a"] = 1
    workers.update_pod(pod("a", 1))
    assert eventually(lambda: clock.next_deadline() == 10.0)
    workers.update_pod(pod("a", 2))  # succeeds: the scheduled retry is dropped
    assert eventually(lambda: len(rec.of("a")) == 2)
    clock.step(10.0)
    assert eventually(workers.idle)
    assert rec.of("a") == [("1", "update"), ("2", "update")]


def test_forget_worker_drops_pending_work_and_the_worker_ends(rec, workers):
    rec.hold("a")
    workers.update_pod(pod("a", 1))
    assert rec.entered["a"].wait(5)
    workers.update_pod(pod("a", 2))
    workers.forget_worker("a")
    rec.release("a")
    assert eventually(lambda: workers.worker_uids() == [])
    assert rec.of("a") == [("1", "update")]
    workers.update_pod(pod("a", 3))  # a new worker
    assert eventually(lambda: len(rec.of("a")) == 2)


def test_update_after_forget_reuses_the_running_worker(rec, workers):
    rec.hold("a")
    workers.update_pod(pod("a", 1))
    assert rec.entered["a"].wait(5)
    workers.forget_worker("a")
    workers.update_pod(pod("a", 2))  # the old thread still syncs: no second thread
    rec.release("a")
    assert eventually(lambda: len(rec.of("a")) == 2)
    assert eventually(workers.idle)
    assert rec.overlaps == 0
    assert workers.worker_uids() == ["a"]


def test_forget_drops_a_scheduled_retry(rec, workers, clock):
    rec.failures["a"] = 1
    workers.update_pod(pod("a"))
    assert eventually(lambda: clock.next_deadline() == 10.0)
    workers.forget_worker("a")
    assert eventually(workers.idle)
    clock.step(10.0)
    assert eventually(lambda: workers.worker_uids() == [])
    assert rec.of("a") == [("1", "update")]


def test_forget_non_existing_pod_workers(rec, workers):
    for uid in "abc":
        workers.update_pod(pod(uid))
    assert eventually(lambda: workers.idle() and workers.worker_uids() == ["a", "b", "c"])
    workers.forget_non_existing_pod_workers({"b"})
    assert eventually(lambda: workers.worker_uids() == ["b"])


def test_shut_down_joins_and_ignores_later_updates(rec, clock):
    workers = PodWorkers(rec, clock=clock)
    workers.update_pod(pod("a"))
    assert eventually(lambda: len(rec.of("a")) == 1)
    workers.shut_down(5)
    assert not any(t.name.startswith("pod-worker") and t.is_alive()
                   for t in threading.enumerate())
    workers.update_pod(pod("b"))
    assert workers.worker_uids() == []
    assert rec.of("b") == []


def test_pod_without_uid_is_refused(workers):
    with pytest.raises(ValueError, match=r"no metadata\.uid"):
        workers.update_pod({"metadata": {"name": "x"}})


def test_many_updates_never_overlap(rec, workers):
    for version in range(200):
        workers.update_pod(pod(f"u{version % 5}", version))
    assert eventually(workers.idle)
    assert rec.overlaps == 0
    for i in range(5):  # each pod ends with its latest version
        assert rec.of(f"u{i}")[-1] == (str(195 + i), "update")
