"""The async controller runtime (informers.aio.AsyncController) on asyncio and trio, against the
embedded API server: reconciles after the cache synced, one reconcile per key at a time with many
workers, requeue_after, retries through the rate limiter up to max_retries, terminal errors, and a
stop that drains the reconciles in flight. The result rules are the threaded controller's own
(informers.controller.controller.settle)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from informers.aio import AsyncController, AsyncSharedInformerFactory
from informers.controller import Result
from informers.errors import TerminalError
from informers.testing import ApiServer
from informers.workqueue.rate_limiters import ItemExponentialFailureRateLimiter

pytestmark = pytest.mark.anyio
WAIT = 10.0


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


@pytest.fixture(scope="module")
def api():
    with ApiServer() as server:
        yield server


def cm(name: str, ns: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": {"k": "v"}}


def fast() -> ItemExponentialFailureRateLimiter:
    return ItemExponentialFailureRateLimiter(0.001, 0.01)


async def until(check: Any) -> None:
    with anyio.fail_after(WAIT):
        while not check():
            await anyio.sleep(0.005)


async def test_reconciles_every_object_once_synced_with_one_reconcile_per_key_at_a_time(
        api, anyio_backend):
    ns = f"ctl-exclusive-{anyio_backend}"
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for i in range(20):
        api.create(cm(f"c{i}", ns), "configmaps", ns)
    running: dict[str, int] = {}
    overlaps: list[str] = []
    counts: dict[str, int] = {}
    seen_sync: list[bool] = []

    async with AsyncSharedInformerFactory(api.api_client(), namespace=ns) as factory:
        informer = factory.informer_for("configmaps")

        async def reconcile(request: Any) -> None:
            seen_sync.append(informer.has_synced())
            key = f"{request.namespace}/{request.name}"
            running[key] = running.get(key, 0) + 1
            if running[key] > 1:
                overlaps.append(key)
            counts[key] = counts.get(key, 0) + 1
            await anyio.sleep(0.005)
            running[key] -= 1

        controller = AsyncController("exclusive", reconcile, workers=8)
        controller.watch(informer)
        async with anyio.create_task_group() as tg:
            tg.start_soon(controller.run)
            await until(lambda: len(counts) == 20)
            for _ in range(5):  # the same key again and again while it is being reconciled
                controller.enqueue(f"{ns}/c0")
                await anyio.sleep(0.002)
            await until(lambda: counts[f"{ns}/c0"] >= 2 and not controller.in_flight
                        and len(controller.queue) == 0)
            controller.stop()
    assert overlaps == []
    assert all(seen_sync)
    assert sorted(counts) == sorted(f"{ns}/c{i}" for i in range(20))
    assert 2 <= counts[f"{ns}/c0"] <= 6


async def test_requeue_after_retries_terminal_errors_and_drops(api, anyio_backend):
    calls: dict[str, int] = {}

    async def reconcile(request: Any) -> Result | None:
        calls[request.name] = calls.get(request.name, 0) + 1
        if request.name == "later" and calls["later"] < 3:
            return Result(requeue_after=0.01)
        if request.name == "flaky":
            raise RuntimeError("always fails")
        if request.name == "terminal":
            raise TerminalError(ValueError("cannot ever work"))
        if request.name == "weird":
            return "not a result"  # type: ignore[return-value]
        return None

    controller = AsyncController("results", reconcile, workers=2, rate_limiter=fast(),
                                 max_retries=3)
    for name in ("later", "flaky", "terminal", "weird", "ok"):
        controller.enqueue(f"ns/{name}")
    async with anyio.create_task_group() as tg:
        tg.start_soon(controller.run)
        await until(lambda: calls.get("later") == 3 and calls.get("flaky") == 4
                    and calls.get("weird") == 4)
        await anyio.sleep(0.05)  # nothing more comes
        controller.stop()
    # requeue_after twice then success; 1 + 3 retries then dropped; terminal once; a wrong
    # return type is an error (retried like one); success once
    assert calls == {"later": 3, "flaky": 4, "terminal": 1, "weird": 4, "ok": 1}
    assert controller.queue.num_requeues("flaky") == 0  # forgotten when dropped


async def test_a_stop_drains_the_reconcile_in_flight_then_cancels_one_that_hangs(anyio_backend):
    finished: list[str] = []
    cancelled: list[str] = []

    async def reconcile(request: Any) -> None:
        try:
            await anyio.sleep(0.05 if request.name == "short" else 60)
            finished.append(request.name)
        except anyio.get_cancelled_exc_class():
            cancelled.append(request.name)
            raise

    controller = AsyncController("drain", reconcile, workers=2, drain_timeout=0.3)
    controller.enqueue("ns/short")
    controller.enqueue("ns/hang")
    start = anyio.current_time()
    async with anyio.create_task_group() as tg:
        tg.start_soon(controller.run)
        await until(lambda: len(controller.in_flight) == 2)
        controller.stop()
    assert finished == ["short"]
    assert cancelled == ["hang"]
    assert 0.3 <= anyio.current_time() - start < 2.0


async def test_every_idle_worker_sees_the_shutdown(anyio_backend):
    async def reconcile(request: Any) -> None:
        return None

    controller = AsyncController("idle", reconcile, workers=4, drain_timeout=5.0)
    controller.enqueue("ns/a")  # wakes every worker at once; one takes it
    start = anyio.current_time()
    async with anyio.create_task_group() as tg:
        tg.start_soon(controller.run)
        await anyio.sleep(0.05)
        controller.stop()
    assert anyio.current_time() - start < 1.0  # not the drain timeout


async def test_a_stop_while_waiting_for_the_caches_returns_without_reconciling(api, anyio_backend):
    api.fail_next(10_000, 500, verb="list", resource="secrets")
    calls: list[Any] = []

    async def reconcile(request: Any) -> None:
        calls.append(request)

    async with AsyncSharedInformerFactory(api.api_client()) as factory:
        controller = AsyncController("unsynced", reconcile)
        controller.watch(factory.informer_for("secrets"))
        controller.enqueue("ns/a")
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(controller.run)
                await anyio.sleep(0.1)
                controller.stop()
    api.clear_faults()
    assert calls == []


async def test_workers_start_only_after_the_watch_handler_enqueued_the_initial_list(
        api, anyio_backend):
    """controller-runtime v0.23 (pkg/internal/source/kind.go) waits for the handler
    registration's HasSynced, not only the informer's: the first reconcile finds every key of
    the initial list queued (the threaded twin: tests/test_informer_relist.py)."""
    ns = f"ctl-initial-{anyio_backend}"
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for i in range(30):
        api.create(cm(f"c{i}", ns), "configmaps", ns)
    first: list[int] = []
    async with AsyncSharedInformerFactory(api.api_client(), namespace=ns) as factory:
        informer = factory.informer_for("configmaps")

        async def reconcile(request: Any) -> None:
            if not first:
                first.append(len(controller.queue))

        controller = AsyncController("initial", reconcile, workers=1)
        controller.watch(informer)
        async with anyio.create_task_group() as tg:
            tg.start_soon(controller.run)
            await until(lambda: bool(first))
            controller.stop()
    assert first == [29]  # the other 29 keys were already queued
