"""Tests for informers.controller.enqueue: which keys each event enqueues.

Unit tests feed events to the handlers directly with a work queue as the target; the last test
wires a controller to real informers on the embedded API server (a custom resource that owns
ConfigMaps, including an owner reference to an object that does not exist).
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from informers.controller import (
    Controller,
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
)
from informers.controller.enqueue import group_of
from informers.errors import NotFoundError
from informers.factory import SharedInformerFactory
from informers.keys import DeletedFinalStateUnknown, unwrap_tombstone
from informers.testing import ApiServer
from informers.workqueue import Queue


def drain(queue):
    keys = []
    while len(queue):
        key, _ = queue.get()
        queue.done(key)
        keys.append(key)
    return keys


def obj(name, namespace="ns", owners=(), labels=None):
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if owners:
        meta["ownerReferences"] = list(owners)
    if labels is not None:
        meta["labels"] = labels
    return {"metadata": meta}


def ref(name, kind="Widget", api_version="example.com/v1", controller=True):
    r = {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}"}
    if controller is not None:
        r["controller"] = controller
    return r


@pytest.fixture
def queue():
    q = Queue()
    yield q
    q.shut_down()


# -- helpers -----------------------------------------------------------------------------------


def test_group_of():
    assert group_of("v1") == ""
    assert group_of("apps/v1") == "apps"
    assert group_of("example.com/v1alpha1") == "example.com"
    assert group_of("") == ""


def test_unwrap_tombstone():
    o = obj("a")
    assert unwrap_tombstone(o) is o
    assert unwrap_tombstone(DeletedFinalStateUnknown("ns/a", o)) is o
    assert unwrap_tombstone(DeletedFinalStateUnknown("ns/a", None)) is None


def test_target_must_be_a_controller_or_a_queue():
    with pytest.raises(TypeError, match="cannot enqueue into"):
        EnqueueRequestForObject(object())


# -- EnqueueRequestForObject -------------------------------------------------------------------


def test_object_keys(queue):
    h = EnqueueRequestForObject(queue)
    h.on_add(obj("a"), True)
    h.on_add(obj("node-1", namespace=None), False)
    h.on_update(obj("a"), obj("b"))
    h.on_delete(obj("c"))
    h.on_delete(DeletedFinalStateUnknown("ns/d", None))
    assert drain(queue) == ["ns/a", "node-1", "ns/b", "ns/c", "ns/d"]


def test_object_without_a_valid_key_is_logged_and_skipped(queue, caplog):
    h = EnqueueRequestForObject(queue)
    h.on_add({"metadata": {"namespace": "ns"}}, False)
    h.on_add("not an object", False)
    assert drain(queue) == []
    assert sum("cannot enqueue an object" in r.getMessage() for r in caplog.records) == 2
    assert all(r.levelno == logging.ERROR for r in caplog.records)


def test_a_controller_is_a_target():
    c = Controller("target", lambda k: None)
    try:
        EnqueueRequestForObject(c).on_add(obj("a"), False)
        assert len(c.queue) == 1
        assert c.queue.get() == ("ns/a", False)
    finally:
        c.queue.shut_down()


# -- EnqueueRequestForOwner --------------------------------------------------------------------


def test_owner_key_of_the_controlling_owner_only(queue):
    h = EnqueueRequestForOwner(queue, "Widget", "example.com/v1")
    o = obj("cm", owners=[
        ref("not-controller", controller=False),
        ref("no-flag", controller=None),
        ref("other-kind", kind="Gadget"),
        ref("other-group", api_version="other.io/v1"),
        ref("w1"),
    ])
    h.on_add(o, False)
    assert drain(queue) == ["ns/w1"]


def test_owner_keys_of_every_owner_when_not_only_the_controller(queue):
    h = EnqueueRequestForOwner(queue, "Widget", group="example.com", is_controller=False)
    o = obj("cm", owners=[ref("a", controller=False), ref("b", controller=None), ref("c"),
                          ref("a", controller=False), ref("d", kind="Gadget")])
    assert h.owner_keys(o) == ["ns/a", "ns/b", "ns/c"]
    h.on_add(o, False)
    assert drain(queue) == ["ns/a", "ns/b", "ns/c"]


def test_owner_versions_are_not_compared(queue):
    h = EnqueueRequestForOwner(queue, "Widget", "example.com/v2")
    h.on_add(obj("cm", owners=[ref("w", api_version="example.com/v1beta1")]), False)
    assert drain(queue) == ["ns/w"]


def test_core_group_owner(queue):
    h = EnqueueRequestForOwner(queue, "Service", "v1")
    o = obj("ep", owners=[ref("svc", kind="Service", api_version="v1"),
                          ref("svc2", kind="Service", api_version="apps/v1")])
    h.on_add(o, False)
    assert drain(queue) == ["ns/svc"]
    h2 = EnqueueRequestForOwner(queue, "Service")  # neither version nor group: core
    h2.on_add(o, False)
    assert drain(queue) == ["ns/svc"]


def test_cluster_scoped_owner_and_object(queue):
    h = EnqueueRequestForOwner(queue, "Node", "v1", owner_namespaced=False)
    h.on_add(obj("lease", owners=[ref("node-1", kind="Node", api_version="v1")]), False)
    h2 = EnqueueRequestForOwner(queue, "Widget", "example.com/v1")
    h2.on_add(obj("pv", namespace=None, owners=[ref("w")]), False)
    assert drain(queue) == ["node-1", "w"]


def test_owner_update_enqueues_old_and_new_owners_once(queue):
    h = EnqueueRequestForOwner(queue, "Widget", "example.com/v1")
    h.on_update(obj("cm", owners=[ref("old")]), obj("cm", owners=[ref("new")]))
    h.on_update(obj("cm", owners=[ref("same")]), obj("cm", owners=[ref("same")]))
    assert drain(queue) == ["ns/old", "ns/new", "ns/same"]


def test_owner_delete_and_tombstones(queue):
    h = EnqueueRequestForOwner(queue, "Widget", "example.com/v1")
    h.on_delete(obj("cm", owners=[ref("a")]))
    h.on_delete(DeletedFinalStateUnknown("ns/cm", obj("cm", owners=[ref("b")])))
    h.on_delete(DeletedFinalStateUnknown("ns/cm", None))
    assert drain(queue) == ["ns/a", "ns/b"]


def test_malformed_owner_references_are_skipped(queue, caplog):
    h = EnqueueRequestForOwner(queue, "Widget", "example.com/v1")
    o = obj("cm", owners=["junk", ref(""), ref("a/b"), ref("ok")])
    h.on_add(o, False)
    h.on_add({"metadata": "junk"}, False)
    h.on_add(None, False)
    assert drain(queue) == ["ns/ok"]
    assert sum("invalid name" in r.getMessage() for r in caplog.records) == 2


def test_owner_arguments_are_checked(queue):
    with pytest.raises(ValueError, match="owner kind"):
        EnqueueRequestForOwner(queue, "")
    with pytest.raises(ValueError, match="is in group 'apps', not 'batch'"):
        EnqueueRequestForOwner(queue, "Deployment", "apps/v1", group="batch")
    assert EnqueueRequestForOwner(queue, "Deployment", "apps/v1", group="apps").group == "apps"


# -- EnqueueRequestsFromMapFunc ----------------------------------------------------------------


def by_app_label(o):
    app = ((o.get("metadata") or {}).get("labels") or {}).get("app")
    return [f"ns/{app}", "ns/all"] if app else []


def test_map_keys_for_each_event(queue):
    h = EnqueueRequestsFromMapFunc(queue, by_app_label)
    h.on_add(obj("p", labels={"app": "web"}), False)
    assert drain(queue) == ["ns/web", "ns/all"]
    h.on_update(obj("p", labels={"app": "web"}), obj("p", labels={"app": "db"}))
    assert drain(queue) == ["ns/web", "ns/all", "ns/db"]
    h.on_delete(obj("p", labels={"app": "cache"}))
    h.on_delete(DeletedFinalStateUnknown("ns/p", obj("p", labels={"app": "q"})))
    h.on_delete(DeletedFinalStateUnknown("ns/p", None))
    assert drain(queue) == ["ns/cache", "ns/all", "ns/q"]


def test_map_function_that_raises_enqueues_nothing(queue, caplog):
    calls = []

    def fn(o):
        calls.append(o["metadata"]["name"])
        if o["metadata"]["name"] == "bad":
            raise KeyError("boom")
        return ["ns/x"]

    h = EnqueueRequestsFromMapFunc(queue, fn)
    h.on_update(obj("good"), obj("bad"))
    assert calls == ["good", "bad"]
    assert drain(queue) == []
    assert any("map function" in r.getMessage() for r in caplog.records)
    h.on_add(obj("good"), False)
    assert drain(queue) == ["ns/x"]


# -- through real informers --------------------------------------------------------------------


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


def test_owner_and_object_enqueueing_against_the_embedded_server():
    """A Widget owns a ConfigMap; the controller recreates the ConfigMap when it is deleted
    (the owner is enqueued) and copes with an owner reference to a Widget that never existed."""
    with ApiServer() as server:
        server.register_resource("example.com", "v1", "widgets", "Widget", has_status=True)
        client = server.api_client()
        factory = SharedInformerFactory(client)
        widgets = factory.for_resource("example.com", "v1", "widgets")
        configmaps = factory.core().v1().config_maps()
        reconciled: list[tuple[str, bool]] = []

        def reconcile(key):
            ns, name = key.split("/")
            try:
                widget = widgets.lister().get(key)
            except NotFoundError:
                widget = None
            reconciled.append((key, widget is not None))
            if widget is None:
                return None  # the owner does not exist: nothing to do
            cm_name = f"{name}-config"
            if server.get("configmaps", ns, cm_name) is None:
                server.create({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": cm_name, "namespace": ns, "ownerReferences": [{
                        "apiVersion": "example.com/v1", "kind": "Widget", "name": name,
                        "uid": widget["metadata"]["uid"], "controller": True,
                    }]},
                    "data": {"size": str(widget["spec"]["size"])},
                })
            return None

        c = Controller("widgets", reconcile, workers=2)
        c.watch(widgets.informer(), EnqueueRequestForObject)
        c.watch(configmaps.informer(),
                lambda ctl: EnqueueRequestForOwner(ctl, "Widget", "example.com/v1"))
        stop = threading.Event()
        factory.start()
        runner = threading.Thread(target=c.run, args=(stop,), daemon=True)
        runner.start()
        try:
            server.create({"apiVersion": "example.com/v1", "kind": "Widget",
                           "metadata": {"name": "w1", "namespace": "default"},
                           "spec": {"size": 3}})
            wait_until(lambda: server.get("configmaps", "default", "w1-config") is not None)
            assert server.get("configmaps", "default", "w1-config")["data"] == {"size": "3"}
            # Deleting the owned ConfigMap enqueues its owner, which recreates it.
            before = len(reconciled)
            server.delete("configmaps", "default", "w1-config")
            wait_until(lambda: len(reconciled) > before
                       and server.get("configmaps", "default", "w1-config") is not None)
            # A ConfigMap owned by a Widget that does not exist: its key is enqueued, the
            # reconcile finds no Widget and succeeds; nothing is created.
            server.create({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "orphan", "namespace": "default", "ownerReferences": [{
                    "apiVersion": "example.com/v1", "kind": "Widget", "name": "ghost",
                    "uid": "0000", "controller": True}]},
            })
            wait_until(lambda: ("default/ghost", False) in reconciled)
            assert server.get("configmaps", "default", "ghost-config") is None
            assert c.queue.num_requeues("default/ghost") == 0
        finally:
            stop.set()
            runner.join(10)
            factory.shutdown()
            client.close()
        assert not runner.is_alive()
        assert ("default/w1", True) in reconciled
