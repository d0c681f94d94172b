"""Tests for controllers.endpoint.truncate (the 1000-address capacity,
endpoints_controller.go truncateEndpoints)."""

from __future__ import annotations

import copy

import pytest

from controllers.endpoint.truncate import (
    MAX_CAPACITY,
    OVER_CAPACITY_ANNOTATION,
    TRUNCATED,
    capacity_annotation_set_correctly,
    count_addresses,
    truncate_subsets,
)


def subsets_of(ready_counts, not_ready_counts):
    out = []
    for i, (ready, not_ready) in enumerate(zip(ready_counts, not_ready_counts, strict=True)):
        subset = {"ports": [{"port": 1000 + i}]}
        if ready:
            subset["addresses"] = [{"ip": f"10.{i}.0.{j}"} for j in range(ready)]
        if not_ready:
            subset["notReadyAddresses"] = [{"ip": f"10.{i}.1.{j}"} for j in range(not_ready)]
        out.append(subset)
    return out


# The cases of upstream TestTruncateEndpoints, numbers unchanged.
@pytest.mark.parametrize(
    ("ready", "not_ready", "want_ready", "want_not_ready", "want_truncated"),
    [
        ([], [], [], [], False),
        ([50, 100, 100, 100, 100], [50, 100, 100, 100, 100],
         [50, 100, 100, 100, 100], [50, 100, 100, 100, 100], False),
        ([100, 100, 100, 100, 100], [100, 100, 100, 100, 100],
         [100, 100, 100, 100, 100], [100, 100, 100, 100, 100], False),
        ([90, 110, 50, 10, 20], [101, 200, 200, 201, 298],
         [90, 110, 50, 10, 20], [73, 144, 144, 145, 214], True),
        ([205, 400, 402, 400, 693], [100, 200, 200, 200, 300],
         [98, 191, 192, 191, 328], [0, 0, 0, 0, 0], True),
    ],
)
def test_truncate_numbers_match_upstream(ready, not_ready, want_ready, want_not_ready,
                                         want_truncated):
    subsets = subsets_of(ready, not_ready)
    before = copy.deepcopy(subsets)
    got, truncated = truncate_subsets(subsets)
    assert truncated is want_truncated
    assert subsets == before
    assert [len(s.get("addresses", [])) for s in got] == want_ready
    assert [len(s.get("notReadyAddresses", [])) for s in got] == want_not_ready
    assert sum(count_addresses(got)) <= MAX_CAPACITY


def test_truncation_keeps_the_first_addresses_and_leaves_out_emptied_lists():
    subsets = subsets_of([999, 2], [5, 0])
    got, truncated = truncate_subsets(subsets)
    assert truncated
    # ready total 1001 > 1000: ceil(999/1001*1000)=999, then min(ceil(2/1001*1000)=2, 1)=1
    assert got[0]["addresses"] == subsets[0]["addresses"]
    assert "notReadyAddresses" not in got[0]
    assert got[1]["addresses"] == [{"ip": "10.1.0.0"}]
    assert got[1]["ports"] == [{"port": 1001}]


def test_truncation_budget_can_empty_a_late_subset():
    got, truncated = truncate_subsets(subsets_of([10, 1], [1000, 5]))
    assert truncated
    # budget 989: ceil(1000/1005*989)=985, then min(ceil(5/1005*989)=5, 4)=4
    assert [len(s.get("notReadyAddresses", [])) for s in got] == [985, 4]
    got, _ = truncate_subsets(subsets_of([1001, 0, 0], [0, 0, 3]))
    assert got[2] == {"ports": [{"port": 1002}]}


def test_exactly_at_capacity_is_not_truncated():
    got, truncated = truncate_subsets(subsets_of([600], [400]))
    assert not truncated
    assert got == subsets_of([600], [400])
    _, truncated = truncate_subsets(subsets_of([600], [401]))
    assert truncated


@pytest.mark.parametrize(
    ("annotations", "count", "expected"),
    [
        (None, 0, True),
        ({}, MAX_CAPACITY, True),
        ({}, MAX_CAPACITY + 1, False),
        ({OVER_CAPACITY_ANNOTATION: TRUNCATED}, MAX_CAPACITY, False),
        ({OVER_CAPACITY_ANNOTATION: "warning"}, 10, False),
        ({"other": "x"}, 10, True),
    ],
)
def test_capacity_annotation_set_correctly(annotations, count, expected):
    assert capacity_annotation_set_correctly(annotations, subsets_of([count], [0])) is expected


def test_count_addresses_tolerates_junk():
    assert count_addresses(None) == (0, 0)
    assert count_addresses([{"addresses": "x"}, "junk", {"notReadyAddresses": [{}]}]) == (0, 1)
