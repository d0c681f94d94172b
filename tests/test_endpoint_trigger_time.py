"""Tests for controllers.endpoint.trigger_time (cases of k8s.io/endpointslice v0.36.3
util/trigger_time_tracker_test.go plus timestamp parsing and formatting)."""

from __future__ import annotations

import threading

import pytest

from controllers.endpoint.trigger_time import (
    TriggerTimeTracker,
    format_rfc3339_nano,
    parse_rfc3339,
    pod_trigger_time,
    service_trigger_time,
)

NS = "ttNamespace1"
SVC = "my-service"
T = [f"2019-01-01T00:00:0{i}Z" for i in range(6)]
NANOS = [parse_rfc3339(t) for t in T]


def service(created):
    return {"metadata": {"namespace": NS, "name": SVC, "creationTimestamp": created}}


def pod(name, ready_time):
    return {
        "metadata": {"namespace": NS, "name": name},
        "status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": ready_time}
        ]},
    }


def compute(tracker, svc, *pods):
    got = tracker.compute_endpoint_last_change_trigger_time(NS, svc, pods)
    return None if got is None else format_rfc3339_nano(got)


def test_new_service_no_pods():
    assert compute(TriggerTimeTracker(), service(T[2])) == T[2]


def test_new_service_existing_pods_uses_service_creation():
    tracker = TriggerTimeTracker()
    assert compute(tracker, service(T[3]), pod("pod1", T[0]), pod("pod2", T[1]),
                   pod("pod3", T[5])) == T[3]


def test_pods_added():
    tracker = TriggerTimeTracker()
    svc = service(T[0])
    assert compute(tracker, svc) == T[0]
    assert compute(tracker, svc, pod("pod1", T[2]), pod("pod2", T[1])) == T[1]


def test_pods_updated():
    tracker = TriggerTimeTracker()
    svc = service(T[0])
    pod3 = pod("pod3", T[3])
    assert compute(tracker, svc, pod("pod1", T[1]), pod("pod2", T[2]), pod3) == T[0]
    assert compute(tracker, svc, pod("pod1", T[5]), pod("pod2", T[4]), pod3) == T[4]


def test_pods_updated_no_op():
    tracker = TriggerTimeTracker()
    svc = service(T[0])
    pods = (pod("pod1", T[1]), pod("pod2", T[2]), pod("pod3", T[3]))
    assert compute(tracker, svc, *pods) == T[0]
    assert compute(tracker, svc, *pods) is None


def test_pod_deleted_then_added():
    tracker = TriggerTimeTracker()
    svc = service(T[0])
    pod1 = pod("pod1", T[1])
    assert compute(tracker, svc, pod1, pod("pod2", T[2])) == T[0]
    assert compute(tracker, svc, pod1) is None
    assert compute(tracker, svc, pod1, pod("pod2", T[4])) == T[4]


def test_pod_readded_with_old_time_counts_because_state_was_replaced():
    tracker = TriggerTimeTracker()
    svc = service(T[0])
    assert compute(tracker, svc, pod("pod1", T[1]), pod("pod2", T[2])) == T[0]
    assert compute(tracker, svc, pod("pod1", T[1])) is None
    assert compute(tracker, svc, pod("pod1", T[1]), pod("pod2", T[2])) == T[2]


def test_service_deleted_then_added():
    tracker = TriggerTimeTracker()
    pods = (pod("pod1", T[1]), pod("pod2", T[2]))
    assert compute(tracker, service(T[0]), *pods) == T[0]
    tracker.delete_service(NS, SVC)
    assert len(tracker) == 0
    assert compute(tracker, service(T[3]), *pods) == T[3]


def test_service_updated_no_pod_change_gives_nothing():
    tracker = TriggerTimeTracker()
    svc = service(T[0])
    pods = (pod("pod1", T[1]), pod("pod2", T[2]))
    assert compute(tracker, svc, *pods) == T[0]
    svc["spec"] = {"selector": {}, "ports": [{"port": 80}]}
    assert compute(tracker, svc, *pods) is None


def test_service_recreated_under_same_key_without_delete_counts_newer_creation():
    tracker = TriggerTimeTracker()
    assert compute(tracker, service(T[0])) == T[0]
    assert compute(tracker, service(T[4]), pod("p", T[5])) == T[4]


