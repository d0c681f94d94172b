"""The Widget operator on the async API: every ``Widget`` (example.com/v1) owns a ConfigMap of
the same name whose data follow the Widget's spec, on top of its namespace's
``widget-defaults``. ``WidgetReconciler`` is the controller logic; ``setup`` wires it with the
async builder."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from informers.aio import AsyncClient, AsyncController, AsyncControllerBuilder, create_or_update
from informers.aio.manager import AsyncManager
from informers.controller import GenerationChangedPredicate, Listers, Request, TerminalError
from informers.controllerutil import (
    OperationResult,
    get_controller_of,
    set_controller_reference,
)
from informers.errors import NotFound
from informers.resources import Resource

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", namespaced=True)
DEFAULTS = "widget-defaults"
MANAGED_BY = {"app.kubernetes.io/managed-by": "widget-controller"}


class WidgetReconciler:
    """Makes a Widget's ConfigMap match the Widget and records what it acted on in the
    status; raises to be retried."""

    def __init__(self, client: AsyncClient, listers: Listers) -> None:
        self.client, self.listers = client, listers

    async def __call__(self, request: Request) -> None:
        cached = self.listers.get(request)                 # from the cache: no request
        if cached is None:
            await self.delete_orphan(request)
            return
        widget = copy.deepcopy(cached)                     # cached objects are shared
        defaults = self.listers.get(f"{request.namespace}/{DEFAULTS}", "configmaps") or {}
        data = dict(defaults.get("data") or {})
        data.update({k: str(v) for k, v in (widget.get("spec") or {}).items()})

        def mutate(cm: dict[str, Any]) -> None:           # the live object, or a new one
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
        result = await create_or_update(self.client, config_map, mutate)  # 409: retried
        if result is not OperationResult.NONE:
            print(f"{result.value} ConfigMap {request}: {config_map['data']}")
        status = {"observedGeneration": widget["metadata"]["generation"],
                  "configMap": request.name}
        if widget.get("status") != status:                # server-side apply: the fields
            await self.client.status.apply({               # this controller owns
                "apiVersion": WIDGETS.api_version, "kind": WIDGETS.kind,
                "metadata": {"name": request.name, "namespace": request.namespace},
                "status": status})

    async def delete_orphan(self, request: Request) -> None:
        """The Widget is gone: delete the ConfigMap it controlled (a cluster's garbage
        collector does too; the embedded API server has none)."""
        cm = self.listers.get(request, "configmaps")
        owner = get_controller_of(cm) if cm is not None else None
        if cm is None or owner is None or owner.get("kind") != WIDGETS.kind:
            return
        with contextlib.suppress(NotFound):
            await self.client.delete("configmaps", request.name, request.namespace,
                                     uid=cm["metadata"]["uid"])
            print(f"deleted ConfigMap {request}")


def setup(manager: AsyncManager, client: AsyncClient, workers: int = 2) -> AsyncController:
    """Register the Widget controller with ``manager``."""
    builder = AsyncControllerBuilder(manager).for_(WIDGETS, GenerationChangedPredicate())

    def widgets_using_defaults(cm: dict[str, Any]) -> list[str]:
        meta = cm["metadata"]
        if meta["name"] != DEFAULTS:
            return []
        widgets = builder.listers.primary.by_namespace(meta["namespace"]).list()
        return [f"{meta['namespace']}/{w['metadata']['name']}" for w in widgets]

    builder.owns("configmaps").watches("configmaps", widgets_using_defaults)
    builder.with_options(workers=workers, name="widget-controller")
    return builder.complete(WidgetReconciler(client, builder.listers))
