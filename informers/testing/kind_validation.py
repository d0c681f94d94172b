"""kube-apiserver's create and update validation of the built-in kinds' content.

After the metadata checks of :mod:`informers.testing.validation`, kube-apiserver's
``pkg/apis/core/validation/validation.go`` and ``pkg/apis/apps/validation/validation.go``
check each kind's fields; :func:`kind_errors` is the part of that an operator's tests meet,
with upstream's causes (type, field path, message) and order:

* pods: :mod:`informers.testing.pod_validation` (``ValidatePodCreate``, ``ValidatePodUpdate``);
* ConfigMaps (``ValidateConfigMap``, ``ValidateConfigMapUpdate``) and Secrets
  (``ValidateSecret``, ``ValidateSecretUpdate``): keys (``IsConfigMapKey``), a key in both
  ``data`` and ``binaryData``, the 1 MiB total, and ``immutable: true`` (and a Secret's
  ``type``) on update. Secret type-specific rules (service account tokens, docker configs,
  TLS) are not covered;
* Services (``validateService``): ports required unless headless or ``ExternalName``, each
  port's name, number, protocol and target port, ``sessionAffinity`` and ``type``;
* Deployments, ReplicaSets, StatefulSets and DaemonSets (``ValidateDeploymentSpec``,
  ``ValidateReplicaSetSpec``, ``ValidateStatefulSetSpec``, ``ValidateDaemonSetSpec``):
  ``replicas`` not negative, the selector required and not empty, the template's labels
  matched by it, the template's pod spec, its ``restartPolicy`` ``Always``; on update the
  selector is immutable (``apps/v1``).

Map iteration order is random in Go; where upstream walks a map (a ConfigMap's keys) the
causes here follow the keys' sorted order. The functions read plain dicts (defaulted v1
bodies) and never change them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from informers.testing.pod_validation import (
    pod_spec_errors,
    pod_update_errors,
    port_name_errors,
    port_number_errors,
    supported,
)
from informers.testing.validation import Cause, dns1123_label_errors, quote

__all__ = ["MAX_SECRET_SIZE", "kind_errors", "selector_matches"]

MAX_SECRET_SIZE: Final = 1 * 1024 * 1024
"""``core.MaxSecretSize``: a ConfigMap's or Secret's values together, in bytes."""

_CONFIG_KEY_FMT: Final = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_RE: Final = re.compile(_CONFIG_KEY_FMT)
_CONFIG_KEY_MSG: Final = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    f"'{_CONFIG_KEY_FMT}')")
_IMMUTABLE_SET: Final = "Forbidden: field is immutable when `immutable` is set"
_SESSION_AFFINITIES: Final = ("ClientIP", "None")
_SERVICE_TYPES: Final = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")


def _invalid(field: str, value: object, detail: str) -> Cause:
    return ("FieldValueInvalid", field, f"Invalid value: {quote(value)}: {detail}")


def _required(field: str) -> Cause:
    return ("FieldValueRequired", field, "Required value")


def _forbidden(field: str, detail: str) -> Cause:
    return ("FieldValueForbidden", field, f"Forbidden: {detail}")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# -- ConfigMaps and Secrets ----------------------------------------------------------------------


def config_key_errors(key: str) -> list[str]:
    """``validation.IsConfigMapKey``."""
    errors = []
    if len(key.encode()) > 253:
        errors.append("must be no more than 253 characters")
    if not _CONFIG_KEY_RE.fullmatch(key):
        errors.append(_CONFIG_KEY_MSG)
    if key == ".":  # hasChDirPrefix
        errors.append("must not be '.'")
    elif key == "..":
        errors.append("must not be '..'")
    elif key.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def _size(values: dict[str, Any]) -> int:
    return sum(len(v.encode()) if isinstance(v, str) else 0 for v in values.values())


def _config_map(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    if old is not None and old.get("immutable") is True:
        if obj.get("immutable") is not True:
            causes.append(("FieldValueForbidden", "immutable", _IMMUTABLE_SET))
        for key in ("data", "binaryData"):
            if (obj.get(key) or None) != (old.get(key) or None):
                causes.append(("FieldValueForbidden", key, _IMMUTABLE_SET))
    data, binary = _dict(obj.get("data")), _dict(obj.get("binaryData"))
    for key in sorted(data):
        causes.extend(_invalid(f"data[{key}]", key, e) for e in config_key_errors(key))
        if key in binary:
            causes.append(_invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
    for key in sorted(binary):
        causes.extend(_invalid(f"binaryData[{key}]", key, e) for e in config_key_errors(key))
    if _size(data) + _size(binary) > MAX_SECRET_SIZE:
        causes.append(("FieldValueTooLong", "",
                       f"Too long: may not be more than {MAX_SECRET_SIZE} bytes"))
    return causes


def _secret(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    if old is not None:
        if obj.get("type") != old.get("type"):
            causes.append(_invalid("type", obj.get("type") or "", "field is immutable"))
        if old.get("immutable") is True:
            if obj.get("immutable") is not True:
                causes.append(("FieldValueForbidden", "immutable", _IMMUTABLE_SET))
            if (obj.get("data") or None) != (old.get("data") or None):
                causes.append(("FieldValueForbidden", "data", _IMMUTABLE_SET))
    data = _dict(obj.get("data"))
    for key in sorted(data):
        causes.extend(_invalid(f"data[{key}]", key, e) for e in config_key_errors(key))
    # base64 in the body: the decoded size is what counts
    if sum(len(v) * 3 // 4 for v in data.values() if isinstance(v, str)) > MAX_SECRET_SIZE:
        causes.append(("FieldValueTooLong", "data",
                       f"Too long: may not be more than {MAX_SECRET_SIZE} bytes"))
    return causes


# -- Services ------------------------------------------------------------------------------------


def _target_port_errors(field: str, value: Any) -> list[Cause]:
    """``ValidatePortNumOrName``."""
    if isinstance(value, str):
        return [_invalid(field, value, e) for e in port_name_errors(value)]
    return port_number_errors(field, _int(value))


def _service(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    spec = _dict(obj.get("spec"))
    kind = spec.get("type") or ""
    causes: list[Cause] = []
    ports = [p if isinstance(p, dict) else {} for p in spec.get("ports") or []]
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and kind != "ExternalName":
        causes.append(_required("spec.ports"))
    names: set[str] = set()
    for i, port in enumerate(ports):  # validateServicePort
        at = f"spec.ports[{i}]"
        name = port.get("name") if isinstance(port.get("name"), str) else ""
        if len(ports) > 1 and not name:
            causes.append(_required(f"{at}.name"))
        elif name:
            causes.extend(_invalid(f"{at}.name", name, e) for e in dns1123_label_errors(name))
            if name in names:
                causes.append(("FieldValueDuplicate", f"{at}.name",
                               f"Duplicate value: {quote(name)}"))
            else:
                names.add(name)
        causes.extend(port_number_errors(f"{at}.port", _int(port.get("port"))))
        protocol = port.get("protocol") if isinstance(port.get("protocol"), str) else ""
        if not protocol:
            causes.append(_required(f"{at}.protocol"))
        elif protocol not in _PROTOCOLS:
            causes.append(supported(f"{at}.protocol", protocol, _PROTOCOLS))
        causes.extend(_target_port_errors(f"{at}.targetPort", port.get("targetPort")))
    affinity = spec.get("sessionAffinity") or ""
    if not affinity:
        causes.append(_required("spec.sessionAffinity"))
    elif affinity not in _SESSION_AFFINITIES:
        causes.append(supported("spec.sessionAffinity", affinity, _SESSION_AFFINITIES))
    if not kind:
        causes.append(_required("spec.type"))
    elif kind not in _SERVICE_TYPES:
        causes.append(supported("spec.type", kind, _SERVICE_TYPES))
    return causes


# -- apps ----------------------------------------------------------------------------------------


def _requirement_matches(req: Any, labels: dict[str, Any]) -> bool:
    if not isinstance(req, dict):
        return False
    key, operator = req.get("key"), req.get("operator")
    values = req.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False


def selector_matches(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)`` for a non-empty selector:
    every ``matchLabels`` pair and every ``matchExpressions`` requirement holds."""
    match_labels = _dict(selector.get("matchLabels"))
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    expressions = selector.get("matchExpressions") or []
    return all(_requirement_matches(r, labels) for r in expressions)


