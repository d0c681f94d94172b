"""informers.aio.AsyncClient on asyncio and trio against the embedded API server and the real
kube-apiserver (``any_api_server``, for the verbs and apply): the threaded Client's verbs (the
requests are built by the same informers.client.requests), its typed errors (apply conflicts,
stale updates, preconditions) and its retries, against a raw HTTP server answering each
status."""

from __future__ import annotations

from typing import Any

import pytest

from informers.aio import AsyncClient
from informers.errors import (
    AlreadyExists,
    Conflict,
    Invalid,
    NotFound,
    ServiceUnavailable,
    TooManyRequests,
    ignore_not_found,
)
from informers.resources import Resource
from informers.testing import ApiServer
from tests.test_client import STATUSES, Answers, status

pytestmark = pytest.mark.anyio
MANAGER = "test-aio-client"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


@pytest.fixture(scope="module")
def api():
    with ApiServer() as server:
        yield server


@pytest.fixture(scope="module")
def raw_server():
    a = Answers()
    yield a
    a.close()


@pytest.fixture
def answers(raw_server):
    raw_server.queue.clear()
    raw_server.requests.clear()
    return raw_server


def ns_of(api: ApiServer, name: str) -> str:
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def configmap(name: str, ns: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": dict(data)}


async def test_create_get_list_update_patch_delete(any_api_server, anyio_backend):
    ns = any_api_server.namespace
    async with AsyncClient(any_api_server.api_client(), field_manager=MANAGER) as client:
        created = await client.create(configmap("a", ns, k="1"))
        assert created["data"] == {"k": "1"}
        got = await client.get("configmaps", "a", ns)
        assert got["metadata"]["uid"] == created["metadata"]["uid"]
        got["data"]["k"] = "2"
        updated = await client.update(got)
        assert updated["data"] == {"k": "2"}
        merged = await client.patch("configmaps", "a", {"data": {"k": None, "m": "3"}}, ns)
        assert merged["data"] == {"m": "3"}
        jsonp = await client.patch("configmaps", "a", [
            {"op": "add", "path": "/data/j", "value": "4"}], ns, patch_type="json")
        assert jsonp["data"] == {"m": "3", "j": "4"}
        listed = await client.list("configmaps", ns)
        assert [(i["kind"], i["metadata"]["name"]) for i in listed["items"]] == [
            ("ConfigMap", "a")]
        with pytest.raises(AlreadyExists):
            await client.create(configmap("a", ns))
        with pytest.raises(Conflict) as info:  # a stale resourceVersion
            await client.update(created)
        assert (info.value.code, info.value.reason) == (409, "Conflict")
        with pytest.raises(Conflict):  # a uid precondition
            await client.delete("configmaps", "a", ns, uid="not-the-uid")
        await client.delete("configmaps", "a", ns, uid=created["metadata"]["uid"])
        with pytest.raises(NotFound) as missing:
            await client.get("configmaps", "a", ns)
        assert ignore_not_found(missing.value) is None
        with pytest.raises(Invalid) as invalid:
            await client.create(configmap("Not_A_Name", ns))
        assert [c.get("field") for c in invalid.value.causes] == ["metadata.name"]


async def test_apply_creates_then_conflicts_without_force(any_api_server, anyio_backend):
    ns = any_api_server.namespace
    async with AsyncClient(any_api_server.api_client(), field_manager=MANAGER) as client:
        first = await client.apply(configmap("ap", ns, a="1"))
        assert first["data"] == {"a": "1"}
        assert {e["manager"] for e in first["metadata"]["managedFields"]} == {MANAGER}
        other = AsyncClient(transport=client.transport, field_manager="other")
        with pytest.raises(Conflict) as info:
            await other.apply(configmap("ap", ns, a="3"))
        assert info.value.code == 409
        assert [c.get("field") for c in info.value.causes] == [".data.a"]
        forced = await other.apply(configmap("ap", ns, a="3"), force=True)
        assert forced["data"] == {"a": "3"}
        await other.aclose()  # a shared transport stays open
        assert not client.transport.is_closed
        with pytest.raises(ValueError, match="field_manager"):
            await AsyncClient(transport=client.transport).apply(configmap("x", ns))
    assert client.transport.is_closed


async def test_status_and_scale_subresources(api, anyio_backend):
    ns = ns_of(api, f"aio-client-sub-{anyio_backend}")
    labels = {"app": "d"}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "d", "namespace": ns},
                  "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                           "template": {"metadata": {"labels": labels}, "spec": {
                               "containers": [{"name": "c", "image": "busybox"}]}}}}
    async with AsyncClient(api.api_client(), field_manager=MANAGER) as client:
        created = await client.create(deployment)
        patched = await client.status.patch(created, {"status": {"observedGeneration": 7}})
        assert patched["status"]["observedGeneration"] == 7
        scaled = await client.scale("deployments.apps", "d", 3, ns)
        assert scaled["spec"]["replicas"] == 3
        assert (await client.get_scale("deployments.apps", "d", ns))["spec"]["replicas"] == 3


