"""informers.conditions: apimachinery pkg/api/meta/conditions_test.go, case for case."""

from __future__ import annotations

import pytest

from informers.clock import FakeClock
from informers.conditions import (
    find_status_condition,
    is_status_condition_false,
    is_status_condition_present_and_equal,
    is_status_condition_true,
    new_condition,
    remove_status_condition,
    set_status_condition,
    status_conditions,
)

ONE_HOUR_BEFORE = "2025-12-31T23:00:00Z"
ONE_HOUR_AFTER = "2026-01-01T01:00:00Z"
NOW = "2026-01-01T00:00:00Z"  # FakeClock's wall start

SET_CASES = [
    ("should-add",
     [{"type": "first"}, {"type": "third"}],
     {"type": "second", "status": "True", "lastTransitionTime": ONE_HOUR_BEFORE,
      "reason": "reason", "message": "message"},
     True,
     [{"type": "first"}, {"type": "third"},
      {"type": "second", "status": "True", "lastTransitionTime": ONE_HOUR_BEFORE,
       "reason": "reason", "message": "message"}]),
    ("use-supplied-time",
     [{"type": "first"}, {"type": "second", "status": "False"}, {"type": "third"}],
     {"type": "second", "status": "True", "lastTransitionTime": ONE_HOUR_BEFORE,
      "reason": "reason", "message": "message"},
     True,
     [{"type": "first"},
      {"type": "second", "status": "True", "lastTransitionTime": ONE_HOUR_BEFORE,
       "reason": "reason", "message": "message"},
      {"type": "third"}]),
    ("update-fields",
     [{"type": "first"},
      {"type": "second", "status": "True", "lastTransitionTime": ONE_HOUR_BEFORE},
      {"type": "third"}],
     {"type": "second", "status": "True", "lastTransitionTime": ONE_HOUR_AFTER,
      "reason": "reason", "message": "message", "observedGeneration": 3},
     True,
     [{"type": "first"},
      {"type": "second", "status": "True", "lastTransitionTime": ONE_HOUR_BEFORE,
       "reason": "reason", "message": "message", "observedGeneration": 3},
      {"type": "third"}]),
    ("nothing changes",
     [{"type": "type", "status": "True", "lastTransitionTime": ONE_HOUR_BEFORE}],
     {"type": "type", "status": "True", "lastTransitionTime": ONE_HOUR_BEFORE},
     False,
     [{"type": "type", "status": "True", "lastTransitionTime": ONE_HOUR_BEFORE}]),
]


@pytest.mark.parametrize(("conditions", "to_add", "expect_changed", "expected"),
                         [c[1:] for c in SET_CASES], ids=[c[0] for c in SET_CASES])
def test_set_status_condition(conditions, to_add, expect_changed, expected):
    changed = set_status_condition(conditions, to_add, clock=FakeClock())
    assert changed is expect_changed
    assert conditions == expected


def test_set_status_condition_stamps_now_when_no_time_is_given():
    clock = FakeClock()
    conditions: list = []
    assert set_status_condition(conditions, new_condition("Ready", False, "Starting"),
                                clock=clock)
    assert conditions[0]["lastTransitionTime"] == NOW
    clock.step(3600)
    # same status: the time stays, the reason moves
    assert set_status_condition(conditions, new_condition("Ready", False, "Waiting"),
                                clock=clock)
    assert conditions[0]["lastTransitionTime"] == NOW
    assert conditions[0]["reason"] == "Waiting"
    # the status changes: the time moves to now
    assert set_status_condition(conditions, new_condition("Ready", True, "Available",
                                                          observed_generation=2), clock=clock)
    assert conditions == [{"type": "Ready", "status": "True", "reason": "Available",
                           "message": "", "observedGeneration": 2,
                           "lastTransitionTime": ONE_HOUR_AFTER}]


REMOVE_CASES = [
    ("present", [{"type": "first"}, {"type": "second"}, {"type": "third"}], "second", True,
     [{"type": "first"}, {"type": "third"}]),
    ("not-present", [{"type": "first"}, {"type": "second"}, {"type": "third"}], "fourth", False,
     [{"type": "first"}, {"type": "second"}, {"type": "third"}]),
    ("empty_conditions", [], "Foo", False, []),
]


@pytest.mark.parametrize(("conditions", "type_", "expect_removal", "expected"),
                         [c[1:] for c in REMOVE_CASES], ids=[c[0] for c in REMOVE_CASES])
def test_remove_status_condition(conditions, type_, expect_removal, expected):
    assert remove_status_condition(conditions, type_) is expect_removal
    assert conditions == expected


@pytest.mark.parametrize(("conditions", "type_", "expected"), [
    ([{"type": "first"}], "second", None),
    ([{"type": "first"}, {"type": "second"}], "second", {"type": "second"}),
], ids=["not-present", "present"])
def test_find_status_condition(conditions, type_, expected):
    assert find_status_condition(conditions, type_) == expected


@pytest.mark.parametrize(("conditions", "type_", "status", "expected"), [
    ([{"type": "first", "status": "Unknown"}], "first", "True", False),
    ([{"type": "first", "status": "True"}], "first", "True", True),
    ([{"type": "first", "status": "False"}], "first", "False", True),
], ids=["doesnt-match-true", "does-match-true", "does-match-false"])
def test_is_status_condition_present_and_equal(conditions, type_, status, expected):
    assert is_status_condition_present_and_equal(conditions, type_, status) is expected


def test_is_status_condition_true_and_false():
    conditions = [{"type": "Ready", "status": "True"}, {"type": "Degraded", "status": "False"}]
    assert is_status_condition_true(conditions, "Ready")
    assert not is_status_condition_false(conditions, "Ready")
    assert is_status_condition_false(conditions, "Degraded")
    assert not is_status_condition_true(conditions, "Missing")
    assert not is_status_condition_false(conditions, "Missing")


def test_status_conditions_creates_the_list_in_place():
    obj: dict = {"metadata": {"name": "x"}}
    status_conditions(obj).append({"type": "Ready"})
    assert obj["status"] == {"conditions": [{"type": "Ready"}]}
    assert status_conditions(obj) is obj["status"]["conditions"]
