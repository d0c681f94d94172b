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
        run.path = path  # type: ignore[attr-defined]
        yield run


AGE = re.compile(r"\d+s")


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
    """``get -w``: the table of the list, then one row per event; stopped after the first
    event (a SIGTERM, as a user's Ctrl-C)."""
    kubectl.server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                           "data": {"a": "1"}})
    watcher = subprocess.Popen(
        ["kubectl", "--kubeconfig", kubectl.path, "get", "configmaps", "-w"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout is not None
        lines = [watcher.stdout.readline(), watcher.stdout.readline()]
        kubectl.server.create({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "d"}})
        lines.append(watcher.stdout.readline())
    finally:
        watcher.terminate()
        watcher.communicate(timeout=10)
    rows = squeeze("".join(lines))
    assert [row[:2] for row in rows] == [["NAME", "DATA"], ["c", "1"], ["d", "0"]]
    assert all(AGE.fullmatch(row[2]) for row in rows[1:])


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


# -- describe ------------------------------------------------------------------------------
# The manifests spell out what kube-apiserver's defaulting and admission would add (service
# account, tolerations, protocols, the rolling update strategy), so the output is the same
# whichever of those the embedded server applies.

POD = """apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  serviceAccountName: default
  tolerations:
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute,
     tolerationSeconds: 300}
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute,
     tolerationSeconds: 300}
  containers:
  - {name: c, image: "nginx:1", ports: [{containerPort: 80, protocol: TCP}]}
"""

DESCRIBED_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 25%, maxSurge: 25%}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: c, image: "nginx:1", ports: [{containerPort: 80, protocol: TCP}]}
"""


def test_kubectl_describe_pod(kubectl, tmp_path):
    (tmp_path / "pod.yaml").write_text(POD)
    assert kubectl("create", "-f", str(tmp_path / "pod.yaml")).stdout == "pod/web created\n"
    got = kubectl("describe", "pod", "web")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == [
        "Name:             web",
        "Namespace:        default",
        "Priority:         0",
        "Service Account:  default",
        "Node:             <none>",
        "Labels:           app=web",
        "Annotations:      <none>",
        "Status:           Pending",
        "IP:               ",
        "IPs:              <none>",
        "Containers:",
        "  c:",
        "    Image:        nginx:1",
        "    Port:         80/TCP",
        "    Host Port:    0/TCP",
        "    Environment:  <none>",
        "    Mounts:       <none>",
        "Volumes:          <none>",
        "QoS Class:        BestEffort",
        "Node-Selectors:   <none>",
        "Tolerations:      node.kubernetes.io/not-ready:NoExecute op=Exists for 300s",
        "                  node.kubernetes.io/unreachable:NoExecute op=Exists for 300s",
        "Events:           <none>",
    ]


def test_kubectl_describe_deployment(kubectl, tmp_path):
    (tmp_path / "d.yaml").write_text(DESCRIBED_DEPLOYMENT)
    assert kubectl("create", "-f", str(tmp_path / "d.yaml")).returncode == 0
    got = kubectl("describe", "deployment", "web")
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert re.fullmatch(r"CreationTimestamp:      \w{3}, \d\d \w{3} \d{4} [\d:]{8} \+0000",
                        lines[2])
    assert lines[:2] + lines[3:] == [
        "Name:                   web",
        "Namespace:              default",
        "Labels:                 app=web",
        "Annotations:            <none>",
        "Selector:               app=web",
        "Replicas:               2 desired | 0 updated | 0 total | 0 available | 0 unavailable",
        "StrategyType:           RollingUpdate",
        "MinReadySeconds:        0",
        "RollingUpdateStrategy:  25% max unavailable, 25% max surge",
        "Pod Template:",
        "  Labels:  app=web",
        "  Containers:",
        "   c:",
        "    Image:         nginx:1",
        "    Port:          80/TCP",
        "    Host Port:     0/TCP",
        "    Environment:   <none>",
        "    Mounts:        <none>",
        "  Volumes:         <none>",
        "  Node-Selectors:  <none>",
        "  Tolerations:     <none>",
        "Events:            <none>",
    ]


# -- apply (client side), scale, get all ---------------------------------------------------


def test_kubectl_apply_twice_then_scale_and_get_all(kubectl, tmp_path):
    manifest = tmp_path / "d.yaml"
    manifest.write_text(DESCRIBED_DEPLOYMENT)
    first = kubectl("apply", "-f", str(manifest))
    assert (first.returncode, first.stdout) == (0, "deployment.apps/web created\n")
    manifest.write_text(DESCRIBED_DEPLOYMENT.replace("replicas: 2", "replicas: 3")
                        .replace("nginx:1", "nginx:2"))
    second = kubectl("apply", "-f", str(manifest))
    assert (second.returncode, second.stdout) == (0, "deployment.apps/web configured\n")
    stored = kubectl.server.get("deployments", "default", "web")
    assert (stored["spec"]["replicas"], stored["spec"]["template"]["spec"]["containers"]) == (
        3, [{"name": "c", "image": "nginx:2", "ports": [{"containerPort": 80,
                                                         "protocol": "TCP"}],
             "imagePullPolicy": "IfNotPresent", "resources": {},  # the v1 defaults
             "terminationMessagePath": "/dev/termination-log",
             "terminationMessagePolicy": "File"}])
    assert "kubectl.kubernetes.io/last-applied-configuration" in stored["metadata"][
        "annotations"]
    unchanged = kubectl("apply", "-f", str(manifest))
    assert unchanged.stdout == "deployment.apps/web unchanged\n"

    scaled = kubectl("scale", "deployment/web", "--replicas=5")
    assert (scaled.returncode, scaled.stdout) == (0, "deployment.apps/web scaled\n")
    stored = kubectl.server.get("deployments", "default", "web")
    assert stored["spec"]["replicas"] == 5
    assert sorted((e["manager"], e["operation"], e.get("subresource", ""), e["fieldsV1"])
                  for e in stored["metadata"]["managedFields"])[0] == (
        "kubectl", "Update", "scale", {"f:spec": {"f:replicas": {}}})
    stale = kubectl("scale", "deployment/web", "--replicas=1", "--current-replicas=2")
    assert stale.returncode == 1
    assert stale.stderr == ("error: Expected replicas to be 2, was 5\n")

    kubectl.server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    got = kubectl("get", "all")
    assert got.returncode == 0, got.stderr
    blocks = [squeeze(block) for block in got.stdout.strip().split("\n\n")]
    masked = [[[("<age>" if AGE.fullmatch(c) else c) for c in row] for row in block]
              for block in blocks]
    assert masked == [
        [["NAME", "READY", "STATUS", "RESTARTS", "AGE"], ["pod/p", "0/1", "Pending", "0",
                                                          "<age>"]],
        [["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"],
         ["service/kubernetes", "ClusterIP", "10.0.0.1", "<none>", "443/TCP", "<age>"]],
        [["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
         ["deployment.apps/web", "0/5", "0", "0", "<age>"]],
    ]


# -- CRDs: create -f, get with printer columns, explain, scale -------------------------------

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Note, type: string, jsonPath: .spec.note, priority: 1}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              color: {type: string, description: The colour of the widget., default: red}
              replicas: {type: integer, minimum: 0}
              note: {type: string}
          status:
            type: object
            properties:
              replicas: {type: integer}
"""

