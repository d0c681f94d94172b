"""Validates and defaults ``CustomResourceDefinition`` objects, as apiextensions-apiserver does.

:func:`default_crd` is ``apis/apiextensions/v1/defaults.go`` (``singular``, ``listKind``,
``conversion.strategy: None``); :func:`crd_errors` is
``pkg/apis/apiextensions/validation/validation.go`` ``ValidateCustomResourceDefinition`` for the
cases listed on it: a schema must be structural
(:func:`informers.testing.structural_schema.structural_errors`) and its
``x-kubernetes-validations`` rules must compile (:mod:`informers.testing.cel_rules`). Pure
functions of the objects they are given; :class:`~informers.testing.crds.CustomResources`
calls them before a CRD is stored.
"""

from __future__ import annotations

from typing import Any

from informers.testing import cel_rules
from informers.testing import structural_schema as structural
from informers.testing.validation import Cause, _dns1123_label, _dns1123_subdomain

__all__ = ["crd_errors", "default_crd"]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _quoted(value: Any) -> str:
    return structural._go_value(value)


def _version_errors(version: Any, index: int, status_enabled: bool,
                    shared_schema: bool) -> list[Cause]:
    path = f"spec.versions[{index}]"
    causes: list[Cause] = []
    if not isinstance(version, dict):
        return [("FieldValueInvalid", path, "Invalid value: must be an object")]
    name = version.get("name") or ""
    errs = _dns1123_label(name)
    if not name:
        causes.append(structural._required(f"{path}.name"))
    elif errs:
        causes.append(structural._invalid(f"{path}.name", name, ",".join(errs)))
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    # Versions that all have the same schema are validated as the internal type's top-level
    # spec.validation (apiextensions v1 conversion hoists them), hence that path.
    schema_path = ("spec.validation.openAPIV3Schema" if shared_schema
                   else f"{path}.schema.openAPIV3Schema")
    if schema is None:
        causes.append(structural._required(schema_path, "schemas are required"))
    else:
        causes.extend(structural.structural_errors(schema, schema_path))
        causes.extend(cel_rules.compile_errors(schema, schema_path))
    return causes


def crd_errors(crd: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    """The causes of a 422 for ``crd`` (defaulted), in upstream's order for the cases
    covered: the name (``<plural>.<group>``), group, names, scope, versions (names, schema,
    exactly one storage version), conversion, and on update the immutable group, scope,
    plural and kind."""
    meta = _dict(crd.get("metadata"))
    spec = _dict(crd.get("spec"))
    names = _dict(spec.get("names"))
    group = spec.get("group") or ""
    plural = names.get("plural") or ""
    causes: list[Cause] = []
    name = meta.get("name") or ""
    if name != f"{plural}.{group}":
        causes.append(structural._invalid(
            "metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        causes.append(structural._required("spec.group"))
    elif errs := _dns1123_subdomain(group, "characters"):
        causes.append(structural._invalid("spec.group", group, ",".join(errs)))
    elif "." not in group:
        causes.append(structural._invalid("spec.group", group,
                                          "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        causes.append(structural._required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        causes.append(("FieldValueNotSupported", "spec.scope",
                       f'Unsupported value: {_quoted(scope)}: supported values: "Cluster", '
                       '"Namespaced"'))
    versions: list[Any] = spec["versions"] if isinstance(spec.get("versions"), list) else []
    if not versions:
        causes.append(structural._required("spec.versions", "must have at least one version"))
    status_enabled = False
    schemas = [_dict(v).get("schema") for v in versions]
    shared = all(schema == schemas[0] for schema in schemas)
    for index, version in enumerate(versions):
        status_enabled = status_enabled or "status" in ((version or {}).get("subresources") or {})
        errors = _version_errors(version, index, status_enabled, shared)
        if shared and index > 0:  # the hoisted schema is validated once
            errors = [c for c in errors if not c[1].startswith("spec.validation.")]
        causes.extend(errors)
    if versions:
        seen = [v.get("name") for v in versions if isinstance(v, dict)]
        if len(set(seen)) != len(seen):
            causes.append(structural._invalid("spec.versions", versions,
                                              "must contain unique version names"))
        if sum(1 for v in versions if isinstance(v, dict) and v.get("storage")) != 1:
            causes.append(structural._invalid(
                "spec.versions", versions, "must have exactly one version marked as storage "
                "version"))
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            causes.append(structural._required(f"spec.names.{key}"))
    for key in ("plural", "singular"):
        value = names.get(key)
        if value and (errs := _dns1123_label(value)):
            causes.append(structural._invalid(f"spec.names.{key}", value, ",".join(errs)))
    conversion = _dict(spec.get("conversion"))
    strategy = conversion.get("strategy")
    if strategy == "Webhook":
        causes.extend(_webhook_conversion_errors(_dict(conversion.get("webhook"))))
    elif strategy not in ("None", None):
        causes.append(("FieldValueNotSupported", "spec.conversion.strategy",
                       f'Unsupported value: {_quoted(strategy)}: supported values: "None", '
                       '"Webhook"'))
    if old is not None:
        old_spec = _dict(old.get("spec"))
        old_names = _dict(old_spec.get("names"))
        for path, new_value, old_value in (
                ("spec.scope", scope, old_spec.get("scope")),
                ("spec.names.kind", names.get("kind"), old_names.get("kind")),
                ("spec.group", group, old_spec.get("group")),
                ("spec.names.plural", plural, old_names.get("plural"))):
            if new_value != old_value:
                causes.append(structural._invalid(path, new_value,
                                                  "field is immutable"))
    return causes


def _webhook_conversion_errors(webhook: dict[str, Any]) -> list[Cause]:
    """``validateCustomResourceConversion`` (field paths of the internal version, as
    kube-apiserver reports them)."""
    causes: list[Cause] = []
    where = "spec.conversion.webhookClientConfig"
    config = _dict(webhook.get("clientConfig"))
    if not webhook.get("clientConfig"):
        causes.append(structural._required(where, "required when strategy is set to Webhook"))
    elif bool(config.get("url")) == bool(config.get("service")):
        causes.append(structural._required(where, "exactly one of url or service is required"))
    elif config.get("url") and not str(config["url"]).startswith("https://"):
        scheme = str(config["url"]).partition(":")[0]
        causes.append(("FieldValueInvalid", f"{where}.url",
                       f'Invalid value: "{scheme}": \'https\' is the only allowed URL scheme; '
                       "desired format: https://host[/path]"))
    if not webhook.get("conversionReviewVersions"):
        causes.append(structural._required("spec.conversion.conversionReviewVersions"))
    return causes


def default_crd(crd: dict[str, Any]) -> None:
    """``apis/apiextensions/v1/defaults.go``: names' ``singular`` and ``listKind``,
    ``conversion.strategy: None``."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    conversion = spec.setdefault("conversion", {})
    if isinstance(conversion, dict):
        conversion.setdefault("strategy", "None")
