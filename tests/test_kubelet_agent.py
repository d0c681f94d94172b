"""End to end for controllers.kubelet.agent: file, URL and API-server sources at once.

A NodeAgent follows a manifest directory (tmp_path, inotify where available), a manifest URL (a
local http.server) and the embedded API server, feeding PodConfig -> SyncLoop ->
PodSyncHandler -> pod workers -> RecordingRuntime, all on the real clock with short periods.
After each scripted step the runtime must run exactly the union of what the sources describe,
and no pod may ever be synced by two threads at once.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import eventually

from controllers.kubelet.agent import NodeAgent
from controllers.kubelet.pod_update import API_SOURCE, FILE_SOURCE, HTTP_SOURCE, SyncPodType
from controllers.kubelet.runtime import RecordingRuntime
from informers.testing import ApiServer

NODE = "Node-1"
SUFFIX = "node-1"


def manifest(name: str, image: str = "nginx:1.27") -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n"
            f"  containers:\n  - name: c\n    image: {image}\n")


def write(path: Path, text: str) -> None:
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(text)
    os.replace(tmp, path)


def pod_list(*names: str) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "PodList", "items": [
        {"metadata": {"name": n, "namespace": "web"},
         "spec": {"containers": [{"name": "c", "image": "x:1"}]}} for n in names
    ]}).encode()


def api_pod(name: str, node: str = NODE) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx:1.27"}]}}


class UrlState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.status = 200
        self.body = pod_list()
        self.content_type = "application/json"

    def serve(self, body: bytes, status: int = 200, content_type: str = "application/json"):
        with self.lock:
            self.body, self.status, self.content_type = body, status, content_type


@pytest.fixture
def url_server() -> Iterator[tuple[str, UrlState]]:
    state = UrlState()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with state.lock:
                status, body, ctype = state.status, state.body, state.content_type
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/pods", state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def api_server() -> Iterator[ApiServer]:
    with ApiServer() as server:
        yield server


def desired(manifests: Path, url_names: list[str], server: ApiServer) -> list[str]:
    """The union the three sources describe, as namespace/name keys."""
    keys = [f"default/{p.stem}-{SUFFIX}" for p in manifests.iterdir()
            if not p.name.startswith(".") and p.suffix == ".yaml"]
    keys += [f"web/{n}-{SUFFIX}" for n in url_names]
    keys += [f"{p['metadata']['namespace']}/{p['metadata']['name']}"
             for p in server.list("pods", field_selector=f"spec.nodeName={NODE}")]
    return sorted(keys)


def converge(agent: NodeAgent, runtime: RecordingRuntime, expected: list[str],
             timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        workers = agent.handler.pod_workers  # type: ignore[attr-defined]
        if runtime.running_keys() == expected and workers.idle():
            return
        time.sleep(0.02)
    raise AssertionError(f"runtime runs {runtime.running_keys()}, expected {expected}")


@pytest.mark.slow
def test_three_sources_drive_the_runtime_to_their_union(tmp_path, url_server, api_server):
    url, url_state = url_server
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    write(manifests / "alpha.yaml", manifest("alpha"))
    url_state.serve(pod_list("u1"))
    api_server.create(api_pod("api-1"))
    api_server.create(api_pod("elsewhere", node="node-2"))

    def jitter(action: str, pod: Any, update_type: SyncPodType) -> None:
        time.sleep(0.001)  # widen the window in which two threads could overlap

    runtime = RecordingRuntime(hook=jitter)
    client = api_server.api_client()
    agent = NodeAgent(
        NODE, pod_manifest_path=str(manifests), manifest_url=url, api_client=client,
        file_check_frequency=0.3, http_check_frequency=0.1, runtime=runtime,
        sync_period=0.5, housekeeping_period=0.1,
    )
    url_names = ["u1"]
    try:
        agent.start()
        assert set(agent.config.sources) == {FILE_SOURCE, HTTP_SOURCE, API_SOURCE}
        converge(agent, runtime, desired(manifests, url_names, api_server))
        assert runtime.running_keys() == [
            "default/alpha-node-1", "default/api-1", "web/u1-node-1"]
        assert agent.sources_ready()

        # 1. manifests written and removed, URL content changed, pods bound and deleted
        write(manifests / "beta.yaml", manifest("beta"))
        (manifests / "alpha.yaml").unlink()
        url_names = ["u1", "u2"]
        url_state.serve(pod_list(*url_names))
        api_server.create(api_pod("api-2"))
        api_server.delete("pods", "default", "api-1", grace_period_seconds=0)
        converge(agent, runtime, desired(manifests, url_names, api_server))
        assert runtime.running_keys() == [
            "default/api-2", "default/beta-node-1", "web/u1-node-1", "web/u2-node-1"]

        # 2. faults: the API server loses its watch history and drops watches while pods
        # change; the URL answers 500, then HTML; a bad manifest appears beside good ones.
        api_server.hang_watches()
        api_server.create(api_pod("api-3"))
        api_server.delete("pods", "default", "api-2", grace_period_seconds=0)
        api_server.compact()
        api_server.fail_next(1, 500, verb="list", resource="pods")
        api_server.drop_watches("pods")
        api_server.resume_watches()
        url_state.serve(b"oops", status=500)
        (manifests / "broken.yaml").write_text("kind: Pod\nmetadata: [\n")
        write(manifests / "gamma.yaml", manifest("gamma"))
        expected = [k for k in desired(manifests, url_names, api_server)
                    if k != f"default/broken-{SUFFIX}"]  # never parses: not a pod
        converge(agent, runtime, expected)
        assert "api-3" in " ".join(expected) and "api-2" not in " ".join(expected)
        url_state.serve(b"<html><body>maintenance</body></html>", content_type="text/html")
        src = agent.url_source
        assert src is not None
        assert eventually(lambda: "received an HTML page" in str(src.last_error), timeout=10.0)
        converge(agent, runtime, expected)  # the previous URL pods stay

        # 3. everything goes away
        url_state.serve(b"")  # empty body: an empty SET
        for p in manifests.iterdir():
            p.unlink()
        api_server.delete("pods", "default", "api-3", grace_period_seconds=0)
        converge(agent, runtime, [])
    finally:
        agent.stop()
        client.close()
    assert runtime.overlaps == 0
    assert agent.sync_loop.housekeepings_run > 0
    assert agent.sync_loop.syncs_run > 0
    # every pod the runtime ever ran was bound to this node or came from a static source
    assert "default/elsewhere" not in {key for _, _, key, _ in runtime.history}


def test_agent_without_sources_is_ready_at_once(tmp_path):
    runtime = RecordingRuntime()
    agent = NodeAgent(NODE, runtime=runtime, housekeeping_period=0.05)
    with agent:
        assert agent.sources == {}
        assert agent.sources_ready()
    assert runtime.running_keys() == []


def test_missing_manifest_path_still_makes_the_file_source_ready(tmp_path):
    agent = NodeAgent(NODE, pod_manifest_path=str(tmp_path / "missing"),
                      file_check_frequency=0.2, housekeeping_period=0.05)
    with agent:
        deadline = time.monotonic() + 5
        while not agent.sources_ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert agent.sources_ready()