async def test_a_custom_resource_tuple_is_resolved_by_discovery(api, anyio_backend):
    from test_testing_crds import crd_body, install, new_group, uninstall

    ns = ns_of(api, f"aio-client-crd-{anyio_backend}")
    group = new_group()
    crd = crd_body(group, subresources={"status": {}})
    install(api, crd)
    try:
        ref = (group, "v1", "widgets")
        widget = {"apiVersion": f"{group}/v1", "kind": "Widget",
                  "metadata": {"name": "w", "namespace": ns}, "spec": {"size": 1}}
        async with AsyncClient(api.api_client(), field_manager=MANAGER) as client:
            assert await client.resource(ref) == Resource(group, "v1", "widgets", "Widget",
                                                          True)
            created = await client.create(widget, resource=ref)
            assert created["spec"] == {"size": 1, "color": "red"}
            got = await client.get(ref, "w", ns)
            assert got["metadata"]["uid"] == created["metadata"]["uid"]
            listed = await client.list(ref, ns)
            assert [(i["kind"], i["metadata"]["name"]) for i in listed["items"]] == [
                ("Widget", "w")]
            applied = await client.apply({**widget, "status": {"ready": True}}, resource=ref,
                                         subresource="status")
            assert applied["status"] == {"ready": True}
            await client.delete(ref, "w", ns)
            with pytest.raises(NotFound):
                await client.get(ref, "w", ns)
            asked = [r for r in api.requests if r.path == f"/apis/{group}/v1"]
            assert len(asked) == 1  # the group version's document is kept
            with pytest.raises(NotFound) as info:
                await client.get((group, "v1", "gadgets"), "w", ns)
            assert (info.value.code, info.value.message) == (
                404, f"the server does not serve 'gadgets' in {group}/v1 (group {group!r}, "
                "version 'v1', plural 'gadgets')")
            with pytest.raises(NotFound) as info:
                await client.list(("nope." + group, "v1", "widgets"), ns)
            assert info.value.message == (
                f"the server does not serve 'widgets' in nope.{group}/v1 (group "
                f"'nope.{group}', version 'v1', plural 'widgets')")
    finally:
        uninstall(api, crd["metadata"]["name"])


@pytest.mark.parametrize(("code", "reason", "cls"), STATUSES,
                         ids=[f"{c}-{r}" for c, r, _ in STATUSES])
async def test_each_status_raises_its_class(answers, anyio_backend, code, reason, cls):
    answers.queue.append((code, {"Content-Type": "application/json"}, status(code, reason)))
    async with AsyncClient(answers.api_client(), max_retries=0) as client:
        with pytest.raises(cls) as info:
            await client.get("pods", "p", "ns")
    assert type(info.value) is cls
    assert (info.value.code, info.value.reason, info.value.message) == (
        code, reason, f"{reason} happened")


async def test_throttled_requests_are_retried_after_retry_after(answers, anyio_backend):
    throttled = (429, {"Retry-After": "2", "Content-Type": "application/json"},
                 status(429, "TooManyRequests"))
    answers.queue += [throttled, throttled, (503, {"Retry-After": "1"}, b"")]
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with AsyncClient(answers.api_client(), sleep=sleep, max_retries=2) as client:
        with pytest.raises(ServiceUnavailable):
            await client.create(configmap("x", "ns"))
        assert sleeps == [2.0, 2.0]
        assert [m for m, _ in answers.requests] == ["POST"] * 3
        answers.queue.append(throttled)
        with pytest.raises(TooManyRequests):
            await AsyncClient(transport=client.transport, max_retries=0).get("pods", "p")


async def test_write_query_parameters(answers, anyio_backend):
    async with AsyncClient(answers.api_client(), field_manager="mgr", request_timeout=7,
                           dry_run=True) as client:
        await client.create(configmap("x", "ns"))
        await client.apply(configmap("x", "ns"), force=True)
        await client.delete("configmaps", "x", "ns")
    assert answers.requests == [
        ("POST", "/api/v1/namespaces/ns/configmaps?fieldManager=mgr&dryRun=All&timeout=7s"),
        ("PATCH", "/api/v1/namespaces/ns/configmaps/x?fieldManager=mgr&dryRun=All&force=true"
                  "&timeout=7s"),
        ("DELETE", "/api/v1/namespaces/ns/configmaps/x?timeout=7s"),
    ]
