"""A controller for a custom resource: every ``Widget`` (example.com/v1) owns a ConfigMap of the
same name whose data follows the Widget's spec.

It uses the library's reconcile runtime: a :class:`~informers.controller.Controller` whose
``reconcile(key)`` reads both kinds from listers and writes only what differs; Widget events
enqueue the Widget (only when its spec changed: ``GenerationChangedPredicate``), ConfigMap
events enqueue their owning Widget (``EnqueueRequestForOwner``), so a ConfigMap edited or
deleted by hand is put back. The :class:`~informers.Manager` runs the informers and the
controller and stops them in order.

    python examples/04-custom-resource-controller/main.py       # embedded API server and a demo
    kubectl apply -f examples/04-custom-resource-controller/crd.yaml
    python examples/04-custom-resource-controller/main.py --kubeconfig ~/.kube/config
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import client

from informers import Lister, Manager, split_meta_namespace_key
from informers.controller import (
    Controller,
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    GenerationChangedPredicate,
    Result,
    TerminalError,
)
from informers.errors import NotFoundError
from informers.signals import SignalHandler
from informers.testing import ApiServer, connect

GROUP, VERSION, PLURAL, KIND = "example.com", "v1", "widgets", "Widget"
MANAGED_BY = {"app.kubernetes.io/managed-by": "widget-controller"}


def owner_reference(widget: dict[str, Any]) -> dict[str, Any]:
    """The reference that makes the Widget own (and garbage-collect) the ConfigMap."""
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
            "name": widget["metadata"]["name"], "uid": widget["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}


def desired_config_map(widget: dict[str, Any]) -> dict[str, Any]:
    """What the Widget's ConfigMap should be: its spec, as strings."""
    meta = widget["metadata"]
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                         "labels": dict(MANAGED_BY), "ownerReferences": [owner_reference(widget)]},
            "data": {k: str(v) for k, v in sorted((widget.get("spec") or {}).items())}}


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true`` of a Widget, if any."""
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("kind") == KIND and ref.get("controller") is True:
            return ref
    return None


class WidgetReconciler:
    """Makes the Widget's ConfigMap match the Widget. Reads from listers (the caches), writes
    through the API; raises to be retried."""

    def __init__(self, api_client: Any, widgets: Lister, config_maps: Lister) -> None:
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.widgets = widgets
        self.config_maps = config_maps

    def reconcile(self, key: str) -> Result | None:
        namespace, name = split_meta_namespace_key(key)
        try:
            widget = self.widgets.by_namespace(namespace).get(name)
        except NotFoundError:
            # Gone: a cluster's garbage collector deletes the ConfigMap through its owner
            # reference; the embedded API server has none, so we clean up ourselves.
            self.delete_orphan(namespace, name)
            return None
        want = desired_config_map(widget)
        try:
            have = self.config_maps.config_maps(namespace).get(name)
        except NotFoundError:
            self.core.create_namespaced_config_map(namespace, want)
            print(f"created ConfigMap {key}: {want['data']}")
        else:
            owner = controller_of(have)
            if owner is None or owner.get("uid") != widget["metadata"]["uid"]:
                # Retrying cannot help: someone else's ConfigMap has the name we need.
                raise TerminalError(f"ConfigMap {key} exists and is not owned by Widget {key}")
            if any(have["metadata"].get(f) != want["metadata"][f]
                   for f in ("labels", "ownerReferences")) or have.get("data") != want["data"]:
                want["metadata"]["resourceVersion"] = have["metadata"]["resourceVersion"]
                self.core.replace_namespaced_config_map(name, namespace, want)  # 409: retried
                print(f"updated ConfigMap {key}: {want['data']}")
        self.update_status(widget)
        return None

    def update_status(self, widget: dict[str, Any]) -> None:
        """Record what we acted on; a status write does not change the generation, so the
        GenerationChangedPredicate keeps it from triggering another reconcile."""
        meta = widget["metadata"]
        status = {"observedGeneration": meta.get("generation"), "configMap": meta["name"]}
        if widget.get("status") != status:
            self.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, meta["namespace"], PLURAL, meta["name"], {"status": status})

    def delete_orphan(self, namespace: str, name: str) -> None:
        try:
            have = self.config_maps.config_maps(namespace).get(name)
        except NotFoundError:
            return
        ref = controller_of(have)
        if ref is None or ref.get("name") != name:
            return
        try:
            self.core.delete_namespaced_config_map(name, namespace)
        except client.ApiException as err:
            if err.status != 404:
                raise
        print(f"deleted ConfigMap {namespace}/{name}")


def new_manager(api_client: Any, workers: int = 2) -> Manager:
    """The Manager with its informers and the widget controller, ready to start."""
    manager = Manager(api_client)
    assert manager.factory is not None
    widgets = manager.factory.for_resource(GROUP, VERSION, PLURAL, kind=KIND, namespaced=True)
    config_maps = manager.factory.core().v1().config_maps()
    reconciler = WidgetReconciler(api_client, widgets.lister(), config_maps.lister())
    controller = Controller("widget-controller", reconciler.reconcile, workers=workers)
    controller.watch(widgets.informer(), EnqueueRequestForObject, GenerationChangedPredicate())
    controller.watch(config_maps.informer(), lambda c: EnqueueRequestForOwner(c, KIND, group=GROUP))
    manager.add(controller)
    return manager


def demo(server: ApiServer, stop: threading.Event) -> None:
    """Create, change and delete a Widget, and tamper with its ConfigMap."""

    def until(what: str, done: Callable[[dict[str, Any] | None], bool]) -> None:
        while not stop.is_set() and not done(server.get("configmaps", "default", "blue")):
            stop.wait(0.02)
        cm = server.get("configmaps", "default", "blue")
        print(f"{what}: ConfigMap default/blue {'is gone' if cm is None else cm['data']}")

    def data_is(**want: str) -> Callable[[dict[str, Any] | None], bool]:
        return lambda cm: cm is not None and cm.get("data") == want

    server.create({"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
                   "metadata": {"name": "blue", "namespace": "default"},
                   "spec": {"color": "blue", "size": 3}})
    until("widget created", data_is(color="blue", size="3"))
    server.patch(PLURAL, "default", "blue", {"spec": {"size": 5}})
    until("widget spec changed", data_is(color="blue", size="5"))
    server.patch("configmaps", "default", "blue", {"data": {"color": "red"}})
    until("ConfigMap edited by hand", data_is(color="blue", size="5"))
    server.delete(PLURAL, "default", "blue")
    until("widget deleted", lambda cm: cm is None)


def run(args: argparse.Namespace, stop: threading.Event) -> int:
    # The cluster of the kubeconfig (with crd.yaml applied), or else a new embedded API server.
    with connect(args.kubeconfig) as (api_client, server):
        if server is not None:
            server.register_resource(GROUP, VERSION, PLURAL, KIND, has_status=True)  # the CRD
        manager = new_manager(api_client, args.workers)

        def beside_the_manager() -> None:
            while not stop.is_set() and not manager.elected.is_set():
                stop.wait(0.02)  # until the caches synced and the controller started
            if server is not None:
                demo(server, stop)
            stop.wait(args.duration)
            stop.set()

        script = threading.Thread(target=beside_the_manager, name="demo", daemon=True)
        script.start()
        try:
            manager.start(stop)  # blocks until stop is set; then stops everything in order
        finally:
            stop.set()
            script.join()
    return 0


def main(argv: list[str] | None = None, stop: threading.Event | None = None) -> int:
    parser = argparse.ArgumentParser(description="A Widget controller that owns ConfigMaps.")
    parser.add_argument("--kubeconfig", help="use this cluster (default: an embedded API server)")
    parser.add_argument("--workers", type=int, default=2, help="concurrent reconciles (default 2)")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds to run after the demo (default: until Ctrl-C)")
    args = parser.parse_args(argv)
    signals = SignalHandler(stop)  # Ctrl-C sets the stop event; a second one exits at once
    if threading.current_thread() is threading.main_thread():
        signals.install()
    try:
        return run(args, signals.stop_event)
    finally:
        signals.uninstall()


if __name__ == "__main__":
    raise SystemExit(main())
