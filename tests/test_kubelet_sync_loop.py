"""Tests for controllers.kubelet.sync_loop: dispatch, readiness gating, timers on a FakeClock."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import eventually

from controllers.kubelet.pod_config import PodConfig
from controllers.kubelet.pod_update import (
    ADD,
    ALL_SOURCE,
    DELETE,
    RECONCILE,
    REMOVE,
    SET,
    SNAPSHOT,
    UPDATE,
    PodUpdate,
)
from controllers.kubelet.sync_loop import SyncLoop
from informers.clock import FakeClock


def pod(uid: str, image: str = "x") -> dict[str, Any]:
    return {"metadata": {"uid": uid, "name": f"p-{uid}", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": image}]}}


class Handler:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.lock = threading.Lock()
        self.fail = False

    def _record(self, name: str, pods: list[dict[str, Any]] | None = None) -> None:
        with self.lock:
            self.calls.append((name, sorted(p["metadata"]["uid"] for p in pods or [])))
        if self.fail:
            raise RuntimeError("handler failed")

    def handle_pod_additions(self, pods):
        self._record("additions", pods)

    def handle_pod_updates(self, pods):
        self._record("updates", pods)

    def handle_pod_removes(self, pods):
        self._record("removes", pods)

    def handle_pod_reconcile(self, pods):
        self._record("reconcile", pods)

    def handle_pod_syncs(self, pods):
        self._record("syncs", pods)

    def handle_pod_cleanups(self):
        self._record("cleanups")

    def names(self) -> list[str]:
        with self.lock:
            return [c[0] for c in self.calls]

    def take(self) -> list[tuple[str, list[str]]]:
        with self.lock:
            calls, self.calls = self.calls, []
        return calls


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def handler() -> Handler:
    return Handler()


def test_each_op_goes_to_its_handler_and_marks_the_source_seen(clock, handler):
    loop = SyncLoop(PodConfig(clock=clock), handler, clock=clock)
    loop.handle_update(PodUpdate([pod("1")], ADD, "file"))
    loop.handle_update(PodUpdate([pod("1", "y")], UPDATE, "file"))
    loop.handle_update(PodUpdate([pod("1", "z")], DELETE, "file"))
    loop.handle_update(PodUpdate([pod("1", "z")], RECONCILE, "file"))
    loop.handle_update(PodUpdate([pod("2")], ADD, "api"))
    loop.handle_update(PodUpdate([pod("1")], REMOVE, "file"))
    assert handler.take() == [
        ("additions", ["1"]), ("updates", ["1"]), ("updates", ["1"]), ("reconcile", ["1"]),
        ("additions", ["2"]), ("removes", ["1"]),
    ]
    assert loop.seen_sources == frozenset({"file", "api"})
    assert [p["metadata"]["uid"] for p in loop.desired_pods()] == ["2"]
    assert loop.updates_handled == 6


def test_empty_add_marks_the_source_seen_without_calls(clock, handler):
    loop = SyncLoop(PodConfig(clock=clock), handler, clock=clock)
    loop.handle_update(PodUpdate([], ADD, "file"))
    assert handler.take() == [("additions", [])]
    assert loop.seen_sources == frozenset({"file"})


def test_set_is_diffed_against_the_known_pods(clock, handler):
    loop = SyncLoop(PodConfig(clock=clock), handler, clock=clock)
    loop.handle_update(PodUpdate([pod("1"), pod("2")], SET, "file"))
    loop.handle_update(PodUpdate([pod("2", "new"), pod("3")], SET, ALL_SOURCE))
    loop.handle_update(PodUpdate([pod("2", "new"), pod("3")], SET, ALL_SOURCE))  # no change
    assert handler.take() == [
        ("additions", ["1", "2"]),
        ("removes", ["1"]), ("additions", ["3"]), ("updates", ["2"]),
    ]


def test_invalid_op_is_logged(clock, handler, caplog):
    loop = SyncLoop(PodConfig(clock=clock), handler, clock=clock)
    with caplog.at_level(logging.ERROR, logger="controllers.kubelet.sync_loop"):
        loop.handle_update(PodUpdate([], 42, "file"))
    assert handler.take() == []
    assert "invalid update op 42" in caplog.text


def test_observer_sees_each_update_first(clock, handler):
    seen: list[str] = []
    loop = SyncLoop(PodConfig(clock=clock), handler, clock=clock,
                    observer=lambda u: seen.append(f"{u.op_name}:{handler.names()}"))
    loop.handle_update(PodUpdate([pod("1")], ADD, "file"))
    assert seen == ["ADD:[]"]


def test_handler_errors_are_logged_and_the_loop_goes_on(clock, handler, caplog):
    loop = SyncLoop(PodConfig(clock=clock), handler, clock=clock)
    handler.fail = True
    with caplog.at_level(logging.ERROR, logger="controllers.kubelet.sync_loop"):
        loop.handle_update(PodUpdate([pod("1")], ADD, "file"))
    assert "handle_pod_additions failed" in caplog.text
    assert loop.seen_sources == frozenset({"file"})


@pytest.fixture
def running(clock: FakeClock, handler: Handler) -> Iterator[tuple[PodConfig, SyncLoop]]:
    config = PodConfig(clock=clock)
    loop = SyncLoop(config, handler, clock=clock, sync_period=10.0, housekeeping_period=2.0)
    stop = threading.Event()
    loop.start(stop)
    try:
        yield config, loop
    finally:
        stop.set()
        loop.join(5)
        assert loop._thread is not None and not loop._thread.is_alive()


def test_syncs_and_housekeeping_wait_for_every_source(clock, handler, running):
    config, loop = running
    file_ch, api_ch = config.channel("file"), config.channel("api")
    file_ch.put(PodUpdate([pod("1")], SET, "file"))
    assert eventually(lambda: loop.updates_handled == 1)
    assert clock.wait_for_waiters(1)
    clock.step(2.0)  # housekeeping is due but "api" has not been seen
    assert eventually(lambda: clock.next_deadline() == 4.0)
    assert handler.names() == ["additions"]
    assert not loop.sources_ready()
    api_ch.put(PodUpdate([], SET, "api"))
    assert eventually(lambda: loop.updates_handled == 2)
    assert loop.sources_ready()
    clock.step(2.0)  # t=4: housekeeping
    assert eventually(lambda: handler.names()[-1:] == ["cleanups"])
    assert eventually(lambda: clock.next_deadline() == 6.0)
    clock.step(6.0)  # t=10: periodic sync (and housekeeping)
    assert eventually(lambda: "syncs" in handler.names())
    assert ("syncs", ["1"]) in handler.calls
    assert handler.take()[:2] == [("additions", ["1"]), ("additions", [])]
    assert loop.syncs_run == 1


def test_run_dispatches_in_emission_order(clock, handler, running):
    config, loop = running
    ch = config.channel("file")
    for i in range(20):
        ch.put(PodUpdate([pod(str(i))], ADD, "file"))
    assert eventually(lambda: loop.updates_handled == 20)
    assert handler.take() == [("additions", [str(i)]) for i in range(20)]


def test_stop_is_prompt_under_a_fake_clock(clock, handler):
    loop = SyncLoop(PodConfig(clock=clock), handler, clock=clock, housekeeping_period=1000.0,
                    sync_period=1000.0)
    stop = threading.Event()
    loop.start(stop)
    assert clock.wait_for_waiters(1)
    stop.set()
    loop.join(5)
    assert loop._thread is not None and not loop._thread.is_alive()


def test_snapshot_mode_drives_the_handler_through_sets(clock, handler):
    config = PodConfig(SNAPSHOT, clock=clock)
    loop = SyncLoop(config, handler, clock=clock)
    ch = config.channel("file")
    ch.put(PodUpdate([pod("1")], SET, "file"))
    ch.put(PodUpdate([pod("2")], SET, "file"))
    while not config.updates.empty():
        loop.handle_update(config.updates.get_nowait())
    assert handler.take() == [("additions", ["1"]), ("removes", ["1"]), ("additions", ["2"])]
    assert loop.sources_ready()
