"""HTTP handling of the embedded API server (informers/testing/handler.py): bad input answers
the right Status and the server keeps serving; routing, bodies, keep-alive, health.

Raw requests go through the official client's own connection pool
(``ApiClient.rest_client.pool_manager``), because its typed methods cannot send broken bodies.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from informers.testing.status import MAX_REQUEST_BODY_BYTES


@pytest.fixture
def raw(api_server: Any, api_client: Any):
    pool = api_client.rest_client.pool_manager

    def request(method: str, path: str, body: bytes | None = None,
                content_type: str | None = None, auth: bool = True,
                **headers: str) -> tuple[int, Any]:
        if auth:
            headers["Authorization"] = f"Bearer {api_server.token}"
        if content_type is not None:
            headers["Content-Type"] = content_type
        resp = pool.request(method, api_server.url + path, body=body, headers=headers,
                            retries=False)
        try:
            return resp.status, json.loads(resp.data)
        except ValueError:
            return resp.status, resp.data
    return request


def healthy(api_client: Any) -> bool:
    return client.CoreV1Api(api_client).read_namespace("default").metadata.name == "default"


def test_malformed_json_is_400_and_the_server_keeps_serving(raw, api_client):
    code, status = raw("POST", "/api/v1/namespaces/default/configmaps", b'{"metadata": {',
                       "application/json")
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"].startswith("couldn't get version/kind; json parse error: ")
    code, status = raw("POST", "/api/v1/namespaces/default/configmaps", b"[1, 2]",
                       "application/json")
    assert (code, status["reason"]) == (400, "BadRequest")
    assert healthy(api_client)


@pytest.mark.parametrize("path", [
    "/api/v1/namespaces/default/widgets", "/apis/example.com/v1/things", "/api/v2/pods",
    "/api/v1/namespaces/default/pods/a/log", "/api/v1/namespaces/default/configmaps/c/status",
    "/api/v1/namespaces/default/pods/a/status/extra", "/openapi/v2", "/apis/nope",
    "/api/v1/namespaces/default/nodes",
])
def test_unknown_paths_are_404(raw, api_client, path):
    code, status = raw("GET", path)
    assert code == 404
    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                      "status": "Failure",
                      "message": "the server could not find the requested resource",
                      "reason": "NotFound", "details": {}, "code": 404}
    assert healthy(api_client)


def test_wrong_content_types_are_415(raw, api_client):
    code, status = raw("POST", "/api/v1/namespaces/default/configmaps",
                       b"metadata: {name: x}", "text/plain")
    assert (code, status["reason"]) == (415, "UnsupportedMediaType")
    code, status = raw("PATCH", "/api/v1/namespaces/default/pods/a", b"{}", "application/json")
    assert (code, status["message"]) == (415, (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json"))
    code, status = raw("PATCH", "/api/v1/namespaces/default/pods/a", b"{}",
                       "application/apply-patch+yaml")
    assert code == 415
    assert "does not implement server-side apply" in status["message"]
    assert healthy(api_client)


def test_yaml_and_chunked_bodies_are_accepted(raw, api_server):
    code, made = raw("POST", "/api/v1/namespaces/default/configmaps",
                     b"metadata:\n  name: from-yaml\ndata:\n  k: v\n", "application/yaml")
    assert (code, made["data"]) == (201, {"k": "v"})

    def chunks():
        yield b'{"metadata": {"name": '
        yield b'"chunked"}}'

    code, made = raw("POST", "/api/v1/namespaces/default/configmaps", chunks(),
                     "application/json")
    assert (code, made["metadata"]["name"]) == (201, "chunked")
    assert api_server.request_log(verb="create")[-1].status == 201


def test_oversized_body_is_413_and_the_server_keeps_serving(raw, api_client):
    body = b'{"metadata": {"name": "big"}, "data": {"k": "' + b"x" * MAX_REQUEST_BODY_BYTES \
        + b'"}}'
    code, status = raw("POST", "/api/v1/namespaces/default/configmaps", body,
                       "application/json")
    # kube-apiserver's default --max-request-body-bytes is 3 MiB.
    assert (code, status["reason"], status["message"]) == (
        413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")
    assert healthy(api_client)


def test_methods_a_path_does_not_serve_are_405(raw, api_client):
    code, status = raw("PUT", "/api/v1/namespaces/default/pods", b"{}", "application/json")
    assert (code, status["reason"]) == (405, "MethodNotAllowed")
    code, _ = raw("POST", "/api/v1/namespaces/default/pods/a", b"{}", "application/json")
    assert code == 405
    code, _ = raw("POST", "/api/v1/pods", b"{}", "application/json")  # no namespace to create in
    assert code == 405
    code, _ = raw("DELETE", "/api/v1/namespaces/default/pods/a/status")
    assert code == 405
    code, _ = raw("POST", "/version", b"{}", "application/json")
    assert code == 405
    assert healthy(api_client)


def test_health_endpoints_need_no_token_but_the_api_does(raw):
    for path in ("/healthz", "/livez", "/readyz"):
        assert raw("GET", path, auth=False) == (200, b"ok")
    code, status = raw("GET", "/version", auth=False)
    assert (code, status["reason"]) == (401, "Unauthorized")
    code, status = raw("POST", "/api/v1/namespaces/default/configmaps", b"{}",
                       "application/json", auth=False)
    assert code == 401


def test_an_unexpected_server_error_is_a_500_status(raw, api_server, monkeypatch):
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(api_server.endpoints, "get", boom)
    code, status = raw("GET", "/api/v1/namespaces/default/pods/a")
    assert (code, status["reason"], status["message"]) == (
        500, "InternalError", "Internal error occurred: RuntimeError: kaboom")


def test_connections_are_kept_alive(api_server, api_client):
    core = client.CoreV1Api(api_client)
    for _ in range(5):
        core.list_namespaced_pod("default")
    pool = api_client.rest_client.pool_manager.connection_from_url(api_server.url)
    assert pool.num_connections == 1
