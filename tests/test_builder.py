"""informers.controller.builder.ControllerBuilder and informers.testing.runner, on both
servers: a ConfigMap controller that owns Secrets and watches Pods, run with run_manager. The
priority queue and the options both builders share run on threads and on the async builder
(asyncio, trio) from one body each."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.to_thread
import pytest
from runtime_drivers import DRIVERS, ControllerDriver

from informers.client import Client
from informers.clock import FakeClock
from informers.controller import ControllerBuilder, Request, new_predicate_funcs
from informers.controllerutil import set_controller_reference
from informers.deadline import check, deadline, remaining
from informers.errors import AlreadyExists, DeadlineExceededError, NotFound
from informers.factory import SharedInformerFactory
from informers.manager import Manager
from informers.testing.runner import eventually, run_manager


@pytest.fixture
def setup(any_api_server):
    api = any_api_server.api_client()
    ns = any_api_server.namespace
    factory = SharedInformerFactory(api, namespace=ns)
    manager = Manager(api, factory=factory, shutdown_timeout=5.0)
    yield manager, Client(api, field_manager="test-builder"), ns
    api.close()


def configmap(name: str, ns: str, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def test_for_owns_watches(setup):
    manager, client, ns = setup
    seen: list[Request] = []
    builder = (ControllerBuilder(manager).for_("configmaps").owns("secrets")
               .watches("pods", lambda pod: [f"{pod['metadata']['namespace']}/"
                                             f"{pod['metadata']['labels']['cm']}"]))
    listers = builder.listers

    def reconcile(request: Request) -> None:
        seen.append(request)
        cm = listers.get(request)
        if cm is None:
            return
        secret = {"apiVersion": "v1", "kind": "Secret",
                  "metadata": {"name": request.name, "namespace": request.namespace},
                  "stringData": {"from": cm["data"]["k"]}}
        set_controller_reference(cm, secret)
        try:
            client.create(secret)
        except AlreadyExists:
            pass

    controller = builder.complete(reconcile)
    assert controller.name == "configmap"
    with run_manager(manager):
        client.create(configmap("a", ns))
        secret = eventually(lambda: client.get("secrets", "a", ns))
        assert secret["metadata"]["ownerReferences"][0]["kind"] == "ConfigMap"
        assert Request(ns, "a") in seen
        assert all(isinstance(r, Request) for r in seen)
        assert seen[0].namespace == ns and seen[0].name == "a" and seen[0] == f"{ns}/a"
        # the owned Secret's deletion enqueues its owner, which recreates it
        uid = secret["metadata"]["uid"]
        client.delete("secrets", "a", ns)
        eventually(lambda: client.get("secrets", "a", ns)["metadata"]["uid"] != uid)
        # a Pod maps to the ConfigMap its label names
        count = len(seen)
        client.create({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "p", "namespace": ns, "labels": {"cm": "a"}},
                       "spec": {"containers": [{"name": "c", "image": "registry.invalid/x"}]}})
        eventually(lambda: len(seen) > count and seen[-1] == Request(ns, "a"))
    assert manager.factory.informers().keys() == {"configmaps", "secrets", "pods"}


def test_event_filter_and_a_key_reconciler(setup):
    manager, client, ns = setup
    keys: list[str] = []
    only_wanted = new_predicate_funcs(
        lambda obj: (obj["metadata"].get("labels") or {}).get("want") == "yes")
    (ControllerBuilder(manager).for_("configmaps").with_event_filter(only_wanted)
     .with_options(workers=2, name="filtered").complete(keys.append))
    with run_manager(manager):
        client.create(configmap("skip", ns))
        client.create(configmap("take", ns, want="yes"))
        eventually(lambda: keys == [f"{ns}/take"])


def test_the_reconciler_factory_gets_the_listers(setup):
    manager, client, ns = setup
    names: list[str] = []

    def make(listers):
        def reconcile(request: Request) -> None:
            obj = listers.primary.by_namespace(request.namespace).get(request.name)
            names.append(obj["metadata"]["name"])
        return reconcile

    ControllerBuilder(manager).for_("configmaps").complete(make)
    with run_manager(manager):
        client.create(configmap("f", ns))
        eventually(lambda: names == ["f"])


def test_a_reconcile_past_its_timeout_fails_its_requests_and_is_retried(setup):
    manager, client, ns = setup
    outcomes: list[str] = []

    def reconcile(request: Request) -> None:
        if not outcomes:
            threading.Event().wait(0.4)  # past the 0.2 s reconcile timeout
            try:
                client.get("configmaps", request.name, request.namespace)
            except DeadlineExceededError as err:
                outcomes.append(str(err))
                raise
        outcomes.append("ok")

    (ControllerBuilder(manager).for_("configmaps")
     .with_options(reconcile_timeout=0.2).complete(reconcile))
    with run_manager(manager):
        client.create(configmap("slow", ns))
        eventually(lambda: outcomes and outcomes[-1] == "ok")
    assert outcomes[0].endswith("context deadline exceeded")
    assert outcomes[0].startswith(f"GET /api/v1/namespaces/{ns}/configmaps/slow")


def test_builder_misuse():
    manager = Manager(None, factory=SharedInformerFactory(None))
    with pytest.raises(ValueError, match="needs for_"):
        ControllerBuilder(manager).owns("secrets")
    b = ControllerBuilder(manager).for_("configmaps")
    with pytest.raises(ValueError, match="already called"):
        b.for_("secrets")
    with pytest.raises(KeyError, match="does not watch 'pods'"):
        b.listers["pods"]
    with pytest.raises(ValueError, match="positive"):
        b.with_options(reconcile_timeout=0)


@pytest.mark.parametrize("driver", ["threads", "asyncio"])
def test_both_builders_take_the_same_options(driver):
    # one with_options (informers.controller.builder_options) for the threaded and the async
    # builder: the same options reach the controller, with the same checks and defaults
    async def main() -> None:
        if driver == "threads":
            manager: Any = Manager(None, factory=SharedInformerFactory(None))
            make: Any = ControllerBuilder
        else:
            from informers.aio import AsyncControllerBuilder, AsyncSharedInformerFactory
            from informers.aio.manager import AsyncManager

            manager = AsyncManager(AsyncSharedInformerFactory(object()))
            make = AsyncControllerBuilder
        builder = make(manager)
        with pytest.raises(ValueError, match="reconcile_timeout must be positive, got -1"):
            builder.with_options(reconcile_timeout=-1)
        builder.for_("configmaps").with_options(workers=3, max_retries=None, drain_timeout=2.5)
        assert builder.with_options(workers=None) is builder  # not given: kept
        controller = builder.complete(lambda request: None)
        assert (controller.name, controller.workers, controller.max_retries,
                controller.drain_timeout) == ("configmap", 3, None, 2.5)
        named = make(manager).for_("secrets").named("mine").complete(lambda r: None)
        assert named.name == "mine"
        with pytest.raises(ValueError, match="controller c: workers must be at least 1"):
            make(manager).for_("pods").with_options(workers=0, name="c").complete(
                lambda r: None)

    anyio.run(main)


# -- deadline ---------------------------------------------------------------------------------


def test_deadline_on_a_fake_clock():
    clock = FakeClock()
    assert remaining() is None
    with deadline(2.0, clock):
        assert remaining() == 2.0
        with deadline(5.0, clock):  # an inner, later deadline does not extend it
            assert remaining() == 2.0
        with deadline(1.0, clock):
            assert remaining() == 1.0
        clock.step(2.0)
        with pytest.raises(DeadlineExceededError, match="GET x: context deadline exceeded"):
            check("GET x")
    assert remaining() is None


# -- runner -----------------------------------------------------------------------------------


def test_eventually_failure_message():
    def never() -> bool:
        assert 1 == 2, "one is not two"
        return True

    with pytest.raises(AssertionError) as info:
        eventually(never, timeout=0.05, interval=0.01, message="waiting for two")
    text = str(info.value)
    assert text.startswith("waiting for two: test_eventually_failure_message.<locals>.never "
                           "still failing after ")
    assert "over 0.05s; last: AssertionError: one is not two" in text
    with pytest.raises(AssertionError, match=r"last: returned \[\]"):
        eventually(list, timeout=0.02, interval=0.01)
    with pytest.raises(AssertionError, match="last: NotFound"):
        eventually(lambda: (_ for _ in ()).throw(NotFound({"code": 404, "reason": "NotFound"})),
                   timeout=0.02, interval=0.01)


def test_run_manager_reraises_a_runnable_error(api_server):
    api = api_server.api_client()
    manager = Manager(api, shutdown_timeout=2.0)

    def failing(stop: threading.Event) -> None:
        raise RuntimeError("runnable broke")

    manager.add_runnable(failing, name="failing")
    with pytest.raises(RuntimeError, match="runnable broke"), run_manager(manager):
        eventually(lambda: False, timeout=1)
    api.close()


def test_run_manager_stops_and_joins(api_server):
    api = api_server.api_client()
    manager = Manager(api, shutdown_timeout=2.0)
    stopped = threading.Event()

    def runnable(stop: threading.Event) -> None:
        stop.wait()
        stopped.set()

    manager.add_runnable(runnable, name="waits")
    with run_manager(manager) as running:
        assert running is manager and manager.caches_synced()
        assert not stopped.is_set()
    assert stopped.is_set()
    assert not [t for t in threading.enumerate() if t.name == "run-manager"]
    api.close()


def test_the_manager_fixture(manager, api_client):
    assert manager.api_client is api_client
    with run_manager(manager):
        assert manager.caches_synced()


# -- the priority queue (controller-runtime v0.23 WithLowPriorityWhenUnchanged) -----------------


@pytest.fixture(params=DRIVERS)
def driver(request):
    # the threaded Controller, or an AsyncController on asyncio or trio (tests/runtime_drivers.py)
    driver = ControllerDriver(request.param)
    yield driver
    driver.close()


def test_low_priority_items_go_after_fresh_ones(driver):
    q = driver.make("c", lambda key: None).queue

    def fill() -> None:
        q.add("initial-1", low_priority=True)
        q.add("initial-2", low_priority=True)
        q.add("fresh")
        q.add("initial-2")  # a fresh change of a waiting low item raises it

    driver.on_loop(fill)
    assert len(q) == 3
    assert [driver.take() for _ in range(3)] == ["fresh", "initial-2", "initial-1"]

    def refill() -> None:
        # re-added (low) while processing: queued again on done, in the low lane
        q.add("initial-1", low_priority=True)
        q.add("other")
        q.done("initial-1")

    driver.on_loop(refill)
    assert [driver.take() for _ in range(2)] == ["other", "initial-1"]


def obj(name: str, rv: str) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


def test_low_priority_when_unchanged_handler(driver):
    from informers.controller import EnqueueRequestForObject
    from informers.controller.builder import LowPriorityWhenUnchanged

    controller = driver.make("c", lambda key: None)

    def events() -> None:
        handler = LowPriorityWhenUnchanged(controller, EnqueueRequestForObject)
        handler.on_add(obj("listed", "1"), True)          # initial list: low
        handler.on_update(obj("resynced", "2"), obj("resynced", "2"))  # resync: low
        handler.on_update(obj("changed", "3"), obj("changed", "4"))    # a real change
        handler.on_add(obj("created", "5"), False)        # a fresh add
        handler.on_delete(obj("deleted", "6"))

    driver.on_loop(events)
    assert [driver.take() for _ in range(5)] == [
        "ns/changed", "ns/created", "ns/deleted", "ns/listed", "ns/resynced"]


@contextmanager
def running_builder(runtime: str, api: Any, ns: str, body: Any, **options: Any) -> Any:
    """A ConfigMap controller built by ``ControllerBuilder`` (``runtime`` ``"threads"``) or
    ``AsyncControllerBuilder`` (on an asyncio or trio loop in a thread) with ``options``,
    reconciling ``body(name)`` (a blocking body: the async reconcile awaits it in a worker
    thread), run by its manager for the block; yields the controller."""
    if runtime == "threads":
        manager = Manager(api, factory=SharedInformerFactory(api, namespace=ns),
                          shutdown_timeout=5.0)
        controller: Any = (ControllerBuilder(manager).for_("configmaps").with_options(**options)
                           .complete(lambda request: body(request.name)))
        with run_manager(manager):
            yield controller
        return
    from anyio.from_thread import start_blocking_portal

    from informers.aio import AsyncControllerBuilder, AsyncSharedInformerFactory
    from informers.aio.manager import AsyncManager

    async def reconcile(request: Request) -> None:
        await anyio.to_thread.run_sync(body, request.name, abandon_on_cancel=True)

    async def build() -> tuple[Any, Any]:
        manager = AsyncManager(AsyncSharedInformerFactory(api, namespace=ns))
        return manager, (AsyncControllerBuilder(manager).for_("configmaps")
                         .with_options(**options).complete(reconcile))

    with start_blocking_portal(runtime) as portal:
        async_manager, controller = portal.call(build)
        run = portal.start_task_soon(async_manager.run)
        try:
            yield controller
        finally:
            portal.call(async_manager.stop)
            run.result(10)


@pytest.mark.parametrize("priority_queue", [True, False])
@pytest.mark.parametrize("runtime", DRIVERS)
def test_builder_with_a_priority_queue_reconciles(any_api_server, runtime, priority_queue):
    # one worker, held by the first listed key while a fresh add arrives
    api, ns = any_api_server.api_client(), any_api_server.namespace
    client = Client(api, field_manager="test-builder")
    for name in ("a", "b", "c"):
        client.create(configmap(name, ns))
    seen: list[str] = []
    release = threading.Event()

    def body(name: str) -> None:
        seen.append(name)
        assert release.wait(10)

    with running_builder(runtime, api, ns, body, workers=1,
                         priority_queue=priority_queue) as controller:
        eventually(lambda: len(seen) == 1 and len(controller.queue) == 2)
        client.create(configmap("fresh", ns))
        eventually(lambda: len(controller.queue) == 3)
        release.set()
        eventually(lambda: len(seen) == 4)
    api.close()
    listed = sorted(set("abc") - {seen[0]})
    assert seen[0] in "abc"
    if priority_queue:  # the fresh add jumps the initial list's adds
        assert seen[1:] == ["fresh", *listed]
    else:
        assert seen[1:] == [*listed, "fresh"]
