"""kubectl end to end against the embedded server: ``get`` prints kube-apiserver's columns
(tables), ``-o wide``, ``-w``."""

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
