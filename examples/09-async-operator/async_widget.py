"""The Widget operator of example 04 on the async API: every ``Widget`` (example.com/v1) owns a
ConfigMap of the same name whose data follow the Widget's spec, on top of its namespace's
``widget-defaults``.

``WidgetReconciler`` is ``async def __call__(request)``: it reads the caches synchronously
(listers) and writes through the threaded dict-native ``Client`` in a worker thread
(``anyio.to_thread.run_sync``; it predates ``informers.aio.AsyncClient``, which would await the
same writes). ``setup`` wires by hand what example 04's ``ControllerBuilder`` (and
``informers.aio.AsyncControllerBuilder``) derive: the Widgets' events (a generation change only,
``GenerationChangedPredicate``), the owned ConfigMaps' events (to their owner) and the
namespace defaults' events (to every Widget of the namespace) enqueue Widget keys.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import anyio.to_thread

from informers.aio import AsyncController, AsyncSharedInformerFactory
from informers.client import Client
from informers.controller import Request, TerminalError
from informers.controllerutil import (
    OperationResult,
    create_or_update,
    get_controller_of,
    set_controller_reference,
)
from informers.errors import NotFound, NotFoundError
from informers.keys import DeletedFinalStateUnknown
from informers.listers import Lister
from informers.resources import Resource

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", namespaced=True)
DEFAULTS = "widget-defaults"
MANAGED_BY = {"app.kubernetes.io/managed-by": "widget-controller"}


def _get(lister: Lister, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        obj: dict[str, Any] = lister.by_namespace(namespace).get(name)
    except NotFoundError:
        return None
    return obj


class WidgetReconciler:
    """Makes a Widget's ConfigMap match the Widget and records what it acted on in the
    status; raises to be retried."""

    def __init__(self, client: Client, widgets: Lister, config_maps: Lister) -> None:
        self.client, self.widgets, self.config_maps = client, widgets, config_maps

    async def __call__(self, request: Request) -> None:
        cached = _get(self.widgets, request.namespace, request.name)  # from the cache
        if cached is None:
            await self.delete_orphan(request)
            return
        widget = copy.deepcopy(cached)                      # cached objects are shared
        defaults = _get(self.config_maps, request.namespace, DEFAULTS) or {}
        data = dict(defaults.get("data") or {})
        data.update({k: str(v) for k, v in (widget.get("spec") or {}).items()})

        def mutate(cm: dict[str, Any]) -> None:            # the live object, or a new one
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
        # the blocking Client in a worker thread: the event loop goes on meanwhile
        result = await anyio.to_thread.run_sync(create_or_update, self.client, config_map,
                                                mutate)
        if result is not OperationResult.NONE:
            print(f"{result.value} ConfigMap {request}: {config_map['data']}")
        status = {"observedGeneration": widget["metadata"]["generation"],
                  "configMap": request.name}
        if widget.get("status") != status:
            def write_status() -> None:
                self.client.status.patch(widget, {"status": status})

            await anyio.to_thread.run_sync(write_status)

    async def delete_orphan(self, request: Request) -> None:
        """The Widget is gone: delete the ConfigMap it controlled (a cluster's garbage
        collector does too; the embedded API server has none)."""
        cm = _get(self.config_maps, request.namespace, request.name)
        owner = get_controller_of(cm) if cm is not None else None
        if cm is None or owner is None or owner.get("kind") != WIDGETS.kind:
            return
        uid = cm["metadata"]["uid"]

        def delete() -> None:
            self.client.delete("configmaps", request.name, request.namespace, uid=uid)

        with contextlib.suppress(NotFound):
            await anyio.to_thread.run_sync(delete)
            print(f"deleted ConfigMap {request}")


def _key(obj: Any) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


def setup(factory: AsyncSharedInformerFactory, client: Client,
          workers: int = 2) -> AsyncController:
    """The Widget controller on ``factory``'s informers (add it to an ``AsyncManager``)."""
    widgets = factory.informer_for(WIDGETS)
    config_maps = factory.informer_for("configmaps")
    reconciler = WidgetReconciler(client, factory.lister(WIDGETS), factory.lister("configmaps"))
    controller = AsyncController("widget-controller", reconciler, workers=workers,
                                 informers=[widgets, config_maps])

    async def widget_added(obj: Any, initial: bool) -> None:
        controller.enqueue(_key(obj))

    async def widget_updated(old: Any, new: Any) -> None:
        # GenerationChangedPredicate: a status write does not change the generation
        if old["metadata"].get("generation") != new["metadata"].get("generation"):
            controller.enqueue(_key(new))

    async def widget_deleted(obj: Any) -> None:
        controller.enqueue(_key(obj))

    widgets.add_event_handler(widget_added, widget_updated, widget_deleted)

    def requests_for(cm: Any) -> list[str]:
        """The owning Widget of a ConfigMap; every Widget of the namespace for its
        defaults."""
        if isinstance(cm, DeletedFinalStateUnknown):
            cm = cm.obj
        if not cm:
            return []
        meta = cm["metadata"]
        if meta["name"] == DEFAULTS:
            return [_key(w) for w in factory.lister(WIDGETS).by_namespace(meta["namespace"])
                    .list()]
        owner = get_controller_of(cm)
        if owner is not None and owner.get("kind") == WIDGETS.kind:
            return [f"{meta['namespace']}/{owner['name']}"]
        return []

    async def config_map_added(obj: Any, initial: bool) -> None:
        for key in requests_for(obj):
            controller.enqueue(key)

    async def config_map_updated(old: Any, new: Any) -> None:
        for key in requests_for(new):
            controller.enqueue(key)

    async def config_map_deleted(obj: Any) -> None:
        for key in requests_for(obj):
            controller.enqueue(key)

    config_maps.add_event_handler(config_map_added, config_map_updated, config_map_deleted)
    return controller
