"""Tests for informers.factory, through the embedded API server and the official client."""

from __future__ import annotations

import threading

import pytest

from informers import labels
from informers.errors import NotFoundError
from informers.factory import GenericInformer, SharedInformerFactory
from informers.handlers import ResourceEventHandlerFuncs
from informers.keys import NAMESPACE_INDEX
from informers.resources import Resource, lookup
from informers.testing import ApiServer

WAIT = 10.0


@pytest.fixture
def server():
    with ApiServer() as srv:
        yield srv


@pytest.fixture
def factory(server):
    api = server.api_client()
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
        if not t.name.startswith("informers-testing") and "process_request_thread" not in t.name
    }


def test_one_shared_informer_per_resource(factory) -> None:
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


def test_every_typed_accessor_names_its_resource(factory) -> None:
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
    server.create(_pod("web-1", app="web"))
    server.create(_pod("db-1", app="db"))
    server.create(_pod("web-1", ns="kube-system", app="web"))
    server.create(_deployment("front"))
    before = _informer_threads()
    api = server.api_client()
    factory = SharedInformerFactory(api)
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
    assert sorted(p["metadata"]["name"] for p in lister.pods("default").list()) == [
        "db-1",
        "web-1",
    ]
    assert len(lister.list(labels.parse("app=web"))) == 2
    assert lister.pods("kube-system").get("web-1")["metadata"]["namespace"] == "kube-system"
    with pytest.raises(NotFoundError, match='pods "default/nope" not found'):
        lister.pods("default").get("nope")
    front = deployments.lister().deployments("default").get("front")
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
    factory = SharedInformerFactory(api)
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
    server.create(_pod("a", app="web"))
    server.create(_pod("b", app="db"))
    server.create(_pod("c", ns="kube-system", app="web"))

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
        namespace="default",
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
        lists = server.request_log("list", "pods")
        assert lists[0].namespace == "default"
        assert lists[0].query["labelSelector"] == "app=web"
    finally:
        factory.shutdown()
        api.close()


def test_managed_fields_dropped_by_default(factory, server) -> None:
    server.create(_pod("a"))
    pods = factory.core().v1().pods()
    pods.informer()
    factory.start()
    assert factory.wait_for_cache_sync(timeout=WAIT) == {"pods": True}
    assert server.get("pods", "default", "a")["metadata"]["managedFields"] == MANAGED_FIELDS
    assert "managedFields" not in pods.lister().pods("default").get("a")["metadata"]


def test_for_resource_custom_kind_discovered_or_given(factory, server) -> None:
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
    server.create(_pod("seed"))
    factory.start()
    assert factory.wait_for_cache_sync(timeout=WAIT) == {"pods": True}
    v1 = client.CoreV1Api(factory.api_client)
    v1.create_namespaced_pod("default", _pod("x"))
    v1.patch_namespaced_pod("x", "default", {"metadata": {"labels": {"v": "1"}}})
    v1.delete_namespaced_pod("x", "default")
    with cond:
        assert cond.wait_for(lambda: len(events) >= 4, WAIT)
    assert events == [
        ("add", "seed", True),
        ("add", "x", False),
        ("update", "1"),
        ("delete", "x"),
    ]
    assert [p["metadata"]["name"] for p in pods.lister().list()] == ["seed"]


def test_from_config_with_a_kubeconfig(server, tmp_path, monkeypatch) -> None:
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    server.create(_pod("a"))
    before = _informer_threads()
    factory = SharedInformerFactory.from_config(kubeconfig=path, resync_period=5.0)
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
    again.shutdown()


def test_wait_for_cache_sync_stopped_before_sync(server) -> None:
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
