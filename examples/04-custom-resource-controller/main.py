"""A controller for a custom resource: every ``Widget`` (example.com/v1) owns a ConfigMap of the
same name whose data follow the Widget's spec, on top of the namespace's defaults.

Wired with :class:`~informers.controller.ControllerBuilder`:

* ``for_(WIDGETS, GenerationChangedPredicate())``: a Widget enqueues itself when its spec
  changes (not for its own status writes);
* ``owns("configmaps")``: a ConfigMap enqueues the Widget that controls it, so a ConfigMap
  edited or deleted by hand is put back;
* ``watches("configmaps", widgets_using_defaults)``: the ConfigMap ``widget-defaults`` of a
  namespace enqueues every Widget of that namespace.

The reconcile reads from the builder's listers (the caches) and writes with the dict-native
:class:`~informers.client.Client` through ``controllerutil.create_or_update`` (a PUT
conditional on the ``resourceVersion`` it read); ``set_controller_reference`` makes the Widget
the ConfigMap's controller (the garbage collector's link; the embedded API server has no
garbage collector, so a ConfigMap whose Widget is gone is deleted here too).

    python examples/04-custom-resource-controller/main.py       # embedded API server and a demo
    kubectl apply -f examples/04-custom-resource-controller/crd.yaml
    python examples/04-custom-resource-controller/main.py --kubeconfig ~/.kube/config
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from informers import Manager
from informers.client import Client
from informers.controller import (
    Controller,
    ControllerBuilder,
    GenerationChangedPredicate,
    Listers,
    Request,
    TerminalError,
)
from informers.controllerutil import (
    OperationResult,
    create_or_update,
    get_controller_of,
    set_controller_reference,
)
from informers.errors import NotFound
from informers.resources import Resource
from informers.signals import SignalHandler
from informers.testing import connect
from informers.testing.runner import eventually, run_manager
from informers.yaml_loader import load_yaml

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", namespaced=True)
DEFAULTS = "widget-defaults"
MANAGED_BY = {"app.kubernetes.io/managed-by": "widget-controller"}
CRD_FILE = Path(__file__).resolve().parent / "crd.yaml"


class WidgetReconciler:
    """Makes a Widget's ConfigMap match the Widget and records what it acted on in the status;
    raises to be retried."""

    def __init__(self, client: Client, listers: Listers) -> None:
        self.client, self.listers = client, listers

    def __call__(self, request: Request) -> None:
        cached = self.listers.get(request)
        if cached is None:
            self.delete_orphan(request)
            return
        widget = copy.deepcopy(cached)  # cached objects are shared: copy before editing
        defaults = self.listers.get(f"{request.namespace}/{DEFAULTS}", "configmaps") or {}
        data = dict(defaults.get("data") or {})
        data.update({k: str(v) for k, v in (widget.get("spec") or {}).items()})

        def mutate(cm: dict[str, Any]) -> None:
            owner = get_controller_of(cm)
            exists = "uid" in cm["metadata"]
            if exists and (owner is None or owner.get("uid") != widget["metadata"]["uid"]):
                # Retrying cannot help: someone else's ConfigMap has the name we need.
                raise TerminalError(f"ConfigMap {request} exists and is not owned by "
                                    f"Widget {request}")
            cm["metadata"].setdefault("labels", {}).update(MANAGED_BY)
            set_controller_reference(widget, cm)
            cm["data"] = dict(sorted(data.items()))

        config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": request.name, "namespace": request.namespace}}
        result = create_or_update(self.client, config_map, mutate)  # 409 Conflict: retried
        if result is not OperationResult.NONE:
            print(f"{result.value} ConfigMap {request}: {config_map['data']}")
        status = {"observedGeneration": widget["metadata"]["generation"],
                  "configMap": request.name}
        if widget.get("status") != status:
            self.client.status.patch(widget, {"status": status})

    def delete_orphan(self, request: Request) -> None:
        """A Widget is gone: delete the ConfigMap it controlled (a cluster's garbage collector
        would; the embedded API server has none)."""
        cm = self.listers.get(request, "configmaps")
        owner = get_controller_of(cm) if cm is not None else None
        if cm is None or owner is None or owner.get("kind") != WIDGETS.kind:
            return
        with contextlib.suppress(NotFound):
            self.client.delete("configmaps", request.name, request.namespace,
                               uid=cm["metadata"]["uid"])
            print(f"deleted ConfigMap {request}")


def setup(manager: Manager, client: Client, workers: int = 2) -> Controller:
    """Register the Widget controller with ``manager``."""
    builder = ControllerBuilder(manager).for_(WIDGETS, GenerationChangedPredicate())

    def widgets_using_defaults(cm: dict[str, Any]) -> list[str]:
        meta = cm["metadata"]
        if meta["name"] != DEFAULTS:
            return []
        widgets = builder.listers.primary.by_namespace(meta["namespace"]).list()
        return [f"{meta['namespace']}/{w['metadata']['name']}" for w in widgets]

    builder.owns("configmaps").watches("configmaps", widgets_using_defaults)
    builder.with_options(workers=workers, name="widget-controller")
    return builder.complete(WidgetReconciler(client, builder.listers))


def demo(client: Client) -> None:
    """Create, change and delete a Widget, tamper with its ConfigMap, set defaults."""

    def until(what: str, done: Callable[[dict[str, Any] | None], bool]) -> None:
        def config_map() -> dict[str, Any] | None:
            try:
                return client.get("configmaps", "blue", "default")
            except NotFound:
                return None

        eventually(lambda: done(config_map()), timeout=10, message=what)
        cm = config_map()
        print(f"{what}: ConfigMap default/blue {'is gone' if cm is None else cm['data']}")

    def data_is(**want: str) -> Callable[[dict[str, Any] | None], bool]:
        return lambda cm: cm is not None and cm.get("data") == want

    client.create({"apiVersion": WIDGETS.api_version, "kind": WIDGETS.kind,
                   "metadata": {"name": "blue", "namespace": "default"},
                   "spec": {"color": "blue", "size": 3}})
    until("widget created", data_is(color="blue", size="3"))
    client.patch(WIDGETS, "blue", {"spec": {"size": 5}}, "default")
    until("widget spec changed", data_is(color="blue", size="5"))
    client.patch("configmaps", "blue", {"data": {"color": "red"}}, "default")
    until("ConfigMap edited by hand", data_is(color="blue", size="5"))
    client.create({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": DEFAULTS, "namespace": "default"},
                   "data": {"shape": "round"}})
    until("defaults set", data_is(color="blue", shape="round", size="5"))
    client.delete(WIDGETS, "blue", "default")
    until("widget deleted", lambda cm: cm is None)


def run(args: argparse.Namespace, stop: threading.Event) -> int:
    # The cluster of the kubeconfig (with crd.yaml applied), or else a new embedded API server.
    with connect(args.kubeconfig) as (api_client, server):
        client = Client(api_client, field_manager="widget-controller")
        if server is not None:  # the embedded server serves CRDs as kube-apiserver does
            client.create(load_yaml(CRD_FILE.read_text()))
            eventually(lambda: client.list(WIDGETS, "default") is not None)
        manager = Manager(api_client, shutdown_timeout=5.0)
        setup(manager, client, args.workers)
        with run_manager(manager):  # started, caches synced; stopped and joined on exit
            if server is not None:
                demo(client)
            stop.wait(args.duration)
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
