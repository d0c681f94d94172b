"""Tests for informers.factory, through an API server and the official client.

Tests of the factory's behaviour over a server run against the embedded server and the real
kube-apiserver (``any_api_server``; their factories are scoped to the test's namespace); those
that need the embedded server's delays, request log or custom kinds run against it alone.
"""

from __future__ import annotations

import threading
import time

import pytest
from helpers import LOOP_THREADS

from informers import labels
from informers.errors import NotFoundError
from informers.factory import GenericInformer, SharedInformerFactory
from informers.handlers import ResourceEventHandlerFuncs
from informers.keys import NAMESPACE_INDEX
from informers.resources import Resource, lookup
from informers.testing import ApiServer

WAIT = 10.0


@pytest.fixture
def server(any_api_server):
    return any_api_server


@pytest.fixture
def factory(server):
    api = server.api_client()
    f = SharedInformerFactory(api, namespace=server.namespace)
    yield f
    f.shutdown()
    api.close()


@pytest.fixture
def embedded_server():
    with ApiServer() as srv:
        yield srv


@pytest.fixture
def embedded_factory(embedded_server):
    api = embedded_server.api_client()
    f = SharedInformerFactory(api)
    yield f
    f.shutdown()
    api.close()


MANAGED_FIELDS = [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1"}]


def _pod(name: str, ns: str = "default", **lbls: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": dict(lbls),
            "managedFields": MANAGED_FIELDS,
        },
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def _deployment(name: str, ns: str = "default") -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def _informer_threads() -> set[str]:
    """Names of live threads, without the embedded server's own."""
    return {
        t.name
        for t in threading.enumerate()
        if not t.name.startswith(("informers-testing", *LOOP_THREADS))
        and "process_request_thread" not in t.name
    }


def test_one_shared_informer_per_resource(embedded_factory) -> None:
    factory = embedded_factory
    pods = factory.core().v1().pods()
    assert isinstance(pods, GenericInformer)
    inf = pods.informer()
    assert factory.core().v1().pods().informer() is inf
    assert factory.informer_for("pods") is inf
    assert factory.informer_for(lookup("pods")) is inf
    assert factory.for_resource("", "v1", "pods").informer() is inf
    deployments = factory.apps().v1().deployments().informer()
    assert deployments is not inf
    assert factory.for_resource("apps", "v1", "deployments").informer() is deployments
    assert factory.informers() == {"pods": inf, "deployments.apps": deployments}
    # typed informers get the namespace index
    assert NAMESPACE_INDEX in inf.get_indexer().get_indexers()


def test_every_typed_accessor_names_its_resource(embedded_factory) -> None:
    factory = embedded_factory
    got = {
        factory.core().v1().pods(): "pods",
        factory.core().v1().services(): "services",
        factory.core().v1().endpoints(): "endpoints",
        factory.core().v1().nodes(): "nodes",
        factory.core().v1().namespaces(): "namespaces",
        factory.core().v1().config_maps(): "configmaps",
        factory.core().v1().secrets(): "secrets",
        factory.core().v1().events(): "events",
        factory.core().v1().service_accounts(): "serviceaccounts",
        factory.core().v1().persistent_volume_claims(): "persistentvolumeclaims",
        factory.core().v1().persistent_volumes(): "persistentvolumes",
        factory.apps().v1().deployments(): "deployments.apps",
        factory.apps().v1().replica_sets(): "replicasets.apps",
        factory.apps().v1().stateful_sets(): "statefulsets.apps",
        factory.apps().v1().daemon_sets(): "daemonsets.apps",
        factory.coordination().v1().leases(): "leases.coordination.k8s.io",
        factory.discovery().v1().endpoint_slices(): "endpointslices.discovery.k8s.io",
        factory.batch().v1().jobs(): "jobs.batch",
    }
    assert [g.resource.group_resource for g in got] == list(got.values())
    assert factory.informers() == {}  # nothing created until informer()/lister()


def test_start_sync_list_and_shutdown_join_every_thread(server) -> None:
    ns, other = server.namespace, server.new_namespace()
    server.create(_pod("web-1", ns, app="web"))
    server.create(_pod("db-1", ns, app="db"))
    server.create(_pod("web-1", ns=other, app="web"))
    server.create(_deployment("front", ns))
    before = _informer_threads()
    api = server.api_client()
    factory = SharedInformerFactory(api, namespace=ns)
    pods = factory.core().v1().pods()
    deployments = factory.apps().v1().deployments()
    pods.informer()
    deployments.informer()
    assert factory.wait_for_cache_sync() == {}  # nothing started yet
    stop = threading.Event()
    factory.start(stop)
    factory.start(stop)  # idempotent: no second thread per informer
    names = _informer_threads() - before
    assert sorted(n for n in names if n in ("informer-pods", "informer-deployments.apps")) == [
        "informer-deployments.apps",
        "informer-pods",
    ]
    assert factory.wait_for_cache_sync(stop, timeout=WAIT) == {
        "deployments.apps": True,
        "pods": True,
    }
    lister = pods.lister()
    assert sorted(p["metadata"]["name"] for p in lister.pods(ns).list()) == [
        "db-1",
        "web-1",
    ]
    assert [p["metadata"]["namespace"] for p in lister.list(labels.parse("app=web"))] == [ns]
    assert lister.pods(other).list() == []  # the factory's namespace only
    with pytest.raises(NotFoundError, match=f'pods "{ns}/nope" not found'):
        lister.pods(ns).get("nope")
    front = deployments.lister().deployments(ns).get("front")
    assert front["spec"]["selector"] == {"matchLabels": {"app": "front"}}

    factory.shutdown()
    factory.shutdown()  # idempotent
    assert _informer_threads() - before == set()
    assert pods.informer().is_stopped()
    assert not stop.is_set()  # the caller's event is left alone
    factory.start(stop)  # does nothing after shutdown
    assert _informer_threads() - before == set()
    api.close()


def test_start_again_starts_only_new_informers(factory, server) -> None:
    factory.core().v1().pods().informer()
    factory.start()
    assert factory.wait_for_cache_sync(timeout=WAIT) == {"pods": True}
    factory.core().v1().config_maps().informer()
    assert factory.wait_for_cache_sync(timeout=WAIT) == {"pods": True}  # not started yet
    before = _informer_threads()
    factory.start()
    new = _informer_threads() - before
    run_threads = {n for n in new if n.startswith("informer-") and "-" not in n[9:]}
    assert run_threads == {"informer-configmaps"}  # only the new informer was started
    assert factory.wait_for_cache_sync(timeout=WAIT) == {"configmaps": True, "pods": True}


def test_caller_stop_event_stops_the_informers_it_started(factory, server) -> None:
    inf = factory.core().v1().pods().informer()
    stop = threading.Event()
    factory.start(stop)
    assert factory.wait_for_cache_sync(stop, timeout=WAIT) == {"pods": True}
    stop.set()
    for _ in range(2000):
        if inf.is_stopped():
            break
        threading.Event().wait(0.005)
    assert inf.is_stopped()
    assert factory.wait_for_cache_sync(stop) == {"pods": True}


def test_shutdown_concurrently(server) -> None:
    api = server.api_client()
    factory = SharedInformerFactory(api, namespace=server.namespace)
    factory.core().v1().pods().informer()
    factory.start()
    assert factory.wait_for_cache_sync(timeout=WAIT) == {"pods": True}
    threads = [threading.Thread(target=factory.shutdown) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert not any(t.is_alive() for t in threads)
    assert factory.core().v1().pods().informer().is_stopped()
    api.close()


def test_namespace_tweak_transform_and_custom_resync(server) -> None:
    ns, other = server.namespace, server.new_namespace()
    server.create(_pod("a", ns, app="web"))
    server.create(_pod("b", ns, app="db"))
    server.create(_pod("c", ns=other, app="web"))

    def tweak(options) -> None:
        options.label_selector = "app=web"

    seen: list[str] = []

    def transform(obj):
        seen.append(obj["metadata"]["name"])
        return obj

    api = server.api_client()
    factory = SharedInformerFactory(
        api,
        resync_period=60.0,
        namespace=ns,
        tweak_list_options=tweak,
        transform=transform,
        custom_resync={"configmaps": 0.0, lookup("secrets"): 120.0},
    )
    try:
        pods = factory.core().v1().pods()
        pods.informer()  # informers are created on first use, as in client-go
        factory.start()
        assert factory.wait_for_cache_sync(timeout=WAIT) == {"pods": True}
        assert [p["metadata"]["name"] for p in pods.lister().list()] == ["a"]
        assert seen == ["a"]
        assert "managedFields" in pods.lister().list()[0]["metadata"]  # transform replaced
        assert pods.informer().resync_check_period == 60.0
        assert factory.core().v1().config_maps().informer().resync_check_period == 0.0
        assert factory.core().v1().secrets().informer().resync_check_period == 120.0
        if server.embedded is not None:
            lists = server.embedded.request_log("list", "pods")
            assert lists[0].namespace == ns
            assert lists[0].query["labelSelector"] == "app=web"
    finally:
        factory.shutdown()
        api.close()


def test_managed_fields_dropped_by_default(factory, server) -> None:
    ns = server.namespace
    server.create(_pod("a", ns))
    pods = factory.core().v1().pods()
    pods.informer()
    factory.start()
    assert factory.wait_for_cache_sync(timeout=WAIT) == {"pods": True}
    # the embedded server keeps what it is given; the real one writes its own
    assert server.get("pods", ns, "a")["metadata"]["managedFields"]
    assert "managedFields" not in pods.lister().pods(ns).get("a")["metadata"]


def test_for_resource_custom_kind_discovered_or_given(embedded_factory, embedded_server) -> None:
    factory, server = embedded_factory, embedded_server
    server.register_resource("example.com", "v1", "widgets", "Widget", namespaced=True)
    server.register_resource("example.com", "v1", "gadgets", "Gadget", namespaced=False)
    server.create(
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}},
        "widgets",
        "default",
    )
    server.create(
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"}},
        "gadgets",
    )
    widgets = factory.for_resource("example.com", "v1", "widgets")  # discovered
    assert widgets.resource == Resource("example.com", "v1", "widgets", "Widget", True)
    assert factory.for_resource("example.com", "v1", "widgets").informer() is widgets.informer()
    gadgets = factory.for_resource(
        "example.com", "v1", "gadgets", kind="Gadget", namespaced=False
    )
    assert gadgets.resource.namespaced is False
    added: list[str] = []
    gadgets.informer().add_event_handler(
        ResourceEventHandlerFuncs(on_add=lambda o: added.append(o["metadata"]["name"]))
    )
    factory.start()
    assert factory.wait_for_cache_sync(timeout=WAIT) == {
        "gadgets.example.com": True,
        "widgets.example.com": True,
    }
    assert widgets.lister().by_namespace("default").get("w1")["kind"] == "Widget"
    assert gadgets.lister().get("g1")["metadata"]["name"] == "g1"
    for _ in range(1000):
        if added:
            break
        threading.Event().wait(0.005)
    assert added == ["g1"]


