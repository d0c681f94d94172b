"""examples/08-webhook-operator: its committed CRD and RBAC YAML are what ``informers-gen``
writes from ``api/`` and ``controller.py``, the CRD is served by both servers (``v1`` stored,
``v1alpha1`` served and deprecated, defaults, the CEL rule, the scale subresource), and the
demo runs on the embedded server."""

from __future__ import annotations

import importlib.util
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from test_testing_crds import CRDS, call, install, ok, uninstall

from informers.yaml_loader import load_all_yaml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "08-webhook-operator"
CRD_FILE = EXAMPLE / "config" / "crd" / "sites.example.com_websites.yaml"


def informers_gen(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "informers.crdgen", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60)


CRD_ARGS = ("crd", "--module", "examples/08-webhook-operator/api",
            "--out", "examples/08-webhook-operator/config/crd")
RBAC_ARGS = ("rbac", "--manager", "examples/08-webhook-operator/controller.py:build_manager",
             "--module", "examples/08-webhook-operator/controller.py",
             "--role-name", "website-operator", "--out", "examples/08-webhook-operator/config/rbac")


def test_the_committed_yaml_is_what_the_generator_writes():
    for args in (CRD_ARGS, RBAC_ARGS):
        done = informers_gen(*args, "--check")
        assert (done.returncode, done.stderr) == (0, ""), args
    assert sorted(p.name for p in (EXAMPLE / "config").rglob("*.yaml")) == [
        "role.yaml", "sites.example.com_websites.yaml"]


def test_the_rbac_of_the_operator():
    role, leases = load_all_yaml((EXAMPLE / "config" / "rbac" / "role.yaml").read_text())
    assert role["rules"] == [
        {"apiGroups": ["sites.example.com"], "resources": ["websites"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["sites.example.com"], "resources": ["websites/status"],
         "verbs": ["patch"]}]
    assert (leases["kind"], leases["metadata"], leases["rules"]) == (
        "Role", {"name": "website-operator", "namespace": "website-operator-system"},
        [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
         {"apiGroups": ["coordination.k8s.io"], "resourceNames": ["website-operator"],
          "resources": ["leases"], "verbs": ["get", "update"]}])


def example_crd() -> tuple[dict, str]:
    """The committed CRD in a group of the test's own."""
    (crd,) = load_all_yaml(CRD_FILE.read_text())
    group = f"t{secrets.token_hex(4)}.sites.example.com"
    crd["spec"]["group"] = group
    crd["metadata"]["name"] = f"websites.{group}"
    return crd, group


def test_the_crd_serves_both_versions_with_v1_stored(any_api_server):
    s = any_api_server
    crd, group = example_crd()
    install(s, crd)
    try:
        stored = ok(s, "GET", f"{CRDS}/websites.{group}")
        assert stored["status"]["storedVersions"] == ["v1"]
        assert [(v["name"], v["served"], v["storage"]) for v in stored["spec"]["versions"]] == [
            ("v1", True, True), ("v1alpha1", True, False)]
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/websites"
        site = {"apiVersion": f"{group}/v1", "kind": "Website", "metadata": {"name": "demo"},
                "spec": {"image": "nginx", "content": {"message": "hi"}}}
        created = ok(s, "POST", path, site)
        assert created["spec"] == {"image": "nginx", "replicas": 1, "tier": "free",
                                   "content": {"message": "hi", "format": "html"}}
        code, answer = call(s, "POST", path, {**site, "metadata": {"name": "big"},
                                              "spec": {"image": "nginx", "replicas": 5}})
        assert (code, [(c["field"], c["message"]) for c in answer["details"]["causes"]]) == (
            422, [("spec.replicas", "Invalid value: free websites run at most 3 replicas")])
        listed = ok(s, "GET", f"/apis/{group}/v1alpha1/namespaces/{s.namespace}/websites")
        assert [i["metadata"]["name"] for i in listed["items"]] == ["demo"]
    finally:
        uninstall(s, crd["metadata"]["name"])


def test_the_scale_subresource_reads_the_status(any_api_server):
    s = any_api_server
    crd, group = example_crd()
    install(s, crd)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/websites"
        ok(s, "POST", path, {"apiVersion": f"{group}/v1", "kind": "Website",
                             "metadata": {"name": "demo"},
                             "spec": {"image": "nginx", "replicas": 2}})
        ok(s, "PATCH", f"{path}/demo/status",
           {"status": {"replicas": 1, "selector": "app=demo"}}, "application/merge-patch+json")
        scale = ok(s, "GET", f"{path}/demo/scale")
        assert (scale["kind"], scale["spec"], scale["status"]) == (
            "Scale", {"replicas": 2}, {"replicas": 1, "selector": "app=demo"})
    finally:
        uninstall(s, crd["metadata"]["name"])


def test_the_demo_runs_on_the_embedded_server(capsys):
    spec = importlib.util.spec_from_file_location("example_08_main", EXAMPLE / "main.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--duration", "0"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "created Website default/demo with the schema's defaults: {'image': 'nginx:1.27', "
        "'content': {'message': 'hi', 'format': 'html'}, 'replicas': 1, 'tier': 'free'}",
        "refused Website default/big: Invalid value: free websites run at most 3 replicas",
        "status: 1 replica(s), selector app.kubernetes.io/name=demo, Ready=True",
    ]


@pytest.mark.real_apiserver
def test_the_generated_roles_are_valid_rbac_objects(real_api_server):
    """(kube-apiserver only: the embedded server serves no RBAC.)"""
    from servers import RealServer

    s = RealServer(real_api_server)
    role, leases = load_all_yaml((EXAMPLE / "config" / "rbac" / "role.yaml").read_text())
    name = f"website-operator-{secrets.token_hex(4)}"
    role["metadata"]["name"] = leases["metadata"]["name"] = name
    leases["metadata"]["namespace"] = s.namespace
    cluster_roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    try:
        assert ok(s, "POST", cluster_roles, role)["rules"] == role["rules"]
        made = ok(s, "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{s.namespace}/roles",
                  leases)
        assert made["rules"] == leases["rules"]
    finally:
        call(s, "DELETE", f"{cluster_roles}/{name}")
        s.close()
