"""Ring membership on Leases (informers.shard.membership) through the embedded API server,
time on a FakeClock."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from informers.clock import FakeClock
from informers.shard.membership import (
    ACK_ANNOTATION,
    ORPHAN_AFTER,
    RING_LABEL,
    MemberLease,
    MemberState,
    RingObserver,
    default_member_name,
    member_state,
)
from informers.testing import ApiServer

NS = "kube-system"


def lease(name: str, holder: str | None, duration: int = 10) -> dict[str, Any]:
    spec: dict[str, Any] = {"leaseDurationSeconds": duration}
    if holder is not None:
        spec["holderIdentity"] = holder
    return {"metadata": {"name": name}, "spec": spec}


def test_member_state_boundaries() -> None:
    held = lease("a", "a")
    assert member_state(held, 100.0, 100.0) is MemberState.READY
    assert member_state(held, 100.0, 109.999) is MemberState.READY
    assert member_state(held, 100.0, 110.0) is MemberState.EXPIRED
    assert member_state(held, 100.0, 119.999) is MemberState.EXPIRED
    assert member_state(held, 100.0, 120.0) is MemberState.DEAD
    assert member_state(held, 100.0, 120.0 + ORPHAN_AFTER) is MemberState.ORPHANED
    for released in (lease("a", ""), lease("a", None), lease("a", "b")):
        assert member_state(released, 100.0, 100.0) is MemberState.DEAD
        assert member_state(released, 100.0, 100.0 + ORPHAN_AFTER) is MemberState.ORPHANED
    assert member_state({"metadata": {"name": "a"}, "spec": {"holderIdentity": "a"}},
                        0.0, 0.0) is MemberState.DEAD


def test_default_member_name_is_a_lease_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("socket.gethostname", lambda: "Pod_7.Example")
    assert default_member_name("Endpoints") == "endpoints-pod-7.example"


def test_timings_are_checked() -> None:
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        MemberLease(None, NS, "r", "a", lease_duration=10, renew_deadline=10, retry_period=2)


@pytest.fixture
def api(server: ApiServer) -> Iterator[Any]:
    client = server.api_client()
    yield client
    client.close()


def read(server: ApiServer, name: str) -> dict[str, Any]:
    obj = server.get("leases", NS, name)
    assert isinstance(obj, dict)
    return obj


def wait_for(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_member_lease_acquires_renews_acknowledges_and_releases(server: ApiServer,
                                                                api: Any) -> None:
    clock = FakeClock()
    member = MemberLease(api, NS, "ring-1", "ring-1-a", lease_duration=15, renew_deadline=10,
                         retry_period=2, clock=clock)
    assert not member.held()
    assert member.renew()
    stored = read(server, "ring-1-a")
    assert stored["metadata"]["labels"] == {RING_LABEL: "ring-1"}
    assert ACK_ANNOTATION not in (stored["metadata"].get("annotations") or {})
    assert stored["spec"]["holderIdentity"] == "ring-1-a"
    assert stored["spec"]["leaseDurationSeconds"] == 15
    assert stored["spec"]["renewTime"] == "2026-01-01T00:00:00.000000Z"
    assert stored["spec"]["acquireTime"] == "2026-01-01T00:00:00.000000Z"
    assert member.held()
    clock.step(9.5)
    assert member.held()
    member.set_ack("0123456789abcdef")
    assert member.renew()
    stored = read(server, "ring-1-a")
    assert stored["metadata"]["annotations"][ACK_ANNOTATION] == "0123456789abcdef"
    assert stored["spec"]["renewTime"] == "2026-01-01T00:00:09.500000Z"
    assert stored["spec"]["acquireTime"] == "2026-01-01T00:00:00.000000Z"
    assert member.published_ack == "0123456789abcdef"
    clock.step(10)
    assert not member.held()  # renew_deadline passed without a renewal: stop reconciling
    assert member.release()
    stored = read(server, "ring-1-a")
    assert stored["spec"]["holderIdentity"] == ""
    assert stored["metadata"]["annotations"][ACK_ANNOTATION] == "0123456789abcdef"
    assert not member.held()
    # Acquired again after the release: a new acquireTime, one more transition.
    assert member.renew()
    stored = read(server, "ring-1-a")
    assert stored["spec"]["holderIdentity"] == "ring-1-a"
    assert stored["spec"]["acquireTime"] == "2026-01-01T00:00:19.500000Z"
    assert stored["spec"]["leaseTransitions"] == 1


def test_member_lease_recovers_from_a_deleted_lease(server: ApiServer, api: Any) -> None:
    member = MemberLease(api, NS, "ring-2", "ring-2-a", lease_duration=3, renew_deadline=2,
                         retry_period=1, clock=FakeClock())
    assert member.renew()
    server.delete("leases", NS, "ring-2-a")
    assert not member.renew()  # the cached Lease is gone: 404, logged
    assert member.renew()  # read again, created again
    assert read(server, "ring-2-a")["spec"]["holderIdentity"] == "ring-2-a"


def test_run_renews_every_retry_period_and_at_once_on_a_new_ack(server: ApiServer,
                                                                 api: Any) -> None:
    clock = FakeClock()
    member = MemberLease(api, NS, "ring-3", "ring-3-a", lease_duration=3, renew_deadline=2,
                         retry_period=1, clock=clock)
    stop = threading.Event()
    renewals: list[float] = []
    thread = threading.Thread(target=member.run, args=(stop, lambda: renewals.append(
        clock.now())))
    thread.start()
    try:
        wait_for(lambda: renewals == [0.0] and clock.has_waiters())
        clock.step(1)
        wait_for(lambda: renewals == [0.0, 1.0] and clock.has_waiters())
        member.set_ack("feedfacefeedface")  # no clock step: renewed at once
        wait_for(lambda: member.published_ack == "feedfacefeedface")
        assert renewals == [0.0, 1.0, 1.0]
    finally:
        stop.set()
        member.interrupt()
        thread.join(5)
    assert not thread.is_alive()


def test_ring_observer_classifies_members_on_its_clock(server: ApiServer, api: Any) -> None:
    clock = FakeClock()
    a = MemberLease(api, NS, "ring-4", "ring-4-a", lease_duration=10, renew_deadline=5,
                    retry_period=1, clock=clock)
    b = MemberLease(api, NS, "ring-4", "ring-4-b", lease_duration=10, renew_deadline=5,
                    retry_period=1, clock=clock)
    other = MemberLease(api, NS, "ring-5", "ring-5-x", lease_duration=10, renew_deadline=5,
                        retry_period=1, clock=clock)
    for m in (a, b, other):
        assert m.renew()
    changes = threading.Event()
    observer = RingObserver(api, NS, "ring-4", clock=clock, on_change=changes.set)
    stop = threading.Event()
    thread = threading.Thread(target=observer.informer.run, args=(stop,))
    thread.start()
    try:
        wait_for(observer.has_synced)
        assert changes.is_set()
        assert observer.states() == {"ring-4-a": (MemberState.READY, None),
                                     "ring-4-b": (MemberState.READY, None)}
        clock.step(6)
        a.set_ack("00000000000000aa")
        assert a.renew()  # a renews at 6; b does not
        wait_for(lambda: observer.states()["ring-4-a"][1] == "00000000000000aa")
        clock.step(4)
        assert observer.states() == {"ring-4-a": (MemberState.READY, "00000000000000aa"),
                                     "ring-4-b": (MemberState.EXPIRED, None)}
        # b renews but the watch has not told yet: confirm() reads it from the server.
        assert b.renew()
        assert observer.confirm("ring-4-b") is MemberState.READY
        clock.step(10)
        assert observer.states()["ring-4-a"][0] is MemberState.EXPIRED
        clock.step(6)
        assert observer.states()["ring-4-a"][0] is MemberState.DEAD
        assert b.release()
        wait_for(lambda: observer.states()["ring-4-b"][0] is MemberState.DEAD)
        clock.step(ORPHAN_AFTER)
        assert observer.states()["ring-4-b"][0] is MemberState.ORPHANED
        assert observer.delete_orphan("ring-4-b")
        wait_for(lambda: "ring-4-b" not in observer.states())
        assert observer.confirm("ring-4-b") is MemberState.DEAD
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
