"""The controllerutil helpers with the async client (informers.aio.create_or_update,
create_or_patch, AsyncFinalizers) on asyncio and trio against the embedded API server: the
threaded helpers' cases (tests/test_controllerutil.py, ported from controller-runtime's
controllerutil_test.go and finalizer_test.go) on the async path, whose decisions are the
threaded module's own (patch_plan, finalize_step)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from informers.aio import AsyncClient, AsyncFinalizers, create_or_patch, create_or_update
from informers.controllerutil import FinalizerError, OperationResult
from informers.errors import NotFound, StatusError
from informers.testing import ApiServer
from tests.test_controllerutil import deploy_key, identity, renamer, scaler, specr, statusr

pytestmark = pytest.mark.anyio
OPS = [create_or_update, create_or_patch]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


@pytest.fixture(scope="module")
def api():
    with ApiServer() as server:
        yield server


@pytest.fixture
async def client(api):
    async with AsyncClient(api.api_client(), field_manager="test-aio-util") as c:
        yield c


def fresh(api: ApiServer, name: str) -> str:
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
async def test_creates_updates_and_leaves_unchanged(api, client, op, anyio_backend):
    ns = fresh(api, f"aio-cou-{op.__name__.replace('_', '-')}-{anyio_backend}")
    obj = deploy_key(ns)
    assert await op(client, obj, specr) is OperationResult.CREATED
    fetched = await client.get("deployments", "deploy", ns)
    assert obj["metadata"]["uid"] == fetched["metadata"]["uid"]
    obj = deploy_key(ns)
    assert await op(client, obj, scaler(2)) is OperationResult.UPDATED
    fetched = await client.get("deployments", "deploy", ns)
    assert fetched["spec"]["replicas"] == 2
    assert obj["metadata"]["resourceVersion"] == fetched["metadata"]["resourceVersion"]
    assert await op(client, deploy_key(ns), identity) is OperationResult.NONE
    after = await client.get("deployments", "deploy", ns)
    assert after["metadata"]["resourceVersion"] == fetched["metadata"]["resourceVersion"]
    with pytest.raises(ValueError, match="MutateFn cannot mutate object name"):
        await op(client, deploy_key(ns), renamer)
    called: list[Any] = []
    with pytest.raises(StatusError):  # an unknown kind: mutate is not called
        await op(client, {"apiVersion": "v1", "kind": "NoSuchKind",
                          "metadata": {"name": "x", "namespace": ns}}, called.append)
    assert called == []


async def test_create_or_patch_patches_only_changed_status(api, client, anyio_backend):
    ns = fresh(api, f"aio-cop-status-{anyio_backend}")
    await create_or_patch(client, deploy_key(ns), specr)
    obj = deploy_key(ns)
    result = await create_or_patch(client, obj, statusr({"readyReplicas": 1, "replicas": 3}))
    assert result is OperationResult.UPDATED_STATUS_ONLY
    fetched = await client.get("deployments", "deploy", ns)
    assert (fetched["status"]["readyReplicas"], fetched["status"]["replicas"]) == (1, 3)

    def both(o: dict[str, Any]) -> None:
        scaler(4)(o)
        statusr({"replicas": 4})(o)

    assert await create_or_patch(client, deploy_key(ns), both) is OperationResult.UPDATED_STATUS
    fetched = await client.get("deployments", "deploy", ns)
    assert (fetched["spec"]["replicas"], fetched["status"]["replicas"]) == (4, 4)


async def test_create_or_update_conflicts_on_a_concurrent_write(api, client, anyio_backend):
    ns = fresh(api, f"aio-cou-conflict-{anyio_backend}")
    await create_or_update(client, deploy_key(ns), specr)
    other = copy.deepcopy(await client.get("deployments", "deploy", ns))

    def racing(obj: dict[str, Any]) -> None:
        api.update(dict(other, spec=dict(other["spec"], replicas=7)), "deployments.apps")
        obj["spec"]["replicas"] = 3

    with pytest.raises(StatusError) as info:
        await create_or_update(client, deploy_key(ns), racing)
    assert info.value.reason == "Conflict"
    assert (await client.get("deployments", "deploy", ns))["spec"]["replicas"] == 7


async def test_finalizers_run_adds_then_cleans_up_and_removes(api, client, anyio_backend):
    ns = fresh(api, f"aio-fin-{anyio_backend}")
    cleaned: list[str] = []

    async def cleanup(obj: dict[str, Any]) -> None:
        cleaned.append(obj["metadata"]["name"])

    f = AsyncFinalizers()
    f.register("example.com/cleanup", cleanup)
    with pytest.raises(ValueError, match="already registered"):
        f.register("example.com/cleanup", cleanup)
    obj = await client.create({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "fin", "namespace": ns}})
    assert await f.run(client, obj) is False
    assert obj["metadata"]["finalizers"] == ["example.com/cleanup"]
    await client.delete("configmaps", "fin", ns)
    marked = await client.get("configmaps", "fin", ns)
    assert marked["metadata"]["deletionTimestamp"]
    assert cleaned == []
    assert await f.run(client, marked) is True
    assert cleaned == ["fin"]
    with pytest.raises(NotFound):
        await client.get("configmaps", "fin", ns)


async def test_finalizers_run_keeps_the_finalizer_when_the_cleanup_fails(api, client,
                                                                          anyio_backend):
    ns = fresh(api, f"aio-fin-fail-{anyio_backend}")

    async def failing(obj: dict[str, Any]) -> None:
        raise RuntimeError("bucket still in use")

    f = AsyncFinalizers()
    f.register("example.com/cleanup", failing)
    await client.create({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "fin2", "namespace": ns,
                                      "finalizers": ["example.com/cleanup"]}})
    await client.delete("configmaps", "fin2", ns)
    obj = await client.get("configmaps", "fin2", ns)
    with pytest.raises(FinalizerError, match=r"finalizer .example\.com/cleanup. failed: bucket "
                                             "still in use"):
        await f.run(client, obj)
    assert (await client.get("configmaps", "fin2", ns))["metadata"]["finalizers"] == [
        "example.com/cleanup"]
    await client.patch("configmaps", "fin2", {"metadata": {"finalizers": None}}, ns)
