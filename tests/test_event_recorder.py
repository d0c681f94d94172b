"""Tests for informers.events.recorder through the embedded API server, on a FakeClock."""

from __future__ import annotations

import datetime
import logging
import random
import threading
import time

import pytest

from informers.clock import FakeClock
from informers.events import EventRecorder, get_reference
from informers.meta_time import unix_nano

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
START_NAME_SUFFIX = f"{unix_nano(START):x}"

_counter = iter(range(10_000))


class HalfRandom(random.Random):
    """The first retry sleeps exactly half the sleep duration."""

    def random(self):
        return 0.5


@pytest.fixture
def api(server):
    server.clear_faults()
    server.clear_request_log()
    client = server.api_client()
    yield client
    client.close()


@pytest.fixture
def namespace(server):
    name = f"ev-{next(_counter)}"
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def recorder(api, clock):
    rec = EventRecorder(api, "ctrl", "node-1", clock=clock, rng=HalfRandom())
    rec.start()
    yield rec
    rec.stop()


def pod(namespace, name="web-1"):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "resourceVersion": "17",
        },
        "spec": {},
    }


def wait_until(predicate, timeout=5.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


def events(server, namespace):
    return server.list("events", namespace)


def wait_for_events(server, namespace, count):
    wait_until(lambda: len(events(server, namespace)) >= count, what=f"{count} events")
    time.sleep(0.01)
    found = events(server, namespace)
    assert len(found) == count
    return found


def event_requests(server, verb=None):
    return [r for r in server.request_log(verb, "events")]


def without_server_fields(event):
    out = {k: v for k, v in event.items() if k != "metadata"}
    out["metadata"] = {k: event["metadata"][k] for k in ("name", "namespace")}
    return out


def test_writes_exact_event(server, recorder, namespace):
    recorder.event(pod(namespace), "Normal", "Created", "created the pod")
    (stored,) = wait_for_events(server, namespace, 1)
    assert without_server_fields(stored) == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"web-1.{START_NAME_SUFFIX}", "namespace": namespace},
        "involvedObject": {
            "kind": "Pod",
            "namespace": namespace,
            "name": "web-1",
            "uid": "uid-web-1",
            "apiVersion": "v1",
            "resourceVersion": "17",
        },
        "reason": "Created",
        "message": "created the pod",
        "source": {"component": "ctrl", "host": "node-1"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "count": 1,
        "type": "Normal",
        "eventTime": None,
        "reportingComponent": "ctrl",
        "reportingInstance": "node-1",
    }


def test_eventf_formats_and_cluster_scoped_objects_go_to_default(server, api, clock):
    rec = EventRecorder(api, "ctrl", clock=clock)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-7", "uid": "n7"}}
    rec.eventf(node, "Warning", "Failed", "failed %s/%s: %d", "a", "b", 3)
    rec.start()
    try:
        wait_until(
            lambda: any(e["involvedObject"]["name"] == "node-7" for e in events(server, "default")),
            what="the node event",
        )
    finally:
        rec.stop()
    (stored,) = [e for e in events(server, "default") if e["involvedObject"]["name"] == "node-7"]
    assert stored["message"] == "failed a/b: 3"
    assert stored["type"] == "Warning"
    assert stored["involvedObject"] == {"kind": "Node", "name": "node-7", "uid": "n7",
                                        "apiVersion": "v1"}
    assert stored["source"] == {"component": "ctrl"}
    assert stored["reportingInstance"] == ""


