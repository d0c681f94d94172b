"""The webhooks of the ``Website`` API (``api/``): defaulting, validation, and v1alpha1 <-> v1
conversion, on one :class:`~informers.webhook.WebhookServer`.

* **Defaulting** (``/mutate-website``, both versions): a Website without a page gets
  ``Welcome to <name>`` (v1 ``spec.content.message``, v1alpha1 ``spec.message``), and every
  Website the label ``app.kubernetes.io/name: <name>``, which the controller's selector
  (``status.selector``) matches. The schema's defaults (``replicas``, ``tier``,
  ``content.format``) are kube-apiserver's to apply, not the webhook's.
* **Validation** (``/validate-website``): an image with the ``:latest`` tag is denied (the
  denial carries the warnings too); ``replicas: 0`` and an image without a tag are allowed
  with a warning; a Website annotated ``sites.example.com/protected: "true"`` cannot be
  deleted (the webhook sees the ``oldObject`` of a delete).
* **Conversion** (``/convert``, hub-and-spoke with v1 as the hub): v1alpha1 ``spec.message``
  is v1 ``spec.content.message``. v1 fields v1alpha1 has no place for (``spec.tier`` other
  than ``free``, ``spec.content.format`` other than ``html``) travel in the annotation
  ``sites.example.com/v1-spec`` of the v1alpha1 object, so a v1alpha1 client that reads
  and writes a Website back loses nothing (the Kubernetes API conventions' round trip); v1
  status fields that v1alpha1 lacks are not kept by a write of the v1alpha1 status.

:func:`make_server` registers the three with their configuration settings;
``informers-gen`` renders ``config/webhook/manifests.yaml`` and the CRD's conversion stanza
from them, and ``main.py`` serves them in the operator's Manager.
"""

from __future__ import annotations

import json
from typing import Any

from informers.webhook import (
    AdmissionDenied,
    AdmissionRequest,
    AdmissionWebhook,
    HubAndSpoke,
    Rule,
    WebhookServer,
)

GROUP = "sites.example.com"
NAME_LABEL = "app.kubernetes.io/name"
PROTECTED = "sites.example.com/protected"
V1_SPEC = "sites.example.com/v1-spec"
"""The v1alpha1 annotation that keeps the v1-only fields of a converted Website."""


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or meta.get("generateName") or "")


def default_website(obj: dict[str, Any], request: AdmissionRequest) -> None:
    """Fill in the page and the name label (either version)."""
    name = _name(obj)
    obj["metadata"].setdefault("labels", {}).setdefault(NAME_LABEL, name)
    spec = obj.setdefault("spec", {})
    if obj["apiVersion"].endswith("/v1alpha1"):
        spec.setdefault("message", f"Welcome to {name}")
    elif not spec.get("content"):
        spec["content"] = {"message": f"Welcome to {name}"}


class WebsiteValidator:
    """Validates Websites of either version (the webhook sees the version the client wrote)."""

    def _check(self, obj: dict[str, Any]) -> list[str]:
        spec = obj.get("spec") or {}
        image = str(spec.get("image", ""))
        warnings = []
        if spec.get("replicas") == 0:
            warnings.append("spec.replicas is 0: the site serves nothing")
        tag = image.rpartition("/")[2].partition("@")[0].partition(":")[2]
        if not tag and "@" not in image:
            warnings.append(f"spec.image {image} has no tag: it runs whatever :latest is "
                            "when a pod starts")
        if tag == "latest":
            raise AdmissionDenied(f"spec.image {image}: the :latest tag is not allowed; "
                                  "name a version", warnings=warnings)
        return warnings

    def validate_create(self, obj: dict[str, Any], request: AdmissionRequest) -> list[str]:
        return self._check(obj)

    def validate_update(self, old: dict[str, Any], obj: dict[str, Any],
                        request: AdmissionRequest) -> list[str]:
        return self._check(obj)

    def validate_delete(self, old: dict[str, Any], request: AdmissionRequest) -> None:
        annotations = old["metadata"].get("annotations") or {}
        if annotations.get(PROTECTED) == "true":
            raise AdmissionDenied(f"website {old['metadata']['name']} is protected; remove "
                                  f"the {PROTECTED} annotation first")


def alpha_to_hub(obj: dict[str, Any]) -> dict[str, Any]:
    """v1alpha1 -> v1: ``message`` becomes ``content.message``; the v1-only fields come
    back from the :data:`V1_SPEC` annotation."""
    spec = obj.setdefault("spec", {})
    annotations = obj["metadata"].get("annotations") or {}
    kept = json.loads(annotations.pop(V1_SPEC, "{}"))
    if not annotations:
        obj["metadata"].pop("annotations", None)
    if "message" in spec:
        spec["content"] = {"message": spec.pop("message")}
        if "format" in kept:
            spec["content"]["format"] = kept["format"]
    if "tier" in kept:
        spec["tier"] = kept["tier"]
    return obj


def alpha_from_hub(obj: dict[str, Any]) -> dict[str, Any]:
    """v1 -> v1alpha1: ``content.message`` becomes ``message``; a ``tier`` or ``format``
    other than the default goes into the :data:`V1_SPEC` annotation; the v1 status fields
    v1alpha1 lacks are dropped."""
    spec = obj.setdefault("spec", {})
    content = spec.pop("content", None) or {}
    kept = {}
    if "message" in content:
        spec["message"] = content["message"]
    if content.get("format", "html") != "html":
        kept["format"] = content["format"]
    tier = spec.pop("tier", "free")
    if tier != "free":
        kept["tier"] = tier
    if kept:
        obj["metadata"].setdefault("annotations", {})[V1_SPEC] = json.dumps(
            kept, sort_keys=True, separators=(",", ":"))
    status = obj.get("status")
    if status is not None:
        obj["status"] = {k: v for k, v in status.items() if k == "replicas"}
    return obj


def make_server(*, group: str = GROUP, namespace_selector: dict[str, Any] | None = None,
                **options: Any) -> WebhookServer:
    """A :class:`WebhookServer` (``options`` go to its constructor) serving the three
    webhooks of ``Website`` in ``group``, with their configuration settings
    (``namespace_selector`` scopes the admission webhooks, as a test on a shared cluster
    must)."""
    server = WebhookServer(**options)
    versions = ["v1", "v1alpha1"]
    server.mutating("/mutate-website", default_website, AdmissionWebhook(
        f"default.websites.{group}",
        [Rule([group], versions, ["websites"], ["CREATE", "UPDATE"])],
        namespace_selector=namespace_selector))
    server.validating("/validate-website", WebsiteValidator(), AdmissionWebhook(
        f"validate.websites.{group}",
        [Rule([group], versions, ["websites"], ["CREATE", "UPDATE", "DELETE"])],
        namespace_selector=namespace_selector))
    server.conversion(HubAndSpoke(group, "Website", "v1").spoke(
        "v1alpha1", alpha_to_hub, alpha_from_hub), crd=f"websites.{group}")
    return server
