"""The webhooks of a small `Backup` kind: defaulting, validation, and v1alpha1 <-> v1 conversion.

`Backup` is served in two versions of one group; v1 is the storage version and the hub:

* v1alpha1: ``spec: {source: str, schedule: str, keepDays: int}``
* v1:       ``spec: {source: str, schedule: str, retention: {days: int}}``

The defaulting webhook fills ``schedule`` (``@daily``) and the retention (7 days); the
validating webhook requires ``source``, keeps it immutable, bounds the retention to 1..365 days
(a warning above 90) and refuses to delete a Backup annotated ``example.com/protected: "true"``;
the conversion webhook moves ``keepDays`` to ``retention.days`` and back.

``main.py`` serves them; ``tests/test_example_webhook_operator.py`` installs them on the real
kube-apiserver with :class:`~informers.webhook.ManagedConfiguration`.
"""

from __future__ import annotations

from typing import Any

from informers.webhook import (
    AdmissionDenied,
    AdmissionRequest,
    AdmissionWebhook,
    HubAndSpoke,
    Rule,
    WebhookServer,
)

GROUP = "backups.example.com"
DEFAULT_SCHEDULE = "@daily"
DEFAULT_RETENTION_DAYS = 7
PROTECTED = "example.com/protected"


def _days(obj: dict[str, Any]) -> Any:
    spec = obj.get("spec") or {}
    if obj["apiVersion"].endswith("/v1alpha1"):
        return spec.get("keepDays")
    return (spec.get("retention") or {}).get("days")


def default_backup(obj: dict[str, Any], request: AdmissionRequest) -> None:
    """Fill the schedule and the retention when missing (either version)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("schedule", DEFAULT_SCHEDULE)
    if obj["apiVersion"].endswith("/v1alpha1"):
        spec.setdefault("keepDays", DEFAULT_RETENTION_DAYS)
    else:
        spec.setdefault("retention", {}).setdefault("days", DEFAULT_RETENTION_DAYS)


class BackupValidator:
    """Validates Backups of either version (the webhook sees the version the client wrote)."""

    def _check(self, obj: dict[str, Any]) -> list[str]:
        if not (obj.get("spec") or {}).get("source"):
            raise AdmissionDenied("spec.source is required")
        days = _days(obj)
        if not isinstance(days, int) or not 1 <= days <= 365:
            raise AdmissionDenied(f"the retention must be 1 to 365 days, not {days}")
        return [f"a retention of {days} days keeps many copies"] if days > 90 else []

    def validate_create(self, obj: dict[str, Any], request: AdmissionRequest) -> list[str]:
        return self._check(obj)

    def validate_update(self, old: dict[str, Any], obj: dict[str, Any],
                        request: AdmissionRequest) -> list[str]:
        if old["spec"].get("source") != obj["spec"].get("source"):
            raise AdmissionDenied("spec.source is immutable")
        return self._check(obj)

    def validate_delete(self, old: dict[str, Any], request: AdmissionRequest) -> None:
        annotations = old["metadata"].get("annotations") or {}
        if annotations.get(PROTECTED) == "true":
            raise AdmissionDenied(f"backup {old['metadata']['name']} is protected; remove the "
                                  f"{PROTECTED} annotation first")


def alpha_to_hub(obj: dict[str, Any]) -> dict[str, Any]:
    """v1alpha1 -> v1: ``keepDays`` becomes ``retention.days``."""
    spec = obj.setdefault("spec", {})
    if "keepDays" in spec:
        spec["retention"] = {"days": spec.pop("keepDays")}
    return obj


def alpha_from_hub(obj: dict[str, Any]) -> dict[str, Any]:
    """v1 -> v1alpha1: ``retention.days`` becomes ``keepDays``."""
    spec = obj.setdefault("spec", {})
    retention = spec.pop("retention", None)
    if retention and "days" in retention:
        spec["keepDays"] = retention["days"]
    return obj


def make_server(*, group: str = GROUP, namespace_selector: dict[str, Any] | None = None,
                **options: Any) -> WebhookServer:
    """A :class:`WebhookServer` (``options`` go to its constructor) serving the three
    webhooks of ``Backup`` in ``group``, with their configuration settings."""
    server = WebhookServer(**options)
    rules = [Rule([group], ["v1alpha1", "v1"], ["backups"], ["CREATE", "UPDATE"])]
    server.mutating("/mutate-backup", default_backup, AdmissionWebhook(
        f"default.{group}", rules, namespace_selector=namespace_selector))
    server.validating("/validate-backup", BackupValidator(), AdmissionWebhook(
        f"validate.{group}",
        [Rule([group], ["v1alpha1", "v1"], ["backups"], ["CREATE", "UPDATE", "DELETE"])],
        namespace_selector=namespace_selector))
    server.conversion(HubAndSpoke(group, "Backup", "v1").spoke(
        "v1alpha1", alpha_to_hub, alpha_from_hub), crd=f"backups.{group}")
    return server
