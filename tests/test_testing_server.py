"""The public API of informers.testing.ApiServer (informers/testing/server.py): lifecycle,
authentication, clients and kubeconfig (kubectl), seeding helpers, request log, open watches.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from informers.clock import FakeClock
from informers.errors import StatusError
from informers.testing import DEFAULT_NAMESPACES, ApiServer, RequestRecord


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def test_context_manager_serves_the_default_namespaces_and_stops():
    with ApiServer() as server:
        assert server.url == f"http://127.0.0.1:{server.port}" and server.port > 0
        core = client.CoreV1Api(server.api_client())
        assert sorted(n.metadata.name for n in core.list_namespace().items) == sorted(
            DEFAULT_NAMESPACES)
        port = server.port
    # Stopped: nothing listens any more.
    import socket

    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_every_request_needs_the_bearer_token(api_server):
    # A wrong token is unauthorized; no token at all is the anonymous user, whom RBAC
    # forbids the API (tests/test_testing_parity.py holds both to kube-apiserver).
    good = client.CoreV1Api(api_server.api_client())
    assert good.read_namespace("default").metadata.name == "default"
    for token, code, reason, message, details in (
        ("wrong", 401, "Unauthorized", "Unauthorized", None),
        (None, 403, "Forbidden", 'namespaces "default" is forbidden: User "system:anonymous" '
         'cannot get resource "namespaces" in API group "" at the cluster scope',
         {"name": "default", "kind": "namespaces"}),
    ):
        configuration = client.Configuration(host=api_server.url)
        if token:
            configuration.api_key = {"BearerToken": token}
            configuration.api_key_prefix = {"BearerToken": "Bearer"}
        with pytest.raises(ApiException) as info:
            client.CoreV1Api(client.ApiClient(configuration)).read_namespace("default")
        assert info.value.status == code
        expected = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": message, "reason": reason, "details": details, "code": code}
        assert json.loads(info.value.body) == {k: v for k, v in expected.items()
                                               if v is not None}
    assert good.read_namespace("default").metadata.name == "default"  # still serving


def test_api_client_over_tls_and_a_new_client_per_call(api_server):
    first, second = api_server.api_client(), api_server.api_client(secure=True)
    assert first is not second
    assert second.configuration.host == api_server.https_url
    names = [n.metadata.name for n in client.CoreV1Api(second).list_namespace().items]
    assert "kube-system" in names


def test_written_kubeconfig_loads_in_the_official_client(api_server, tmp_path):
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    assert (tmp_path / "kubeconfig").stat().st_mode & 0o777 == 0o600
    loaded = config.new_client_from_config(config_file=path)
    assert client.CoreV1Api(loaded).read_namespace("kube-public").metadata.name == "kube-public"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_reads_through_the_written_kubeconfig(api_server, tmp_path):
    api_server.create(pod("web"))
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")

    def kubectl(*args: str) -> str:
        done = subprocess.run(["kubectl", "--kubeconfig", path, *args], capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    listed = json.loads(kubectl("get", "pods", "-n", "default", "-o", "json"))
    assert [p["metadata"]["name"] for p in listed["items"]] == ["web"]
    table = kubectl("get", "namespaces")
    assert table.split()[:3] == ["NAME", "STATUS", "AGE"]  # the Table kubectl asks for
    assert {line.split()[0] for line in table.splitlines()[1:]} == set(DEFAULT_NAMESPACES)
    assert any(r.path == "/api/v1/namespaces/default/pods" and r.verb == "list"
               for r in api_server.requests)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_writes_with_default_validation(api_server, tmp_path):
    """kubectl's manifest writes work with its default validation (the server publishes the
    OpenAPI documents kubectl reads first: tests/test_testing_openapi.py)."""
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    manifest = tmp_path / "pod.json"
    manifest.write_text(json.dumps(pod("web")))

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["kubectl", "--kubeconfig", path, *args], capture_output=True,
                              text=True, timeout=60, check=False)

    assert kubectl("create", "-f", str(manifest)).stdout == "pod/web created\n"
    assert kubectl("label", "pod", "web", "tier=front").stdout == "pod/web labeled\n"
    assert kubectl("patch", "pod", "web", "-p", '{"metadata":{"annotations":{"a":"b"}}}'
                   ).stdout == "pod/web patched\n"
    stored = api_server.get("pods", "default", "web")
    assert stored["metadata"]["labels"] == {"tier": "front"}
    assert stored["metadata"]["annotations"] == {"a": "b"}
    assert kubectl("delete", "pod", "web").stdout == 'pod "web" deleted\n'
    assert api_server.get("pods", "default", "web") is None
    # Imperative creates of built-in kinds send protobuf (informers/testing/protobuf.py).
    imperative = kubectl("create", "configmap", "cm", "--from-literal=a=b")
    assert (imperative.returncode, imperative.stdout) == (0, "configmap/cm created\n")
    assert api_server.get("configmaps", "default", "cm")["data"] == {"a": "b"}


def test_seeding_helpers_store_copies_and_watchers_see_them(api_server):
    original = pod("a", app="x")
    created = api_server.create(original)
    original["metadata"]["labels"]["app"] = "mutated"
    created["metadata"]["labels"]["app"] = "mutated too"
    stored = api_server.get("pods", "default", "a")
    assert stored["metadata"]["labels"] == {"app": "x"}
    assert (stored["kind"], stored["apiVersion"]) == ("Pod", "v1")
    assert api_server.get("pods", "default", "missing") is None
    # Helpers keep the status given (a create through the API would reset it).
    running = api_server.create(pod("b") | {"status": {"phase": "Running"}})
    assert running["status"] == {"phase": "Running", "qosClass": "BestEffort"}
    stored["metadata"]["labels"] = {"app": "y"}
    stored["metadata"]["resourceVersion"] = "1"  # ignored: helpers update unconditionally
    stored["status"] = {"phase": "Running"}
    updated = api_server.update(stored)
    assert (updated["metadata"]["labels"], updated["status"]) == (
        {"app": "y"}, {"phase": "Running", "qosClass": "BestEffort"})
    patched = api_server.patch("pods", "default", "a", [
        {"op": "replace", "path": "/metadata/labels/app", "value": "z"}], patch_type="json")
    assert patched["metadata"]["labels"] == {"app": "z"}
    assert [p["metadata"]["name"] for p in api_server.list("pods", label_selector="app=z")] \
        == ["a"]
    assert api_server.list("configmaps", "default") == []
    api_server.delete("pods", "default", "a")
    assert [p["metadata"]["name"] for p in api_server.list("pods")] == ["b"]
    with pytest.raises(StatusError) as info:
        api_server.create(pod("b"))
    assert (info.value.code, info.value.reason) == (409, "AlreadyExists")
    lease = api_server.create({"metadata": {"name": "l"}}, resource="leases",
                              namespace="kube-node-lease")
    assert (lease["apiVersion"], lease["metadata"]["namespace"]) == (
        "coordination.k8s.io/v1", "kube-node-lease")
    node = api_server.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})
    assert "namespace" not in node["metadata"]


def test_resource_version_is_one_counter_across_kinds(api_server):
    start = int(api_server.resource_version)
    cm = api_server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    p = api_server.create(pod("p"))
    assert [int(cm["metadata"]["resourceVersion"]), int(p["metadata"]["resourceVersion"])] == [
        start + 1, start + 2]
    assert api_server.resource_version == str(start + 2)


def test_request_log_records_every_answered_request(api_server, api_client):
    core = client.CoreV1Api(api_client)
    api_server.clear_request_log()
    core.list_namespaced_pod("default", limit=5)
    core.create_namespaced_pod("default", pod("a"))
    core.patch_namespaced_pod_status("a", "default", {"status": {"phase": "Running"}})
    with pytest.raises(ApiException):
        core.read_namespaced_pod("zz", "default")
    records = api_server.requests
    assert [(r.verb, r.resource, r.name, r.subresource, r.status) for r in records] == [
        ("list", "pods", "", "", 200), ("create", "pods", "", "", 201),
        ("patch", "pods", "a", "status", 200), ("get", "pods", "zz", "", 404)]
    first = records[0]
    assert isinstance(first, RequestRecord)
    assert (first.group, first.version, first.namespace, first.method, first.path,
            first.query) == ("", "v1", "default", "GET", "/api/v1/namespaces/default/pods",
                             {"limit": "5"})
    assert records[0].time <= records[-1].time
    assert [r.verb for r in api_server.request_log(resource="pods", verb="create")] == ["create"]
    assert api_server.wait_for_requests(1, verb="get", timeout=0.1)
    api_server.clear_request_log()
    assert api_server.requests == []


def test_open_watches_are_counted_by_resource(api_server, api_client):
    core = client.CoreV1Api(api_client)
    pods = core.list_namespaced_pod("default", watch=True, _preload_content=False,
                                    _request_timeout=10)
    maps = core.list_namespaced_config_map("default", watch=True, _preload_content=False,
                                           _request_timeout=10)
    assert api_server.wait_for_watches(2)
    assert (api_server.watch_count(), api_server.watch_count("pods")) == (2, 1)
    assert api_server.wait_for_watches(1, resource="configmaps")
    assert not api_server.wait_for_watches(3, timeout=0.05)
    pods.close()
    # The server notices a client that hung up even while its stream is idle.
    assert api_server.wait_for_no_watches("pods")
    assert api_server.watch_count() == 1
    maps.close()


def test_restart_requires_a_started_server():
    server = ApiServer()
    with pytest.raises(RuntimeError):
        server.restart()
    server.stop()  # stopping a server never started is a no-op


def _connection_threads() -> int:
    return sum(1 for t in threading.enumerate()
               if t.name == "informers-testing-apiserver-connection")


def test_connection_threads_end_when_the_client_closes_its_pool():
    with ApiServer() as server:
        assert _connection_threads() == 0
        idle_client, watch_client = server.api_client(), server.api_client()
        client.CoreV1Api(idle_client).list_namespaced_pod("default")  # then idle in its pool
        stream = client.CoreV1Api(watch_client).list_namespaced_pod(
            "default", watch=True, _preload_content=False)
        assert server.wait_for_watches(1)
        assert _connection_threads() == 2
        # The watch is idle: no event, no bookmark, no timeout for half an hour. The server
        # waits on its socket, so it sees the hang-up at once (not at its next write).
        stream.close()
        watch_client.close()
        idle_client.close()
        assert server.wait_for_no_watches(timeout=2.0)
        deadline = time.monotonic() + 2.0
        while _connection_threads() and time.monotonic() < deadline:
            time.sleep(0.005)
        assert _connection_threads() == 0


def test_a_finished_watch_keeps_its_connection_for_the_next_request():
    clock = FakeClock()
    with ApiServer(clock=clock) as server, server.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        for _ in range(3):
            stream = core.list_namespaced_pod("default", watch=True, timeout_seconds=5,
                                              _preload_content=False)
            assert server.wait_for_watches(1)
            clock.step(5)
            assert stream.data == b""  # ended cleanly at timeoutSeconds
            # The next request reuses the connection: once a watch has ended, the client
            # writing to it is not a hang-up.
            core.list_namespaced_pod("default")
            assert server.wait_for_no_watches()
        pool = api_client.rest_client.pool_manager.connection_from_url(server.url)
        assert pool.num_connections == 1
        assert [(r.verb, r.status) for r in server.request_log(resource="pods")] == [
            ("watch", 200), ("list", 200)] * 3


def _closed_by_server(sock: Any, within: float) -> float:
    """Seconds until the server closes ``sock`` (reads EOF or a reset), failing after
    ``within``."""
    start = time.monotonic()
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - start


def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout():
    import socket
    import ssl

    from informers.testing import tls

    assert ApiServer().header_read_timeout == 32.0  # kube-apiserver's ReadHeaderTimeout
    assert ApiServer().idle_timeout == 90.0  # and IdleTimeout
    with ApiServer(header_read_timeout=0.5) as server:
        silent = socket.create_connection(("127.0.0.1", server.port))
        # A slow client: the request line and then one header byte every 0.05 s; the
        # deadline covers the whole header block, not each read.
        slow = socket.create_connection(("127.0.0.1", server.port))
        slow.sendall(b"GET /version HTTP/1.1\r\n")
        # Over TLS the handshake counts too.
        no_handshake = socket.create_connection(("127.0.0.1", server.https_port))
        try:
            for _ in range(30):  # 1.5 s, well past the deadline
                try:
                    slow.sendall(b"X")
                except OSError:
                    break
                time.sleep(0.05)
            for sock in (silent, slow, no_handshake):
                assert _closed_by_server(sock, 5.0) < 5.0
        finally:
            for sock in (silent, slow, no_handshake):
                sock.close()
        deadline = time.monotonic() + 2.0
        while _connection_threads() and time.monotonic() < deadline:
            time.sleep(0.005)
        assert _connection_threads() == 0
        # Clients that speak in time are served, over HTTP and TLS.
        context = ssl.create_default_context(cafile=tls.ca_file())
        with socket.create_connection(("127.0.0.1", server.https_port)) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as secure:
            secure.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
            assert secure.recv(4096).startswith(b"HTTP/1.1 200 OK\r\n")


def test_a_kept_alive_connection_is_closed_after_the_idle_timeout():
    import socket

    with ApiServer(header_read_timeout=0.1, idle_timeout=0.8) as server, \
            socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 200 OK\r\n")
        # Idle past the header timeout but within the idle one: still served.
        time.sleep(0.3)
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 200 OK\r\n")
        assert 0.3 < _closed_by_server(sock, 5.0) < 5.0


def test_a_watch_outlives_both_timeouts():
    import socket

    with ApiServer(header_read_timeout=0.1, idle_timeout=0.1) as server, \
            socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(f"GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\n"
                     f"Host: x\r\nAuthorization: Bearer {server.token}\r\n\r\n".encode())
        assert server.wait_for_watches(1)
        time.sleep(0.3)  # nothing sent for longer than both
        assert server.watch_count() == 1
        server.create({"metadata": {"name": "late"}}, "configmaps")
        sock.settimeout(5.0)
        received = b""
        while b'"late"' not in received:
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
        assert received.startswith(b"HTTP/1.1 200 OK\r\n")
