"""Computes the Endpoints subsets a Service should have from its Pods.

The pure half of the endpoints controller's ``syncService`` (the loop over the Service's pods
in ``pkg/controller/endpoint/endpoints_controller.go``, k8s.io/kubernetes v1.36.3, with
``podToEndpointAddressForService`` and ``addEndpointSubset``), with ``ShouldPodBeInEndpoints``
and ``ShouldSetHostname`` from k8s.io/endpointslice v0.36.3 ``util/controller_utils.go`` and
``FindPort`` from its ``utils.go`` (``staging/src/k8s.io/endpointslice`` in the kubernetes
repository).

Pods and Services are plain dicts as the API server's JSON decodes them. Go reads absent
fields as zero values, and so does this module: a missing ``status.phase`` is ``""``, a
missing ``targetPort`` is the integer 0, a missing ``protocol`` is ``""``. A field of the
wrong JSON type (which the API server would never send, but a hand-made object might) is
read as absent too, so malformed objects never raise here: at worst the pod or the port is
left out, with a debug log line naming it.

All functions are pure and thread-safe; they never mutate their arguments.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controllers.endpoint.ip_sloppy import parse_ip_sloppy
from controllers.endpoint.json_values import as_map as _map
from controllers.endpoint.repack import (
    SENTINEL_PORT_RECORD,
    AddressRecord,
    PortRecord,
    address_record,
    port_record,
    repack_records,
)

__all__ = [
    "CLUSTER_IP_NONE",
    "ComputedSubsets",
    "PodEntryMemo",
    "canonical_ip",
    "compute_subsets",
    "endpoint_port_from_service_port",
    "find_port",
    "ip_family",
    "is_ipv6_string",
    "is_pod_ready",
    "is_service_ip_set",
    "pod_ready_condition",
    "pod_to_endpoint_address",
    "should_pod_be_in_endpoints",
    "should_set_hostname",
]

logger = logging.getLogger(__name__)

CLUSTER_IP_NONE = "None"
"""``spec.clusterIP`` of a headless Service (k8s.io/api core/v1 ``ClusterIPNone``)."""

_IPV6 = "IPv6"  # core/v1 IPv6Protocol
_CONTAINER_RESTART_ALWAYS = "Always"  # core/v1 ContainerRestartPolicyAlways (sidecars)


def _list(value: Any) -> list[Any]:
    return value if type(value) is list else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _name(obj: Mapping[str, Any]) -> str:
    meta = _map(obj.get("metadata"))
    return f"{_str(meta.get('namespace'))}/{_str(meta.get('name'))}"


# -- pods -------------------------------------------------------------------------------------


def pod_ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The first ``Ready`` condition in ``status.conditions``, or ``None``.

    ``GetPodReadyCondition``.
    """
    for condition in _list(_map(pod.get("status")).get("conditions")):
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's Ready condition has status ``"True"`` (``podutil.IsPodReady``)."""
    condition = pod_ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def should_pod_be_in_endpoints(pod: Mapping[str, Any], include_terminating: bool) -> bool:
    """``ShouldPodBeInEndpoints``: which pods count at all.

    Terminal pods (phase ``Failed`` or ``Succeeded``, whatever the restart policy) and pods with
    neither ``status.podIP`` nor ``status.podIPs`` never count; terminating pods (with a
    ``metadata.deletionTimestamp``) count only when ``include_terminating`` (the Service's
    ``publishNotReadyAddresses``). Pending, Unknown and Running pods all count.
    """
    status = _map(pod.get("status"))
    if status.get("phase") in ("Failed", "Succeeded"):
        return False
    if not _str(status.get("podIP")) and not _list(status.get("podIPs")):
        return False
    return include_terminating or _map(pod.get("metadata")).get("deletionTimestamp") is None


def ip_family(text: str) -> int | None:
    """4 or 6 for an IP that ``k8s.io/utils/net.ParseIPSloppy`` accepts, else ``None``.

    IPv4-mapped IPv6 addresses count as IPv4 and dotted quads with leading zeros are accepted,
    as in Go; zones (``%eth0``) are not.
    """
    parsed = parse_ip_sloppy(text)
    return None if parsed is None else parsed[0]


