"""informers.aio.AsyncControllerBuilder on asyncio and trio against the embedded API server:
for_/owns end to end (a reconcile creates an owned ConfigMap, a change of the ConfigMap enqueues
its owner, the reconcile reads listers), watches with a map function, event filters, the
options (name, workers, reconcile_timeout), the builder's misuse errors, and
(group, version, plural) kinds resolved through discovery on a CRD. The priority queue and the
shared options run on threads, asyncio and trio in tests/test_builder.py."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from informers.aio import (
    AsyncClient,
    AsyncControllerBuilder,
    AsyncSharedInformerFactory,
    AsyncTransport,
)
from informers.aio.manager import AsyncManager
from informers.aio.transport import resolve_resource
from informers.client.list_watch_client import list_watch_for_resource
from informers.clock import FakeClock
from informers.controller import Request
from informers.controller.builder import Listers
from informers.controller.predicates import new_predicate_funcs
from informers.controllerutil import set_controller_reference
from informers.resources import Resource, lookup
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


def fresh(api: ApiServer, name: str) -> str:
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


async def until(check: Any) -> None:
    with anyio.fail_after(WAIT):
        while not check():
            await anyio.sleep(0.005)


async def test_a_reconcile_creates_an_owned_configmap_and_its_changes_enqueue_the_owner(
        api, anyio_backend):
    ns = fresh(api, f"aio-builder-owns-{anyio_backend}")
    api.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": ns},
                "stringData": {"k": "v"}}, "secrets", ns)
    factory = AsyncSharedInformerFactory(api.api_client(), namespace=ns)
    manager = AsyncManager(factory)
    requests: list[str] = []
    async with AsyncClient(api.api_client(), field_manager="builder-test") as client:

        def make(listers: Listers[Any]) -> Any:
            async def reconcile(request: Request) -> None:
                requests.append(str(request))
                secret = listers.get(str(request))
                if secret is None:
                    return
                cm = {"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": f"{request.name}-cm", "namespace": ns},
                      "data": {"keys": ",".join(sorted(secret.get("data") or {}))}}
                # listed objects carry no kind (as client-go's typed caches): give it back
                set_controller_reference(dict(secret, apiVersion="v1", kind="Secret"), cm)
                await client.apply(cm, force=True)
            return reconcile

        controller = (AsyncControllerBuilder(manager)
                      .for_("secrets")
                      .owns("configmaps")
                      .with_options(workers=2)
                      .complete(make))
        assert controller.name == "secret"
        async with anyio.create_task_group() as tg:
            tg.start_soon(manager.run)
            await until(lambda: api.get("configmaps", ns, "s-cm") is not None)
            owned = await client.get("configmaps", "s-cm", ns)
            assert owned["data"] == {"keys": "k"}
            assert [r["kind"] for r in owned["metadata"]["ownerReferences"]] == ["Secret"]
            # the owned object's events enqueue its owner
            await until(lambda: len(requests) >= 2)  # its own add
            count = len(requests)
            await client.patch("configmaps", "s-cm", {"data": {"keys": "tampered"}}, ns)
            await until(lambda: len(requests) > count)
            await until(lambda: (api.get("configmaps", ns, "s-cm") or {}).get("data") == {
                "keys": "k"})
            assert set(requests) == {f"{ns}/s"}
            manager.stop()


async def test_watches_with_a_map_function_and_an_event_filter(api, anyio_backend):
    ns = fresh(api, f"aio-builder-map-{anyio_backend}")
    factory = AsyncSharedInformerFactory(api.api_client(), namespace=ns)
    manager = AsyncManager(factory)
    seen: list[str] = []

    async def reconcile(request: Request) -> None:
        seen.append(str(request))

    (AsyncControllerBuilder(manager)
     .for_("secrets")
     .watches("configmaps", lambda cm: [f"{ns}/for-{cm['metadata']['name']}"])
     .with_event_filter(new_predicate_funcs(
         lambda o: (o.get("metadata") or {}).get("labels", {}).get("pass") == "yes"))
     .named("mapper")
     .complete(reconcile))
    async with anyio.create_task_group() as tg:
        tg.start_soon(manager.run)
        await factory.wait_for_cache_sync(WAIT)
        api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "dropped", "namespace": ns}}, "configmaps", ns)
        api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "a", "namespace": ns, "labels": {"pass": "yes"}}}, "configmaps", ns)
        await until(lambda: seen)
        await anyio.sleep(0.05)
        manager.stop()
    assert seen == [f"{ns}/for-a"]


async def test_a_reconcile_past_its_timeout_is_cancelled_and_retried(api, anyio_backend, caplog):
    ns = fresh(api, f"aio-builder-timeout-{anyio_backend}")
    api.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "slow",
                                                                   "namespace": ns}},
               "secrets", ns)
    factory = AsyncSharedInformerFactory(api.api_client(), namespace=ns)
    manager = AsyncManager(factory)
    attempts: list[str] = []
    errors: list[BaseException] = []

    async def reconcile(request: Request) -> None:
        attempts.append(str(request))
        try:
            await anyio.sleep(WAIT)  # cancelled at the timeout
        except BaseException as err:
            errors.append(err)
            raise

    controller = (AsyncControllerBuilder(manager).for_("secrets")
                  .with_options(reconcile_timeout=0.05, max_retries=1,
                                rate_limiter=ItemExponentialFailureRateLimiter(0.001, 0.01))
                  .complete(reconcile))
    async with anyio.create_task_group() as tg:
        tg.start_soon(manager.run)
        await until(lambda: len(attempts) == 2 and not controller.in_flight)
        await anyio.sleep(0.05)
        manager.stop()
    assert attempts == [f"{ns}/slow"] * 2  # the first try and max_retries=1 retry
    assert len(errors) == 2
    assert f"reconcile of {ns}/slow ran past its 0.05s timeout" in caplog.text


def test_misuse_is_a_clear_error():
    factory = AsyncSharedInformerFactory(object())
    builder: AsyncControllerBuilder[Any] = AsyncControllerBuilder(AsyncManager(factory))
    with pytest.raises(ValueError, match=r"owns\(\) needs for_\(\) first"):
        builder.owns("configmaps")
    with pytest.raises(ValueError, match="reconcile_timeout must be positive"):
        builder.with_options(reconcile_timeout=0)
    with pytest.raises(ValueError, match=(
            r"AsyncControllerBuilder: clock is not an option here: the async controller's "
            r"time is the event loop's \(anyio\)")):
        builder.with_options(clock=FakeClock())
    builder.for_("secrets")
    with pytest.raises(ValueError, match="already called"):
        builder.for_("configmaps")


# -- kinds as (group, version, plural), resolved through discovery ---------------------------


def crd(group: str, plural: str, kind: str, scope: str = "Namespaced") -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": plural, "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object",
                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


async def test_a_group_version_plural_kind_is_resolved_through_discovery(api, anyio_backend):
    group = f"aio-builder-{anyio_backend}.example.com"
    api.create(crd(group, "websites", "Website"))
    ns = fresh(api, f"aio-builder-crd-{anyio_backend}")
    api.create({"apiVersion": f"{group}/v1", "kind": "Website",
                "metadata": {"name": "w", "namespace": ns}, "spec": {"host": "h"}},
               f"websites.{group}", ns)
    factory = AsyncSharedInformerFactory(api.api_client(), namespace=ns)
    manager = AsyncManager(factory)
    requests: list[str] = []
    async with AsyncClient(api.api_client(), field_manager="builder-test") as client:
        builder = AsyncControllerBuilder(manager).for_((group, "v1", "websites"))
        listers = builder.listers

        async def reconcile(request: Request) -> None:
            requests.append(str(request))
            site = listers.get(str(request))
            assert site is not None
            cm = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": f"{request.name}-cm", "namespace": ns},
                  "data": {"host": site["spec"]["host"]}}
            set_controller_reference(dict(site, apiVersion=f"{group}/v1", kind="Website"), cm)
            await client.apply(cm, force=True)

        controller = builder.owns("configmaps").complete(reconcile)
        assert controller.name == "websites"  # a stand-in until discovery names the kind
        with pytest.raises(ValueError, match=(
                rf"the lister of websites.{group} \({group}/v1\) is not there yet: its kind "
                r"is resolved through discovery when the controller starts")):
            listers.primary.list()
        async with anyio.create_task_group() as tg:
            tg.start_soon(manager.run)
            await until(lambda: api.get("configmaps", ns, "w-cm") is not None)
            assert controller.name == "website"  # controller-runtime: the kind, lower case
            # the owned ConfigMap's changes enqueue its Website owner: the kind came from
            # discovery (EnqueueRequestForOwner matches ownerReferences by kind)
            count = len(requests)
            await client.patch("configmaps", "w-cm", {"data": {"host": "tampered"}}, ns)
            await until(lambda: len(requests) > count)
            await until(lambda: (api.get("configmaps", ns, "w-cm") or {}).get("data") == {
                "host": "h"})
            manager.stop()
    resolved = Resource(group, "v1", "websites", "Website", True)
    assert set(factory.informers) == {resolved, lookup("configmaps")}
    assert listers.primary_resource == resolved
    assert [o["metadata"]["name"] for o in listers[(group, "v1", "websites")].list()] == ["w"]
    assert set(requests) == {f"{ns}/w"}


async def test_resolve_resource_follows_the_threaded_rule(api, anyio_backend, caplog):
    group = f"aio-resolve-{anyio_backend}.example.com"
    api.create(crd(group, "clusterthings", "ClusterThing", scope="Cluster"))
    cases = [(group, "v1", "clusterthings"),         # from discovery: kind and scope
             (group, "v1", "missing"),               # not in the document
             (f"absent-{group}", "v1", "things"),    # no such group version: 404
             ("apps", "v1", "deployments")]          # built in: no request
    async with AsyncTransport(api.api_client()) as transport:
        found = [await resolve_resource(transport, *case) for case in cases]
    assert found == [Resource(group, "v1", "clusterthings", "ClusterThing", False),
                     Resource(group, "v1", "missing", "", True),
                     Resource(f"absent-{group}", "v1", "things", "", True),
                     lookup("deployments")]
    assert found == [list_watch_for_resource(api.api_client(), *case).resource
                     for case in cases]  # the threaded factory's for_resource resolves so
    assert (f"discovery of missing.{group}/v1: missing not in /apis/{group}/v1; assuming a "
            "namespaced resource of unknown kind") in caplog.text
    assert f"discovery of things.absent-{group}/v1 failed (" in caplog.text
