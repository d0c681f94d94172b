"""Raw HTTP requests to a tests.servers.TestServer with any body, Content-Type and Accept
(the official client rewrites patch content types): through the server's own ``ApiClient``
so that credentials and TLS are those of the other tests."""

from __future__ import annotations

import json
from typing import Any


def call(server: Any, method: str, path: str, body: Any = None, *,
         content_type: str = "application/json", accept: str = "application/json",
         query: list[tuple[str, str]] | None = None) -> tuple[int, Any]:
    """``(status, decoded JSON body)`` (the raw text when the body is not JSON). ``body``:
    bytes/str as is, anything else as JSON."""
    api = server.api_client()
    try:
        _, url, headers, _, _ = api.param_serialize(
            method, path, query_params=query or [],
            header_params={"Content-Type": content_type, "Accept": accept},
            auth_settings=["BearerToken"])
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        response = api.rest_client.pool_manager.request(
            method, url, body=body, headers=headers, preload_content=True, timeout=30)
        data = response.data
        try:
            return response.status, json.loads(data)
        except ValueError:
            return response.status, data.decode(errors="replace")
    finally:
        api.close()
