"""The real control plane (informers/testing/control_plane.py): a real kube-apiserver on etcd,
built by tools/control-plane/build.sh, serves the official client over TLS with our token;
kube-controller-manager runs its endpoints controller against it; etcd restarts are survived.

Tests marked ``real_apiserver`` share the session's ``real_api_server`` fixture; each works in a
namespace of its own. The last tests check how binaries are found, without starting anything.
"""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from informers.testing.control_plane import (
    BINARIES_ENV,
    ControlPlane,
    ControlPlaneBinaries,
    ControlPlaneError,
    GoMissingError,
    find_binaries,
)

BUILD_SCRIPT = Path(__file__).resolve().parent.parent / "tools" / "control-plane" / "build.sh"

real = pytest.mark.real_apiserver


@pytest.fixture
def namespace(real_api_server):
    name = f"t-{secrets.token_hex(4)}"
    core = client.CoreV1Api(real_api_server.api_client())
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def pod(name: str, node: str | None = None, **labels: str) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "registry.invalid/pause:1"}]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": spec}


@real
def test_serves_the_pinned_release_with_the_default_namespaces(real_api_server):
    api = real_api_server.api_client()
    version = client.VersionApi(api).get_code()
    assert version.git_version == real_api_server.binaries.kubernetes_version
    assert version.git_version.startswith("v1.")
    names = {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
    assert real_api_server.url == f"https://127.0.0.1:{real_api_server.port}"
    assert real_api_server.https_url == real_api_server.url


@real
def test_a_wrong_token_is_unauthorized(real_api_server):
    configuration = client.Configuration(
        host=real_api_server.url, api_key={"BearerToken": "wrong"},
        api_key_prefix={"BearerToken": "Bearer"}, ssl_ca_cert=real_api_server.ca_file)
    with pytest.raises(ApiException) as info:
        client.CoreV1Api(client.ApiClient(configuration)).list_namespace()
    assert info.value.status == 401


@real
def test_create_list_and_watch_pods(real_api_server, namespace):
    core = client.CoreV1Api(real_api_server.api_client())
    for name in ("a", "b"):
        created = core.create_namespaced_pod(namespace, pod(name, app="web"))
        assert created.status.phase == "Pending"  # the registry resets status on create
    listed = core.list_namespaced_pod(namespace, label_selector="app=web")
    assert sorted(p.metadata.name for p in listed.items) == ["a", "b"]

    events: list[tuple[str, str]] = []
    stream = watch.Watch()

    def consume() -> None:
        for event in stream.stream(core.list_namespaced_pod, namespace,
                                   resource_version=listed.metadata.resource_version,
                                   timeout_seconds=30):
            events.append((event["type"], event["object"].metadata.name))
            if event["type"] == "DELETED":
                stream.stop()

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    core.create_namespaced_pod(namespace, pod("c", app="web"))
    core.delete_namespaced_pod("c", namespace, grace_period_seconds=0)
    consumer.join(30)
    assert not consumer.is_alive()
    # ADDED c, then the deletion (a MODIFIED may come between for a graceful delete).
    assert events[0] == ("ADDED", "c") and events[-1] == ("DELETED", "c")


@real
def test_write_kubeconfig_is_usable_by_the_official_client(real_api_server, tmp_path):
    path = real_api_server.write_kubeconfig(tmp_path / "kubeconfig", namespace="kube-system")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    api = config.new_client_from_config(config_file=path)
    assert client.CoreV1Api(api).read_namespace("kube-system").metadata.name == "kube-system"
    assert real_api_server.kubeconfig()["contexts"][0]["context"]["namespace"] == "default"


@real
def test_controller_manager_endpoints_controller_writes_endpoints(real_api_server, namespace):
    core = client.CoreV1Api(real_api_server.api_client())
    core.create_namespaced_service(namespace, {
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80,
                                                         "targetPort": 8080}]}})
    # Bound to a node: an address with an empty nodeName fails Endpoints validation.
    core.create_namespaced_pod(namespace, pod("p", node="node-1", app="web"))
    core.patch_namespaced_pod_status("p", namespace, {"status": {
        "phase": "Running", "podIP": "10.1.0.5", "podIPs": [{"ip": "10.1.0.5"}],
        "conditions": [{"type": "Ready", "status": "True"}]}})
    real_api_server.start_controller_manager()
    try:
        deadline = time.monotonic() + 30
        subsets = None
        while time.monotonic() < deadline:
            try:
                subsets = core.read_namespaced_endpoints("web", namespace).subsets
            except ApiException as exc:
                assert exc.status == 404
            if subsets:
                break
            time.sleep(0.2)
        assert subsets is not None and len(subsets) == 1
        assert [(a.ip, a.node_name, a.target_ref.name) for a in subsets[0].addresses] == [
            ("10.1.0.5", "node-1", "p")]
        assert subsets[0].not_ready_addresses is None
        assert [(p.name, p.port, p.protocol) for p in subsets[0].ports] == [
            ("http", 8080, "TCP")]
    finally:
        real_api_server.stop_controller_manager()


