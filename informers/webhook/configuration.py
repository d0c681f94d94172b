"""Renders the objects that point kube-apiserver at a webhook server, and keeps them applied.

From the handlers registered on a :class:`~informers.webhook.server.WebhookServer`:

* :func:`validating_configuration` / :func:`mutating_configuration`: an
  ``admissionregistration.k8s.io/v1`` ``ValidatingWebhookConfiguration`` /
  ``MutatingWebhookConfiguration`` with one webhook per registered handler (what
  controller-gen's ``+kubebuilder:webhook`` markers generate);
* :func:`conversion_stanza`: a CRD's ``spec.conversion`` (``strategy: Webhook``) for the
  conversion path;
* :class:`ManagedConfiguration`: kopf's managed mode and envtest's ``WebhookInstallOptions``:
  server-side apply of the configurations and of the CRDs' conversion stanzas, again whenever
  the CA bundle (read from a file, e.g. the ``ca.crt`` cert-manager writes next to ``tls.crt``)
  changes.

Defaults are admissionregistration/v1's (``k8s.io/api/admissionregistration/v1/types.go`` and
``pkg/apis/admissionregistration/v1/defaults.go``): ``failurePolicy: Fail``, ``matchPolicy:
Equivalent``, ``timeoutSeconds: 10``, ``reinvocationPolicy: Never``, rule ``scope: "*"``;
``sideEffects`` has no default in v1 and we write ``None``; ``admissionReviewVersions`` and
``conversionReviewVersions`` are ``[v1]``, the only version the server decodes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from informers.certificates import ca_bundle as encode_ca_bundle
from informers.clock import REAL_CLOCK, Clock

__all__ = [
    "AdmissionWebhook",
    "ClientConfig",
    "ManagedConfiguration",
    "Registration",
    "Rule",
    "ServiceReference",
    "conversion_stanza",
    "mutating_configuration",
    "validating_configuration",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rule:
    """A ``RuleWithOperations``: which requests the webhook sees."""

    api_groups: Sequence[str]
    api_versions: Sequence[str]
    resources: Sequence[str]
    operations: Sequence[str] = ("CREATE", "UPDATE")
    scope: str = "*"

    def to_dict(self) -> dict[str, Any]:
        """The rule as the API writes it."""
        return {"apiGroups": list(self.api_groups), "apiVersions": list(self.api_versions),
                "operations": list(self.operations), "resources": list(self.resources),
                "scope": self.scope}


@dataclass(frozen=True)
class AdmissionWebhook:
    """How kube-apiserver calls one admission handler (one entry of ``webhooks``).

    Attributes:
        name: the webhook's fully qualified name (``default.widgets.example.com``), shown in
            denials: ``admission webhook "<name>" denied the request: ...``.
        rules: the operations and resources it sees.
        failure_policy: ``Fail`` (v1 default) or ``Ignore`` when the call fails.
        side_effects: ``None`` or ``NoneOnDryRun``.
        timeout_seconds: 1 to 30 (v1 default 10).
        match_policy: ``Equivalent`` (v1 default) or ``Exact``.
        namespace_selector: a label selector on the namespace (``None``: match all).
        object_selector: a label selector on the object (``None``: match all).
        reinvocation_policy: mutating only, ``Never`` (default) or ``IfNeeded``.
    """

    name: str
    rules: Sequence[Rule] = ()
    failure_policy: str = "Fail"
    side_effects: str = "None"
    timeout_seconds: int = 10
    match_policy: str = "Equivalent"
    namespace_selector: dict[str, Any] | None = None
    object_selector: dict[str, Any] | None = None
    reinvocation_policy: str = "Never"


@dataclass(frozen=True)
class Registration:
    """A handler registered on the server: ``type`` is ``mutating``, ``validating`` or
    ``conversion``; ``webhook`` is set for admission, ``crds`` for conversion."""

    path: str
    type: str
    handler: Any
    webhook: AdmissionWebhook | None = None
    crds: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServiceReference:
    """A Service in front of the webhook server (in-cluster)."""

    namespace: str
    name: str
    port: int = 443


@dataclass(frozen=True)
class ClientConfig:
    """Where kube-apiserver reaches the server: ``url`` (``https://host:port``, no path) or a
    ``service``; and the CA PEM it trusts.

    An empty ``ca_pem`` renders no ``caBundle``: what ``informers-gen`` writes into committed
    manifests, whose bundle is filled in at install time (by :class:`ManagedConfiguration`,
    or by cert-manager's CA injector from a ``cert-manager.io/inject-ca-from`` annotation);
    until then kube-apiserver verifies the server with its system trust roots.
    """

    ca_pem: bytes
    url: str | None = None
    service: ServiceReference | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def render(self, path: str) -> dict[str, Any]:
        """The ``clientConfig`` of the handler at ``path``.

        Raises:
            ValueError: neither or both of ``url`` and ``service``.
        """
        if (self.url is None) == (self.service is None):
            raise ValueError("a client config needs exactly one of url and service")
        config: dict[str, Any] = {}
        if self.ca_pem:
            config["caBundle"] = encode_ca_bundle(self.ca_pem)
        if self.url is not None:
            config["url"] = self.url.rstrip("/") + path
        else:
            assert self.service is not None
            config["service"] = {"namespace": self.service.namespace,
                                 "name": self.service.name, "path": path,
                                 "port": self.service.port}
        return config


def _webhook_entry(reg: Registration, client: ClientConfig) -> dict[str, Any]:
    hook = reg.webhook
    assert hook is not None
    entry: dict[str, Any] = {
        "name": hook.name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client.render(reg.path),
        "failurePolicy": hook.failure_policy,
        "matchPolicy": hook.match_policy,
        "rules": [r.to_dict() for r in hook.rules],
        "sideEffects": hook.side_effects,
        "timeoutSeconds": hook.timeout_seconds,
        "namespaceSelector": dict(hook.namespace_selector or {}),
        "objectSelector": dict(hook.object_selector or {}),
    }
    if reg.type == "mutating":
        entry["reinvocationPolicy"] = hook.reinvocation_policy
    return entry


def _configuration(kind: str, type_: str, name: str, registrations: Iterable[Registration],
                   client: ClientConfig, labels: dict[str, str] | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": metadata,
            "webhooks": [_webhook_entry(r, client) for r in registrations if r.type == type_]}


def validating_configuration(name: str, registrations: Iterable[Registration],
                             client: ClientConfig, *,
                             labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``ValidatingWebhookConfiguration`` ``name`` of the validating registrations."""
    return _configuration("ValidatingWebhookConfiguration", "validating", name, registrations,
                          client, labels)


def mutating_configuration(name: str, registrations: Iterable[Registration],
                           client: ClientConfig, *,
                           labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``MutatingWebhookConfiguration`` ``name`` of the mutating registrations."""
    return _configuration("MutatingWebhookConfiguration", "mutating", name, registrations,
                          client, labels)


def conversion_stanza(path: str, client: ClientConfig) -> dict[str, Any]:
    """A CRD's ``spec.conversion`` calling the conversion handler at ``path``."""
    return {"strategy": "Webhook",
            "webhook": {"clientConfig": client.render(path),
                        "conversionReviewVersions": ["v1"]}}


class ManagedConfiguration:
    """Keeps a server's webhook configurations and CRD conversion stanzas applied in a
    cluster, with the current CA bundle (kopf's managed mode).

    Args:
        client: an :class:`informers.client.Client` allowed to apply
            ``validating/mutatingwebhookconfigurations`` and patch the CRDs.
        registrations: the server's (``server.registrations``).
        name: the name of both configurations.
        url: where kube-apiserver reaches the server (``https://host:port``), or
        service: the Service in front of it (see :class:`ClientConfig`).
        ca_file: the PEM file of the CA that signed the serving certificate; re-read on each
            :meth:`sync`.
        field_manager: the server-side apply manager.
        interval: seconds between polls of ``ca_file`` in :meth:`run`.

    :meth:`sync` applies only when the CA bytes changed since the last apply that succeeded
    (or when ``force``); a failed apply is logged and retried at the next poll. A
    configuration with no webhooks of its type is not applied. Not thread-safe: one
    :meth:`run` (or caller of :meth:`sync`) at a time.
    """

    def __init__(self, client: Any, registrations: Sequence[Registration], name: str, *,
                 ca_file: str, url: str | None = None,
                 service: ServiceReference | None = None,
                 field_manager: str = "kube-informers-webhook", interval: float = 10.0,
                 clock: Clock = REAL_CLOCK) -> None:
        self.client = client
        self.registrations = registrations
        self.name = name
        self.ca_file = ca_file
        self.url = url
        self.service = service
        self.field_manager = field_manager
        self.interval = interval
        self._clock = clock
        self._applied: bytes | None = None

    def objects(self, ca_pem: bytes) -> list[dict[str, Any]]:
        """What :meth:`sync` applies for ``ca_pem``: the configurations, then one partial
        CRD (``spec.conversion`` only) per CRD a conversion handler serves."""
        client = ClientConfig(ca_pem, url=self.url, service=self.service)
        out = []
        for render, type_ in ((validating_configuration, "validating"),
                              (mutating_configuration, "mutating")):
            if any(r.type == type_ for r in self.registrations):
                out.append(render(self.name, self.registrations, client))
        for reg in self.registrations:
            for crd in reg.crds:
                out.append({"apiVersion": "apiextensions.k8s.io/v1",
                            "kind": "CustomResourceDefinition", "metadata": {"name": crd},
                            "spec": {"conversion": conversion_stanza(reg.path, client)}})
        return out

    def sync(self, force: bool = False) -> bool:
        """Apply when the CA changed (or ``force``). True when applied.

        Raises:
            OSError: ``ca_file`` cannot be read.
            StatusError: the server refused an apply.
        """
        with open(self.ca_file, "rb") as handle:
            ca_pem = handle.read()
        if ca_pem == self._applied and not force:
            return False
        for obj in self.objects(ca_pem):
            self.client.apply(obj, force=True, field_manager=self.field_manager)
            logger.info("webhook configuration: applied %s %s", obj["kind"],
                        obj["metadata"]["name"])
        self._applied = ca_pem
        return True

    def run(self, stop: threading.Event) -> None:
        """:meth:`sync` now and every :attr:`interval` seconds until ``stop`` is set; errors
        are logged and retried."""
        while True:
            try:
                self.sync()
            except Exception:
                logger.exception("webhook configuration %s: apply failed; retrying in %ss",
                                 self.name, self.interval)
            if self._clock.wait_event(stop, self.interval):
                return
