"""What kube-apiserver's per-kind registry strategies do to an object, as pure functions.

The embedded server's :class:`~informers.testing.strategy.Strategy` plays the generic registry
store (``registry/generic/registry/store.go``); the rules here are those of the kinds it
serves, from their ``strategy.go`` files under ``kubernetes/pkg/registry`` and from
``apimachinery/pkg/util/validation``: how a name must look, which empty fields the encoding
drops, a Service's cluster IP, a pod's graceful-deletion period, a DaemonSet's template
generation and a namespace's finalizer, label and ``Terminating`` phase. They read and change
plain dicts, never the storage.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterable
from typing import Any

from informers.testing import status
from informers.testing.kind_validation import kind_errors
from informers.testing.resources import ResourceType
from informers.testing.storage import Entry
from informers.testing.validation import (
    Cause,
    endpoints_errors,
    metadata_errors,
    name_causes,
)

__all__ = [
    "IMMORTAL_NAMESPACES",
    "KUBERNETES_FINALIZER",
    "NAME_LABEL",
    "TEMPLATE_GENERATION",
    "TERMINATING",
    "allocate_cluster_ip",
    "default_endpoints",
    "is_daemon_sets",
    "is_endpoints",
    "is_namespaces",
    "is_pods",
    "is_services",
    "is_terminating",
    "keep_cluster_ip",
    "omit_empty",
    "pod_grace_period",
    "prepare_namespace_create",
    "prepare_namespace_update",
    "round_trip_pod_ips",
    "spec_finalizers",
    "template_generation",
    "validate",
]

_TERMINAL_PHASES = ("Succeeded", "Failed")
# core/v1: the namespace finalizer the namespace controller owns (FinalizerKubernetes), the
# label every namespace carries (LabelMetadataName, SetDefaults_Namespace) and the namespaces
# NamespaceLifecycle refuses to delete (its immortalNamespaces: default, kube-system,
# kube-public).
KUBERNETES_FINALIZER = "kubernetes"
NAME_LABEL = "kubernetes.io/metadata.name"
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
TERMINATING = "Terminating"
"""The ``status.phase`` of a namespace being deleted."""

# kube-apiserver's default --service-cluster-ip-range (the real control plane's too); its
# first address is the ``kubernetes`` Service's.
_SERVICE_CIDR = ipaddress.ip_network("10.0.0.0/24")
_KUBERNETES_SERVICE_IP = "10.0.0.1"


def is_pods(rt: ResourceType) -> bool:
    """``rt`` is the core ``pods`` resource."""
    return rt.plural == "pods" and not rt.group


def is_services(rt: ResourceType) -> bool:
    """``rt`` is the core ``services`` resource."""
    return rt.plural == "services" and not rt.group


def is_endpoints(rt: ResourceType) -> bool:
    """``rt`` is the core ``endpoints`` resource."""
    return rt.plural == "endpoints" and not rt.group


def is_namespaces(rt: ResourceType) -> bool:
    """``rt`` is the core ``namespaces`` resource."""
    return rt.plural == "namespaces" and not rt.group


def status_metadata(rt: ResourceType) -> tuple[str, ...]:
    """The ``metadata`` keys a write of ``rt``'s ``status`` subresource takes from the
    request (the rest of the object stays the stored one). Each kind's status strategy
    ``PrepareForUpdate`` under ``kubernetes/pkg/registry`` resets ``spec`` only, so the
    labels, annotations, finalizers and owner references of the request are written too;
    a Deployment's also resets the labels (``deploymentStatusStrategy``), a pod's the owner
    references (``podStatusStrategy``). A custom resource's status strategy copies the stored
    object but its status (apiextensions-apiserver ``customresource/status_strategy.go``); a
    CustomResourceDefinition's ``statusStrategy`` calls ``metav1.ResetObjectMetaForStatus``
    with the new object twice, which keeps them all."""
    if not rt.builtin:
        return ()
    if is_pods(rt):
        return ("labels", "annotations", "finalizers")
    if rt.plural == "deployments" and rt.group == "apps":
        return ("annotations", "finalizers", "ownerReferences")
    return ("labels", "annotations", "finalizers", "ownerReferences")


def check_no_new_finalizers(rt: ResourceType, name: str, new_meta: dict[str, Any],
                            old_meta: dict[str, Any]) -> None:
    """An update (of the object or its status) of an object being deleted adds no
    finalizer (apimachinery ``validation.ValidateObjectMetaUpdate``). Raises the 422."""
    if not old_meta.get("deletionTimestamp"):
        return
    added = [f for f in new_meta.get("finalizers") or []
             if f not in (old_meta.get("finalizers") or [])]
    if added:
        rendered = ", ".join(f'"{f}"' for f in added)
        raise status.invalid(rt.kind, rt.group, name, [(
            "FieldValueForbidden", "metadata.finalizers",
            "Forbidden: no new finalizers can be added if the object is being "
            f"deleted, found new finalizers []string{{{rendered}}}")])


# -- names ---------------------------------------------------------------------------------------


def validate(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None = None,
             *, seeding: bool = False) -> None:
    """The validation of a create (``old`` is ``None``) or an update of ``obj`` (a decoded
    body, after defaulting): on a create the name rule of ``rt`` (``rt.name_rule``: a DNS-1123
    subdomain by default; an update cannot change the name), then for every kind the labels
    and annotations (on an update four times over, as kube-apiserver reports them for the
    built-in kinds), then an Endpoints' subsets (see :mod:`informers.testing.validation`) or
    the other built-in kinds' content (:mod:`informers.testing.kind_validation`).
    ``seeding`` (an update by the ``ApiServer`` seeding helpers) lets a pod's spec change,
    so a test can bind a pod to a node as the scheduler's ``pods/binding`` would.

    Raises:
        StatusError: 422 Invalid, with a cause per error, in upstream's order.
    """
    meta = obj["metadata"]
    name = meta.get("name") or ""
    causes: list[Cause] = []
    if old is None:
        causes.extend(name_causes(rt.name_rule, name))
        causes.extend(metadata_errors(meta))
    else:
        # An update checks the metadata four times, and its 422 lists every cause that
        # often (the message says each once): rest.BeforeUpdate's validateCommonFields runs
        # ValidateObjectMetaAccessor and ValidateObjectMetaAccessorUpdate, then the kind's
        # ValidateXUpdate ValidateObjectMetaUpdate and ValidateObjectMeta again.
        causes.extend(metadata_errors(meta) * 4)
    if is_endpoints(rt):
        causes.extend(endpoints_errors(obj, old))
    elif rt.builtin:
        causes.extend(kind_errors(rt.group, rt.plural, obj, old, seeding=seeding))
    if causes:
        raise status.invalid(rt.kind, rt.group, name, causes)


def default_endpoints(obj: dict[str, Any]) -> None:
    """``SetDefaults_Endpoints`` (``pkg/apis/core/v1/defaults.go``): a port without a
    ``protocol`` is ``TCP``. Replaces (never mutates) the lists and dicts it changes."""
    subsets = obj.get("subsets")
    if not isinstance(subsets, list):
        return
    changed = False
    new_subsets = []
    for subset in subsets:
        ports = subset.get("ports") if isinstance(subset, dict) else None
        if isinstance(ports, list) and any(isinstance(p, dict) and not p.get("protocol")
                                           for p in ports):
            subset = {**subset, "ports": [
                {**p, "protocol": "TCP"} if isinstance(p, dict) and not p.get("protocol") else p
                for p in ports]}
            changed = True
        new_subsets.append(subset)
    if changed:
        obj["subsets"] = new_subsets


# -- empty fields --------------------------------------------------------------------------------

# Fields Go's encoding/json drops when empty (``omitempty``: a null, ``{}`` or ``[]`` decodes
# to nil and is not written back), for the fields whose emptiness a client can tell apart:
# every optional ObjectMeta field, a Service's selector (so ``selector: {}`` is no selector),
# a ConfigMap's and Secret's data, an Endpoints' subsets and their lists.
_EMPTY: tuple[Any, ...] = (None, {}, [])
_META_OMIT_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences", "managedFields")
_OMIT_EMPTY: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "services"): ("spec.selector",),
    ("", "configmaps"): ("data", "binaryData"),
    ("", "secrets"): ("data", "stringData"),
    ("", "endpoints"): ("subsets",),
}
_SUBSET_OMIT_EMPTY = ("addresses", "notReadyAddresses", "ports")


def omit_empty(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Drop the empty values of :data:`_OMIT_EMPTY` fields from a decoded request body, as
    kube-apiserver's decode and encode round trip does. Replaces (never mutates) the nested
    dicts and lists it changes."""
    meta = obj["metadata"]
    if any(meta.get(k, 0) in _EMPTY for k in _META_OMIT_EMPTY):
        obj["metadata"] = {k: v for k, v in meta.items()
                           if not (k in _META_OMIT_EMPTY and v in _EMPTY)}
    for path in _OMIT_EMPTY.get((rt.group, rt.plural), ()):
        parent, _, key = path.rpartition(".")
        if parent:
            inner = obj.get(parent)
            if isinstance(inner, dict) and key in inner and inner[key] in _EMPTY:
                obj[parent] = {k: v for k, v in inner.items() if k != key}
        elif key in obj and obj[key] in _EMPTY:
            del obj[key]
    subsets = obj.get("subsets") if rt.plural == "endpoints" and not rt.group else None
    if isinstance(subsets, list):
        obj["subsets"] = [
            {k: v for k, v in subset.items() if not (k in _SUBSET_OMIT_EMPTY and v in _EMPTY)}
            if isinstance(subset, dict) else subset
            for subset in subsets
        ]