def _workload(obj: dict[str, Any], old: dict[str, Any] | None, noun: str) -> list[Cause]:
    """The selector, template and replicas checks the four workload kinds share (in
    ``ValidateDeploymentSpec``'s order; ``noun`` names the kind in "empty selector is
    invalid for ..."). The selector's own syntax (``ValidateLabelSelector``) is not
    checked."""
    spec = _dict(obj.get("spec"))
    causes: list[Cause] = []
    if noun != "daemonset" and _int(spec.get("replicas")) < 0:
        causes.append(_invalid("spec.replicas", spec["replicas"],
                               "must be greater than or equal to 0"))
    selector = spec.get("selector")
    empty = False
    if not isinstance(selector, dict):
        causes.append(_required("spec.selector"))
    elif not selector.get("matchLabels") and not selector.get("matchExpressions"):
        empty = True
        causes.append(_invalid("spec.selector", selector,
                               f"empty selector is invalid for {noun}"))
    template = _dict(spec.get("template"))
    labels = _dict(_dict(template.get("metadata")).get("labels"))
    if not empty and not (isinstance(selector, dict) and selector_matches(selector, labels)):
        causes.append(_invalid("spec.template.metadata.labels", labels,
                               "`selector` does not match template `labels`"))
    template_spec = template.get("spec")
    causes.extend(pod_spec_errors(template_spec, "spec.template.spec"))
    restart = _dict(template_spec).get("restartPolicy")
    if isinstance(restart, str) and restart and restart != "Always":
        causes.append(supported("spec.template.spec.restartPolicy", restart, ("Always",)))
    if old is not None:
        old_selector = _dict(old.get("spec")).get("selector")
        if selector != old_selector:
            causes.append(_invalid("spec.selector", selector, "field is immutable"))
    return causes


