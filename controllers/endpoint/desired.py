"""Builds the Endpoints object a sync writes, and decides when the current one is already right.

The object-level steps of the endpoints controller's ``syncService``
(``pkg/controller/endpoint/endpoints_controller.go``, k8s.io/kubernetes v1.36.3: the
"nothing to write" check and the building of ``newEndpoints``): labels, the trigger-time and
over-capacity annotations, truncation, the headless label and the managed-by label (as in
Kubernetes v1.33+, kubernetes#130564; the release our real-control-plane tests pin, v1.36,
writes it). Pure and thread-safe; cached objects passed in are deep-copied, never modified.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controllers.endpoint.json_values import as_map as _map
from controllers.endpoint.repack import (
    readiness_digest,
    repack_subsets,
    subsets_equal_ignore_resource_version,
)
from controllers.endpoint.subsets import is_service_ip_set
from controllers.endpoint.trigger_time import TRIGGER_TIME_ANNOTATION, format_rfc3339_nano
from controllers.endpoint.truncate import (
    OVER_CAPACITY_ANNOTATION,
    TRUNCATED,
    capacity_annotation_set_correctly,
    truncate_subsets,
)

__all__ = [
    "HEADLESS_SERVICE_LABEL",
    "MANAGED_BY_LABEL",
    "MANAGED_BY_VALUE",
    "desired_endpoints",
    "endpoints_up_to_date",
    "labels_correct_for_endpoints",
    "string_map",
]

HEADLESS_SERVICE_LABEL = "service.kubernetes.io/headless"
"""Put (with value ``""``) on the Endpoints of a Service without a cluster IP
(k8s.io/api core/v1 ``IsHeadlessService``)."""

MANAGED_BY_LABEL = "endpoints.kubernetes.io/managed-by"
"""Put on every Endpoints this controller writes, with :data:`MANAGED_BY_VALUE`
(endpoints_controller.go ``LabelManagedBy``, Kubernetes v1.33+)."""

MANAGED_BY_VALUE = "endpoint-controller"
"""The managed-by label's value: the controller's name (endpoints_controller.go
``ControllerName``)."""


def string_map(value: Any) -> dict[str, str]:
    """The string-to-string entries of a labels or annotations map (``{}`` for anything else)."""
    if not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def endpoints_up_to_date(
    current: Mapping[str, Any], subsets: list[dict[str, Any]], service_labels: Mapping[str, str]
) -> bool:
    """Whether an existing Endpoints needs no write (``syncService``, Kubernetes v1.36).

    True iff its subsets equal ``subsets`` (:func:`subsets_equal_ignore_resource_version`), as
    they are or once repacked (so subsets another writer ordered differently, e.g.
    kube-controller-manager v1.33+, whose subset order comes from another hash, are not
    rewritten), its labels are right (:func:`labels_correct_for_endpoints`) and it is within
    capacity without the over-capacity annotation.
    """
    meta = _map(current.get("metadata"))
    current_subsets = current.get("subsets")
    current_digest = readiness_digest(current_subsets)
    if current_digest is not None:
        wanted_digest = readiness_digest(subsets)
        if wanted_digest is not None and wanted_digest != current_digest:
            return False  # a cheap proof that neither comparison below can succeed
    return (
        labels_correct_for_endpoints(meta.get("labels"), service_labels)
        and (
            subsets_equal_ignore_resource_version(current_subsets, subsets)
            or (isinstance(current_subsets, list)
                and all(isinstance(s, Mapping) for s in current_subsets)
                and subsets_equal_ignore_resource_version(repack_subsets(current_subsets),
                                                          subsets))
        )
        and capacity_annotation_set_correctly(_map(meta.get("annotations")), current_subsets)
    )


def labels_correct_for_endpoints(labels: Any, service_labels: Mapping[str, str]) -> bool:
    """``labelsCorrectForEndpoints``: the Endpoints' labels are the Service's plus the
    headless label (present or not) and the managed-by label, which must be there with
    :data:`MANAGED_BY_VALUE`.

    So the headless label alone never causes a write, a missing or foreign managed-by label
    does, and so does any other extra label. A Service labelled with the managed-by key itself
    never matches (Go counts the label as skipped on the Endpoints but not on the Service):
    its Endpoints is rewritten on every sync, as upstream.
    """
    if not isinstance(labels, Mapping) or labels.get(MANAGED_BY_LABEL) != MANAGED_BY_VALUE:
        return False
    skipped = 0
    for key, value in labels.items():
        if key in (HEADLESS_SERVICE_LABEL, MANAGED_BY_LABEL):
            skipped += 1
        elif key not in service_labels or service_labels[key] != value:
            return False
    return len(service_labels) == len(labels) - skipped


def desired_endpoints(
    current: Mapping[str, Any] | None,
    name: str,
    service: Mapping[str, Any],
    subsets: list[dict[str, Any]],
    trigger_time: int | None,
) -> dict[str, Any]:
    """The Endpoints to write (``syncService``'s ``newEndpoints``).

    A deep copy of ``current`` (``{"metadata": {"name": name}}`` when there is none), with
    ``kind``/``apiVersion`` set and:

    * ``subsets``: ``subsets`` truncated to capacity (left out when empty);
    * ``labels``: exactly the Service's labels, plus ``service.kubernetes.io/headless: ""``
      when the Service has no cluster IP, and always
      ``endpoints.kubernetes.io/managed-by: endpoint-controller`` (overriding a Service label
      of that key, as upstream);
    * ``annotations``: the current ones, with the trigger time set (RFC 3339 in UTC, Go's
      ``RFC3339Nano``) or removed when ``trigger_time`` is ``None``, and
      ``endpoints.kubernetes.io/over-capacity: truncated`` set or removed (left out when
      empty).

    ``metadata.resourceVersion`` and everything else of ``current`` is kept, so an update is
    conditional on the version the sync read.
    """
    if current is None:
        new: dict[str, Any] = {"metadata": {"name": name}}
    else:
        # Everything but the subsets, which are replaced (copying them took most of the time).
        new = copy.deepcopy({k: v for k, v in current.items() if k != "subsets"})
        if not isinstance(new.get("metadata"), dict):
            new["metadata"] = {"name": name}
    new["apiVersion"] = "v1"
    new["kind"] = "Endpoints"
    meta = new["metadata"]
    annotations = string_map(meta.get("annotations"))
    if trigger_time is not None:
        annotations[TRIGGER_TIME_ANNOTATION] = format_rfc3339_nano(trigger_time)
    else:
        annotations.pop(TRIGGER_TIME_ANNOTATION, None)
    truncated_subsets, truncated = truncate_subsets(subsets)
    if truncated:
        annotations[OVER_CAPACITY_ANNOTATION] = TRUNCATED
    else:
        annotations.pop(OVER_CAPACITY_ANNOTATION, None)
    labels = string_map(_map(service.get("metadata")).get("labels"))  # replaces all labels
    if not is_service_ip_set(service):
        labels[HEADLESS_SERVICE_LABEL] = ""
    else:
        labels.pop(HEADLESS_SERVICE_LABEL, None)
    labels[MANAGED_BY_LABEL] = MANAGED_BY_VALUE
    for field, value in (("labels", labels), ("annotations", annotations)):
        if value:
            meta[field] = value
        else:
            meta.pop(field, None)
    if truncated_subsets:
        new["subsets"] = truncated_subsets
    else:
        new.pop("subsets", None)
    return new