def test_handler_events_through_the_factory(factory, server) -> None:
    from kubernetes import client

    events: list[tuple] = []
    cond = threading.Condition()

    def record(*e) -> None:
        with cond:
            events.append(e)
            cond.notify_all()

    pods = factory.core().v1().pods()
    pods.informer().add_event_handler(ResourceEventHandlerFuncs(
        on_add=lambda o, initial: record("add", o["metadata"]["name"], initial),
        on_update=lambda old, new: record("update", new["metadata"]["labels"].get("v")),
        on_delete=lambda o: record("delete", o["metadata"]["name"]),
    ))
    ns = server.namespace
    server.create(_pod("seed", ns))
    factory.start()
    assert factory.wait_for_cache_sync(timeout=WAIT) == {"pods": True}
    v1 = client.CoreV1Api(factory.api_client)
    v1.create_namespaced_pod(ns, _pod("x", ns))
    v1.patch_namespaced_pod("x", ns, {"metadata": {"labels": {"v": "1"}}})
    v1.delete_namespaced_pod("x", ns)
    with cond:
        assert cond.wait_for(lambda: len(events) >= 5, WAIT)
    assert events == [
        ("add", "seed", True),
        ("add", "x", False),
        ("update", "1"),
        ("update", "1"),  # a pod's delete marks it (deletionTimestamp) ...
        ("delete", "x"),  # ... then removes it
    ]
    assert [p["metadata"]["name"] for p in pods.lister().list()] == ["seed"]


