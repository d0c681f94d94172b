"""Validates examples/deploy/: the manifests parse, refer to each other, and grant exactly what
the controller uses (learnt by running it against the embedded API server)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml

from controllers.endpoint.cli import EndpointControllerCommand, parse_args
from informers.health_server import parse_address
from informers.manager import DEFAULT_SHUTDOWN_TIMEOUT

DEPLOY = Path(__file__).resolve().parent.parent / "examples" / "deploy"


def _documents():
    docs = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d is not None)
    return docs


DOCS = _documents()


def _one(kind):
    found = [d for d in DOCS if d["kind"] == kind]
    assert len(found) == 1, kind
    return found[0]


def _deployment_options():
    container = _one("Deployment")["spec"]["template"]["spec"]["containers"][0]
    return parse_args(container["args"])


# -- structure and references ----------------------------------------------------------------------


def test_every_document_parses_with_the_expected_kinds():
    assert [(d["apiVersion"], d["kind"]) for d in DOCS] == [
        ("v1", "Namespace"),
        ("v1", "ServiceAccount"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ("apps/v1", "Deployment"),
    ]
    namespace = _one("Namespace")["metadata"]["name"]
    for doc in DOCS:
        if doc["kind"] in ("ServiceAccount", "Role", "RoleBinding", "Deployment"):
            assert doc["metadata"]["namespace"] == namespace, doc["kind"]
        else:
            assert "namespace" not in doc["metadata"], doc["kind"]


def test_bindings_refer_to_the_roles_and_the_service_account():
    account = _one("ServiceAccount")["metadata"]
    for binding_kind, role_kind in (("ClusterRoleBinding", "ClusterRole"),
                                    ("RoleBinding", "Role")):
        binding = _one(binding_kind)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                      "kind": role_kind,
                                      "name": _one(role_kind)["metadata"]["name"]}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["name"],
                                        "namespace": account["namespace"]}]
    pod = _one("Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["name"]


def test_the_deployment_runs_two_leader_elected_replicas_with_probes():
    deployment = _one("Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    labels = spec["template"]["metadata"]["labels"]
    assert all(labels[k] == v for k, v in spec["selector"]["matchLabels"].items())
    pod = spec["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] > DEFAULT_SHUTDOWN_TIMEOUT
    [container] = pod["containers"]

    options = _deployment_options()
    assert options.leader_elect is True
    assert options.lease_namespace == deployment["metadata"]["namespace"]
    role = _one("Role")
    assert role["metadata"]["namespace"] == options.lease_namespace
    assert [options.lease_name] in [r.get("resourceNames") for r in role["rules"]]

    _, metrics_port = parse_address(options.metrics_address)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        port = get["port"]
        assert (ports[port] if isinstance(port, str) else port) == metrics_port, probe

    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"} in container["env"]


def test_the_readme_names_every_manifest():
    readme = (DEPLOY / "README.md").read_text()
    for path in sorted(DEPLOY.glob("*.yaml")):
        assert f"`{path.name}`" in readme
    assert "kubectl apply -f examples/deploy/" in readme


# -- RBAC: what the controller uses is exactly what is granted -------------------------------------


def _rules_for(namespace):
    """Every rule the service account holds in ``namespace``."""
    account = _one("ServiceAccount")["metadata"]
    subject = {"kind": "ServiceAccount", "name": account["name"],
               "namespace": account["namespace"]}
    rules = []
    for binding in DOCS:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if subject not in binding["subjects"]:
            continue
        if binding["kind"] == "RoleBinding" and binding["metadata"]["namespace"] != namespace:
            continue
        ref = binding["roleRef"]
        [role] = [d for d in DOCS if d["kind"] == ref["kind"]
                  and d["metadata"]["name"] == ref["name"]
                  and d["metadata"].get("namespace") == binding["metadata"].get("namespace")]
        rules.extend(role["rules"])
    return rules


def _allows(rule, group, resource, verb, name):
    """Kubernetes RBAC's rule match (rbac/v1 ``RuleAllows``) for a resource request."""
    def has(values, value):
        return "*" in values or value in values

    if not (has(rule["apiGroups"], group) and has(rule["resources"], resource)
            and has(rule["verbs"], verb)):
        return False
    names = rule.get("resourceNames")
    return not names or name in names


def _granted(request):
    group, resource, verb, namespace, name = request
    return any(_allows(r, group, resource, verb, name) for r in _rules_for(namespace))


