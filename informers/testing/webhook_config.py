"""``ValidatingWebhookConfiguration`` and ``MutatingWebhookConfiguration`` as objects.

The two ``admissionregistration.k8s.io/v1`` collections the embedded server serves, the
defaults kube-apiserver gives a webhook (``pkg/apis/admissionregistration/v1/defaults.go``:
``failurePolicy: Fail``, ``matchPolicy: Equivalent``, empty ``namespaceSelector`` and
``objectSelector``, ``timeoutSeconds: 10``, ``reinvocationPolicy: Never`` for mutating ones,
a rule's ``scope: "*"``, a service's ``port: 443``) and the validation of the common mistakes
(``pkg/apis/admissionregistration/validation/validation.go``): a webhook name that is not
fully qualified, a duplicate name, a missing or unknown ``sideEffects``, a missing
``admissionReviewVersions``, a ``timeoutSeconds`` outside 1..30, a ``clientConfig`` with
neither or both of ``url`` and ``service``, a URL that is not ``https`` or carries a query or
fragment, unknown ``failurePolicy``/``matchPolicy``/``reinvocationPolicy`` values, a rule
without operations, groups, versions or resources. Label selectors and ``matchConditions``
are checked only for their shape. Pure functions; thread-safe.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from informers.testing import status
from informers.testing.resources import ResourceType

__all__ = ["MUTATING", "VALIDATING", "WEBHOOK_RESOURCES", "default_configuration",
           "validate_configuration"]

_API = ("admissionregistration.k8s.io", "v1")
VALIDATING = ResourceType(
    *_API, "validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
    namespaced=False, has_generation=True, categories=("api-extensions",))
MUTATING = ResourceType(
    *_API, "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
    namespaced=False, has_generation=True, categories=("api-extensions",))
WEBHOOK_RESOURCES = (MUTATING, VALIDATING)
"""The two collections (cluster-scoped; ``generation`` moves when ``webhooks`` change, as the
registry strategies' ``PrepareForUpdate`` do; category ``api-extensions``)."""

_SIDE_EFFECTS = ("None", "NoneOnDryRun")  # v1 accepts only these (Some/Unknown: v1beta1)
_FAILURE_POLICIES = ("Fail", "Ignore")
_MATCH_POLICIES = ("Equivalent", "Exact")
_REINVOCATION = ("IfNeeded", "Never")
_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_REVIEW_VERSIONS = ("v1", "v1beta1")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def default_configuration(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Fill in the v1 defaults of every webhook of ``obj`` in place."""
    for hook in obj.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        if rt is MUTATING:
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def _go(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def _fully_qualified(name: Any) -> list[str]:
    """``apimachinery/pkg/util/validation`` ``IsFullyQualifiedName``: a DNS-1123 subdomain
    of at least three segments."""
    if not name:
        return ["Required value"]
    text = str(name)
    if len(text.split(".")) < 3:
        return [f'Invalid value: "{text}": should be a domain with at least three segments '
                "separated by dots"]
    if not all(_DNS1123_LABEL.match(part) for part in text.split(".")) or len(text) > 253:
        return [f'Invalid value: "{text}": a lowercase RFC 1123 subdomain must consist of '
                "lower case alphanumeric characters, '-' or '.', and must start and end with "
                "an alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]
    return []


def _url_errors(url: str, where: str) -> list[tuple[str, str, str]]:
    """``apiserver/pkg/util/webhook/validation.go`` ``ValidateWebhookURL``."""
    form = "; desired format: https://host[/path]"
    split = urlsplit(url)
    if split.scheme != "https":
        return [("FieldValueInvalid", where, f'Invalid value: "{split.scheme}": \'https\' is '
                 f"the only allowed URL scheme{form}")]
    if not split.netloc:
        return [("FieldValueInvalid", where, f'Invalid value: "": host must be specified{form}')]
    if split.fragment:
        return [("FieldValueInvalid", where, f'Invalid value: "{split.fragment}": fragments '
                 "are not permitted in the URL")]
    if split.query:
        return [("FieldValueInvalid", where, f'Invalid value: "{split.query}": query '
                 "parameters are not permitted in the URL")]
    return []


def _hook_errors(rt: ResourceType, hook: Any, at: str) -> list[tuple[str, str, str]]:
    if not isinstance(hook, dict):
        return [("FieldValueInvalid", at, "Invalid value: must be an object")]
    errors = [("FieldValueRequired" if not hook.get("name") else "FieldValueInvalid",
               f"{at}.name", text) for text in _fully_qualified(hook.get("name"))]
    for index, rule in enumerate(hook.get("rules") or []):
        where = f"{at}.rules[{index}]"
        for key in ("operations", "apiGroups", "apiVersions", "resources"):
            if not (rule or {}).get(key):
                errors.append(("FieldValueRequired", f"{where}.{key}", "Required value"))
        for op in (rule or {}).get("operations") or []:
            if op not in _OPERATIONS:
                errors.append(("FieldValueNotSupported", f"{where}.operations",
                               f"Unsupported value: {_go(op)}: supported values: "
                               f"{_quoted(_OPERATIONS)}"))
        scope = (rule or {}).get("scope", "*")
        if scope not in _SCOPES:
            errors.append(("FieldValueNotSupported", f"{where}.scope",
                           f"Unsupported value: {_go(scope)}: supported values: "
                           f"{_quoted(_SCOPES)}"))
    for key, allowed in (("failurePolicy", _FAILURE_POLICIES), ("matchPolicy", _MATCH_POLICIES),
                         *((("reinvocationPolicy", _REINVOCATION),) if rt is MUTATING else ())):
        if key in hook and hook[key] not in allowed:
            errors.append(("FieldValueNotSupported", f"{at}.{key}",
                           f"Unsupported value: {_go(hook[key])}: supported values: "
                           f"{_quoted(allowed)}"))
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errors.append(("FieldValueRequired", f"{at}.sideEffects",
                       f"Required value: must specify one of {', '.join(_SIDE_EFFECTS)}"))
    elif side_effects not in _SIDE_EFFECTS:
        errors.append(("FieldValueNotSupported", f"{at}.sideEffects",
                       f"Unsupported value: {_go(side_effects)}: supported values: "
                       f"{_quoted(_SIDE_EFFECTS)}"))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and not (isinstance(timeout, int) and 1 <= timeout <= 30):
        errors.append(("FieldValueInvalid", f"{at}.timeoutSeconds",
                       f"Invalid value: {timeout}: the timeout value must be between 1 and 30 "
                       "seconds"))
    config = hook.get("clientConfig") or {}
    if bool(config.get("url")) == bool(config.get("service")):
        errors.append(("FieldValueRequired", f"{at}.clientConfig",
                       "Required value: exactly one of url or service is required"))
    elif config.get("url"):
        errors.extend(_url_errors(str(config["url"]), f"{at}.clientConfig.url"))
    versions = hook.get("admissionReviewVersions") or []
    where = f"{at}.admissionReviewVersions"
    if not versions:
        errors.append(("FieldValueRequired", where,
                       f"Required value: must specify one of {', '.join(_REVIEW_VERSIONS)}"))
    elif not any(v in _REVIEW_VERSIONS for v in versions):
        rendered = "[]string{" + ", ".join(f'"{v}"' for v in versions) + "}"
        errors.append(("FieldValueInvalid", where, f"Invalid value: {rendered}: must include "
                       f"at least one of {', '.join(_REVIEW_VERSIONS)}"))
    for index, condition in enumerate(hook.get("matchConditions") or []):
        cwhere = f"{at}.matchConditions[{index}]"
        for key in ("name", "expression"):
            if not (condition or {}).get(key):
                errors.append(("FieldValueRequired", f"{cwhere}.{key}", "Required value"))
    return errors


def validate_configuration(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Raise the 422 kube-apiserver answers for an invalid configuration (after defaults)."""
    errors: list[tuple[str, str, str]] = []
    names: set[str] = set()
    for index, hook in enumerate(obj.get("webhooks") or []):
        at = f"webhooks[{index}]"
        errors.extend(_hook_errors(rt, hook, at))
        name = hook.get("name") if isinstance(hook, dict) else None
        if name:
            if name in names:
                errors.append(("FieldValueDuplicate", f"{at}.name",
                               f'Duplicate value: "{name}"'))
            names.add(name)
    if errors:
        raise status.invalid(rt.kind, rt.group, (obj.get("metadata") or {}).get("name", ""),
                             errors)
