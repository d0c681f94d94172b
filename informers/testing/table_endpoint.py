"""``kubectl``'s Table requests (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``) of
a get or list: the object or list as the endpoints answer it, printed by
:mod:`informers.testing.tables` (a custom resource by its CRD's printer columns)."""

from __future__ import annotations

import datetime
import json
from typing import Any

from informers.testing import tables
from informers.testing.endpoints import Endpoints, Response
from informers.testing.options import ListOptions
from informers.testing.request_info import RequestInfo
from informers.testing.resources import ResourceType

__all__ = ["custom_columns", "serve"]


def custom_columns(rt: ResourceType) -> tuple[dict[str, Any], ...] | None:
    """A custom resource's printer columns (``None``: a built-in kind's printer)."""
    return None if rt.builtin else tuple(getattr(rt, "printer_columns", ()))


def serve(endpoints: Endpoints, info: RequestInfo, query: dict[str, str],
          now: datetime.datetime) -> Response:
    """A get or list answered as a ``meta.k8s.io/v1`` Table."""
    rt = info.rt
    assert rt is not None
    if info.verb == "get":
        obj = json.loads(endpoints.get(info, query).body)
        objects, meta = [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
    else:
        listed = json.loads(endpoints.list(info, ListOptions.parse(query)).body)
        objects = [{"kind": rt.kind, "apiVersion": rt.api_version, **item}
                   for item in listed.get("items", [])]
        meta = listed.get("metadata", {})
    table = tables.table_of(rt.group, rt.plural, objects, meta, now, query,
                            custom_columns=custom_columns(rt))
    return Response(200, json.dumps(table, separators=(",", ":")).encode())