def canonical_ip(text: str) -> str | None:
    """The IP as Go's ``net.IP.String()`` writes what ``ParseIPSloppy`` read, else ``None``.

    IPv6 in RFC 5952 form (lower case, no leading zeros, the longest run of two or more zero
    groups, the first of equals, as ``::``); IPv4 and IPv4-mapped IPv6 as a plain dotted quad
    without leading zeros. The endpoints controller writes pod IPs this way (``ip.String()``
    in ``podToEndpointAddressForService``), however the pod spells them.
    """
    parsed = parse_ip_sloppy(text)
    return None if parsed is None else parsed[1]


def is_ipv6_string(text: str) -> bool:
    """``k8s.io/utils/net.IsIPv6String``: a parseable IP that is not IPv4 (nor IPv4-mapped).

    Anything that does not parse is *not* IPv6, so the controller treats it as IPv4, as Go does.
    """
    return ip_family(text) == 6


def pod_to_endpoint_address(
    service: Mapping[str, Any], pod: Mapping[str, Any]
) -> dict[str, Any] | None:
    """``podToEndpointAddressForService``: the pod's address for this Service, or ``None``.

    The IP family is the Service's ``spec.ipFamilies[0]`` if set; else that of a set
    ``spec.clusterIP`` (not ``"None"``); else that of the pod's ``status.podIP``. The address
    IP is the first ``status.podIPs`` entry of that family (only ``podIPs`` is scanned), in
    canonical form (:func:`canonical_ip`: ``FD00::0A`` is written ``fd00::a``, as Go
    restringifies it); ``None`` when there is none. Entries that are not IPs at all are
    skipped with a warning (Go would treat them as IPv4 and then fail to write the
    Endpoints). The result is
    ``{"ip", "nodeName", "targetRef": {"kind": "Pod", "namespace", "name", "uid"}}``:
    ``nodeName`` is always present (``""`` when
    unscheduled) and ``targetRef`` has no ``resourceVersion``; empty reference fields are left
    out as Go's ``omitempty`` does.
    """
    spec = _map(service.get("spec"))
    families = _list(spec.get("ipFamilies"))
    if families:
        want_v6 = families[0] == _IPV6
    else:
        cluster_ip = _str(spec.get("clusterIP"))
        if cluster_ip and cluster_ip != CLUSTER_IP_NONE:
            want_v6 = is_ipv6_string(cluster_ip)
        else:
            want_v6 = is_ipv6_string(_str(_map(pod.get("status")).get("podIP")))
    endpoint_ip = ""
    for pod_ip in _list(_map(pod.get("status")).get("podIPs")):
        ip = _str(_map(pod_ip).get("ip"))
        parsed = parse_ip_sloppy(ip)
        if parsed is None:
            # Go would take an unparseable string as an IPv4 address, and the API server would
            # then reject the whole Endpoints; we leave it out instead.
            logger.warning("pod %s: ignoring malformed status.podIPs entry %r", _name(pod), ip)
            continue
        if want_v6 == (parsed[0] == 6):
            endpoint_ip = parsed[1]
            break
    if not endpoint_ip:
        return None
    meta = _map(pod.get("metadata"))
    ref: dict[str, str] = {"kind": "Pod"}
    for key in ("namespace", "name", "uid"):
        value = _str(meta.get(key))
        if value:
            ref[key] = value
    return {
        "ip": endpoint_ip,
        "nodeName": _str(_map(pod.get("spec")).get("nodeName")),
        "targetRef": ref,
    }


def should_set_hostname(pod: Mapping[str, Any], service: Mapping[str, Any]) -> bool:
    """``ShouldSetHostname``: the pod has a hostname and its subdomain is this Service's name
    in the same namespace."""
    pod_spec = _map(pod.get("spec"))
    pod_meta = _map(pod.get("metadata"))
    svc_meta = _map(service.get("metadata"))
    return (
        bool(_str(pod_spec.get("hostname")))
        and _str(pod_spec.get("subdomain")) == _str(svc_meta.get("name"))
        and _str(svc_meta.get("namespace")) == _str(pod_meta.get("namespace"))
    )


