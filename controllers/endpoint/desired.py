"""Builds the Endpoints object a sync writes, and decides when the current one is already right.

The object-level steps of the endpoints controller's ``syncService`` (§A.4 steps 9 and 10 of
``reference/endpoints-and-kubelet.md``): labels, the trigger-time and over-capacity
annotations, truncation and the headless label. Pure and thread-safe; cached objects passed in
are deep-copied, never modified.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controllers.endpoint.repack import subsets_equal_ignore_resource_version
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
    "desired_endpoints",
    "endpoints_up_to_date",
    "string_map",
]

HEADLESS_SERVICE_LABEL = "service.kubernetes.io/headless"
"""Put (with value ``""``) on the Endpoints of a Service without a cluster IP
(k8s.io/api core/v1 ``IsHeadlessService``)."""


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def string_map(value: Any) -> dict[str, str]:
    """The string-to-string entries of a labels or annotations map (``{}`` for anything else)."""
    if not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def endpoints_up_to_date(
    current: Mapping[str, Any], subsets: list[dict[str, Any]], service_labels: Mapping[str, str]
) -> bool:
    """Whether an existing Endpoints needs no write (§A.4 step 9).

    True iff its subsets equal ``subsets`` (:func:`subsets_equal_ignore_resource_version`),
    its labels without the headless label equal the Service's (absent and ``{}`` alike), and
    it is within capacity without the over-capacity annotation. So the headless label alone
    never causes a write, and any other extra label does.
    """
    meta = _map(current.get("metadata"))
    labels = meta.get("labels")
    if labels is None:
        labels = {}
    if not isinstance(labels, Mapping):
        return False
    compare = {k: v for k, v in labels.items() if k != HEADLESS_SERVICE_LABEL}
    return (
        compare == dict(service_labels)
        and subsets_equal_ignore_resource_version(current.get("subsets"), subsets)
        and capacity_annotation_set_correctly(_map(meta.get("annotations")), current.get("subsets"))
    )


def desired_endpoints(
    current: Mapping[str, Any] | None,
    name: str,
    service: Mapping[str, Any],
    subsets: list[dict[str, Any]],
    trigger_time: int | None,
) -> dict[str, Any]:
    """The Endpoints to write (§A.4 step 10).

    A deep copy of ``current`` (``{"metadata": {"name": name}}`` when there is none), with
    ``kind``/``apiVersion`` set and:

    * ``subsets``: ``subsets`` truncated to capacity (left out when empty);
    * ``labels``: exactly the Service's labels, plus ``service.kubernetes.io/headless: ""``
      when the Service has no cluster IP (left out when empty);
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
        new = copy.deepcopy(dict(current))
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
