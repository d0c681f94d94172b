"""Tests for controllers.endpoint.write_echoes."""

from __future__ import annotations

import threading

import pytest

from controllers.endpoint.write_echoes import DEFAULT_REMEMBERED_WRITES, Echo, WriteEchoTracker

KEY = "ns/web"


def wrote(tracker, rv, key=KEY):
    tracker.write_started(key)
    return tracker.write_finished(key, rv)


def test_unknown_keys_and_versions_are_foreign():
    tracker = WriteEchoTracker()
    assert tracker.classify(KEY, "1") is Echo.FOREIGN
    assert wrote(tracker, "5") == []
    assert tracker.classify(KEY, "4") is Echo.FOREIGN
    assert tracker.classify("ns/other", "5") is Echo.FOREIGN
    assert tracker.classify(KEY, None) is Echo.FOREIGN
    assert tracker.classify(KEY, "") is Echo.FOREIGN
    assert tracker.classify(KEY, "5") is Echo.OWN


def test_echo_after_the_write_returned_is_own_once():
    tracker = WriteEchoTracker()
    assert wrote(tracker, "5") == []
    assert len(tracker) == 1
    assert tracker.classify(KEY, "5") is Echo.OWN
    assert len(tracker) == 0  # nothing held once every write was echoed
    assert tracker.classify(KEY, "5") is Echo.FOREIGN


def test_echo_after_a_newer_write_is_own():
    tracker = WriteEchoTracker()
    assert wrote(tracker, "5") == []
    assert wrote(tracker, "7") == []
    assert tracker.classify(KEY, "5") is Echo.OWN
    assert tracker.classify(KEY, "6") is Echo.FOREIGN
    assert tracker.classify(KEY, "7") is Echo.OWN
    assert len(tracker) == 0


def test_delivering_a_newer_own_version_forgets_older_ones():
    # A relist can skip versions: once 7 is delivered, 5 will never be.
    tracker = WriteEchoTracker()
    wrote(tracker, "5")
    wrote(tracker, "7")
    assert tracker.classify(KEY, "7") is Echo.OWN
    assert len(tracker) == 0
    assert tracker.classify(KEY, "5") is Echo.FOREIGN


def test_echo_before_the_write_returns_is_held_then_settled_as_own():
    tracker = WriteEchoTracker()
    tracker.write_started(KEY)
    assert tracker.classify(KEY, "5") is Echo.PENDING
    assert tracker.write_finished(KEY, "5") == []
    assert len(tracker) == 0  # its echo was already delivered: not remembered
    assert tracker.classify(KEY, "5") is Echo.FOREIGN


def test_foreign_versions_held_during_a_write_are_returned_in_order():
    tracker = WriteEchoTracker()
    wrote(tracker, "3")
    tracker.write_started(KEY)
    assert tracker.classify(KEY, "3") is Echo.OWN  # an older write of ours: decided at once
    assert tracker.classify(KEY, "4") is Echo.PENDING
    assert tracker.classify(KEY, "5") is Echo.PENDING
    assert tracker.classify(KEY, "6") is Echo.PENDING
    assert tracker.write_finished(KEY, "5") == ["4", "6"]
    assert len(tracker) == 0


def test_a_failed_write_settles_everything_held_as_foreign():
    tracker = WriteEchoTracker()
    tracker.write_started(KEY)
    assert tracker.classify(KEY, "9") is Echo.PENDING
    assert tracker.write_finished(KEY, None) == ["9"]
    assert len(tracker) == 0


def test_overlapping_writes_settle_when_the_last_one_finishes():
    tracker = WriteEchoTracker()
    tracker.write_started(KEY)
    tracker.write_started(KEY)
    assert tracker.classify(KEY, "5") is Echo.PENDING
    assert tracker.classify(KEY, "6") is Echo.PENDING
    assert tracker.write_finished(KEY, "6") == []
    assert tracker.classify(KEY, "7") is Echo.PENDING
    assert tracker.write_finished(KEY, "5") == ["7"]
    assert len(tracker) == 0


def test_remembered_versions_are_bounded_per_key():
    tracker = WriteEchoTracker(remembered=2)
    for rv in ("1", "2", "3"):
        wrote(tracker, rv)
    assert tracker.classify(KEY, "1") is Echo.FOREIGN  # dropped: counts as foreign
    assert tracker.classify(KEY, "2") is Echo.OWN
    assert tracker.classify(KEY, "3") is Echo.OWN
    assert DEFAULT_REMEMBERED_WRITES == 16
    with pytest.raises(ValueError, match="remembered"):
        WriteEchoTracker(remembered=0)


def test_forget_drops_the_key_and_a_late_finish_settles_nothing():
    tracker = WriteEchoTracker()
    wrote(tracker, "5")
    tracker.write_started(KEY)
    assert tracker.classify(KEY, "6") is Echo.PENDING
    tracker.forget(KEY)
    assert len(tracker) == 0
    assert tracker.write_finished(KEY, "7") == []
    assert tracker.classify(KEY, "5") is Echo.FOREIGN
    tracker.forget("ns/missing")
    assert tracker.write_finished("ns/never", "1") == []
    assert len(tracker) == 0


def test_keys_are_independent():
    tracker = WriteEchoTracker()
    tracker.write_started("ns/a")
    assert tracker.classify("ns/b", "5") is Echo.FOREIGN
    assert wrote(tracker, "5", key="ns/b") == []
    assert tracker.classify("ns/a", "5") is Echo.PENDING
    assert tracker.write_finished("ns/a", "6") == ["5"]
    assert tracker.classify("ns/b", "5") is Echo.OWN
    assert tracker.classify("ns/a", "6") is Echo.OWN


def test_concurrent_writers_and_handlers_lose_nothing():
    tracker = WriteEchoTracker()
    keys = [f"ns/s{i}" for i in range(8)]
    verdicts: dict[str, list[Echo]] = {k: [] for k in keys}
    settled: dict[str, list[str]] = {k: [] for k in keys}

    def run(key):
        for n in range(200):
            rv = f"{key}-{n}"
            tracker.write_started(key)
            first = tracker.classify(key, rv) if n % 2 else None  # echo before the return
            settled[key] += tracker.write_finished(key, rv)
            verdicts[key].append(first if first is not None else tracker.classify(key, rv))

    threads = [threading.Thread(target=run, args=(k,)) for k in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for key in keys:
        assert verdicts[key] == [Echo.OWN, Echo.PENDING] * 100
        assert settled[key] == []
    assert len(tracker) == 0
