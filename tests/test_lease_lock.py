"""Tests for informers.leaderelection.lease_lock through the embedded API server."""

from __future__ import annotations

import datetime
import json

import pytest

from informers.errors import LeaseNotInitializedError, StatusError
from informers.leaderelection import LeaderElectionRecord, LeaseLock
from informers.leaderelection.lease_lock import lease_spec_to_record, record_to_lease_spec

UTC = datetime.timezone.utc
T0 = datetime.datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime.datetime(2026, 1, 1, 0, 0, 2, 500000, tzinfo=UTC)


@pytest.fixture
def api(server):
    client = server.api_client()
    yield client
    client.close()


_counter = iter(range(10_000))


@pytest.fixture
def lease_name():
    return f"lock-{next(_counter)}"


def read_lease(api, name, namespace="kube-system"):
    from kubernetes import client

    resp = client.CoordinationV1Api(api).read_namespaced_lease(
        name, namespace, _preload_content=False
    )
    return json.loads(resp.data)


class Recorded:
    def __init__(self):
        self.calls = []

    def eventf(self, obj, type, reason, fmt, *args):
        self.calls.append((obj, type, reason, fmt % args))


def record(holder="a", transitions=0, acquire=T0, renew=T0, duration=15):
    return LeaderElectionRecord(
        holder_identity=holder,
        lease_duration_seconds=duration,
        acquire_time=acquire,
        renew_time=renew,
        leader_transitions=transitions,
    )


def test_describe_and_identity():
    lock = LeaseLock(None, "kube-system", "ctrl", "me")
    assert lock.describe() == "kube-system/ctrl"
    assert lock.identity == "me"


def test_update_before_get_or_create_fails():
    lock = LeaseLock(None, "kube-system", "ctrl", "me")
    with pytest.raises(LeaseNotInitializedError) as info:
        lock.update(record())
    assert str(info.value) == "lease not initialized, call get or create first"


def test_get_missing_lease_is_not_found(api, lease_name):
    lock = LeaseLock(api, "kube-system", lease_name, "me")
    with pytest.raises(StatusError) as info:
        lock.get()
    assert info.value.code == 404
    assert lock.lease is None


def test_create_writes_micro_times_and_labels(api, lease_name):
    lock = LeaseLock(api, "kube-system", lease_name, "a", labels={"app": "ctrl"})
    lock.create(record(acquire=T0, renew=T1))
    lease = read_lease(api, lease_name)
    assert lease["metadata"]["labels"] == {"app": "ctrl"}
    assert lease["spec"] == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-01-01T00:00:00.000000Z",
        "renewTime": "2026-01-01T00:00:02.500000Z",
        "leaseTransitions": 0,
    }
    # create cached the server's copy, so update works without a get
    lock.update(record(renew=T1 + datetime.timedelta(seconds=2)))
    assert read_lease(api, lease_name)["spec"]["renewTime"] == "2026-01-01T00:00:04.500000Z"


def test_get_returns_record_and_raw_bytes_of_every_field(api, lease_name):
    lock = LeaseLock(api, "kube-system", lease_name, "a")
    lock.create(record(transitions=3, acquire=T0, renew=T1))
    got, raw = lock.get()
    assert got == record(transitions=3, acquire=T0, renew=T1)
    assert lock.lease["metadata"]["name"] == lease_name

    # Same record again: same bytes. Any single field changing changes the bytes.
    _, raw_again = lock.get()
    assert raw_again == raw
    lock.update(record(transitions=3, acquire=T0, renew=T1 + datetime.timedelta(microseconds=1)))
    _, raw_renewed = lock.get()
    assert raw_renewed != raw
    lock.update(record(transitions=4, acquire=T0, renew=T1 + datetime.timedelta(microseconds=1)))
    _, raw_transition = lock.get()
    assert raw_transition != raw_renewed


def test_update_is_optimistic_on_resource_version(api, lease_name):
    first = LeaseLock(api, "kube-system", lease_name, "a")
    second = LeaseLock(api, "kube-system", lease_name, "b")
    first.create(record(holder="a"))
    first.get()
    second.get()
    second.update(record(holder="b", transitions=1))
    with pytest.raises(StatusError) as info:
        first.update(record(holder="a", renew=T1))
    assert info.value.code == 409
    assert read_lease(api, lease_name)["spec"]["holderIdentity"] == "b"
    # After a fresh get the write goes through.
    first.get()
    first.update(record(holder="a", transitions=2))
    assert read_lease(api, lease_name)["spec"]["holderIdentity"] == "a"


def test_create_conflicts_when_lease_exists(api, lease_name):
    LeaseLock(api, "kube-system", lease_name, "a").create(record(holder="a"))
    with pytest.raises(StatusError) as info:
        LeaseLock(api, "kube-system", lease_name, "b").create(record(holder="b"))
    assert info.value.code == 409
    assert info.value.reason == "AlreadyExists"


def test_update_merges_labels(api, lease_name):
    from kubernetes import client

    LeaseLock(api, "kube-system", lease_name, "a").create(record())
    client.CoordinationV1Api(api).patch_namespaced_lease(
        lease_name,
        "kube-system",
        {"metadata": {"labels": {"keep": "1", "app": "old"}}},
        _content_type="application/merge-patch+json",
        _preload_content=False,
    )
    lock = LeaseLock(api, "kube-system", lease_name, "a", labels={"app": "ctrl"})
    lock.get()
    lock.update(record(renew=T1))
    assert read_lease(api, lease_name)["metadata"]["labels"] == {"keep": "1", "app": "ctrl"}


def test_record_event_names_the_lease(api, lease_name):
    recorder = Recorded()
    lock = LeaseLock(api, "kube-system", lease_name, "me", event_recorder=recorder)
    lock.create(record(holder="me"))
    lock.record_event("became leader")
    assert len(recorder.calls) == 1
    subject, type_, reason, message = recorder.calls[0]
    assert (type_, reason, message) == ("Normal", "LeaderElection", "me became leader")
    assert subject["kind"] == "Lease"
    assert subject["apiVersion"] == "coordination.k8s.io/v1"
    assert subject["metadata"]["name"] == lease_name
    assert subject["metadata"]["namespace"] == "kube-system"
    assert subject["metadata"]["uid"] == lock.lease["metadata"]["uid"]


def test_record_event_without_recorder_is_a_no_op():
    LeaseLock(None, "kube-system", "ctrl", "me").record_event("became leader")


def test_spec_conversion_round_trip_and_zero_values():
    rec = LeaderElectionRecord("x", 7, T0, T1, 2, "OldestEmulationVersion", "y")
    spec = record_to_lease_spec(rec)
    assert spec == {
        "holderIdentity": "x",
        "leaseDurationSeconds": 7,
        "leaseTransitions": 2,
        "acquireTime": "2026-01-01T00:00:00.000000Z",
        "renewTime": "2026-01-01T00:00:02.500000Z",
        "preferredHolder": "y",
        "strategy": "OldestEmulationVersion",
    }
    assert lease_spec_to_record(spec) == rec
    assert lease_spec_to_record({}) == LeaderElectionRecord()
    assert record_to_lease_spec(LeaderElectionRecord()) == {
        "holderIdentity": "",
        "leaseDurationSeconds": 0,
        "leaseTransitions": 0,
    }