def _wait(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture(scope="module")
def used_requests(tmp_path_factory):
    """Run the controller with the Deployment's arguments through every path it has (create,
    update and delete of Endpoints, a failed write and its repeated warning event, taking and
    releasing the lease) and return the requests it made."""
    from informers.testing import ApiServer

    with ApiServer() as server:
        server.create(_one("Namespace"))
        server.create({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "web", "namespace": "default"},
                       "spec": {"clusterIP": "10.96.0.1", "selector": {"app": "web"},
                                "ports": [{"port": 80, "targetPort": 8080}]}})
        server.create({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "web-0", "namespace": "default",
                                    "labels": {"app": "web"}},
                       "spec": {"nodeName": "node-1",  # (an Endpoints' nodeName "" is 422)
                                "containers": [{"name": "c", "image": "i"}]},
                       "status": {"phase": "Running", "podIP": "10.0.0.5",
                                  "podIPs": [{"ip": "10.0.0.5"}],
                                  "conditions": [{"type": "Ready", "status": "True"}]}})
        server.create({"apiVersion": "v1", "kind": "Endpoints",
                       "metadata": {"name": "orphan", "namespace": "default"}})
        # The first two creates fail: two identical warnings, the second one a patch.
        server.fail_next(2, 500, verb="create", resource="endpoints")
        path = server.write_kubeconfig(tmp_path_factory.mktemp("deploy") / "kubeconfig")
        container = _one("Deployment")["spec"]["template"]["spec"]["containers"][0]
        options = parse_args([*container["args"], "--kubeconfig", path,
                              "--metrics-address", "127.0.0.1:0", "--no-demo"])
        stop = threading.Event()
        command = EndpointControllerCommand(options, stop_event=stop, handle_signals=False)
        thread = threading.Thread(target=command.run)
        thread.start()
        try:
            assert _wait(lambda: server.get("endpoints", "default", "web") is not None)
            assert _wait(lambda: server.get("endpoints", "default", "orphan") is None)
            server.patch("pods", "default", "web-0", {"status": {"conditions": [
                {"type": "Ready", "status": "False"}]}})
            assert _wait(lambda: "notReadyAddresses" in (
                server.get("endpoints", "default", "web")["subsets"][0]))
            assert server.wait_for_requests(1, verb="patch", resource="events", timeout=10)
        finally:
            stop.set()
            thread.join(15)
        assert not thread.is_alive()
        lease = server.get("leases", options.lease_namespace, options.lease_name)
        assert lease["spec"]["holderIdentity"] == ""  # released at shutdown
        return {
            (r.group, r.resource + (f"/{r.subresource}" if r.subresource else ""), r.verb,
             r.namespace, r.name)
            for r in server.requests
            if r.resource  # non-resource URLs (discovery) are open to every authenticated user
        }


def test_the_scenario_exercised_every_path(used_requests):
    verbs = {(g, r, v) for g, r, v, _, _ in used_requests}
    assert verbs == {
        ("", "pods", "list"), ("", "pods", "watch"),
        ("", "services", "list"), ("", "services", "watch"),
        ("", "endpoints", "list"), ("", "endpoints", "watch"), ("", "endpoints", "create"),
        ("", "endpoints", "update"), ("", "endpoints", "delete"),
        ("", "events", "create"), ("", "events", "patch"),
        ("coordination.k8s.io", "leases", "get"), ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
    }


def test_every_request_the_controller_makes_is_granted(used_requests):
    denied = sorted(r for r in used_requests if not _granted(r))
    assert denied == []


def test_every_grant_is_used(used_requests):
    """Least privilege: no (group, resource, verb) is granted that the controller never uses."""
    unused = []
    for binding_namespace, rules in (("", _rules_for("default")),
                                     (_one("Role")["metadata"]["namespace"],
                                      _one("Role")["rules"])):
        for rule in rules:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        if not any(u[:3] == (group, resource, verb)
                                   and (not binding_namespace or u[3] == binding_namespace)
                                   and _allows(rule, *u[:3], u[4])
                                   for u in used_requests):
                            unused.append((group, resource, verb))
    assert unused == []
    assert all("*" not in r["verbs"] + r["resources"] + r["apiGroups"]
               for d in DOCS if d["kind"] in ("ClusterRole", "Role") for r in d["rules"])