def test_from_config_with_a_kubeconfig(server, tmp_path, monkeypatch) -> None:
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    server.create(_pod("a", server.namespace))
    before = _informer_threads()
    factory = SharedInformerFactory.from_config(kubeconfig=path, resync_period=5.0,
                                                namespace=server.namespace)
    assert factory.resync_period == 5.0
    pods = factory.core().v1().pods()
    pods.lister()  # creates the informer too
    factory.start()
    assert factory.wait_for_cache_sync(timeout=WAIT) == {"pods": True}
    assert [p["metadata"]["name"] for p in pods.lister().list()] == ["a"]
    factory.shutdown()  # also closes the client it created
    assert _informer_threads() - before == set()

    monkeypatch.setenv("KUBECONFIG", path)
    again = SharedInformerFactory.from_config()
    assert again.api_client.configuration.host == server.https_url  # kubeconfigs use TLS
    assert again.api_client.configuration.host.startswith("https://")
    again.shutdown()


def test_wait_for_cache_sync_stopped_before_sync(embedded_server) -> None:
    server = embedded_server
    server.delay(30.0, verb="list", resource="pods")  # the list never answers in time
    api = server.api_client()
    factory = SharedInformerFactory(api)
    try:
        factory.core().v1().pods().informer()
        factory.start()
        stop = threading.Event()
        stop.set()
        assert factory.wait_for_cache_sync(stop) == {"pods": False}
    finally:
        server.delay(0)
        factory.shutdown()
        api.close()


