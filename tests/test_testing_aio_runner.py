"""informers.testing.aio_runner (run_async_manager, eventually) and the plugin's async fixtures
(async_factory, async_manager, async_transport), on asyncio and on trio, against the embedded
API server."""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest

from informers.aio import AsyncController, AsyncSharedInformerFactory
from informers.aio.manager import AsyncManager
from informers.backoff import Backoff
from informers.controller import Request
from informers.reflector_options import ReflectorOptions
from informers.testing import ApiServer
from informers.testing.aio_runner import eventually, run_async_manager
from informers.testing.runner import eventually as threaded_eventually

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


def cm(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": dict(data)}


def fast() -> ReflectorOptions:
    return ReflectorOptions(backoff=Backoff(initial=0.01, cap=0.05, rng=random.Random(3)))


def manager_with(api: ApiServer, reconcile: Any, resource: str = "configmaps") -> AsyncManager:
    factory = AsyncSharedInformerFactory(api.api_client(), options=fast(), drain_timeout=1.0)
    manager = AsyncManager(factory)
    controller = AsyncController("runner-test", reconcile, drain_timeout=1.0)
    controller.watch(factory.informer_for(resource))
    manager.add(controller)
    return manager


async def test_run_async_manager_syncs_before_the_block_and_stops_after_it(api_server):
    api_server.create(cm("first"), "configmaps", "default")
    seen: list[str] = []

    async def reconcile(request: Request) -> None:
        seen.append(request.name)

    manager = manager_with(api_server, reconcile)
    async with run_async_manager(manager) as running:
        assert running is manager
        informer = manager.factory.informer_for("configmaps")
        assert informer.has_synced()
        api_server.create(cm("second"), "configmaps", "default")
        assert await eventually(lambda: sorted(seen) == ["first", "second"])
        assert api_server.watch_count("configmaps") == 1
    # stopped and waited for: the watch is closed, the transport too
    assert manager.factory.transport is not None and manager.factory.transport.is_closed
    await eventually(lambda: api_server.watch_count("configmaps") == 0)


async def test_caches_that_do_not_sync_are_named_and_the_manager_is_stopped(api_server):
    api_server.fail_next(10_000, 500, verb="list", resource="secrets")

    async def reconcile(request: Request) -> None:
        raise AssertionError("no reconcile before a sync")

    manager = manager_with(api_server, reconcile, "secrets")
    with pytest.raises(TimeoutError) as raised:
        async with run_async_manager(manager, sync_timeout=0.3):
            pytest.fail("the block must not run")
    assert str(raised.value) == ("the manager's caches did not sync within 0.3s "
                                 "(unsynced: secrets)")
    assert manager.factory.transport is not None and manager.factory.transport.is_closed
    api_server.clear_faults()


class Broken(AsyncManager):
    def __init__(self, factory: AsyncSharedInformerFactory, fail_after_sync: bool) -> None:
        super().__init__(factory)
        self.fail_after_sync = fail_after_sync
        self.go = anyio.Event()

    async def run(self) -> None:
        if self.fail_after_sync:
            async with self.factory:
                await self.factory.wait_for_cache_sync(timeout=10)
                await self.go.wait()
        raise RuntimeError("the manager failed")


async def test_an_error_of_the_manager_before_the_sync_is_raised_at_entry(api_server):
    manager = Broken(AsyncSharedInformerFactory(api_server.api_client()), False)
    with pytest.raises(RuntimeError, match="the manager failed"):
        async with run_async_manager(manager):
            pytest.fail("the block must not run")


async def test_an_error_of_the_manager_after_the_sync_is_raised_at_exit(api_server):
    factory = AsyncSharedInformerFactory(api_server.api_client())
    factory.informer_for("configmaps")
    manager = Broken(factory, True)
    with pytest.raises(RuntimeError, match="the manager failed"):
        async with run_async_manager(manager):
            manager.go.set()
            await eventually(lambda: manager.factory.transport.is_closed)


async def test_the_blocks_error_comes_out_as_itself_chained_to_the_managers(api_server):
    factory = AsyncSharedInformerFactory(api_server.api_client())
    factory.informer_for("configmaps")
    manager = Broken(factory, True)
    with pytest.raises(RuntimeError, match="the manager failed") as raised:
        async with run_async_manager(manager):
            manager.go.set()
            await eventually(lambda: manager.factory.transport.is_closed)
            raise ValueError("the test failed")
    assert isinstance(raised.value.__cause__, ValueError)

    calm = manager_with(api_server, _noop)
    with pytest.raises(ValueError, match="the test failed"):  # not an exception group
        async with run_async_manager(calm):
            raise ValueError("the test failed")
    assert calm.factory.transport is not None and calm.factory.transport.is_closed


async def _noop(request: Request) -> None:
    return None


async def test_a_cancelled_block_cancels_the_manager(api_server):
    manager = manager_with(api_server, _noop)
    with anyio.move_on_after(0.3) as scope:
        async with run_async_manager(manager):
            await anyio.sleep(60)
    assert scope.cancelled_caught
    assert manager.factory.transport is not None and manager.factory.transport.is_closed


async def test_eventually_returns_the_value_and_awaits_async_checks():
    calls = {"n": 0}

    def sync_check() -> int:
        calls["n"] += 1
        assert calls["n"] >= 3, "not yet"
        return calls["n"]

    assert await eventually(sync_check, interval=0.001) == 3

    async def async_check() -> str:
        await anyio.sleep(0)
        return "done"

    assert await eventually(async_check) == "done"


async def test_eventually_fails_with_the_threaded_message_format():
    def never() -> dict[str, str]:
        raise KeyError("missing")

    with pytest.raises(AssertionError) as raised:
        await eventually(never, timeout=0.05, interval=0.01, message="the config map")
    text = str(raised.value)
    with pytest.raises(AssertionError) as threaded:
        await anyio.to_thread.run_sync(
            lambda: threaded_eventually(never, timeout=0.05, interval=0.01,
                                        message="the config map"))

    def shape(s: str) -> str:
        # "... after N tries over 0.05s; last: ..." with N depending on the timing
        head, _, rest = s.partition(" still failing after ")
        return head + " | " + rest.partition(" tries ")[2]

    assert shape(text) == shape(str(threaded.value)) == (
        "the config map: test_eventually_fails_with_the_threaded_message_format.<locals>.never"
        " | over 0.05s; last: KeyError: 'missing'")

    with pytest.raises(AssertionError, match=r"last: returned \[\]$"):
        await eventually(lambda: [], timeout=0.02, interval=0.01)


async def test_the_async_fixtures_serve_the_embedded_server(api_server, async_factory,
                                                            async_transport, async_manager):
    created = await async_transport.request(
        "POST", "/api/v1/namespaces/default/configmaps", cm("from-transport", mode="x"))
    assert created["metadata"]["name"] == "from-transport"
    informer = async_factory.informer_for("configmaps")
    assert await async_factory.wait_for_cache_sync(timeout=10) == {"configmaps": True}
    assert informer.indexer.get_by_key("default/from-transport")["data"] == {"mode": "x"}

    reconciled: list[str] = []

    async def reconcile(request: Request) -> None:
        reconciled.append(request.name)

    controller = AsyncController("fixture", reconcile, drain_timeout=1.0)
    controller.watch(async_manager.factory.informer_for("configmaps"))
    async_manager.add(controller)
    async with run_async_manager(async_manager):
        await eventually(lambda: reconciled == ["from-transport"])


async def test_a_cancellation_while_waiting_for_the_sync_cancels_the_manager(api_server):
    api_server.fail_next(10_000, 500, verb="list", resource="secrets")
    manager = manager_with(api_server, _noop, "secrets")
    with anyio.move_on_after(0.2) as scope:
        async with run_async_manager(manager, sync_timeout=30):
            pytest.fail("the block must not run")
    assert scope.cancelled_caught
    assert manager.factory.transport is not None and manager.factory.transport.is_closed
    api_server.clear_faults()
