"""informers.aio.AsyncLeaderElector and AsyncManager(leader_election=) on asyncio and trio
against the embedded API server's Leases. Each participant has its own FakeClock, stepped by its
own waits (time is injectable; the only real waits are short yields), so the client-go timings
(15 s lease, 10 s renew deadline, 2 s retry) are the real defaults. The decisions are the
threaded elector's own (informers.leaderelection.election)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from informers.aio import (
    AsyncController,
    AsyncLeaderElector,
    AsyncLeaseLock,
    AsyncSharedInformerFactory,
    AsyncTransport,
)
from informers.aio.manager import AsyncManager
from informers.clock import FakeClock
from informers.errors import LeaderElectionConfigError, LeaderElectionLostError
from informers.events import EventRecorder
from informers.manager import LeaderElectionConfig
from informers.testing import ApiServer

pytestmark = pytest.mark.anyio
WAIT = 10.0


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


@pytest.fixture(scope="module")
def api():
    with ApiServer() as server:
        server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "le"}})
        yield server


def stepping(clock: FakeClock) -> Any:
    """Waits that step ``clock`` by what they wait, then yield briefly for real."""
    async def sleep(seconds: float) -> None:
        clock.step(seconds)
        await anyio.sleep(0.01)
    return sleep


def spec(api: ApiServer, name: str) -> dict[str, Any]:
    return (api.get("leases.coordination.k8s.io", "le", name) or {}).get("spec") or {}


def elector(transport: AsyncTransport, name: str, identity: str, clock: FakeClock,
            seen: list[str] | None = None, **kw: Any) -> AsyncLeaderElector:
    async def on_new_leader(holder: str) -> None:
        if seen is not None:
            seen.append(holder)
    return AsyncLeaderElector(AsyncLeaseLock(transport, "le", name, identity), name=name,
                              clock=clock, sleep=stepping(clock), on_new_leader=on_new_leader,
                              **kw)


async def until(check: Any) -> None:
    with anyio.fail_after(WAIT):
        while not check():
            await anyio.sleep(0.01)


async def test_a_standby_takes_over_at_once_after_a_release(api, anyio_backend):
    name = f"release-{anyio_backend}"
    async with AsyncTransport(api.api_client()) as transport:
        a_clock, b_clock = FakeClock(), FakeClock()
        seen: list[str] = []
        a = elector(transport, name, "a", a_clock, release_on_cancel=True)
        b = elector(transport, name, "b", b_clock, seen)
        a_done = anyio.Event()
        results: dict[str, bool] = {}

        async def a_leads() -> None:
            assert a.leading()
            await a_done.wait()

        async def b_leads() -> None:
            await anyio.sleep_forever()

        async def run(who: str, e: AsyncLeaderElector, lead: Any) -> None:
            results[who] = await e.run(lead)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "a", a, a_leads)
            await until(a.leading)
            tg.start_soon(run, "b", b, b_leads)
            await until(lambda: seen == ["a"])
            b_waited = b_clock.now()
            a_done.set()  # a's work is done: it stops renewing and releases
            await until(b.leading)
            # b took over at its next retry after the release, not lease_duration later
            assert b_clock.now() - b_waited < 2 * 2.0 * 2.2
            assert results == {"a": False}
            assert not a.leading()
            assert seen == ["a", "", "b"] or seen == ["a", "b"]
            tg.cancel_scope.cancel()
        got = spec(api, name)
        assert (got["holderIdentity"], got["leaseTransitions"]) == ("b", 1)


async def test_a_standby_takes_over_after_the_lease_expires(api, anyio_backend):
    name = f"expiry-{anyio_backend}"
    async with AsyncTransport(api.api_client()) as transport:
        a_clock, b_clock = FakeClock(), FakeClock()
        seen: list[str] = []
        a = elector(transport, name, "a", a_clock)  # no release: it just vanishes
        b = elector(transport, name, "b", b_clock, seen)
        with anyio.CancelScope() as a_scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(a.run, anyio.sleep_forever)
                await until(a.leading)
                a_scope.cancel()
        assert spec(api, name)["holderIdentity"] == "a"
        async with anyio.create_task_group() as tg:
            tg.start_soon(b.run, anyio.sleep_forever)
            await until(b.leading)
            # b saw a's record at b-time 0 and could take over only 15 s (the lease
            # duration) later on its own clock, at a jittered retry
            acquired = spec(api, name)["acquireTime"]  # b's wall clock: 2026-01-01 + b-time
            assert acquired.startswith("2026-01-01T00:00:")
            assert 15.0 <= float(acquired[17:-1]) < 15.0 + 2.0 * 2.2
            assert seen == ["a", "b"]
            tg.cancel_scope.cancel()
        got = spec(api, name)
        assert (got["holderIdentity"], got["leaseTransitions"], got["leaseDurationSeconds"]) == (
            "b", 1, 15)


async def test_a_leader_that_sees_the_lease_taken_stops_leading_at_once(api, anyio_backend):
    name = f"taken-{anyio_backend}"
    async with AsyncTransport(api.api_client()) as transport:
        clock = FakeClock()
        a = elector(transport, name, "a", clock)
        cancelled: list[bool] = []

        async def lead() -> None:
            try:
                await anyio.sleep_forever()
            finally:
                cancelled.append(True)

        async with anyio.create_task_group() as tg:
            async def run() -> None:
                assert await a.run(lead) is True  # lost
            tg.start_soon(run)
            await until(a.leading)
            lease = api.get("leases.coordination.k8s.io", "le", name)
            assert lease is not None
            lease["spec"]["holderIdentity"] = "c"
            api.update(lease, "leases.coordination.k8s.io")
            at = clock.now()
            await until(lambda: cancelled)
            assert not a.leading()
            assert clock.now() - at < 10.0  # not after the whole renew deadline
        assert spec(api, name)["holderIdentity"] == "c"


def test_the_threaded_elector_checks_apply():
    with pytest.raises(LeaderElectionConfigError, match="leaseDuration must be greater than "
                                                        "renewDeadline"):
        AsyncLeaderElector(AsyncLeaseLock(None, "le", "x", "me"),  # type: ignore[arg-type]
                           lease_duration=5, renew_deadline=10)
    with pytest.raises(LeaderElectionConfigError, match="Lock identity is empty"):
        AsyncLeaderElector(AsyncLeaseLock(None, "le", "x", ""))  # type: ignore[arg-type]


async def test_a_manager_runs_leader_only_controllers_while_leading_and_releases(
        api, anyio_backend):
    name = f"manager-{anyio_backend}"
    ns = f"le-{anyio_backend}"
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    api.create({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": ns}}, "configmaps", ns)
    clock = FakeClock()
    factory = AsyncSharedInformerFactory(api.api_client(), namespace=ns)
    manager = AsyncManager(factory, leader_election=LeaderElectionConfig(
        name, "le", identity="m1"), clock=clock, elector_sleep=stepping(clock))
    led: list[str] = []
    always: list[str] = []

    async def leader_reconcile(request: Any) -> None:
        assert manager.elector is not None and manager.elector.leading()
        led.append(str(request))

    async def any_reconcile(request: Any) -> None:
        always.append(str(request))

    leader_only = AsyncController("leader-only", leader_reconcile)
    leader_only.watch(factory.informer_for("configmaps"))
    manager.add(leader_only)
    everywhere = AsyncController("everywhere", any_reconcile)
    everywhere.watch(factory.informer_for("configmaps"))
    manager.add(everywhere, needs_leader=False)
    async with anyio.create_task_group() as tg:
        tg.start_soon(manager.run)
        await until(lambda: led and always)
        assert spec(api, name)["holderIdentity"] == "m1"
        manager.stop()
    assert (led, always) == ([f"{ns}/c"], [f"{ns}/c"])
    assert spec(api, name)["holderIdentity"] == ""  # released after the controllers stopped


async def test_a_manager_that_loses_its_lease_raises(api, anyio_backend):
    name = f"manager-lost-{anyio_backend}"
    clock = FakeClock()
    factory = AsyncSharedInformerFactory(api.api_client(), namespace="le")
    manager = AsyncManager(factory, leader_election=LeaderElectionConfig(
        name, "le", identity="m1"), clock=clock, elector_sleep=stepping(clock))
    caught: list[LeaderElectionLostError] = []

    async def take_the_lease() -> None:
        await until(lambda: manager.elector is not None and manager.elector.leading())
        lease = api.get("leases.coordination.k8s.io", "le", name)
        assert lease is not None
        lease["spec"]["holderIdentity"] = "other"
        api.update(lease, "leases.coordination.k8s.io")

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(take_the_lease)
            try:
                await manager.run()
            except LeaderElectionLostError as err:
                caught.append(err)
    assert [str(e) for e in caught] == [f"leader election lost: lease le/{name}"]
    assert spec(api, name)["holderIdentity"] == "other"  # a lost lease is not released
    assert factory.transport is not None and factory.transport.is_closed


async def test_a_leader_that_cannot_renew_steps_down_at_the_renew_deadline(api, anyio_backend):
    # test_leader_elector.py's test_leader_that_cannot_renew_steps_down_before_takeover, on
    # the async driver: the last renewal at 0, the round starting at 2 gives up at
    # 2 + renew_deadline = 12; leading() is false from 0 + min(renew_deadline, 15) = 10.
    name = f"cannot-renew-{anyio_backend}"
    clock = FakeClock()
    step = stepping(clock)

    async def sleep(seconds: float) -> None:
        if clock.now() == 0.0:  # the wait after the renewal at 0: every write fails from here
            api.fail_next(1000, 500, verb="update", resource="leases")
        await step(seconds)

    async with AsyncTransport(api.api_client()) as transport:
        a = AsyncLeaderElector(AsyncLeaseLock(transport, "le", name, "a"), name=name,
                               clock=clock, sleep=sleep)
        stepped_down: list[float] = []
        leading_at: dict[float, bool] = {}

        async def lead() -> None:
            try:
                while True:
                    leading_at[clock.now()] = a.leading()
                    await anyio.sleep(0.001)
            finally:
                stepped_down.append(clock.now())

        try:
            with anyio.fail_after(WAIT):
                assert await a.run(lead) is True
        finally:
            api.clear_faults()
    assert stepped_down == [12.0]
    assert leading_at[0.0] is True
    assert all(v for t, v in leading_at.items() if t < 10.0)
    assert [v for t, v in leading_at.items() if t >= 10.0] in ([False], [False, False])
    assert spec(api, name)["holderIdentity"] == "a"  # not released: it could not write


async def test_a_paused_leader_without_a_rival_renews_and_leads_on(api, anyio_backend, caplog):
    # test_leader_elector.py's case of that name on the async driver: the wait after the
    # renewal at 0 takes 20 s (the process was paused); a may not act until it renewed.
    name = f"paused-{anyio_backend}"
    clock = FakeClock()
    step = stepping(clock)
    doubts: list[bool] = []

    async def sleep(seconds: float) -> None:
        if clock.now() == 0.0:
            clock.step(20.0)
            doubts.append(a.leading())
        await step(0.0 if clock.now() == 20.0 else seconds)

    async with AsyncTransport(api.api_client()) as transport:
        a = AsyncLeaderElector(AsyncLeaseLock(transport, "le", name, "a"), name=name,
                               clock=clock, sleep=sleep)
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.run, anyio.sleep_forever)
            await until(lambda: spec(api, name).get("renewTime") ==
                        "2026-01-01T00:00:20.000000Z")
            await until(a.leading)
            tg.cancel_scope.cancel()
    assert doubts == [False]  # in doubt until the renewal
    assert "a 2.0s wait took 20.000s (the process was paused or starved); leadership in " \
           "doubt until the lease is renewed" in caplog.text


# -- events (client-go leaderelection.go acquire/renew: Lock.RecordEvent) ---------------------


def lease_events(api: ApiServer, lease: str) -> list[tuple[str, ...]]:
    return sorted((e["message"], e["reason"], e["type"], e["involvedObject"]["kind"],
                   e["involvedObject"]["apiVersion"], e["involvedObject"]["name"])
                  for e in api.list("events", "le")
                  if e["involvedObject"].get("name") == lease)


async def test_leadership_changes_are_recorded_as_events(api, anyio_backend):
    # the threaded test of that name (tests/test_leader_elector.py); client-go
    # TestReleaseOnCancellation's expectedEvents: "became leader", then "stopped leading"
    name = f"events-{anyio_backend}"
    recorder = EventRecorder(api.api_client(), "ctrl", clock=FakeClock())
    recorder.start()
    try:
        async with AsyncTransport(api.api_client()) as transport:
            clock = FakeClock()
            a = AsyncLeaderElector(
                AsyncLeaseLock(transport, "le", name, "a", event_recorder=recorder),
                name=name, clock=clock, sleep=stepping(clock), release_on_cancel=True)
            done = anyio.Event()

            async def lead() -> None:
                await until(lambda: len(lease_events(api, name)) == 1)
                done.set()

            with anyio.fail_after(WAIT):
                assert await a.run(lead) is False
        await until(lambda: len(lease_events(api, name)) == 2)
    finally:
        recorder.stop()
    assert done.is_set()
    assert lease_events(api, name) == [
        ("a became leader", "LeaderElection", "Normal", "Lease", "coordination.k8s.io/v1", name),
        ("a stopped leading", "LeaderElection", "Normal", "Lease", "coordination.k8s.io/v1",
         name),
    ]


def test_record_event_without_a_recorder_does_nothing():
    # client-go resourcelock TestRecordEventNilRecorder
    AsyncLeaseLock(None, "le", "l", "a").record_event("should not panic")  # type: ignore[arg-type]


class Broken:
    def eventf(self, obj: Any, type: str, reason: str, fmt: str, *args: Any) -> None:
        raise RuntimeError("recorder broke")


async def test_a_failing_recorder_is_logged_and_the_election_goes_on(api, anyio_backend,
                                                                     caplog):
    name = f"events-broken-{anyio_backend}"
    async with AsyncTransport(api.api_client()) as transport:
        clock = FakeClock()
        a = AsyncLeaderElector(
            AsyncLeaseLock(transport, "le", name, "a", event_recorder=Broken()),
            name=name, clock=clock, sleep=stepping(clock), release_on_cancel=True)
        led: list[bool] = []

        async def lead() -> None:
            led.append(a.leading())

        with anyio.fail_after(WAIT):
            assert await a.run(lead) is False
    assert led == [True]
    assert spec(api, name)["holderIdentity"] == ""
    assert f"recording event 'became leader' for lease le/{name} failed" in caplog.text
    assert f"recording event 'stopped leading' for lease le/{name} failed" in caplog.text
