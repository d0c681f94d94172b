"""The non-resource GETs of the embedded API server: ``/openapi/...``, ``/api`` and ``/apis``
(legacy or aggregated discovery, by the ``Accept`` header) and the group and version
discovery documents.

Routes to :class:`informers.testing.openapi.OpenAPI`, the registry's aggregated discovery
(with kube-apiserver's headers) and :meth:`informers.testing.endpoints.Endpoints.discovery`.
Thread-safe as what it routes to.
"""

from __future__ import annotations

import datetime
import hashlib
import json

from informers.testing import status
from informers.testing.endpoints import Endpoints, Response
from informers.testing.openapi import OpenAPI
from informers.testing.resources import (
    AGGREGATED_DISCOVERY,
    ResourceRegistry,
    wants_aggregated_discovery,
)

__all__ = ["aggregated_discovery", "serve"]


def serve(method: str, path: str, query: dict[str, str], accept: str, if_none_match: str, *,
          openapi: OpenAPI, registry: ResourceRegistry, endpoints: Endpoints,
          server_address: str, now: datetime.datetime) -> Response:
    """Answer a non-resource request (405 for anything but GET and HEAD)."""
    if method not in ("GET", "HEAD"):
        raise status.method_not_allowed()
    if path.startswith("/openapi/"):
        return openapi.serve(path, query, accept, if_none_match, now)
    if path.rstrip("/") in ("/api", "/apis") and wants_aggregated_discovery(accept):
        return aggregated_discovery(registry, path.rstrip("/") == "/api")
    return endpoints.discovery(path, server_address)


def aggregated_discovery(registry: ResourceRegistry, core: bool) -> Response:
    """The aggregated discovery document with kube-apiserver's headers (an ``Etag`` of the
    body's SHA-512, ``Vary: Accept``, ``Cache-Control: public``)."""
    body = json.dumps(registry.aggregated_discovery(core), separators=(",", ":")).encode()
    return Response(200, body, [
        ("Content-Type", AGGREGATED_DISCOVERY), ("Cache-Control", "public"),
        ("Etag", f'"{hashlib.sha512(body).hexdigest().upper()}"'), ("Vary", "Accept")])
