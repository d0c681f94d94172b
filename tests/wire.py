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


def watch_lines(server: Any, path: str, count: int, *, accept: str = "application/json",
                query: list[tuple[str, str]] | None = None) -> list[Any]:
    """The first ``count`` events (decoded) of a watch on ``path`` (``?watch=1`` added;
    bounded by ``timeoutSeconds=10``)."""
    api = server.api_client()
    try:
        _, url, headers, _, _ = api.param_serialize(
            "GET", path, query_params=[("watch", "1"), ("timeoutSeconds", "10"),
                                       *(query or [])],
            header_params={"Accept": accept}, auth_settings=["BearerToken"])
        response = api.rest_client.pool_manager.request(
            "GET", url, headers=headers, preload_content=False, timeout=15)
        events: list[Any] = []
        buffer = b""
        try:
            for chunk in response.stream(1024):
                buffer += chunk
                while b"\n" in buffer and len(events) < count:
                    line, buffer = buffer.split(b"\n", 1)
                    events.append(json.loads(line))
                if len(events) >= count:
                    break
        finally:
            response.release_conn()
            response.close()
        return events
    finally:
        api.close()