def test_identical_event_is_patched_with_count_two(server, recorder, clock, namespace):
    recorder.event(pod(namespace), "Normal", "Created", "same")
    wait_for_events(server, namespace, 1)
    clock.step(5)
    recorder.event(pod(namespace), "Normal", "Created", "same")
    wait_until(lambda: event_requests(server, "patch"), what="the patch")
    (stored,) = wait_for_events(server, namespace, 1)
    assert stored["metadata"]["name"] == f"web-1.{START_NAME_SUFFIX}"
    assert stored["count"] == 2
    assert stored["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert stored["lastTimestamp"] == "2026-01-01T00:00:05Z"
    assert [(r.verb, r.status) for r in event_requests(server)] == [
        ("create", 201),
        ("patch", 200),
    ]


def test_patch_of_a_vanished_event_falls_back_to_create(server, recorder, clock, namespace):
    recorder.event(pod(namespace), "Normal", "Created", "same")
    (first,) = wait_for_events(server, namespace, 1)
    server.delete("events", namespace, first["metadata"]["name"])
    clock.step(3)
    recorder.event(pod(namespace), "Normal", "Created", "same")
    (stored,) = wait_for_events(server, namespace, 1)
    assert stored["metadata"]["name"] == first["metadata"]["name"]
    assert stored["count"] == 2
    assert stored["lastTimestamp"] == "2026-01-01T00:00:03Z"
    assert [(r.verb, r.status) for r in event_requests(server)] == [
        ("create", 201),
        ("patch", 404),
        ("create", 201),
    ]


def test_aggregation_after_ten_distinct_messages(server, recorder, clock, namespace):
    for i in range(10):
        recorder.event(pod(namespace), "Warning", "BackOff", f"attempt {i}")
        # The correlator stamps a combined event when the writer takes it: let it write first.
        wait_until(lambda n=i + 1: len(event_requests(server, "create")) == n, what="a create")
        clock.step(1)
    stored = wait_for_events(server, namespace, 10)
    messages = sorted(e["message"] for e in stored)
    assert messages == sorted(
        [f"attempt {i}" for i in range(9)] + ["(combined from similar events): attempt 9"]
    )
    recorder.event(pod(namespace), "Warning", "BackOff", "attempt 10")
    wait_until(lambda: event_requests(server, "patch"), what="the patch of the combined event")
    combined = [e for e in wait_for_events(server, namespace, 10) if "combined" in e["message"]]
    assert len(combined) == 1
    assert combined[0]["message"] == "(combined from similar events): attempt 10"
    assert combined[0]["count"] == 2
    assert combined[0]["firstTimestamp"] == "2026-01-01T00:00:09Z"
    assert combined[0]["lastTimestamp"] == "2026-01-01T00:00:10Z"


def test_spam_filter_after_twenty_five(server, recorder, namespace):
    for i in range(30):
        recorder.event(pod(namespace), "Normal", f"Reason{i}", "m")
    recorder.event(pod(namespace, "other"), "Normal", "Reason", "m")
    wait_until(lambda: any(e["involvedObject"]["name"] == "other"
                           for e in events(server, namespace)), what="the last event")
    stored = events(server, namespace)
    about_web = sorted(e["reason"] for e in stored if e["involvedObject"]["name"] == "web-1")
    assert about_web == sorted(f"Reason{i}" for i in range(25))


def test_full_queue_drops_without_blocking(server, api, clock, namespace, caplog):
    rec = EventRecorder(api, "ctrl", clock=clock, max_queued_events=3)
    with caplog.at_level(logging.ERROR, logger="informers.events.recorder"):
        for i in range(5):
            rec.event(pod(namespace), "Normal", f"R{i}", "m")  # not started: nothing drains
    assert rec.pending() == 3
    assert rec.dropped_events == 2
    assert sum("too many queued events" in r.getMessage() for r in caplog.records) == 2
    rec.start()
    try:
        stored = wait_for_events(server, namespace, 3)
    finally:
        rec.stop()
    assert sorted(e["reason"] for e in stored) == ["R0", "R1", "R2"]


def test_callers_never_block_while_the_writer_retries(server, api, clock, namespace):
    rec = EventRecorder(api, "ctrl", clock=clock, max_queued_events=1000, rng=HalfRandom())
    server.fail_next(1, 500, verb="create", resource="events")
    rec.start()
    try:
        rec.event(pod(namespace), "Normal", "First", "m")
        assert clock.wait_for_waiters(1)  # the writer sleeps before its retry
        for i in range(1100):
            rec.event(pod(namespace, f"p{i}"), "Normal", "Many", "m")
        assert rec.pending() == 1000
        assert rec.dropped_events == 100
    finally:
        rec.stop()  # gives up the event waiting for a retry


def test_retries_server_errors_then_succeeds(server, recorder, clock, namespace):
    server.fail_next(2, 500, verb="create", resource="events")
    recorder.event(pod(namespace), "Normal", "Created", "m")
    assert clock.wait_for_waiters(1)
    assert clock.next_deadline() == 5.0  # first sleep: rand (0.5) * 10 s
    clock.step(5)
    wait_until(lambda: len(event_requests(server, "create")) == 2, what="the second try")
    wait_until(lambda: clock.next_deadline() == 15.0, what="the second sleep")  # a full 10 s
    clock.step(9.9)
    assert clock.waiter_count() == 1 and clock.next_deadline() == 15.0  # still sleeping
    assert len(event_requests(server, "create")) == 2
    clock.step(0.1)
    (stored,) = wait_for_events(server, namespace, 1)
    assert [r.status for r in event_requests(server, "create")] == [500, 500, 201]
    assert stored["count"] == 1
    assert stored["firstTimestamp"] == "2026-01-01T00:00:00Z"


def test_gives_up_after_twelve_tries(server, recorder, clock, namespace, caplog):
    server.fail_next(12, 503, verb="create", resource="events")
    with caplog.at_level(logging.ERROR, logger="informers.events.recorder"):
        recorder.event(pod(namespace), "Normal", "Lost", "m")
        for tries in range(1, 12):
            wait_until(lambda t=tries: len(event_requests(server, "create")) == t,
                       what=f"try {tries}")
            assert clock.wait_for_waiters(1)
            clock.step(10)
        wait_until(lambda: len(event_requests(server, "create")) == 12, what="the last try")
        recorder.event(pod(namespace), "Normal", "Next", "m")
        (stored,) = wait_for_events(server, namespace, 1)
    assert stored["reason"] == "Next"
    assert any("retry limit exceeded" in r.getMessage() for r in caplog.records)
    assert [r.status for r in event_requests(server, "create")] == [503] * 12 + [201]


def test_already_exists_is_not_retried(server, recorder, clock, namespace):
    existing = server.create({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"web-1.{START_NAME_SUFFIX}", "namespace": namespace},
        "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": namespace},
        "reason": "Existing",
        "message": "was here first",
    })
    recorder.event(pod(namespace), "Normal", "Created", "m")
    clock.step(1)
    recorder.event(pod(namespace, "web-2"), "Normal", "Created", "m")
    wait_for_events(server, namespace, 2)
    assert not clock.has_waiters()
    assert [r.status for r in event_requests(server, "create")] == [409, 201]
    assert server.get("events", namespace, existing["metadata"]["name"])["reason"] == "Existing"


