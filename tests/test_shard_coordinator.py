"""ShardCoordinator.tick() driven step by step on a FakeClock, on the embedded server: two
members split the space, a member that stops renewing is taken over exactly when its Lease is
seen expired for a lease duration, and its orphaned Lease is deleted a minute after it is
dead."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from informers.clock import FakeClock
from informers.errors import NotFound
from informers.shard import RangeSet, ShardCoordinator, ShardingConfig, assign
from informers.shard.membership import ORPHAN_AFTER
from informers.testing import ApiServer

NS = "default"


@pytest.fixture
def api(server: ApiServer) -> Iterator[Any]:
    client = server.api_client()
    yield client
    client.close()


def lease(server: ApiServer, name: str) -> dict[str, Any] | None:
    try:
        return server.get("leases", NS, name)
    except NotFound:
        return None


def settle(server: ApiServer, *members: ShardCoordinator) -> None:
    """A few rounds of renewals (publishing acknowledgements) and ticks, each after every
    observer has seen every member's Lease as the server holds it."""
    for _ in range(4):
        for m in members:
            assert m.lease.renew()
        wanted = {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                  for o in server.list("leases", NS)}
        deadline = time.monotonic() + 5
        for m in members:
            while {n: str(o.lease["metadata"]["resourceVersion"])
                   for n, o in m.observer.snapshot().items()} != wanted:
                assert time.monotonic() < deadline, "the observer did not catch up"
                time.sleep(0.01)
            m.tick()


def test_takeover_after_one_lease_duration_and_orphans_collected(server: ApiServer,
                                                                 api: Any) -> None:
    clock = FakeClock()
    def member(name: str) -> ShardCoordinator:
        return ShardCoordinator(api, ShardingConfig(
            "fc", namespace=NS, name=name, lease_duration=10, renew_deadline=5,
            retry_period=1), clock=clock)

    a, b = member("fc-a"), member("fc-b")
    stop = threading.Event()
    threads = [threading.Thread(target=m.observer.informer.run, args=(stop,)) for m in (a, b)]
    for t in threads:
        t.start()
    try:
        settle(server, a, b)
        split = assign(["fc-a", "fc-b"])
        assert a.active() == split["fc-a"] and b.active() == split["fc-b"]
        assert a.handover.ack == b.handover.ack is not None
        # b stops renewing (killed). a keeps its half until b's Lease is seen unrenewed for
        # the whole lease duration, then takes the space without b's acknowledgement.
        clock.step(9.9)
        settle(server, a)
        assert a.active() == split["fc-a"]
        clock.step(0.1)
        settle(server, a)
        assert a.active() == RangeSet.full()
        assert a.metrics().members == {"ready": 1, "expired": 1, "dead": 0, "orphaned": 0}
        # Dead after another lease duration, orphaned a minute later: a deletes the Lease.
        clock.step(10 + ORPHAN_AFTER - 0.1)
        settle(server, a)
        assert lease(server, "fc-b") is not None  # dead, not yet orphaned
        clock.step(0.1)
        settle(server, a)
        assert lease(server, "fc-b") is None
        held = lease(server, "fc-a")
        assert held is not None and held["spec"]["holderIdentity"] == "fc-a"
    finally:
        stop.set()
        for t in threads:
            t.join(5)
