"""Tests for informers.events.correlator: aggregation, dedup/count and the spam filter."""

from __future__ import annotations

import uuid

from informers.clock import FakeClock
from informers.events.correlator import (
    CorrelatorOptions,
    EventCorrelator,
    TokenBucket,
    event_aggregator_by_reason_func,
    generate_event_name,
    get_event_key,
    get_spam_key,
)
from informers.meta_time import format_time, unix_nano

POD = {"kind": "Pod", "namespace": "ns", "name": "web-1", "uid": "u1", "apiVersion": "v1"}


def make_event(clock, reason="Reason", message="msg", involved=None, type_="Normal"):
    wall = clock.wall()
    ts = format_time(wall)
    involved = involved or POD
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": generate_event_name(involved["name"], unix_nano(wall)),
            "namespace": involved.get("namespace") or "default",
        },
        "involvedObject": dict(involved),
        "reason": reason,
        "message": message,
        "source": {"component": "ctrl", "host": "node-1"},
        "firstTimestamp": ts,
        "lastTimestamp": ts,
        "count": 1,
        "type": type_,
        "eventTime": None,
        "reportingComponent": "ctrl",
        "reportingInstance": "node-1",
    }


def test_keys_are_client_go_concatenations():
    clock = FakeClock()
    event = make_event(clock, reason="R", message="M")
    event["involvedObject"]["fieldPath"] = "spec.containers{a}"
    assert get_event_key(event) == "ctrlnode-1Podnsweb-1spec.containers{a}u1v1NormalRM"
    assert get_spam_key(event) == "ctrlnode-1Podnsweb-1u1v1Normal"
    assert event_aggregator_by_reason_func(event) == (
        "ctrlnode-1Podnsweb-1u1v1NormalRctrlnode-1",
        "M",
    )


def test_generate_event_name_hex_nanos_or_uuid():
    assert generate_event_name("web-1", 0x18A2B3C4D5E6F700) == "web-1.18a2b3c4d5e6f700"
    name = generate_event_name("Not_Valid", 255)
    assert str(uuid.UUID(name)) == name


def test_first_event_passes_unchanged_without_patch():
    clock = FakeClock()
    correlator = EventCorrelator(clock=clock)
    event = make_event(clock)
    result = correlator.event_correlate(event)
    assert result.skip is False
    assert result.patch is None
    assert result.event == event


def test_identical_event_is_counted_with_patch():
    clock = FakeClock()
    correlator = EventCorrelator(clock=clock)
    first = correlator.event_correlate(make_event(clock)).event
    clock.step(7)
    second_in = make_event(clock)
    result = correlator.event_correlate(second_in)
    assert result.event is not None
    assert result.event["metadata"]["name"] == first["metadata"]["name"]
    assert result.event["count"] == 2
    assert result.event["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert result.event["lastTimestamp"] == "2026-01-01T00:00:07Z"
    assert result.patch == {
        "count": 2,
        "lastTimestamp": "2026-01-01T00:00:07Z",
        "message": "msg",
    }
    clock.step(1)
    third = correlator.event_correlate(make_event(clock))
    assert third.event["count"] == 3
    assert third.patch == {"count": 3, "lastTimestamp": "2026-01-01T00:00:08Z", "message": "msg"}


def test_update_state_remembers_server_name_and_resource_version():
    clock = FakeClock()
    correlator = EventCorrelator(clock=clock)
    first = correlator.event_correlate(make_event(clock)).event
    server_copy = {**first, "metadata": {**first["metadata"], "resourceVersion": "42"}}
    correlator.update_state(server_copy)
    clock.step(1)
    result = correlator.event_correlate(make_event(clock))
    assert result.event["metadata"]["resourceVersion"] == "42"
    assert result.event["count"] == 2


def test_different_messages_are_not_counted_together():
    clock = FakeClock()
    correlator = EventCorrelator(clock=clock)
    a = correlator.event_correlate(make_event(clock, message="a"))
    clock.step(0.001)
    b = correlator.event_correlate(make_event(clock, message="b"))
    assert a.event["count"] == 1 and b.event["count"] == 1
    assert a.event["metadata"]["name"] != b.event["metadata"]["name"]
    assert b.patch is None


def test_aggregation_after_ten_distinct_messages():
    clock = FakeClock()
    correlator = EventCorrelator(clock=clock)
    results = []
    for i in range(9):
        results.append(correlator.event_correlate(make_event(clock, message=f"m{i}")))
        clock.step(1)
    assert [r.event["message"] for r in results] == [f"m{i}" for i in range(9)]
    assert all(r.event["count"] == 1 for r in results)

    tenth = correlator.event_correlate(make_event(clock, message="m9"))
    wall = clock.wall()
    assert tenth.patch is None
    assert tenth.event == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"web-1.{unix_nano(wall):x}", "namespace": "ns"},
        "involvedObject": POD,
        "reason": "Reason",
        "message": "(combined from similar events): m9",
        "source": {"component": "ctrl", "host": "node-1"},
        "firstTimestamp": "2026-01-01T00:00:09Z",
        "lastTimestamp": "2026-01-01T00:00:09Z",
        "count": 1,
        "type": "Normal",
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    }

    clock.step(1)
    eleventh = correlator.event_correlate(make_event(clock, message="m10"))
    # Cached under the aggregate key: same name, count 2, patched with the newest message.
    assert eleventh.event["metadata"]["name"] == tenth.event["metadata"]["name"]
    assert eleventh.event["count"] == 2
    assert eleventh.event["message"] == "(combined from similar events): m10"
    assert eleventh.patch == {
        "count": 2,
        "lastTimestamp": "2026-01-01T00:00:10Z",
        "message": "(combined from similar events): m10",
    }