# -- services ------------------------------------------------------------------------------------


def allocate_cluster_ip(
    obj: dict[str, Any], services: Iterable[Entry], rand: random.Random
) -> None:
    """The service registry's ClusterIP allocation (``registry/core/service/storage``):
    a Service that is not ``ExternalName`` and names no ``clusterIP`` gets a free address
    of :data:`_SERVICE_CIDR` at random (``services``: the stored Services, read only then);
    ``clusterIPs`` follows ``clusterIP`` (``None`` for a headless one). The rest of a
    Service's defaults are :mod:`informers.testing.defaults`'.

    Raises:
        StatusError: 500 when the range is full.
    """
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("type") == "ExternalName":
        return
    ip = spec.get("clusterIP")
    if not ip:
        used = {_KUBERNETES_SERVICE_IP}
        for entry in services:
            other = entry.decode().get("spec")
            if isinstance(other, dict) and isinstance(other.get("clusterIP"), str):
                used.add(other["clusterIP"])
        free = [str(a) for a in _SERVICE_CIDR.hosts() if str(a) not in used]
        if not free:
            raise status.internal_error(
                "failed to allocate a serviceIP: range is full")
        ip = spec["clusterIP"] = rand.choice(free)
    if isinstance(ip, str) and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [ip]


def keep_cluster_ip(new: dict[str, Any], old: dict[str, Any]) -> None:
    """Service strategy ``patchAllocatedValues``: an update that leaves out ``clusterIP``
    (``clusterIPs``) keeps the allocated one (it is immutable); the REST update's
    ``initIPFamilyFields`` keeps ``ipFamilies`` and ``ipFamilyPolicy`` the same way."""
    new_spec, old_spec = new.get("spec"), old.get("spec")
    if not isinstance(new_spec, dict) or not isinstance(old_spec, dict):
        return
    if new_spec.get("type") == "ExternalName":
        return
    for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if not new_spec.get(key) and old_spec.get(key):
            new["spec"] = new_spec = {**new_spec, key: old_spec[key]}


