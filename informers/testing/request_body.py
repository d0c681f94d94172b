"""Checks a write's request body and applies the defaults kube-apiserver's decoder applies.

Every create, update, patch and apply of :class:`~informers.testing.strategy.Strategy` passes
its body through :func:`normalize_body` before any registry rule runs: the type and version
the body names are checked (``runtime.Decoder``: 400 on a mismatch), ``kind`` and
``apiVersion`` are dropped (the storage keeps neither), empty fields are omitted as Go's
``omitempty`` does, and built-in kinds get their defaulting functions
(:mod:`informers.testing.defaults`, ``pkg/apis/*/v1/defaults.go``). Pure: it reads and
mutates only the body it is given.
"""

from __future__ import annotations

from typing import Any

from informers.testing import status
from informers.testing.defaults import apply_defaults
from informers.testing.kind_rules import (
    default_endpoints,
    is_endpoints,
    is_pods,
    omit_empty,
    round_trip_pod_ips,
)
from informers.testing.resources import ResourceType

__all__ = ["normalize_body"]


def normalize_body(rt: ResourceType, obj: Any, seeding: bool = True) -> dict[str, Any]:
    """Check and normalise a request body (in place); returns it. Custom resources must name
    their ``apiVersion`` (an unstructured object carries it; the seeding helpers need not).

    Raises:
        StatusError: 400 when the body is not an object, names another kind or version, or
            its ``metadata`` is not an object.
    """
    if not isinstance(obj, dict):
        raise status.bad_request(
            f"the body of the request must be a JSON object of kind {rt.kind}"
        )
    kind = obj.get("kind")
    if kind not in (None, "", rt.kind):
        raise status.bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): "
            f'kind "{kind}" (apiVersion "{obj.get("apiVersion")}")'
        )
    api_version = obj.get("apiVersion")
    if api_version not in (None, "", rt.api_version) or (
            not seeding and not rt.builtin and api_version != rt.api_version):
        raise status.bad_request(
            f"the API version in the data ({api_version or ''}) does not match the expected "
            f"API version ({rt.api_version})"
        )
    meta = obj.get("metadata")
    if meta is None:
        obj["metadata"] = meta = {}
    if not isinstance(meta, dict):
        raise status.bad_request("metadata must be a JSON object")
    obj.pop("kind", None)
    obj.pop("apiVersion", None)
    omit_empty(rt, obj)
    if rt.builtin:
        apply_defaults(rt.group, rt.plural, obj)
    if is_pods(rt):
        round_trip_pod_ips(obj)
    elif is_endpoints(rt):
        default_endpoints(obj)
    return obj
