"""The Website controller of the webhook operator: it reports each Website's status
(``replicas``, the ``selector`` of its pods, a ``Ready`` condition), which the ``scale``
subresource and the printer columns read.

The requests it makes beyond its informer are declared with :func:`informers.crdgen.rbac`,
so that ``informers-gen rbac`` writes ``config/rbac/role.yaml`` from :func:`build_manager`
and this module.
"""

from __future__ import annotations

import copy
from typing import Any

from informers.client import Client
from informers.conditions import new_condition, set_status_condition, status_conditions
from informers.controller import Controller, ControllerBuilder, Listers, Request
from informers.crdgen import rbac
from informers.factory import SharedInformerFactory
from informers.manager import LeaderElectionConfig, Manager
from informers.resources import Resource

WEBSITES = Resource("sites.example.com", "v1", "websites", "Website", namespaced=True)
MANAGER = "website-operator"
NAMESPACE = "website-operator-system"


@rbac(groups="sites.example.com", resources="websites/status", verbs="patch")
class WebsiteStatusReconciler:
    """Writes a Website's ``status`` from its spec (the pods themselves are left out of
    this example: it is about the API and its webhooks)."""

    def __init__(self, client: Client, listers: Listers) -> None:
        self.client, self.listers = client, listers

    def __call__(self, request: Request) -> None:
        cached = self.listers.get(request)
        if cached is None:
            return
        site = copy.deepcopy(cached)
        meta, spec = site["metadata"], site.get("spec") or {}
        status = site.setdefault("status", {})
        before = copy.deepcopy(status)
        status["replicas"] = spec.get("replicas", 1)
        status["selector"] = f"app.kubernetes.io/name={meta['name']}"
        set_status_condition(status_conditions(site), new_condition(
            "Ready", True, "Reconciled", f"{status['replicas']} replica(s)",
            observed_generation=meta.get("generation")))
        if status != before:
            self.client.status.patch(site, {"status": status})


def setup(manager: Any, client: Client) -> Controller:
    """Register the Website controller with ``manager``."""
    builder = ControllerBuilder(manager).for_(WEBSITES)
    return builder.complete(WebsiteStatusReconciler(client, builder.listers))


def build_manager(api_client: Any, *, leader_election: bool = True) -> Manager:
    """The operator's Manager with its controller (also what ``informers-gen rbac
    --manager controller:build_manager`` reads, built there on an offline client)."""
    manager = Manager(
        factory=SharedInformerFactory(api_client), shutdown_timeout=5.0,
        leader_election=LeaderElectionConfig(MANAGER, NAMESPACE) if leader_election else None)
    setup(manager, Client(api_client, field_manager=MANAGER))
    return manager