# -- pods ----------------------------------------------------------------------------------------


def pod_grace_period(pod: dict[str, Any], grace: int | None) -> int:
    """The graceful-deletion period of a pod's delete (pod strategy ``CheckGracefulDelete``):
    ``grace`` (the request's ``gracePeriodSeconds``), else
    ``spec.terminationGracePeriodSeconds`` (30 unless set: ``SetDefaults_PodSpec``; absent
    only in a malformed pod, then 0); 0 for a pod bound to no node or in a
    terminal phase; 1 if negative."""
    spec_part, status_part = pod.get("spec"), pod.get("status")
    spec: dict[str, Any] = spec_part if isinstance(spec_part, dict) else {}
    phase = status_part.get("phase") if isinstance(status_part, dict) else None
    period = grace
    if period is None:
        default = spec.get("terminationGracePeriodSeconds")
        period = default if isinstance(default, int) else 0
    if not spec.get("nodeName") or phase in _TERMINAL_PHASES:
        period = 0
    if period < 0:
        period = 1
    return period


def round_trip_pod_ips(pod: dict[str, Any]) -> None:
    """What decoding a v1 pod into the internal version and encoding it back does to
    ``status.podIP`` and ``status.podIPs`` (``pkg/apis/core/v1/conversion.go``): on the way in
    (``Convert_v1_PodStatus_To_core_PodStatus``) a ``podIP`` without ``podIPs`` becomes
    ``podIPs: [{ip: podIP}]``, and a ``podIP`` that differs from the first of ``podIPs`` wins
    (``podIPs`` becomes just it, "for compatibility with older kubelets"); the internal
    version has no ``podIP``, so on the way out (``Convert_core_PodStatus_To_v1_PodStatus``)
    it is the first of ``podIPs``. Values of the wrong type are left alone (field validation
    answers them). Replaces (never mutates) the status dict it changes."""
    status_part = pod.get("status")
    if not isinstance(status_part, dict):
        return
    pod_ip = status_part.get("podIP") or ""
    pod_ips = status_part.get("podIPs") or []
    if not isinstance(pod_ip, str) or not isinstance(pod_ips, list):
        return
    first = pod_ips[0].get("ip") if pod_ips and isinstance(pod_ips[0], dict) else None
    if pod_ip and (not pod_ips or first != pod_ip):
        pod_ips, first = [{"ip": pod_ip}], pod_ip
    if not pod_ips:
        return
    if isinstance(first, str) and first and (first != status_part.get("podIP")
                                             or pod_ips is not status_part.get("podIPs")):
        rest = {k: v for k, v in status_part.items() if k not in ("podIP", "podIPs")}
        pod["status"] = {**rest, "podIP": first, "podIPs": pod_ips}