# -- ports ------------------------------------------------------------------------------------


def find_port(pod: Mapping[str, Any], service_port: Mapping[str, Any]) -> int | None:
    """``FindPort``: the pod port a Service port targets, or ``None`` when none fits.

    An integer ``targetPort`` is used as is, unvalidated (absent means 0). A string one names a
    container port: the first port, in the pod's containers and then its sidecars (init
    containers with ``restartPolicy: Always``), whose ``name`` equals it and whose ``protocol``
    equals the Service port's. Any other JSON type fits nothing.
    """
    target = service_port.get("targetPort", 0)
    if isinstance(target, bool):
        return None
    if isinstance(target, int):
        return target
    if not isinstance(target, str):
        return None
    protocol = _str(service_port.get("protocol"))
    spec = _map(pod.get("spec"))
    containers = [c for c in _list(spec.get("containers")) if isinstance(c, Mapping)]
    containers += [
        c
        for c in _list(spec.get("initContainers"))
        if isinstance(c, Mapping) and c.get("restartPolicy") == _CONTAINER_RESTART_ALWAYS
    ]
    for container in containers:
        for port in _list(container.get("ports")):
            if (
                isinstance(port, Mapping)
                and _str(port.get("name")) == target
                and _str(port.get("protocol")) == protocol
            ):
                number = port.get("containerPort", 0)
                return number if isinstance(number, int) and not isinstance(number, bool) else 0
    return None


def endpoint_port_from_service_port(service_port: Mapping[str, Any], port: int) -> dict[str, Any]:
    """``endpointPortFromServicePort``: ``{name, port, protocol, appProtocol}`` in JSON form.

    ``name`` and ``protocol`` are left out when empty; ``appProtocol`` is copied when the
    Service port has one (even ``""``).
    """
    out: dict[str, Any] = {}
    name = _str(service_port.get("name"))
    if name:
        out["name"] = name
    out["port"] = port
    protocol = _str(service_port.get("protocol"))
    if protocol:
        out["protocol"] = protocol
    app_protocol = service_port.get("appProtocol")
    if isinstance(app_protocol, str):
        out["appProtocol"] = app_protocol
    return out


# -- services ---------------------------------------------------------------------------------


def is_service_ip_set(service: Mapping[str, Any]) -> bool:
    """``IsServiceIPSet``: ``spec.clusterIP`` is neither ``""`` nor ``"None"``."""
    cluster_ip = _str(_map(service.get("spec")).get("clusterIP"))
    return cluster_ip not in ("", CLUSTER_IP_NONE)


@dataclass
class ComputedSubsets:
    """What a sync wants the Endpoints to hold.

    Attributes:
        subsets: The repacked, canonically ordered subsets (``[]`` when none).
        ready: Ready (address, port) pairs before repacking, as the controller logs them.
        not_ready: Not-ready (address, port) pairs before repacking.
        skipped_pods: ``namespace/name`` of selected pods that got no address (no IP of the
            Service's family), for logging.
    """

    subsets: list[dict[str, Any]] = field(default_factory=list)
    ready: int = 0
    not_ready: int = 0
    skipped_pods: list[str] = field(default_factory=list)


class PodEntryMemo:
    """What :func:`compute_subsets` worked out per pod at its last call for one Service.

    Not thread-safe: one per Service, used by one sync at a time (the work queue never runs
    two syncs of one key at once). It holds the last Service object and pod objects it saw,
    so the objects' identities cannot be reused while they are remembered.
    """

    __slots__ = ("entries", "service")

    def __init__(self) -> None:
        self.service: Mapping[str, Any] | None = None
        self.entries: dict[int, tuple[Mapping[str, Any], _PodEntry]] = {}


_PodEntry = tuple[tuple[tuple[AddressRecord, bool, PortRecord], ...], int, int, "str | None"]
"""One pod's contribution: its (address, ready, port) records for
:func:`~controllers.endpoint.repack.repack_records`, ready and not-ready pair counts, and its
name when it was skipped for having no IP of the Service's family."""


