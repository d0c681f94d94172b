"""Decides which Services a pod event concerns (the endpoints controller's pod handlers).

The Python counterpart of ``podEndpointsChanged``, ``determineNeededServiceUpdates`` and the
Service lookup of k8s.io/endpointslice v0.36.3 ``util/controller_utils.go``
(``staging/src/k8s.io/endpointslice`` in the kubernetes repository): ``getServicesForPod``,
and ``GetPodUpdateProjectionKey`` with ``GetServicesToUpdate``, which earlier releases had as
``GetPodServiceMemberships`` and ``GetServicesToUpdateOnPodChange`` (the names used below);
both give the same Service keys. Pure and thread-safe given a thread-safe way to list
Services (a lister).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controllers.endpoint.json_values import as_map as _map
from controllers.endpoint.subsets import is_pod_ready
from informers.keys import meta_namespace_key_func

__all__ = [
    "ServicesInNamespace",
    "pod_endpoints_changed",
    "pod_service_memberships",
    "services_to_update_on_pod_change",
    "valid_selector",
]

logger = logging.getLogger(__name__)

ServicesInNamespace = Callable[[str], Iterable[Mapping[str, Any]]]
"""Lists the Services of a namespace (typically ``lister.services(ns).list(everything())``), or
any part of them that holds every Service that may select the pod (the controller's
:class:`~controllers.endpoint.service_selection.ServiceSelector`)."""


def valid_selector(service: Mapping[str, Any]) -> Mapping[str, str] | None:
    """The Service's ``spec.selector`` if it is a map of strings to strings, else ``None``.

    ``None`` also for an absent (nil) selector, which selects nothing; ``{}`` selects every pod
    of the namespace. A selector of another shape cannot come from the API server; it is
    treated as selecting nothing.
    """
    spec = service.get("spec")
    selector = (spec if spec.__class__ is dict else _map(spec)).get("selector")
    if selector.__class__ is not dict and not isinstance(selector, Mapping):
        return None
    for key, value in selector.items():  # exact-type checks first: this runs per Service
        if (key.__class__ is not str or value.__class__ is not str) and not (  # and pod event
                isinstance(key, str) and isinstance(value, str)):
            return None
    return selector


def pod_service_memberships(
    services: Iterable[Mapping[str, Any]], pod_labels: Mapping[str, str] | None
) -> set[str]:
    """Keys of the ``services`` whose selector selects pods with ``pod_labels``.

    ``services`` are those of the pod's namespace. A nil selector selects nothing, ``{}``
    everything (``GetPodServiceMemberships``); selectors are matched unvalidated, as the API
    server validated them (``ValidatedSetSelector``): a key=value pair the pod cannot carry
    simply never matches.
    """
    labels = pod_labels if isinstance(pod_labels, Mapping) else {}
    keys: set[str] = set()
    for service in services:
        selector = valid_selector(service)
        if selector is None:
            continue
        # A set selector holds when every key=value of it is among the labels.
        if labels.items() >= selector.items():
            try:
                keys.add(meta_namespace_key_func(service))
            except ValueError as err:
                logger.warning("Ignoring a service without a usable key: %s", err)
    return keys


def pod_endpoints_changed(
    old_pod: Mapping[str, Any], new_pod: Mapping[str, Any]
) -> tuple[bool, bool]:
    """``podEndpointsChanged``: ``(pod_changed, labels_changed)``.

    ``labels_changed``: the labels differ (an absent map differs from ``{}``, as Go's
    ``reflect.DeepEqual`` on maps has it), or ``spec.hostname`` or ``spec.subdomain`` differ.
    ``pod_changed``: either side has a ``deletionTimestamp`` (Go compares the pointers, which
    differ whenever one is set), or readiness differs, or the number of ``status.podIPs`` or
    any of their ``ip`` differs. ``status.podIP`` alone and ``spec.nodeName`` do not count.
    """
    old_meta, new_meta = _map(old_pod.get("metadata")), _map(new_pod.get("metadata"))
    old_spec, new_spec = _map(old_pod.get("spec")), _map(new_pod.get("spec"))
    labels_changed = (
        old_meta.get("labels") != new_meta.get("labels")
        or old_spec.get("hostname", "") != new_spec.get("hostname", "")
        or old_spec.get("subdomain", "") != new_spec.get("subdomain", "")
    )
    if (
        old_meta.get("deletionTimestamp") is not None
        or new_meta.get("deletionTimestamp") is not None
    ):
        return True, labels_changed
    if is_pod_ready(old_pod) != is_pod_ready(new_pod):
        return True, labels_changed
    old_ips = _map(old_pod.get("status")).get("podIPs")
    new_ips = _map(new_pod.get("status")).get("podIPs")
    old_ips = old_ips if isinstance(old_ips, list) else []
    new_ips = new_ips if isinstance(new_ips, list) else []
    if len(old_ips) != len(new_ips):
        return True, labels_changed
    for old_ip, new_ip in zip(old_ips, new_ips, strict=True):
        if _map(old_ip).get("ip", "") != _map(new_ip).get("ip", ""):
            return True, labels_changed
    return False, labels_changed


def services_to_update_on_pod_change(
    services_in_namespace: ServicesInNamespace,
    old_pod: Mapping[str, Any],
    new_pod: Mapping[str, Any],
) -> set[str]:
    """``GetServicesToUpdateOnPodChange``: the Service keys a pod update must sync.

    Nothing for a resync (same ``resourceVersion``) or when neither the pod nor its labels
    changed (:func:`pod_endpoints_changed`). Otherwise the Services selecting the new pod;
    when the labels changed, also those selecting the old pod: all of both if the pod changed
    too, else only the symmetric difference (a Service selecting both is unaffected).
    """
    old_meta, new_meta = _map(old_pod.get("metadata")), _map(new_pod.get("metadata"))
    if old_meta.get("resourceVersion") == new_meta.get("resourceVersion"):
        return set()
    pod_changed, labels_changed = pod_endpoints_changed(old_pod, new_pod)
    if not pod_changed and not labels_changed:
        return set()
    namespace = new_meta.get("namespace", "")
    services = list(services_in_namespace(namespace if isinstance(namespace, str) else ""))
    keys = pod_service_memberships(services, new_meta.get("labels"))
    if labels_changed:
        old_keys = pod_service_memberships(services, old_meta.get("labels"))
        keys = keys | old_keys if pod_changed else keys ^ old_keys
    return keys
