"""The Website controller of the webhook operator, and the operator's Manager: the controller
reports each Website's status (``replicas``, the ``selector`` of its pods, a ``Ready``
condition), which the ``scale`` subresource and the printer columns read; the Manager also
serves the webhooks of ``webhooks.py`` when given their server.

The requests it makes beyond its informer are declared with :func:`informers.crdgen.rbac`,
so that ``informers-gen rbac`` writes ``config/rbac/role.yaml`` from :func:`build_manager`
and this module.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Callable
from typing import Any

from informers.client import Client
from informers.conditions import new_condition, set_status_condition, status_conditions
from informers.controller import Controller, ControllerBuilder, Listers, Request
from informers.crdgen import rbac
from informers.factory import SharedInformerFactory
from informers.manager import LeaderElectionConfig, Manager
from informers.resources import Resource
from informers.webhook import ManagedConfiguration, WebhookServer

GROUP = "sites.example.com"
WEBSITES = Resource(GROUP, "v1", "websites", "Website", namespaced=True)
MANAGER = "website-operator"
NAMESPACE = "website-operator-system"
CA_POLL_INTERVAL = 10.0
"""Seconds between reads of ``ca.crt`` (ManagedConfiguration's default)."""


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


def websites(group: str = GROUP) -> Resource:
    """The ``websites`` resource (v1, the version the controller reads) of ``group``."""
    return Resource(group, "v1", "websites", "Website", namespaced=True)


def setup(manager: Any, client: Client, resource: Resource = WEBSITES) -> Controller:
    """Register the Website controller with ``manager``."""
    builder = ControllerBuilder(manager).for_(resource)
    return builder.complete(WebsiteStatusReconciler(client, builder.listers))


def build_manager(api_client: Any, *, leader_election: bool = True,
                  webhook_server: WebhookServer | None = None, manage_webhooks: bool = False,
                  webhook_url: str | None = None, configuration_name: str = MANAGER,
                  group: str = GROUP, namespace: str | None = None) -> Manager:
    """The operator's Manager: the Website controller and, when given, the webhook server
    (started before the informers, stopped after them). Also what ``informers-gen rbac
    --manager controller:build_manager`` reads, built there on an offline client.

    With ``manage_webhooks``, the leader also keeps the webhook configurations (named
    ``configuration_name``) and the CRD's conversion stanza applied with ``webhook_url``
    (see :func:`keep_configured`): for development, when kube-apiserver reaches the
    operator by URL rather than through the Service of ``config/``. That needs more RBAC
    than ``config/rbac`` grants (apply ``validating/mutatingwebhookconfigurations``, patch
    ``customresourcedefinitions``): an administrator's kubeconfig.

    ``group`` and ``namespace`` (watch one namespace only) are for tests on a shared
    cluster, which install the CRD under a group of their own.
    """
    manager = Manager(
        factory=SharedInformerFactory(api_client, namespace=namespace), shutdown_timeout=5.0,
        leader_election=LeaderElectionConfig(MANAGER, NAMESPACE) if leader_election else None)
    client = Client(api_client, field_manager=MANAGER)
    setup(manager, client, websites(group))
    if webhook_server is not None:
        manager.add_webhook_server(webhook_server)
        if manage_webhooks:
            manager.add_runnable(keep_configured(client, webhook_server, configuration_name,
                                                 webhook_url),
                                 needs_leader=True, name="webhook-configuration")
    return manager


def keep_configured(client: Client, server: WebhookServer, name: str,
                    url: str | None = None) -> Callable[[threading.Event], None]:
    """A Manager runnable that keeps the configurations of ``server``'s webhooks and the
    CRD's conversion stanza applied (:class:`~informers.webhook.ManagedConfiguration`),
    pointing at ``url`` (default: the server's own, ``https://127.0.0.1:<port>``, read once
    it serves) with the CA bundle of ``ca.crt`` beside the serving certificate (where
    cert-manager and ``main.py``'s throwaway CA put it), applied again when that file
    changes."""
    ca_file = os.path.join(os.path.dirname(server.cert_path), "ca.crt")

    def run(stop: threading.Event) -> None:
        ManagedConfiguration(client, server.registrations, name, ca_file=ca_file,
                             url=url or server.url, field_manager=f"{MANAGER}-webhooks",
                             interval=CA_POLL_INTERVAL).run(stop)

    return run
