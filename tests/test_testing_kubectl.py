"""kubectl end to end against the embedded server: ``get`` prints kube-apiserver's columns
(tables), ``-o wide``, ``-w``; ``apply --server-side`` twice; ``patch`` (strategic)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from informers.testing import ApiServer

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None,
                                reason="kubectl is not installed")


@pytest.fixture
def kubectl(tmp_path):
    with ApiServer() as srv:
        path = srv.write_kubeconfig(tmp_path / "kubeconfig")

        def run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["kubectl", "--kubeconfig", str(path), *args],
                                  capture_output=True, text=True, timeout=timeout, check=False)

        run.server = srv  # type: ignore[attr-defined]
        yield run


def squeeze(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_kubectl_get_pods_shows_ready_and_status(kubectl):
    kubectl.server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    got = kubectl("get", "pods")
    assert got.returncode == 0, got.stderr
    lines = squeeze(got.stdout)
    assert lines[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1][:4] == ["web", "0/1", "Pending", "0"]
    assert re.fullmatch(r"\d+s", lines[1][4])
    wide = squeeze(kubectl("get", "pods", "-o", "wide").stdout)
    assert wide[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                       "NOMINATED NODE", "READINESS GATES"]
    assert wide[1][5:] == ["<none>", "<none>", "<none>", "<none>"]


def test_kubectl_get_watch_prints_rows(kubectl):
    kubectl.server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                           "data": {"a": "1"}})
    got = kubectl("get", "configmaps", "-w", "--request-timeout=3s", timeout=20)
    lines = squeeze(got.stdout)
    assert lines[0] == ["NAME", "DATA", "AGE"]
    assert lines[1][:2] == ["c", "1"]


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: c, image: "nginx:1", ports: [{containerPort: 80}]}
      - {name: d, image: "nginx:1"}
"""


def test_kubectl_apply_server_side_twice_and_client_side_merges(kubectl, tmp_path):
    manifest = tmp_path / "d.yaml"
    manifest.write_text(DEPLOYMENT)
    first = kubectl("apply", "--server-side", "-f", str(manifest))
    assert (first.returncode, first.stdout) == (0, "deployment.apps/web serverside-applied\n")
    manifest.write_text(DEPLOYMENT.replace("replicas: 1", "replicas: 2"))
    second = kubectl("apply", "--server-side", "-f", str(manifest))
    assert (second.returncode, second.stdout) == (0, "deployment.apps/web serverside-applied\n")
    stored = kubectl.server.get("deployments", "default", "web")
    assert stored["spec"]["replicas"] == 2
    assert [(e["manager"], e["operation"]) for e in stored["metadata"]["managedFields"]] == [
        ("kubectl", "Apply")]
    # a strategic merge patch of one container keeps the other
    patch = '{"spec":{"template":{"spec":{"containers":[{"name":"d","image":"nginx:2"}]}}}}'
    patched = kubectl("patch", "deployment", "web", "-p", patch)
    assert patched.returncode == 0, patched.stderr
    containers = kubectl.server.get("deployments", "default", "web")["spec"]["template"][
        "spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("c", "nginx:1"), ("d", "nginx:2")]
