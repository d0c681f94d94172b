"""The Website operator: a ``Website`` (example.com/v1) owns a ConfigMap with its page, a
Deployment serving it and a Service in front, all written with server-side apply; a
finalizer runs a cleanup before the Website goes; a ``Ready`` condition says whether the
Deployment has the replicas asked for.

The reconciler below is the whole controller logic; ``setup`` wires it with the builder.
It is written against ``Website``, the TypedDict the CRD's schema gives
(``python -m informers.types.generate crd.yaml -o website_types.py``): mypy and pyright check
its reads, while the objects stay plain dicts.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from website_types import Website

from informers.client import Client
from informers.conditions import new_condition, set_status_condition, status_conditions
from informers.controller import Controller, ControllerBuilder, Listers, Request
from informers.controllerutil import Finalizers, set_controller_reference
from informers.resources import Resource
from informers.types import Deployment
from informers.yaml_loader import load_yaml

WEBSITES = Resource("example.com", "v1", "websites", "Website", namespaced=True)
FINALIZER = "example.com/website-cleanup"
MANAGER = "website-operator"


def children(site: Website) -> list[dict[str, Any]]:
    """The objects a Website wants, as server-side apply configurations."""
    meta, spec = site["metadata"], site.get("spec", {})
    name, ns, labels = meta["name"], meta["namespace"], {"app.kubernetes.io/name": meta["name"]}
    base = {"name": name, "namespace": ns, "labels": labels}
    pod = {"metadata": {"labels": labels}, "spec": {
        "containers": [{"name": "web", "image": spec.get("image", "nginx:1.27"),
                        "volumeMounts": [{"name": "page", "mountPath": "/usr/share/nginx/html"}]}],
        "volumes": [{"name": "page", "configMap": {"name": name}}]}}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(base),
         "data": {"index.html": spec.get("message", "hello")}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dict(base),
         "spec": {"replicas": spec.get("replicas", 1), "selector": {"matchLabels": labels},
                  "template": pod}},
        {"apiVersion": "v1", "kind": "Service", "metadata": dict(base),
         "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 80}]}},
    ]


class WebsiteReconciler:
    """Makes a Website's children match it and reports ``Ready``."""

    def __init__(self, client: Client, listers: Listers[Website],
                 cleanup: Callable[[dict[str, Any]], None]) -> None:
        self.client, self.listers = client, listers
        self.finalizers = Finalizers()
        self.finalizers.register(FINALIZER, cleanup)

    def __call__(self, request: Request) -> None:
        cached = self.listers.get(request)
        if cached is None:
            return  # deleted: the garbage collector removes the children
        site = copy.deepcopy(cached)
        if self.finalizers.run(self.client, site):
            return  # being deleted: the cleanup ran and the finalizer is gone
        for child in children(site):
            set_controller_reference(site, child)
            self.client.apply(child, force=True)
        deployment = self.listers.get(request, "deployments", Deployment) or {}
        want = site.get("spec", {}).get("replicas", 1)
        ready = deployment.get("status", {}).get("readyReplicas", 0) >= want
        conditions = status_conditions(site)
        if set_status_condition(conditions, new_condition(
                "Ready", ready, "Available" if ready else "Progressing",
                f"{want} replica(s) wanted", observed_generation=site["metadata"]["generation"])):
            self.client.status.patch(site, {"status": {"conditions": conditions}})


def setup(manager: Any, client: Client,
          cleanup: Callable[[dict[str, Any]], None] = lambda site: None) -> Controller:
    """Register the Website controller with ``manager``."""
    builder = (ControllerBuilder(manager).for_(WEBSITES, object_type=Website)
               .owns("configmaps").owns("deployments").owns("services"))
    return builder.complete(WebsiteReconciler(client, builder.listers, cleanup))


CRD: dict[str, Any] = load_yaml((Path(__file__).resolve().parent / "crd.yaml").read_text())
"""The Website CRD (``crd.yaml``, whose schema gives ``website_types.py``)."""
