"""HTTP handling of the embedded API server (informers/testing/handler.py): bad input answers
the right Status and the server keeps serving; routing, bodies, keep-alive, health.

Raw requests go through the official client's own connection pool
(``ApiClient.rest_client.pool_manager``), because its typed methods cannot send broken bodies.
"""

from __future__ import annotations

import json
import socket
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
    "/api/v1/namespaces/default/widgets", "/api/v2/pods",
    "/api/v1/namespaces/default/pods/a/log", "/api/v1/namespaces/default/configmaps/c/status",
    "/api/v1/namespaces/default/pods/a/status/extra", "/openapi/v1", "/apis/nope",
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


def test_resource_paths_of_a_group_nothing_serves_are_gos_plain_404(raw, api_client):
    # A group only CRDs could serve: kube-apiserver's chain ends in Go's http.NotFound
    # (held to the real server in tests/test_testing_crds.py).
    assert raw("GET", "/apis/example.com/v1/things") == (404, b"404 page not found\n")
    assert healthy(api_client)


def test_wrong_content_types_are_415(raw, api_client):
    code, status = raw("POST", "/api/v1/namespaces/default/configmaps",
                       b"metadata: {name: x}", "text/plain")
    assert (code, status["reason"]) == (415, "UnsupportedMediaType")
    code, status = raw("PATCH", "/api/v1/namespaces/default/pods/a", b"{}", "application/json")
    assert (code, status["message"]) == (415, (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json, application/apply-patch+yaml"))
    code, status = raw("PATCH", "/api/v1/namespaces/default/pods/a", b"{}",
                       "application/apply-patch+yaml")  # served (informers.testing.apply)
    assert (code, status["reason"]) == (422, "Invalid")  # no fieldManager
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


def exchange(api_server: Any, data: bytes) -> bytes:
    """Send raw bytes on a new connection; everything the server sends until it closes."""
    with socket.create_connection((api_server.host, api_server.port), timeout=5) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_request_heads_are_parsed_like_the_standard_library(api_server):
    # BaseHTTPRequestHandler.parse_request's rules, on the server's own header parser.
    token = api_server.token
    get = b"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: x\r\n"
    # Names in any case; the first of repeated headers wins (email.message.Message.get).
    answer = exchange(api_server, get + f"aUtHoRiZaTiOn: Bearer {token}\r\n"
                      "Authorization: Bearer wrong\r\nConnection: close\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and b"Connection: close" in answer
    # Keep-alive: two requests on one connection, then HTTP/1.0 closes after its answer.
    answer = exchange(api_server, (get + f"Authorization: Bearer {token}\r\n\r\n".encode()) * 2
                      + f"GET /version HTTP/1.0\r\nAuthorization: Bearer {token}\r\n\r\n"
                      .encode())
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 3
    # Expect: 100-continue gets its interim answer before the body is read.
    body = b'{"metadata": {"name": "c"}}'
    answer = exchange(api_server, (
        f"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
    ).encode() + body)
    assert answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n")
    assert api_server.get("configmaps", "default", "c") is not None


@pytest.mark.parametrize("block", [
    b"Host: x\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n",
    b"host: x\nCONTENT-TYPE:application/json \n\n",  # bare LF, no space, trailing space
    b"X-A: 1\r\nx-a: 2\r\nX-B:\r\n\r\n",  # the first of repeated names, empty value
    b"X-Folded: a\r\n  b\r\n\tc\r\nX-Next: n\r\n\r\n",  # obsolete line folding
    b" leading: continuation\r\nX-A: 1\r\n\r\n",
    b"X-A: 1\r\nnot a header\r\nX-B: 2\r\n\r\n",  # ends the headers for the parser
    b"X-A: 1\r\nX B: 2\r\nX-C: 3\r\n\r\n",
    b"X-A: 1\r\n: no name\r\nX-C: 3\r\n\r\n",
    b"X-A: a\rb\r\nX-C: 3\r\n\r\n",  # a bare CR
    b"X-A: 1\r\r\nX-C: 3\r\n\r\n",
    b"From nobody\r\nX-A: 1\r\nFrom somebody\r\nX-C: 3\r\n\r\n",
    "X-Latin: caf\u00e9\r\n\r\n".encode("iso-8859-1"),
    b"X-A: 1\r\nX-Eof: no terminator",
])
def test_headers_are_what_the_standard_library_parses(block):
    import http.client
    import io

    from informers.testing.handler import RequestHandler

    handler = RequestHandler.__new__(RequestHandler)
    handler.raw_requestline = b"GET / HTTP/1.1\r\n"
    handler.rfile, handler.wfile = io.BytesIO(block), io.BytesIO()
    assert handler.parse_request() is True
    expected = http.client.parse_headers(io.BytesIO(block))
    assert sorted(handler.headers) == sorted({name.lower() for name in expected})
    for name in expected:
        assert handler.headers.get(name.upper()) == expected.get(name), name


@pytest.mark.parametrize(("head", "status"), [
    (b"GET / HTTP/1.1\r\n" + b"X-Many: 1\r\n" * 100 + b"\r\n", b"431"),  # 100 + blank
    (b"GET / HTTP/1.1\r\nX-Long: " + b"x" * 65536 + b"\r\n\r\n", b"431"),
    (b"GET / HTTP/2.0\r\n\r\n", b"505"),
    (b"GET / HTTP/x.y\r\n\r\n", b"400"),
    (b"GET / HTTP/1.1 extra\r\n\r\n", b"400"),
    (b"POST /\r\n\r\n", b"400"),
])
def test_malformed_request_heads_get_the_standard_errors(api_server, api_client, head, status):
    # (Before the version is known to be valid the answer has no status line, as HTTP/0.9.)
    answer = exchange(api_server, head)
    assert b"<p>Error code: " + status + b"</p>" in answer
    assert healthy(api_client)
