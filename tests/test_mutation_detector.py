"""Tests for informers.mutation_detector: in-place edits of cached objects are caught."""

from __future__ import annotations

import logging
import threading

import pytest

from informers.clock import FakeClock
from informers.errors import CacheMutationError
from informers.keys import DeletedFinalStateUnknown
from informers.mutation_detector import (
    ENV_VAR,
    CacheMutationDetector,
    mutation_detection_enabled,
)

WAIT = 5.0


def _pod(name: str) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "labels": {"a": "1"}}, "spec": {}}


def test_enabled_by_env_or_flag(monkeypatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert mutation_detection_enabled() is False
    monkeypatch.setenv(ENV_VAR, "true")
    assert mutation_detection_enabled() is True
    assert mutation_detection_enabled(False) is False
    monkeypatch.setenv(ENV_VAR, "1")
    assert mutation_detection_enabled() is False  # only "true", as client-go
    assert mutation_detection_enabled(True) is True


def test_unchanged_objects_pass() -> None:
    d = CacheMutationDetector("pods")
    d.add_object(_pod("a"))
    d.add_object(DeletedFinalStateUnknown("ns/x", None))  # ignored
    assert d.compare_objects() == []


def test_nested_mutation_raises_naming_the_key(caplog) -> None:
    d = CacheMutationDetector("pods")
    a, b = _pod("a"), _pod("b")
    d.add_object(a)
    d.add_object(b)
    b["metadata"]["labels"]["a"] = "2"
    with (
        caplog.at_level(logging.ERROR, logger="informers.mutation_detector"),
        pytest.raises(CacheMutationError, match=r"cache pods modified: ns/b"),
    ):
        d.compare_objects()
    assert len(caplog.records) == 1
    assert "object ns/b was mutated in place" in caplog.records[0].getMessage()
    assert d.compare_objects() == []  # reported once


def test_failure_func_instead_of_raising() -> None:
    got: list[str] = []
    d = CacheMutationDetector("deployments.apps", failure_func=got.append)
    a = _pod("a")
    d.add_object(a)
    a["spec"]["replicas"] = 3
    assert d.compare_objects() == ["ns/a"]
    assert got == ["cache deployments.apps modified: ns/a"]


def _step(clock: FakeClock) -> None:
    """Step 1 s and wait until the detector compared and sleeps again (its next deadline)."""
    target = clock.now() + 2.0
    clock.step(1.0)
    for _ in range(5000):
        if clock.next_deadline() == target:
            return
        threading.Event().wait(0.001)
    raise AssertionError("detector did not go back to sleep")


def test_run_compares_periodically_and_rotates() -> None:
    clock = FakeClock()
    got: list[str] = []
    d = CacheMutationDetector(
        "pods", clock=clock, period=1.0, retain_duration=10.0, failure_func=got.append
    )
    stop = threading.Event()
    t = threading.Thread(target=d.run, args=(stop,), daemon=True)
    old = _pod("old")
    d.add_object(old)
    t.start()
    assert clock.wait_for_waiters(1, WAIT)  # first comparison done, sleeping 1 s
    # After more than the retain duration twice, "old" is forgotten: its mutation goes unseen.
    for _ in range(22):
        _step(clock)
    old["spec"]["x"] = 1
    new = _pod("new")
    d.add_object(new)
    new["spec"]["y"] = 1
    _step(clock)
    stop.set()
    t.join(WAIT)
    assert got == ["cache pods modified: ns/new"]
