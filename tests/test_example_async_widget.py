"""examples/09-async-operator (the tutorial's Widget operator on ``informers.aio``) on the
embedded API server, on asyncio and on trio (anyio's pytest plugin): the Widget CRD installed
from example 04's ``crd.yaml``, the controller built with ``AsyncControllerBuilder``
(for_/owns/watches), writing through ``AsyncClient`` (``create_or_update``, the status by
server-side apply) and run by an ``AsyncManager`` with ``run_async_manager``. The same
behaviour tests/test_example_widget.py pins for the threaded example 04: the ConfigMaps exist,
follow the Widget and its namespace's defaults, come back when edited or deleted, go with
their Widget; a failed write is retried; a name taken by another ConfigMap is a terminal
error."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from informers.aio import AsyncClient, AsyncSharedInformerFactory
from informers.aio.manager import AsyncManager
from informers.errors import NotFound
from informers.testing import ApiServer
from informers.testing.aio_runner import eventually, run_async_manager
from informers.yaml_loader import load_yaml

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CRD = load_yaml((EXAMPLES / "04-custom-resource-controller" / "crd.yaml").read_text())


def load() -> Any:
    spec = importlib.util.spec_from_file_location(
        "async_widget_example", EXAMPLES / "09-async-operator" / "async_widget.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["async_widget_example"] = module
    spec.loader.exec_module(module)
    return module


example = load()


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def client(api_server: ApiServer, api_client: Any) -> AsyncIterator[AsyncClient]:
    """A running Widget controller (one worker); the client the test writes with."""
    async with AsyncClient(api_client, field_manager="widget-controller") as client:
        await client.create(CRD)
        manager = AsyncManager(AsyncSharedInformerFactory(api_client, namespace="default"))
        example.setup(manager, client, workers=1)
        async with run_async_manager(manager):
            yield client


def widget(name: str, **spec: object) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"}, "spec": dict(spec)}


async def config_map(client: AsyncClient, name: str) -> dict[str, Any] | None:
    try:
        return await client.get("configmaps", name, "default")
    except NotFound:
        return None


@pytest.mark.anyio
async def test_the_config_map_exists_and_follows_the_widget(client: AsyncClient) -> None:
    created = await client.create(widget("green", color="green", size=1))
    uid = created["metadata"]["uid"]
    green = await eventually(lambda: config_map(client, "green"))
    assert green["data"] == {"color": "green", "size": "1"}
    assert green["metadata"]["ownerReferences"] == [{
        "apiVersion": "example.com/v1", "kind": "Widget", "name": "green", "uid": uid,
        "controller": True, "blockOwnerDeletion": True}]
    assert green["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "widget-controller"}

    async def status() -> Any:
        return (await client.get(example.WIDGETS, "green", "default")).get("status")

    await eventually(lambda: status(), message="status")
    assert await status() == {"observedGeneration": 1, "configMap": "green"}

    # The spec changes: the ConfigMap follows, the status records the new generation.
    await client.patch(example.WIDGETS, "green", {"spec": {"size": 2, "shape": "round"}},
                       "default")

    async def followed() -> bool:
        cm = await config_map(client, "green") or {}
        return cm.get("data") == {"color": "green", "shape": "round", "size": "2"}

    await eventually(followed, message="the ConfigMap follows the spec")
    await eventually(lambda: _is(status(), {"observedGeneration": 2, "configMap": "green"}))


async def _is(value: Any, want: Any) -> bool:
    return bool(await value == want)


@pytest.mark.anyio
async def test_defaults_and_hand_edits(client: AsyncClient) -> None:
    await client.create({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "widget-defaults", "namespace": "default"},
                         "data": {"shape": "square", "size": "9"}})
    await client.create(widget("blue", color="blue", size=3))

    async def data() -> Any:
        return (await config_map(client, "blue") or {}).get("data")

    await eventually(lambda: _is(data(), {"color": "blue", "shape": "square", "size": "3"}))
    # the defaults change: every Widget of the namespace follows
    await client.patch("configmaps", "widget-defaults", {"data": {"shape": "round"}},
                       "default")
    await eventually(lambda: _is(data(), {"color": "blue", "shape": "round", "size": "3"}))
    # edited by hand: put back
    await client.patch("configmaps", "blue", {"data": {"color": "red"}}, "default")
    await eventually(lambda: _is(data(), {"color": "blue", "shape": "round", "size": "3"}))
    # deleted by hand: put back
    await client.delete("configmaps", "blue", "default")
    await eventually(lambda: _is(data(), {"color": "blue", "shape": "round", "size": "3"}))
    # the Widget goes: its ConfigMap goes; the defaults stay
    await client.delete(example.WIDGETS, "blue", "default")
    await eventually(lambda: _is(config_map(client, "blue"), None))
    assert (await client.get("configmaps", "widget-defaults", "default"))["data"] == {
        "shape": "round", "size": "9"}


@pytest.mark.anyio
async def test_a_failed_write_is_retried(api_server: ApiServer, client: AsyncClient) -> None:
    api_server.fail_next(2, 500, verb="create", resource="configmaps")
    await client.create(widget("red", color="red"))
    await eventually(lambda: config_map(client, "red"))
    assert [r.status for r in api_server.request_log("create", "configmaps")] == [500, 500, 201]


@pytest.mark.anyio
async def test_a_foreign_config_map_is_a_terminal_error(api_server: ApiServer,
                                                         client: AsyncClient) -> None:
    await client.create({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "taken", "namespace": "default"},
                         "data": {"a": "1"}})
    await client.create(widget("taken", color="green"))

    def read_once() -> bool:  # create_or_update read the live ConfigMap, then refused
        return [(r.verb, r.status) for r in api_server.request_log("get", "configmaps")
                if r.name == "taken"] == [("get", 200)]

    await eventually(read_once)
    await anyio.sleep(0.2)  # a retry would read it again within 5 ms
    assert [(r.verb, r.status) for r in api_server.request_log("get", "configmaps")
            if r.name == "taken"] == [("get", 200)]
    foreign = await client.get("configmaps", "taken", "default")
    assert foreign["data"] == {"a": "1"}
    assert "ownerReferences" not in foreign["metadata"]
    assert "status" not in await client.get(example.WIDGETS, "taken", "default")
