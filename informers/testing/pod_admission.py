"""What kube-apiserver adds to a pod beyond its v1 defaults, as pure functions.

The session's kube-apiserver runs two mutating admission plugins that change pods
(:func:`admit_pod`: ``DefaultTolerationSeconds`` and ``Priority``), and the pod strategy's
``PrepareForCreate`` sets the immutable ``status.qosClass`` (:func:`pod_qos_class`,
``qos.ComputePodQOS``), which a status write that leaves it out keeps
(:func:`keep_qos_class`). The functions change only the dicts named in their docstrings.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from informers.testing.defaults import dicts, set_default

__all__ = ["DEFAULT_TOLERATION_SECONDS", "admit_pod", "keep_qos_class", "pod_qos_class"]

DEFAULT_TOLERATION_SECONDS: Final = 300
"""``--default-not-ready-toleration-seconds`` and ``--default-unreachable-toleration-seconds``
(``plugin/pkg/admission/defaulttolerationseconds``)."""

_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"

# The system priority classes kube-apiserver creates at start
# (pkg/apis/scheduling SystemPriorityClasses).
_SYSTEM_PRIORITIES: Final = {"system-node-critical": 2000001000,
                             "system-cluster-critical": 2000000000}


def admit_pod(pod: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The mutating admission plugins of the session's kube-apiserver that change pods:
    ``DefaultTolerationSeconds`` (create and update: a ``NoExecute`` toleration of 300 s for
    ``node.kubernetes.io/not-ready`` and ``unreachable`` unless one already tolerates it) and
    ``Priority`` (create: ``priority`` from ``priorityClassName``, 0 and
    ``PreemptLowerPriority`` without one, as no default PriorityClass exists; update: the old
    values when the new pod has none). A ``priorityClassName`` other than the two system
    classes is left alone (kube-apiserver looks it up)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    tolerations = spec.get("tolerations")
    tolerations = list(tolerations) if isinstance(tolerations, list) else []
    for key in (_NOT_READY, _UNREACHABLE):
        if not any(t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None)
                   for t in dicts(tolerations)):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    spec["tolerations"] = tolerations
    if old is not None:
        old_spec = old.get("spec")
        if isinstance(old_spec, dict):
            for key in ("priority", "preemptionPolicy"):
                if spec.get(key) is None and old_spec.get(key) is not None:
                    spec[key] = old_spec[key]
        return
    name = spec.get("priorityClassName") or ""
    if not name:
        spec.pop("priorityClassName", None)
        if spec.get("priority") is None:
            spec["priority"] = 0
        set_default(spec, "preemptionPolicy", "PreemptLowerPriority")
    elif name in _SYSTEM_PRIORITIES:
        if spec.get("priority") is None:
            spec["priority"] = _SYSTEM_PRIORITIES[name]
        set_default(spec, "preemptionPolicy", "PreemptLowerPriority")


_SUFFIXES: Final = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}


def _quantity(value: Any) -> Decimal:
    """A ``resource.Quantity`` as a number (0 for what does not parse: validation's job)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Decimal(str(value))
    if not isinstance(value, str):
        return Decimal(0)
    text = value.strip()
    for suffix in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P",
                   "E"):
        if text.endswith(suffix) and suffix:
            try:
                return Decimal(text[:-len(suffix)]) * _SUFFIXES[suffix]
            except InvalidOperation:
                return Decimal(0)
    try:
        return Decimal(text)
    except InvalidOperation:
        return Decimal(0)


def _resources(containers: Iterable[dict[str, Any]], key: str) -> Iterator[dict[str, Any]]:
    for container in containers:
        resources = container.get("resources")
        part = resources.get(key) if isinstance(resources, dict) else None
        yield part if isinstance(part, dict) else {}


def pod_qos_class(pod: dict[str, Any]) -> str:
    """``qos.ComputePodQOS`` from the containers' resources (``cpu``, ``memory`` and
    ``hugepages-*`` are QoS resources; init containers count): ``BestEffort`` without
    requests or limits, ``Guaranteed`` when every container limits cpu and memory and the
    summed requests equal the summed limits, else ``Burstable``."""
    spec = pod.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    containers = [*dicts(spec.get("containers")), *dicts(spec.get("initContainers"))]

    def qos(name: str) -> bool:
        return name in ("cpu", "memory") or name.startswith("hugepages-")

    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for req, lim in zip(_resources(containers, "requests"), _resources(containers, "limits"),
                        strict=True):
        for name, value in req.items():
            amount = _quantity(value)
            if qos(name) and amount > 0:
                requests[name] = requests.get(name, Decimal(0)) + amount
        found = set()
        for name, value in lim.items():
            amount = _quantity(value)
            if qos(name) and amount > 0:
                found.add(name)
                limits[name] = limits.get(name, Decimal(0)) + amount
        if not {"cpu", "memory"} <= found:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(n) == v for n, v in requests.items()) and \
            len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def keep_qos_class(new: dict[str, Any], old: dict[str, Any]) -> None:
    """Pod status strategy ``PrepareForUpdate``: a status without ``qosClass`` keeps the old
    one (it is set at creation and immutable). Replaces (never mutates) the status dict."""
    new_status, old_status = new.get("status"), old.get("status")
    if isinstance(new_status, dict) and not new_status.get("qosClass") and \
            isinstance(old_status, dict) and old_status.get("qosClass"):
        new["status"] = {**new_status, "qosClass": old_status["qosClass"]}
