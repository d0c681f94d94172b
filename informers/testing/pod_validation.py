"""kube-apiserver's validation of pod specs (pods and pod templates), as pure functions.

The checks an operator's tests meet, from ``ValidatePodSpec``, ``validateContainers``,
``validateInitContainers``, ``validateContainerCommon``, ``validateContainerPorts``,
``validateRestartPolicy``, ``validateDNSPolicy`` and ``ValidatePodUpdate`` of
``k8s.io/kubernetes/pkg/apis/core/validation/validation.go``, with upstream's messages and
in upstream's order: the containers (required; each one's name, image, termination message
policy, ports and pull policy; names unique across containers and init containers), the
restart and DNS policies; on an update, the fields a pod's spec may not change.

Not covered (accepted as sent): volumes and volume mounts, env, probes and lifecycle
handlers, resources, security contexts, affinity, tolerations, topology spread, host
aliases, DNS config, scheduling gates, ephemeral containers and the other fields
``ValidatePodSpec`` checks. The values are those of a defaulted v1 body; the functions read
plain dicts and never change them.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from informers.testing.validation import Cause, dns1123_label_errors, quote

__all__ = [
    "POD_UPDATE_FORBIDDEN",
    "pod_spec_errors",
    "pod_update_errors",
    "port_name_errors",
    "port_number_errors",
    "supported",
]

POD_UPDATE_FORBIDDEN: Final = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)")
"""``ValidatePodUpdate``'s message; kube-apiserver follows it with a diff of its internal
PodSpec, which this server leaves out."""

_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
_TERMINATION_MESSAGE_POLICIES: Final = ("File", "FallbackToLogsOnError")
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")  # supportedPortProtocols, sorted


def supported(field: str, value: object, values: tuple[str, ...]) -> Cause:
    """``field.NotSupported``."""
    listed = ", ".join(f'"{v}"' for v in values)
    return ("FieldValueNotSupported", field,
            f"Unsupported value: {quote(value)}: supported values: {listed}")


def _required(field: str) -> Cause:
    return ("FieldValueRequired", field, "Required value")


def _invalid(field: str, value: object, detail: str) -> Cause:
    return ("FieldValueInvalid", field, f"Invalid value: {quote(value)}: {detail}")


def _duplicate(field: str, value: object) -> Cause:
    return ("FieldValueDuplicate", field, f"Duplicate value: {quote(value)}")


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _list(value: Any) -> list[dict[str, Any]]:
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def port_number_errors(field: str, number: int) -> list[Cause]:
    """``validation.IsValidPortNum``."""
    if 1 <= number <= 65535:
        return []
    return [_invalid(field, number, "must be between 1 and 65535, inclusive")]


def port_name_errors(name: str) -> list[str]:
    """``validation.IsValidPortName`` (an IANA service name)."""
    errors = []
    if len(name) > 15:
        errors.append("must be no more than 15 characters")
    if not all(c.isascii() and (c.islower() or c.isdigit() or c == "-") for c in name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any(c.isascii() and c.isalpha() for c in name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def _ports_errors(ports: list[dict[str, Any]], path: str) -> list[Cause]:
    """``validateContainerPorts``."""
    causes: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        at = f"{path}[{i}]"
        name = _string(port.get("name"))
        if name:
            errors = port_name_errors(name)
            if errors:
                causes.extend(_invalid(f"{at}.name", name, e) for e in errors)
            elif name in names:
                causes.append(_duplicate(f"{at}.name", name))
            else:
                names.add(name)
        number = _int(port.get("containerPort"))
        if number == 0:
            causes.append(_required(f"{at}.containerPort"))
        else:
            causes.extend(port_number_errors(f"{at}.containerPort", number))
        host = _int(port.get("hostPort"))
        if host:
            causes.extend(port_number_errors(f"{at}.hostPort", host))
        protocol = _string(port.get("protocol"))
        if not protocol:
            causes.append(_required(f"{at}.protocol"))
        elif protocol not in _PROTOCOLS:
            causes.append(supported(f"{at}.protocol", protocol, _PROTOCOLS))
    return causes


def _container_errors(container: dict[str, Any], path: str) -> list[Cause]:
    """``validateContainerCommon``: name, image, termination message policy, ports, pull
    policy."""
    causes: list[Cause] = []
    name = _string(container.get("name"))
    if not name:
        causes.append(_required(f"{path}.name"))
    else:
        causes.extend(_invalid(f"{path}.name", name, e) for e in dns1123_label_errors(name))
    if not _string(container.get("image")):
        causes.append(_required(f"{path}.image"))
    policy = _string(container.get("terminationMessagePolicy"))
    if not policy:
        causes.append(_required(f"{path}.terminationMessagePolicy"))
    elif policy not in _TERMINATION_MESSAGE_POLICIES:
        causes.append(supported(f"{path}.terminationMessagePolicy", policy,
                                _TERMINATION_MESSAGE_POLICIES))
    causes.extend(_ports_errors(_list(container.get("ports")), f"{path}.ports"))
    pull = _string(container.get("imagePullPolicy"))
    if not pull:
        causes.append(_required(f"{path}.imagePullPolicy"))
    elif pull not in _PULL_POLICIES:
        causes.append(supported(f"{path}.imagePullPolicy", pull, _PULL_POLICIES))
    return causes


def pod_spec_errors(spec: Any, path: str = "spec") -> list[Cause]:
    """``ValidatePodSpec``'s checks listed in the module docstring, for the spec at ``path``
    (``spec`` or ``spec.template.spec``)."""
    spec = spec if isinstance(spec, dict) else {}
    causes: list[Cause] = []
    containers = _list(spec.get("containers"))
    if not containers:
        causes.append(_required(f"{path}.containers"))
    names: set[str] = set()
    for i, container in enumerate(containers):
        at = f"{path}.containers[{i}]"
        causes.extend(_container_errors(container, at))
        name = _string(container.get("name"))
        if name in names:
            causes.append(_duplicate(f"{at}.name", name))
        else:
            names.add(name)
    all_names = {_string(c.get("name")) for c in containers}
    for i, container in enumerate(_list(spec.get("initContainers"))):
        at = f"{path}.initContainers[{i}]"
        causes.extend(_container_errors(container, at))
        name = _string(container.get("name"))
        if name in all_names:
            causes.append(_duplicate(f"{at}.name", name))
        elif name:
            all_names.add(name)
    restart = _string(spec.get("restartPolicy"))
    if not restart:
        causes.append(_required(f"{path}.restartPolicy"))
    elif restart not in _RESTART_POLICIES:
        causes.append(supported(f"{path}.restartPolicy", restart, _RESTART_POLICIES))
    dns = _string(spec.get("dnsPolicy"))
    if not dns:
        causes.append(_required(f"{path}.dnsPolicy"))
    elif dns not in _DNS_POLICIES:
        causes.append(supported(f"{path}.dnsPolicy", dns, _DNS_POLICIES))
    return causes


def _mutable_view(spec: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with what ``ValidatePodUpdate`` lets change taken from ``old``: container and
    init container images, ``activeDeadlineSeconds``, added tolerations, a negative grace
    period set to 1."""
    view = copy.deepcopy(spec)
    for key in ("containers", "initContainers"):
        new_list, old_list = view.get(key), old.get(key)
        if isinstance(new_list, list) and isinstance(old_list, list) and \
                len(new_list) == len(old_list):
            for new_c, old_c in zip(new_list, old_list, strict=True):
                if isinstance(new_c, dict) and isinstance(old_c, dict):
                    if "image" in old_c:
                        new_c["image"] = old_c["image"]
                    else:
                        new_c.pop("image", None)
    for key in ("activeDeadlineSeconds",):
        if key in old:
            view[key] = old[key]
        else:
            view.pop(key, None)
    new_tolerations, old_tolerations = view.get("tolerations"), old.get("tolerations")
    if isinstance(new_tolerations, list) and all(
            t in new_tolerations for t in (old_tolerations or [])):
        if old_tolerations is None:
            view.pop("tolerations", None)
        else:
            view["tolerations"] = old_tolerations
    old_grace = old.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and \
            view.get("terminationGracePeriodSeconds") == 1:
        view["terminationGracePeriodSeconds"] = old_grace
    return view


def pod_update_errors(pod: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """``ValidatePodUpdate`` (after the metadata): the new spec's errors, which
    kube-apiserver reports twice, then a ``Forbidden`` on ``spec`` when the spec changed
    beyond :data:`POD_UPDATE_FORBIDDEN`'s fields."""
    spec, old_spec = pod.get("spec"), old.get("spec")
    causes = pod_spec_errors(spec) * 2
    if isinstance(spec, dict) and isinstance(old_spec, dict) and \
            _mutable_view(spec, old_spec) != old_spec:
        causes.append(("FieldValueForbidden", "spec", f"Forbidden: {POD_UPDATE_FORBIDDEN}"))
    return causes
