"""Truncates Endpoints subsets to the 1000-address capacity, as the endpoints controller does.

The Python counterpart of ``truncateEndpoints``, ``addressSubset`` and
``capacityAnnotationSetCorrectly`` in ``pkg/controller/endpoint/endpoints_controller.go``
(k8s.io/kubernetes v1.36.3). Pure and thread-safe; inputs are never mutated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "MAX_CAPACITY",
    "OVER_CAPACITY_ANNOTATION",
    "TRUNCATED",
    "capacity_annotation_set_correctly",
    "count_addresses",
    "truncate_subsets",
]

MAX_CAPACITY = 1000
"""Most addresses (ready plus not ready, over all subsets) an Endpoints may hold
(endpoints_controller.go ``maxCapacity``)."""

OVER_CAPACITY_ANNOTATION = "endpoints.kubernetes.io/over-capacity"
"""Set on a truncated Endpoints (k8s.io/api core/v1 ``EndpointsOverCapacity``)."""

TRUNCATED = "truncated"
"""The value of :data:`OVER_CAPACITY_ANNOTATION` (endpoints_controller.go ``truncated``)."""


def _length(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def count_addresses(subsets: Sequence[Mapping[str, Any]] | None) -> tuple[int, int]:
    """(ready, not ready) address counts summed over ``subsets``."""
    ready = not_ready = 0
    for subset in subsets or ():
        if isinstance(subset, Mapping):
            ready += _length(subset.get("addresses"))
            not_ready += _length(subset.get("notReadyAddresses"))
    return ready, not_ready


def truncate_subsets(
    subsets: Sequence[Mapping[str, Any]], max_capacity: int = MAX_CAPACITY
) -> tuple[list[dict[str, Any]], bool]:
    """``truncateEndpoints``: keep at most ``max_capacity`` addresses, favouring ready ones.

    Returns ``(subsets, truncated)``. Nothing changes when the total is within capacity.
    Otherwise, when the ready addresses alone exceed it, each subset in order keeps the first
    ``min(ceil(ready_i / total_ready * max), remaining)`` ready addresses and no not-ready
    ones; else every ready address stays and each subset keeps the first
    ``min(ceil(not_ready_i / total_not_ready * (max - total_ready)), remaining)`` not-ready
    addresses. ``remaining`` starts at the budget and shrinks by what each subset kept. The
    proportion is computed in floating point before ``ceil``, in that order, as Go does.
    Emptied address lists are left out of the returned dicts (Go writes them as empty slices,
    which JSON omits).
    """
    total_ready, total_not_ready = count_addresses(subsets)
    out = [dict(subset) for subset in subsets]
    if total_ready + total_not_ready <= max_capacity:
        return out, False
    truncate_ready = total_ready > max_capacity
    budget = max_capacity if truncate_ready else max_capacity - total_ready
    total = total_ready if truncate_ready else total_not_ready
    remaining = budget
    field = "addresses" if truncate_ready else "notReadyAddresses"
    for subset in out:
        addresses = subset.get(field)
        count = _length(addresses)
        keep = min(math.ceil((count / total) * budget), remaining)
        kept = list(addresses[:keep]) if isinstance(addresses, list) else []
        if kept:
            subset[field] = kept
        else:
            subset.pop(field, None)
        if truncate_ready:
            subset.pop("notReadyAddresses", None)
        remaining -= len(kept)
    return out, True


def capacity_annotation_set_correctly(
    annotations: Mapping[str, Any] | None,
    subsets: Sequence[Mapping[str, Any]] | None,
    max_capacity: int = MAX_CAPACITY,
) -> bool:
    """``capacityAnnotationSetCorrectly``: the Endpoints is within capacity and not annotated.

    ``False`` when it holds more than ``max_capacity`` addresses (it must be truncated) or
    carries the over-capacity annotation with any value.
    """
    ready, not_ready = count_addresses(subsets)
    if ready + not_ready > max_capacity:
        return False
    return not (isinstance(annotations, Mapping) and OVER_CAPACITY_ANNOTATION in annotations)