# -- stopping during the initial list ------------------------------------------------------------


@pytest.fixture
def slow_list_server():
    """A server whose pod lists wait on its FakeClock (the test sees them waiting)."""
    from informers.clock import FakeClock

    clock = FakeClock()
    with ApiServer(clock=clock) as srv:
        srv.create(_pod("a"))
        srv.delay(30.0, verb="list", resource="pods")
        yield srv, clock


def test_shutdown_during_the_initial_list_joins_every_thread(slow_list_server) -> None:
    srv, server_clock = slow_list_server
    before = _informer_threads()
    api = srv.api_client()
    factory = SharedInformerFactory(api)
    inf = factory.core().v1().pods().informer()
    stop = threading.Event()
    factory.start(stop)
    assert server_clock.wait_for_waiters(1)  # the list waits at the server
    assert _informer_threads() - before == {
        "informer-pods",
        "informer-pods-process",
        "reflector-pods",
        "informer-factory-stop-watch",
    }
    start = time.monotonic()
    factory.shutdown()
    assert time.monotonic() - start < 2.0
    assert _informer_threads() - before == set()
    assert inf.is_stopped() and not inf.has_synced()
    assert not stop.is_set()  # the caller's event is left alone
    api.close()


def test_caller_stop_event_during_the_initial_list(slow_list_server) -> None:
    srv, server_clock = slow_list_server
    before = _informer_threads()
    api = srv.api_client()
    factory = SharedInformerFactory(api)
    inf = factory.core().v1().pods().informer()
    stop = threading.Event()
    factory.start(stop)
    assert server_clock.wait_for_waiters(1)
    stop.set()
    deadline = time.monotonic() + 2.0
    while _informer_threads() - before and time.monotonic() < deadline:
        time.sleep(0.005)
    # the watcher noticed the event, the list was aborted, and the watcher had no more to do
    assert _informer_threads() - before == set()
    assert inf.is_stopped()
    factory.shutdown()
    api.close()


def test_no_stop_watcher_without_a_caller_event(factory, server) -> None:
    before = _informer_threads()
    factory.core().v1().pods().informer()
    factory.start()
    assert factory.wait_for_cache_sync(timeout=WAIT) == {"pods": True}
    assert "informer-factory-stop-watch" not in _informer_threads() - before
    factory.core().v1().config_maps().informer()
    stop = threading.Event()
    factory.start(stop)  # now one is needed
    assert "informer-factory-stop-watch" in _informer_threads() - before
    stop.set()
    deadline = time.monotonic() + 2.0
    while "informer-factory-stop-watch" in _informer_threads() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert _informer_threads() - before == {
        "informer-pods", "informer-pods-process", "reflector-pods"}  # pods: until shutdown
    factory.shutdown()
    assert _informer_threads() - before == set()


def test_resources_lists_the_requested_informers_in_request_order():
    factory = SharedInformerFactory(None)
    assert factory.resources() == ()
    factory.core().v1().services().informer()
    factory.informer_for("pods")
    factory.core().v1().services().informer()  # the same informer: listed once
    assert factory.resources() == (lookup("services"), lookup("pods"))