def test_missing_namespace_is_not_retried(server, recorder, clock):
    recorder.event(pod("no-such-namespace"), "Normal", "Created", "m")
    wait_until(lambda: event_requests(server, "create"), what="the create")
    recorder.event(pod("default", f"later-{next(_counter)}"), "Normal", "Created", "m")
    wait_until(lambda: len(event_requests(server, "create")) == 2, what="the second create")
    assert [r.status for r in event_requests(server, "create")] == [404, 201]
    assert not clock.has_waiters()


def test_unsupported_type_is_rejected(recorder, caplog, namespace):
    with caplog.at_level(logging.ERROR, logger="informers.events.recorder"):
        recorder.event(pod(namespace), "Info", "Created", "m")
        recorder.event("not an object", "Normal", "Created", "m")
    assert recorder.pending() == 0
    messages = [r.getMessage() for r in caplog.records]
    assert any("unsupported event type 'Info'" in m for m in messages)
    assert any("could not construct reference" in m for m in messages)


def test_stop_drains_queued_events(server, api, clock, namespace):
    rec = EventRecorder(api, "ctrl", clock=clock)
    for i in range(3):
        rec.event(pod(namespace), "Normal", f"R{i}", "m")
    rec.start()
    rec.stop()
    assert sorted(e["reason"] for e in events(server, namespace)) == ["R0", "R1", "R2"]


def test_stop_event_stops_the_writer(api, clock):
    stop = threading.Event()
    rec = EventRecorder(api, "ctrl", clock=clock)
    rec.start(stop)
    writer = rec._writer
    assert writer is not None and writer.is_alive()
    stop.set()
    writer.join(5)
    assert not writer.is_alive()


def test_stop_interrupts_a_retry_sleep(server, api, clock, namespace, caplog):
    rec = EventRecorder(api, "ctrl", clock=clock)
    server.fail_next(1, 500, verb="create", resource="events")
    rec.start()
    rec.event(pod(namespace), "Normal", "Created", "m")
    assert clock.wait_for_waiters(1)
    with caplog.at_level(logging.ERROR, logger="informers.events.recorder"):
        rec.stop()
    assert events(server, namespace) == []
    assert any("recorder is shut down" in r.getMessage() for r in caplog.records)


def test_get_reference_from_object_or_reference():
    assert get_reference(pod("ns")) == {
        "kind": "Pod", "namespace": "ns", "name": "web-1", "uid": "uid-web-1",
        "apiVersion": "v1", "resourceVersion": "17",
    }
    ref = {"kind": "Service", "namespace": "ns", "name": "svc", "fieldPath": "spec"}
    assert get_reference(ref) == ref
    assert get_reference({"metadata": {"name": "x"}}) == {"name": "x"}
    with pytest.raises(TypeError):
        get_reference(["not", "a", "dict"])