# -- daemon sets ---------------------------------------------------------------------------------

TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
"""The annotation the apps/v1 encoding writes a DaemonSet's internal ``templateGeneration``
to (``pkg/apis/apps/v1/conversion.go``)."""


def _generation_of(obj: dict[str, Any] | None) -> int:
    annotations = (obj or {}).get("metadata", {}).get("annotations") or {}
    try:
        return int(annotations.get(TEMPLATE_GENERATION, "0"))
    except (TypeError, ValueError):
        return 0


def template_generation(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """DaemonSet strategy ``PrepareForCreate`` (``templateGeneration`` at least 1) and
    ``PrepareForUpdate`` (the old one, plus one when ``spec.template`` changed), written to
    the :data:`TEMPLATE_GENERATION` annotation. Replaces (never mutates) the annotations."""
    if old is None:
        generation = max(_generation_of(obj), 1)
    else:
        generation = _generation_of(old)
        if (obj.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            generation += 1
    meta = obj["metadata"]
    meta["annotations"] = {**(meta.get("annotations") or {}), TEMPLATE_GENERATION: str(generation)}


def is_daemon_sets(rt: ResourceType) -> bool:
    """``rt`` is the apps ``daemonsets`` resource."""
    return rt.plural == "daemonsets" and rt.group == "apps"


# -- namespaces ----------------------------------------------------------------------------------


def prepare_namespace_create(obj: dict[str, Any], name: str) -> None:
    """Namespace strategy ``PrepareForCreate``: the namespace controller's finalizer is always
    in ``spec.finalizers``; ``SetDefaults_Namespace``: the name label."""
    meta = obj["metadata"]
    meta["labels"] = {**(meta.get("labels") or {}), NAME_LABEL: name}
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        obj["spec"] = spec = {}
    finalizers = spec.get("finalizers") or []
    if KUBERNETES_FINALIZER not in finalizers:
        spec["finalizers"] = [*finalizers, KUBERNETES_FINALIZER]


def spec_finalizers(obj: dict[str, Any]) -> list[str]:
    """A namespace's ``spec.finalizers`` (empty when absent or malformed)."""
    spec = obj.get("spec")
    finalizers = spec.get("finalizers") if isinstance(spec, dict) else None
    return finalizers if isinstance(finalizers, list) else []


def is_terminating(namespace: Entry) -> bool:
    """``status.phase`` is ``Terminating`` (what NamespaceLifecycle checks)."""
    if b'"Terminating"' not in namespace.body:
        return False
    phase = (namespace.decode().get("status") or {}).get("phase")
    return bool(phase == TERMINATING)


def prepare_namespace_update(
    new: dict[str, Any], old: dict[str, Any], name: str, *, keep_finalizers: bool
) -> None:
    """Namespace strategy ``PrepareForUpdate``: a main-resource update keeps
    ``spec.finalizers`` (only ``/finalize`` changes them); ``SetDefaults_Namespace`` puts the
    name label back. Replaces (never mutates) the nested dicts it changes; an empty
    ``spec.finalizers`` is dropped, as Go's encoding omits it."""
    new_meta = new["metadata"]
    new_meta["labels"] = {**(new_meta.get("labels") or {}), NAME_LABEL: name}
    spec = new.get("spec")
    spec = dict(spec) if isinstance(spec, dict) else {}
    finalizers = spec_finalizers(old if keep_finalizers else new)
    if finalizers:
        spec["finalizers"] = finalizers
    else:
        spec.pop("finalizers", None)  # an empty list is omitted (omitempty)
    new["spec"] = spec


