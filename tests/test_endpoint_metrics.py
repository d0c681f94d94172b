"""Tests for controllers.endpoint.metrics."""

from __future__ import annotations

import pytest

from controllers.endpoint.metrics import SYNC_RESULTS, SyncMetrics


def test_counts_results_and_builds_cumulative_histogram():
    metrics = SyncMetrics(buckets=(0.01, 0.1, 1.0))
    for result, seconds in [("updated", 0.005), ("updated", 0.01), ("unchanged", 0.05),
                            ("error", 2.0)]:
        metrics.observe_sync(result, seconds)
    metrics.observe_retry()
    metrics.observe_drop()
    snap = metrics.snapshot()
    assert snap.syncs == {**dict.fromkeys(SYNC_RESULTS, 0), "updated": 2, "unchanged": 1,
                          "error": 1}
    assert snap.duration.buckets == ((0.01, 2), (0.1, 3), (1.0, 3), (float("inf"), 4))
    assert snap.duration.count == 4
    assert snap.duration.sum == pytest.approx(2.065)
    assert (snap.retries, snap.dropped) == (1, 1)


def test_listeners_get_every_observation_and_may_fail(caplog):
    metrics = SyncMetrics()
    seen = []
    metrics.add_listener(lambda result, seconds: seen.append((result, seconds)))
    metrics.add_listener(lambda result, seconds: 1 / 0)
    metrics.observe_sync("created", 0.5)
    assert seen == [("created", 0.5)]
    assert "listener" in caplog.text
    assert metrics.snapshot().syncs["created"] == 1


def test_buckets_must_ascend():
    with pytest.raises(ValueError, match="ascending"):
        SyncMetrics(buckets=(1.0, 0.5))