def test_service_without_creation_timestamp_gives_none():
    tracker = TriggerTimeTracker()
    assert compute(tracker, {"metadata": {"name": SVC}}, pod("p", T[1])) is None
    # known now: the pod's time did not change since the first call
    assert compute(tracker, {"metadata": {"name": SVC}}, pod("p", T[1])) is None
    assert compute(tracker, {"metadata": {"name": SVC}}, pod("p", T[2])) == T[2]


def test_pods_without_ready_condition_are_ignored():
    tracker = TriggerTimeTracker()
    svc = service(T[0])
    compute(tracker, svc)
    assert compute(tracker, svc, {"metadata": {"name": "x"}, "status": {}}) is None
    assert pod_trigger_time({"status": {"conditions": [{"type": "Ready"}]}}) is None
    assert pod_trigger_time({"status": {"conditions": "junk"}}) is None
    assert service_trigger_time({"metadata": {"creationTimestamp": "yesterday"}}) is None


def test_first_ready_condition_is_used():
    p = {"status": {"conditions": [
        {"type": "Ready", "lastTransitionTime": T[1]},
        {"type": "Ready", "lastTransitionTime": T[2]},
    ]}}
    assert pod_trigger_time(p) == NANOS[1]


class CountingPod(dict):
    """A pod that counts reads of its fields."""

    reads = 0

    def get(self, key, default=None):
        CountingPod.reads += 1
        return super().get(key, default)


def test_the_very_same_pod_object_is_read_once_and_gives_the_same_times():
    tracker = TriggerTimeTracker()
    svc = service(T[0])
    same = CountingPod(pod("pod1", T[1]))
    assert compute(tracker, svc, same) == T[0]  # a new service: its creation
    first = CountingPod.reads
    assert first > 0
    assert compute(tracker, svc, same) is None  # nothing changed
    assert CountingPod.reads == first  # not read again
    # A new object for the pod (as an informer makes on every change) is read.
    assert compute(tracker, svc, CountingPod(pod("pod1", T[2]))) == T[2]
    assert CountingPod.reads > first
    # An equal but new object is read too, and changes nothing.
    assert compute(tracker, svc, CountingPod(pod("pod1", T[2]))) is None


def test_concurrent_services_do_not_interfere():
    tracker = TriggerTimeTracker()
    errors = []

    def run(i):
        svc = {"metadata": {"name": f"s{i}", "creationTimestamp": T[i % 6]}}
        if tracker.compute_endpoint_last_change_trigger_time(NS, svc, []) != NANOS[i % 6]:
            errors.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(tracker) == 40


@pytest.mark.parametrize(
    ("text", "formatted"),
    [
        ("2018-01-01T00:00:00Z", "2018-01-01T00:00:00Z"),
        ("2018-01-01T01:30:00+01:30", "2018-01-01T00:00:00Z"),
        ("2017-12-31T19:00:00-05:00", "2018-01-01T00:00:00Z"),
        ("2018-01-01T00:00:00.5Z", "2018-01-01T00:00:00.5Z"),
        ("2018-01-01T00:00:00.123456789Z", "2018-01-01T00:00:00.123456789Z"),
        ("2018-01-01T00:00:00.1234567891Z", "2018-01-01T00:00:00.123456789Z"),
        ("2018-01-01T00:00:00.000000Z", "2018-01-01T00:00:00Z"),
        ("2018-01-01T00:00:00,25Z", "2018-01-01T00:00:00.25Z"),
        ("1960-06-01T12:00:00Z", "1960-06-01T12:00:00Z"),
        ("0001-01-01T00:00:01Z", "0001-01-01T00:00:01Z"),
    ],
)
def test_parse_and_format_round_trip_like_go(text, formatted):
    assert format_rfc3339_nano(parse_rfc3339(text)) == formatted


@pytest.mark.parametrize(
    "text",
    [None, "", "2018-01-01", "2018-01-01 00:00:00Z", "2018-13-01T00:00:00Z",
     "2018-01-01T00:00:00+25:00", "0001-01-01T00:00:00Z", 1514764800, "2018-01-01t00:00:00z"],
)
def test_parse_rejects_malformed_and_the_zero_time(text):
    assert parse_rfc3339(text) is None


def test_parse_gives_unix_nanoseconds():
    assert parse_rfc3339("1970-01-01T00:00:01.000000002Z") == 1_000_000_002
    assert parse_rfc3339("2018-01-01T00:00:00Z") == 1_514_764_800 * 10**9