def test_aggregation_group_expires_after_interval():
    clock = FakeClock()
    correlator = EventCorrelator(clock=clock)
    for i in range(9):
        correlator.event_correlate(make_event(clock, message=f"m{i}"))
    clock.step(600.5)  # more than 600 s since the previous similar event: a fresh group
    result = correlator.event_correlate(make_event(clock, message="m9"))
    assert result.event["message"] == "m9"


def test_aggregation_interval_is_measured_from_the_previous_event():
    clock = FakeClock()
    correlator = EventCorrelator(clock=clock)
    for i in range(9):
        correlator.event_correlate(make_event(clock, message=f"m{i}"))
        clock.step(500)  # each within 600 s of the previous one
    result = correlator.event_correlate(make_event(clock, message="m9"))
    assert result.event["message"] == "(combined from similar events): m9"


def test_spam_filter_burst_then_refill():
    clock = FakeClock()
    correlator = EventCorrelator(clock=clock)
    passed = 0
    for i in range(30):
        # Distinct reasons: neither aggregated nor counted, only rate-limited.
        result = correlator.event_correlate(make_event(clock, reason=f"R{i}"))
        passed += not result.skip
    assert passed == 25
    skipped = correlator.event_correlate(make_event(clock, reason="Another"))
    assert skipped.skip is True and skipped.event is None
    clock.step(299)
    assert correlator.event_correlate(make_event(clock, reason="Another2")).skip is True
    clock.step(1)  # 300 s: one token refilled
    assert correlator.event_correlate(make_event(clock, reason="Another3")).skip is False
    assert correlator.event_correlate(make_event(clock, reason="Another4")).skip is True


def test_spam_filter_is_per_object_and_type():
    clock = FakeClock()
    correlator = EventCorrelator(clock=clock)
    for i in range(25):
        assert not correlator.event_correlate(make_event(clock, reason=f"R{i}")).skip
    assert correlator.event_correlate(make_event(clock, reason="X")).skip
    other = dict(POD, name="web-2", uid="u2")
    assert not correlator.event_correlate(make_event(clock, reason="X", involved=other)).skip
    assert not correlator.event_correlate(make_event(clock, reason="X", type_="Warning")).skip


def test_options_override_defaults():
    clock = FakeClock()
    options = CorrelatorOptions(burst_size=2, qps=1.0, max_events=3, clock=clock)
    correlator = EventCorrelator(options)
    assert not correlator.event_correlate(make_event(clock, reason="A")).skip
    assert not correlator.event_correlate(make_event(clock, reason="B")).skip
    assert correlator.event_correlate(make_event(clock, reason="C")).skip
    clock.step(1)
    assert not correlator.event_correlate(make_event(clock, reason="C")).skip


def test_lru_eviction_forgets_counts():
    clock = FakeClock()
    correlator = EventCorrelator(CorrelatorOptions(lru_cache_size=2), clock)
    correlator.event_correlate(make_event(clock, reason="A"))
    correlator.event_correlate(make_event(clock, reason="B"))
    correlator.event_correlate(make_event(clock, reason="C"))  # evicts A's count
    again = correlator.event_correlate(make_event(clock, reason="A"))
    assert again.event["count"] == 1
    assert again.patch is None
    repeat = correlator.event_correlate(make_event(clock, reason="A"))
    assert repeat.event["count"] == 2


def test_token_bucket_starts_full_and_caps_at_burst():
    clock = FakeClock()
    bucket = TokenBucket(qps=0.5, burst=2, clock=clock)
    assert bucket.try_accept() and bucket.try_accept()
    assert not bucket.try_accept()
    clock.step(1.9)
    assert not bucket.try_accept()
    clock.step(0.1)
    assert bucket.try_accept()
    clock.step(100)  # refills only up to the burst
    assert bucket.try_accept() and bucket.try_accept()
    assert not bucket.try_accept()
