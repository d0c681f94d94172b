"""Tests for controllers.kubelet.runtime: the recording runtime and the default SyncHandler."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import eventually

from controllers.kubelet.pod_update import SyncPodType
from controllers.kubelet.runtime import PodSyncHandler, RecordingRuntime, pod_key
from informers.clock import FakeClock


def pod(uid: str, name: str | None = None, created: str | None = None,
        **meta: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"uid": uid, "name": name or f"p-{uid}", "namespace": "default", **meta}
    if created:
        m["creationTimestamp"] = created
    return {"metadata": m, "spec": {"containers": [{"name": "c", "image": "x"}]}}


# -- RecordingRuntime ------------------------------------------------------------------------


def test_recording_runtime_keeps_the_running_set_and_writes_changes():
    out = io.StringIO()
    rt = RecordingRuntime(stream=out)
    rt.sync_pod(pod("1", "a"), SyncPodType.CREATE)
    rt.sync_pod(pod("1", "a"), SyncPodType.SYNC)  # no change: nothing written
    rt.sync_pod(pod("2", "b"), SyncPodType.CREATE)
    rt.kill_pod(pod("1", "a"))
    rt.kill_pod(pod("9", "never-ran"))
    assert rt.running_keys() == ["default/b"]
    assert rt.running_uids() == {"2"}
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"running": ["default/a"]},
        {"running": ["default/a", "default/b"]},
        {"running": ["default/b"]},
    ]
    assert rt.history == [
        ("sync", "1", "default/a", "create"), ("sync", "1", "default/a", "sync"),
        ("sync", "2", "default/b", "create"), ("kill", "1", "default/a", "kill"),
        ("kill", "9", "default/never-ran", "kill"),
    ]


def test_recording_runtime_detects_overlapping_syncs_of_one_pod():
    gate, entered = threading.Event(), threading.Event()

    def hook(action, p, update_type):
        if threading.current_thread().name == "first":
            entered.set()
            assert gate.wait(5)

    rt = RecordingRuntime(hook=hook)
    first = threading.Thread(target=rt.sync_pod, args=(pod("1"), SyncPodType.CREATE),
                             name="first")
    first.start()
    assert entered.wait(5)
    rt.sync_pod(pod("1"), SyncPodType.UPDATE)  # while "first" is inside: an overlap
    gate.set()
    first.join(5)
    assert rt.overlaps == 1


def test_a_failing_hook_fails_the_operation_and_changes_nothing():
    def hook(action, p, update_type):
        raise RuntimeError("image pull failed")

    rt = RecordingRuntime(hook=hook)
    with pytest.raises(RuntimeError, match="image pull failed"):
        rt.sync_pod(pod("1"), SyncPodType.CREATE)
    assert rt.running_pods() == []


def test_pod_key():
    assert pod_key(pod("1", "a")) == "default/a"
    assert pod_key({}) == "/"


# -- PodSyncHandler --------------------------------------------------------------------------


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def setup(clock: FakeClock) -> Iterator[tuple[PodSyncHandler, RecordingRuntime]]:
    rt = RecordingRuntime()
    handler = PodSyncHandler(rt, clock=clock)
    yield handler, rt
    handler.shut_down(5)


def test_handler_runs_pods_through_workers(setup):
    handler, rt = setup
    handler.handle_pod_additions([pod("2", "b", created="2026-01-02T00:00:00Z"),
                                  pod("1", "a", created="2026-01-01T00:00:00Z")])
    assert eventually(lambda: rt.running_keys() == ["default/a", "default/b"])
    handler.handle_pod_updates([pod("1", "a", labels={"v": "2"})])
    assert eventually(lambda: [p["metadata"].get("labels") for p in rt.running_pods()
                               if p["metadata"]["uid"] == "1"] == [{"v": "2"}])
    handler.handle_pod_syncs(handler.desired_pods())
    handler.handle_pod_removes([pod("2", "b")])
    assert eventually(lambda: rt.running_keys() == ["default/a"])
    assert eventually(handler.pod_workers.idle)
    assert [p["metadata"]["uid"] for p in handler.desired_pods()] == ["1"]
    by_pod: dict[str, list[str]] = {}
    for action, _, key, update_type in rt.history:
        by_pod.setdefault(key, []).append(f"{action}:{update_type}")
    assert by_pod["default/a"] == ["sync:create", "sync:update", "sync:sync"]
    assert by_pod["default/b"][0] == "sync:create" and by_pod["default/b"][-1] == "kill:kill"
    assert rt.overlaps == 0


def test_additions_are_dispatched_in_creation_order(setup):
    handler, _ = setup
    order: list[str] = []

    def record(p: dict[str, Any], update_type: SyncPodType = SyncPodType.UPDATE) -> None:
        order.append(f"{p['metadata']['name']}:{update_type}")

    handler.pod_workers.update_pod = record  # type: ignore[method-assign]
    handler.handle_pod_additions([pod("3", "c", created="2026-01-03T00:00:00Z"),
                                  pod("1", "a", created="2026-01-01T00:00:00Z"),
                                  pod("2", "b", created="2026-01-02T00:00:00Z")])
    assert order == ["a:create", "b:create", "c:create"]


def test_pod_with_deletion_timestamp_is_killed(setup):
    handler, rt = setup
    handler.handle_pod_additions([pod("1", "a")])
    assert eventually(lambda: rt.running_keys() == ["default/a"])
    handler.handle_pod_updates([pod("1", "a", deletionTimestamp="2026-01-01T00:00:30Z")])
    assert eventually(lambda: rt.running_keys() == [])
    assert [p["metadata"]["uid"] for p in handler.desired_pods()] == ["1"]  # until REMOVE


def test_reconcile_only_refreshes_the_desired_pod(setup):
    handler, _ = setup
    p = pod("1", "a")
    p["status"] = {"phase": "Running"}
    handler.handle_pod_reconcile([p])
    assert handler.desired_pods() == [p]
    assert handler.pod_workers.worker_uids() == []


def test_cleanups_forget_workers_and_kill_orphans(setup):
    handler, rt = setup
    rt.sync_pod(pod("9", "orphan"), SyncPodType.CREATE)  # runs but nobody wants it
    handler.handle_pod_additions([pod("1", "a")])
    assert eventually(lambda: rt.running_keys() == ["default/a", "default/orphan"])
    handler.handle_pod_cleanups()
    assert eventually(lambda: rt.running_keys() == ["default/a"])
    assert eventually(handler.pod_workers.idle)
    handler.handle_pod_cleanups()  # the orphan's worker is forgotten now
    assert eventually(lambda: handler.pod_workers.worker_uids() == ["1"])


def test_failed_sync_is_retried_after_backoff(clock):
    attempts: list[str] = []

    def hook(action, p, update_type):
        attempts.append(str(update_type))
        if len(attempts) == 1:
            raise RuntimeError("transient")

    rt = RecordingRuntime(hook=hook)
    handler = PodSyncHandler(rt, clock=clock)
    try:
        handler.handle_pod_additions([pod("1", "a")])
        # Wait for the retry itself to be waiting: the retry queue's own 10 s heartbeat wait
        # has the same deadline, so next_deadline() alone cannot tell them apart.
        assert eventually(lambda: handler.pod_workers.pending_retries() == 1)
        assert attempts == ["create"]
        assert eventually(lambda: clock.next_deadline() == 10.0)
        assert rt.running_keys() == []
        clock.step(10.0)
        assert eventually(lambda: rt.running_keys() == ["default/a"])
        assert attempts == ["create", "sync"]
    finally:
        handler.shut_down(5)