@real
def test_restart_etcd_keeps_the_data(real_api_server, namespace):
    core = client.CoreV1Api(real_api_server.api_client())
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "kept"},
                                                  "data": {"k": "v"}})
    real_api_server.restart_etcd(kill=True)
    deadline = time.monotonic() + 30
    while True:  # kube-apiserver's etcd client reconnects on its own
        try:
            got = core.read_namespaced_config_map("kept", namespace)
            break
        except ApiException as exc:
            if time.monotonic() > deadline:
                raise
            assert exc.status >= 500
            time.sleep(0.2)
    assert got.data == {"k": "v"}


# -- finding the binaries (no control plane started) ---------------------------------------


def test_find_binaries_without_go_and_without_a_cache_says_go_is_missing(tmp_path, monkeypatch):
    monkeypatch.delenv(BINARIES_ENV, raising=False)
    monkeypatch.setenv("KUBE_INFORMERS_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(GoMissingError, match="'go' is not on PATH"):
        find_binaries(BUILD_SCRIPT)


def test_build_script_check_fails_on_an_empty_cache(tmp_path):
    env = {**os.environ, "KUBE_INFORMERS_CACHE": str(tmp_path)}
    done = subprocess.run([str(BUILD_SCRIPT), "--check"], capture_output=True, text=True,
                          env=env, check=False)
    assert (done.returncode, done.stdout) == (3, "")
    assert "not built" in done.stderr


def test_binaries_env_points_at_a_directory(tmp_path, monkeypatch):
    for name, text in (("kube-apiserver", "Kubernetes v1.99.0"), ("etcd", "etcd Version: 9.9.9"),
                       ("kube-controller-manager", "Kubernetes v1.99.0")):
        script = tmp_path / name
        script.write_text(f"#!/bin/sh\necho '{text}'\n")
        script.chmod(0o755)
    monkeypatch.setenv(BINARIES_ENV, str(tmp_path))
    assert find_binaries(BUILD_SCRIPT) == ControlPlaneBinaries(
        str(tmp_path / "kube-apiserver"), str(tmp_path / "kube-controller-manager"),
        str(tmp_path / "etcd"), kubernetes_version="v1.99.0", etcd_version="9.9.9")
    (tmp_path / "etcd").unlink()
    with pytest.raises(ControlPlaneError, match=r"missing: .*etcd"):
        find_binaries(BUILD_SCRIPT)


def test_a_component_that_exits_at_once_fails_start_with_its_log(tmp_path):
    etcd = tmp_path / "etcd"
    etcd.write_text("#!/bin/sh\necho 'etcd: cannot start: no disk' >&2\nexit 7\n")
    etcd.chmod(0o755)
    binaries = ControlPlaneBinaries(str(etcd), str(etcd), str(etcd))
    plane = ControlPlane(binaries, work_dir=tmp_path / "cp", startup_timeout=10)
    with pytest.raises(ControlPlaneError, match=r"(?s)etcd exited \(code 7\).*no disk"):
        plane.start()
    assert (tmp_path / "cp" / "etcd.log").exists()  # logs stay for a look
    assert (tmp_path / "cp" / "ca.crt").exists()
