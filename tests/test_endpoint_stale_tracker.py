"""Tests for controllers.endpoint.stale_tracker."""

from __future__ import annotations

from controllers.endpoint.stale_tracker import StaleEndpointsTracker


def ep(rv, name="foo", ns="ns"):
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv}}


def test_stale_marks_one_version_per_endpoints():
    tracker = StaleEndpointsTracker()
    assert not tracker.is_stale(ep("1"))
    tracker.stale(ep("1"))
    assert tracker.is_stale(ep("1"))
    assert not tracker.is_stale(ep("2"))
    assert not tracker.is_stale(ep("1", name="bar"))
    assert not tracker.is_stale(ep("1", ns="other"))
    tracker.stale(ep("2"))
    assert not tracker.is_stale(ep("1"))
    assert tracker.is_stale(ep("2"))
    assert len(tracker) == 1


def test_delete_forgets():
    tracker = StaleEndpointsTracker()
    tracker.stale(ep("1"))
    tracker.delete("ns", "foo")
    assert not tracker.is_stale(ep("1"))
    tracker.delete("ns", "missing")
    assert len(tracker) == 0


def test_malformed_objects_do_not_raise():
    tracker = StaleEndpointsTracker()
    tracker.stale({"metadata": None})
    assert tracker.is_stale({})
