"""Tests for controllers.endpoint.writer, over real HTTP with the official client."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from controllers.endpoint.writer import EndpointsWriter
from informers.errors import ApiConnectionError, StatusError
from informers.testing import ApiServer


class Recorder:
    def __init__(self):
        self.events = []

    def event(self, obj, type, reason, message):
        self.events.append((obj["metadata"]["namespace"], obj["metadata"]["name"], type, reason,
                            message))


def body(name="web", rv=None, subsets=None):
    meta = {"name": name}
    if rv is not None:
        meta["resourceVersion"] = rv
    out = {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta}
    if subsets is not None:
        out["subsets"] = subsets
    return out


SUBSETS = [{"addresses": [{"ip": "10.0.0.1", "nodeName": "node-1"}],
            "ports": [{"port": 80, "protocol": "TCP"}]}]


@pytest.fixture
def server():
    with ApiServer() as s:
        yield s


def test_create_update_delete(server):
    client = server.api_client()
    try:
        writer = EndpointsWriter(client)
        created = writer.create("default/web", "default", body(subsets=SUBSETS))
        assert created["subsets"] == SUBSETS
        assert server.get("endpoints", "default", "web")["subsets"] == SUBSETS
        rv = created["metadata"]["resourceVersion"]
        updated = writer.update("default/web", "default", body(rv=rv))
        assert updated["metadata"]["resourceVersion"] != rv
        assert "subsets" not in server.get("endpoints", "default", "web")
        assert writer.delete("default", "web") is True
        assert writer.delete("default", "web") is False  # 404 is success
        assert [(r.verb, r.status) for r in server.request_log(resource="endpoints")] == [
            ("create", 201), ("update", 200), ("delete", 200), ("delete", 404)
        ]
    finally:
        client.close()


def test_failures_raise_after_a_warning_event(server):
    client = server.api_client()
    try:
        recorder = Recorder()
        writer = EndpointsWriter(client, event_recorder=recorder)
        created = writer.create("default/web", "default", body())
        with pytest.raises(StatusError) as info:
            writer.update("default/web", "default", body(rv="1"))  # stale version
        assert info.value.code == 409
        with pytest.raises(StatusError):
            writer.create("default/web", "default", body())  # already exists
        server.fail_next(1, 500, verb="delete", resource="endpoints")
        with pytest.raises(StatusError):
            writer.delete("default", "web")
        assert [e[:4] for e in recorder.events] == [
            ("default", "web", "Warning", "FailedToUpdateEndpoint"),
            ("default", "web", "Warning", "FailedToCreateEndpoint"),
        ]
        assert recorder.events[0][4].startswith("Failed to update endpoint default/web: 409")
        assert recorder.events[1][4].startswith(
            "Failed to create endpoint for service default/web: 409")
        assert created["metadata"]["name"] == "web"
    finally:
        client.close()


def test_connection_errors_raise_after_an_event():
    with ApiServer() as s:
        client = s.api_client()
    recorder = Recorder()
    try:  # the server is gone: connection refused
        writer = EndpointsWriter(client, event_recorder=recorder, request_timeout=5)
        with pytest.raises(ApiConnectionError):
            writer.create("default/web", "default", body())
        assert [e[3] for e in recorder.events] == ["FailedToCreateEndpoint"]
    finally:
        client.close()


class _TerminatingNamespace(http.server.BaseHTTPRequestHandler):
    """Answers every request as kube-apiserver's NamespaceLifecycle admission does for a
    namespace being deleted (a 403 whose Status carries the NamespaceTerminating cause)."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status = {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'endpoints "web" is forbidden: unable to create new content in namespace '
                       "gone because it is being terminated",
            "reason": "Forbidden",
            "details": {"name": "web", "kind": "endpoints", "causes": [
                {"reason": "NamespaceTerminating", "message": "namespace gone is being "
                 "terminated", "field": "metadata.namespace"}]},
            "code": 403,
        }
        data = json.dumps(status).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_create_in_terminating_namespace_is_dropped_without_event():
    from kubernetes import client as k8s

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TerminatingNamespace)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    api_client = k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{httpd.server_port}"))
    try:
        recorder = Recorder()
        writer = EndpointsWriter(api_client, event_recorder=recorder)
        assert writer.create("gone/web", "gone", body()) is None
        assert recorder.events == []
    finally:
        api_client.close()
        httpd.shutdown()
        httpd.server_close()
        thread.join()