def _pod_entry(service: Mapping[str, Any], pod: Mapping[str, Any], publish_not_ready: bool,
               service_ports: list[Mapping[str, Any]], headless: bool) -> _PodEntry:
    if not should_pod_be_in_endpoints(pod, publish_not_ready):
        return (), 0, 0, None
    address = pod_to_endpoint_address(service, pod)
    if address is None:
        logger.debug(
            "Service %s: pod %s has no IP of the service's family, not included",
            _name(service), _name(pod),
        )
        return (), 0, 0, _name(pod)
    if should_set_hostname(pod, service):
        address = {
            "ip": address["ip"],
            "hostname": _str(_map(pod.get("spec")).get("hostname")),
            "nodeName": address["nodeName"],
            "targetRef": address["targetRef"],
        }
    ready = publish_not_ready or is_pod_ready(pod)
    record = address_record(address)
    if not service_ports:
        # Go does not count these in its log totals; neither do we.
        return (((record, ready, SENTINEL_PORT_RECORD),) if headless else ()), 0, 0, None
    raw: list[tuple[AddressRecord, bool, PortRecord]] = []
    for service_port in service_ports:
        number = find_port(pod, service_port)
        if number is None:
            logger.debug(
                "Service %s: no port of pod %s fits service port %r",
                _name(service), _name(pod), service_port.get("name", ""),
            )
            continue
        port = endpoint_port_from_service_port(service_port, number)
        raw.append((record, ready, port_record(port)))
    pairs = len(raw)
    return tuple(raw), (pairs if ready else 0), (0 if ready else pairs), None


def compute_subsets(
    service: Mapping[str, Any], pods: Iterable[Mapping[str, Any]],
    memo: PodEntryMemo | None = None,
) -> ComputedSubsets:
    """The subsets a Service's Endpoints should have, given the pods its selector selects.

    ``pods`` must already be the pods of the Service's namespace matching its selector (the
    caller decides what the selector means, including that a missing selector selects
    nothing). For each pod, in order (``syncService``'s loop): skip it unless
    :func:`should_pod_be_in_endpoints` (terminating pods only with
    ``publishNotReadyAddresses``); build its address (:func:`pod_to_endpoint_address`; no IP
    of the Service's family skips it); add the hostname when :func:`should_set_hostname`; file
    it as ready when ``publishNotReadyAddresses`` or the pod is Ready, else as not ready. A
    Service without ports gives each pod one port-less subset if it is headless
    (``clusterIP: None``) and nothing otherwise; with ports, each port :func:`find_port` can
    resolve gives one subset, and unresolvable ports are skipped for that pod. The result is
    :func:`~controllers.endpoint.repack.repack_subsets` of all that (the address and port dicts
    built here are already normalized, so the normalization step is skipped).

    With ``memo`` (one per Service, kept by the caller between syncs), a pod that is the very
    object it was at the previous call for the very same Service object is not worked out
    again: its entries are taken from the memo (informer caches replace an object on every
    change and never modify one). The result is the same either way.
    """
    spec = _map(service.get("spec"))
    publish_not_ready = spec.get("publishNotReadyAddresses") is True
    service_ports = [p for p in _list(spec.get("ports")) if isinstance(p, Mapping)]
    headless = _str(spec.get("clusterIP")) == CLUSTER_IP_NONE
    previous = memo.entries if memo is not None and memo.service is service else {}
    current: dict[int, tuple[Mapping[str, Any], _PodEntry]] = {}
    result = ComputedSubsets()
    raw: list[tuple[AddressRecord, bool, PortRecord]] = []
    for pod in pods:
        if not isinstance(pod, Mapping):
            continue
        hit = previous.get(id(pod))
        if hit is not None and hit[0] is pod:
            entry = hit[1]
        else:
            entry = _pod_entry(service, pod, publish_not_ready, service_ports, headless)
        if memo is not None:
            current[id(pod)] = (pod, entry)
        raw.extend(entry[0])
        result.ready += entry[1]
        result.not_ready += entry[2]
        if entry[3] is not None:
            result.skipped_pods.append(entry[3])
    if memo is not None:
        memo.service, memo.entries = service, current
    result.subsets = repack_records(raw)
    return result