def _pod(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    if old is None:
        return pod_spec_errors(obj.get("spec"))
    return pod_update_errors(obj, old)


def _seeded_pod(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    return pod_spec_errors(obj.get("spec"))


_VALIDATORS: Final[dict[tuple[str, str], Callable[[dict[str, Any], dict[str, Any] | None],
                                                   list[Cause]]]] = {
    ("", "pods"): _pod,
    ("", "configmaps"): _config_map,
    ("", "secrets"): _secret,
    ("", "services"): _service,
    ("apps", "deployments"): lambda o, old: _workload(o, old, "deployment"),
    ("apps", "replicasets"): lambda o, old: _workload(o, old, "deployment"),
    ("apps", "statefulsets"): lambda o, old: _workload(o, old, "statefulset"),
    ("apps", "daemonsets"): lambda o, old: _workload(o, old, "daemonset"),
}


def kind_errors(group: str, plural: str, obj: dict[str, Any],
                old: dict[str, Any] | None = None, *, seeding: bool = False) -> list[Cause]:
    """The content errors of a create (``old`` is ``None``) or an update of the built-in
    ``group``/``plural`` (none for other kinds). ``seeding``: a pod's spec may change (the
    seeding helpers' update; its new spec is still validated)."""
    if seeding and (group, plural) == ("", "pods"):
        return _seeded_pod(obj, old)
    validator = _VALIDATORS.get((group, plural))
    return [] if validator is None else validator(obj, old)