WIDGET = """apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {replicas: 1, note: hello}
"""


def test_kubectl_crd_create_get_explain_scale(kubectl, tmp_path):
    (tmp_path / "crd.yaml").write_text(CRD)
    (tmp_path / "w.yaml").write_text(WIDGET)
    created = kubectl("create", "-f", str(tmp_path / "crd.yaml"))
    assert created.stdout == (
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created\n")
    assert kubectl("create", "-f", str(tmp_path / "w.yaml")).stdout == (
        "widget.example.com/w1 created\n")

    def table(*args: str) -> list[list[str]]:
        got = kubectl("get", *args)
        assert got.returncode == 0, got.stderr
        return [[("<age>" if AGE.fullmatch(c) else c) for c in row]
                for row in squeeze(got.stdout)]

    assert table("widgets") == [["NAME", "COLOR", "REPLICAS", "AGE"],
                                ["w1", "red", "1", "<age>"]]
    assert table("wd", "-o", "wide") == [["NAME", "COLOR", "REPLICAS", "NOTE", "AGE"],
                                         ["w1", "red", "1", "hello", "<age>"]]
    explained = kubectl("explain", "widgets.spec.color")
    assert explained.returncode == 0, explained.stderr
    assert [line.strip() for line in explained.stdout.splitlines() if line.strip()] == [
        "GROUP:      example.com", "KIND:       Widget", "VERSION:    v1",
        "FIELD: color <string>", "DESCRIPTION:", "The colour of the widget."]
    scaled = kubectl("scale", "widget/w1", "--replicas=4")
    assert scaled.stdout == "widget.example.com/w1 scaled\n"
    assert table("widgets")[1][:3] == ["w1", "red", "4"]
    assert table("all")[-2:] == [["NAME", "COLOR", "REPLICAS", "AGE"],  # category "all"
                                 ["widget.example.com/w1", "red", "4", "<age>"]]


# -- api-resources ---------------------------------------------------------------------------


def test_kubectl_api_resources(kubectl, tmp_path):
    (tmp_path / "crd.yaml").write_text(CRD)
    assert kubectl("create", "-f", str(tmp_path / "crd.yaml")).returncode == 0
    got = kubectl("api-resources", "-o", "wide")
    assert got.returncode == 0, got.stderr
    assert [[c for c in row if c] for row in squeeze(got.stdout)] == [
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"],
        ["configmaps", "cm", "v1", "true", "ConfigMap", ALL],
        ["endpoints", "ep", "v1", "true", "Endpoints", ALL],
        ["events", "ev", "v1", "true", "Event", ALL],
        ["namespaces", "ns", "v1", "false", "Namespace",
         "create,delete,get,list,patch,update,watch"],
        ["nodes", "no", "v1", "false", "Node", ALL],
        ["persistentvolumeclaims", "pvc", "v1", "true", "PersistentVolumeClaim", ALL],
        ["persistentvolumes", "pv", "v1", "false", "PersistentVolume", ALL],
        ["pods", "po", "v1", "true", "Pod", ALL, "all"],
        ["secrets", "v1", "true", "Secret", ALL],
        ["serviceaccounts", "sa", "v1", "true", "ServiceAccount", ALL],
        ["services", "svc", "v1", "true", "Service", ALL, "all"],
        ["mutatingwebhookconfigurations", "admissionregistration.k8s.io/v1", "false",
         "MutatingWebhookConfiguration", ALL, "api-extensions"],
        ["validatingadmissionpolicies", "admissionregistration.k8s.io/v1", "false",
         "ValidatingAdmissionPolicy", ALL, "api-extensions"],
        ["validatingadmissionpolicybindings", "admissionregistration.k8s.io/v1", "false",
         "ValidatingAdmissionPolicyBinding", ALL, "api-extensions"],
        ["validatingwebhookconfigurations", "admissionregistration.k8s.io/v1", "false",
         "ValidatingWebhookConfiguration", ALL, "api-extensions"],
        ["customresourcedefinitions", "crd,crds", "apiextensions.k8s.io/v1", "false",
         "CustomResourceDefinition", ALL, "api-extensions"],
        ["daemonsets", "ds", "apps/v1", "true", "DaemonSet", ALL, "all"],
        ["deployments", "deploy", "apps/v1", "true", "Deployment", ALL, "all"],
        ["replicasets", "rs", "apps/v1", "true", "ReplicaSet", ALL, "all"],
        ["statefulsets", "sts", "apps/v1", "true", "StatefulSet", ALL, "all"],
        ["jobs", "batch/v1", "true", "Job", ALL, "all"],
        ["leases", "coordination.k8s.io/v1", "true", "Lease", ALL],
        ["endpointslices", "discovery.k8s.io/v1", "true", "EndpointSlice", ALL],
        ["widgets", "wd", "example.com/v1", "true", "Widget",  # apiextensions' order
         "delete,deletecollection,get,list,patch,create,update,watch", "all"],
    ]


ALL = "create,delete,deletecollection,get,list,patch,update,watch"
