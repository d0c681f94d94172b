"""Server-side apply and other writes to the ``status`` subresource on both servers (the
embedded one held to kube-apiserver v1.36.3): each write's ``managedFields`` entry names the
subresource (``subresource: status``), for a custom resource and a built-in kind alike.

Upstream: ``k8s.io/apiserver@v0.36.3`` ``pkg/endpoints/handlers/fieldmanager`` and
``k8s.io/apiextensions-apiserver@v0.36.3`` ``pkg/registry/customresource/status_strategy.go``
(``PrepareForUpdate`` keeps the field manager's ``managedFields`` while it resets the rest
of the object to the stored one).
"""

from __future__ import annotations

import json
from typing import Any

from test_testing_crds import crd_body, install, new_group, uninstall
from wire import call

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


def managed(obj: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The entries without their times: (manager, operation, subresource, fieldsType,
    fieldsV1), sorted by manager (the servers order them by operation, then by the second of
    their time: internal/managedfields.go sortEncodedManagedFields)."""
    return sorted((e["manager"], e["operation"], e.get("subresource"), e["fieldsType"],
                   e["fieldsV1"]) for e in obj["metadata"]["managedFields"])


def write(server, method: str, path: str, body: Any, manager: str, *,
          content_type: str = "application/json", force: bool = False) -> dict[str, Any]:
    query = [("fieldManager", manager)] + ([("force", "true")] if force else [])
    code, got = call(server, method, path, body if method != "PATCH" else json.dumps(body),
                     content_type=content_type, query=query)
    assert code in (200, 201), (code, got)
    return got


READY = {"f:status": {"f:ready": {}}}
SIZE = {"f:spec": {"f:size": {}}}


def test_apply_to_a_custom_resource_status_records_an_apply_entry_of_the_subresource(
        any_api_server):
    s = any_api_server
    group = new_group()
    crd = crd_body(group, subresources={"status": {}})
    install(s, crd)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets/w"
        widget = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}}
        got = write(s, "PATCH", path, {**widget, "spec": {"size": 1}}, "main",
                    content_type=APPLY)
        assert managed(got) == [("main", "Apply", None, "FieldsV1", SIZE)]
        got = write(s, "PATCH", f"{path}/status", {**widget, "status": {"ready": True}}, "x",
                    content_type=APPLY)
        assert managed(got) == [("main", "Apply", None, "FieldsV1", SIZE),
                                ("x", "Apply", "status", "FieldsV1", READY)]
        assert (got["spec"], got["status"]) == ({"size": 1, "color": "red"}, {"ready": True})
        # another applier of a different value conflicts with the status entry
        code, conflict = call(s, "PATCH", f"{path}/status", json.dumps(
            {**widget, "status": {"ready": False}}), content_type=APPLY,
            query=[("fieldManager", "other")])
        assert (code, conflict["message"]) == (
            409, 'Apply failed with 1 conflict: conflict with "x" with subresource "status": '
            ".status.ready")
        # a merge patch of the status that changes the field takes it: x's entry empties
        got = write(s, "PATCH", f"{path}/status", {"status": {"ready": False}}, "y",
                    content_type=MERGE)
        assert managed(got) == [("main", "Apply", None, "FieldsV1", SIZE),
                                ("y", "Update", "status", "FieldsV1", READY)]
        # the managedFields an update of a subresource sends are ignored
        # (managedfields/internal/fieldmanager.go decodeLiveOrNew)
        got["metadata"]["managedFields"] = [
            {"manager": "fake", "operation": "Update", "apiVersion": f"{group}/v1",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:color": {}}}}]
        got["status"] = {"ready": True}
        got = write(s, "PUT", f"{path}/status", got, "z")
        assert managed(got) == [("main", "Apply", None, "FieldsV1", SIZE),
                                ("z", "Update", "status", "FieldsV1", READY)]
        # an apply to the status applies the status only: the spec and labels it sends are
        # dropped, and the unchanged value is shared with z
        got = write(s, "PATCH", f"{path}/status", {
            **widget, "metadata": {"name": "w", "labels": {"a": "b"}}, "spec": {"size": 3},
            "status": {"ready": True}}, "x2", content_type=APPLY, force=True)
        assert managed(got) == [("main", "Apply", None, "FieldsV1", SIZE),
                                ("x2", "Apply", "status", "FieldsV1", READY),
                                ("z", "Update", "status", "FieldsV1", READY)]
        assert (got["spec"], got["metadata"].get("labels")) == ({"size": 1, "color": "red"},
                                                               None)
        assert managed(write(s, "GET", path, None, "x2")) == managed(got)
        got["metadata"]["managedFields"] = []
        got = write(s, "PUT", f"{path}/status", got, "z")
        assert managed(got) == [("main", "Apply", None, "FieldsV1", SIZE),
                                ("x2", "Apply", "status", "FieldsV1", READY),
                                ("z", "Update", "status", "FieldsV1", READY)]
    finally:
        uninstall(s, crd["metadata"]["name"])


def test_apply_to_a_deployment_status_records_an_apply_entry_of_the_subresource(
        any_api_server):
    s = any_api_server
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/d"
    head = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    spec = {"selector": {"matchLabels": {"app": "d"}}, "template": {
        "metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
            {"name": "a", "image": "registry.invalid/a:1"}]}}}
    spec_fields = {"f:spec": {"f:selector": {}, "f:template": {
        "f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:containers": {
            'k:{"name":"a"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}
    write(s, "PATCH", path, {**head, "spec": spec}, "main", content_type=APPLY)
    stamp = "2020-01-01T00:00:00Z"
    status = {"replicas": 2, "observedGeneration": 1, "conditions": [
        {"type": "Available", "status": "True", "lastUpdateTime": stamp,
         "lastTransitionTime": stamp}]}
    got = write(s, "PATCH", f"{path}/status", {**head, "status": status}, "x",
                content_type=APPLY)
    status_fields = {"f:status": {
        "f:conditions": {'k:{"type":"Available"}': {
            ".": {}, "f:lastTransitionTime": {}, "f:lastUpdateTime": {}, "f:status": {},
            "f:type": {}}},
        "f:observedGeneration": {}, "f:replicas": {}}}
    assert managed(got) == [("main", "Apply", None, "FieldsV1", spec_fields),
                            ("x", "Apply", "status", "FieldsV1", status_fields)]
    assert got["status"] == status
    got = write(s, "PATCH", f"{path}/status", {"status": {"readyReplicas": 1}}, "y",
                content_type=MERGE)
    assert managed(got) == [
        ("main", "Apply", None, "FieldsV1", spec_fields),
        ("x", "Apply", "status", "FieldsV1", status_fields),
        ("y", "Update", "status", "FieldsV1", {"f:status": {"f:readyReplicas": {}}})]


def test_a_status_write_writes_the_metadata_its_kind_lets_through(any_api_server):
    # The status strategies under kubernetes/pkg/registry reset the spec (a Deployment's also
    # the labels, a pod's the owner references) and keep the request's other metadata, which
    # the status entries then own; a custom resource's keeps none (first test).
    s = any_api_server
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/d"
    head = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    spec = {"selector": {"matchLabels": {"app": "d"}}, "template": {
        "metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
            {"name": "a", "image": "registry.invalid/a:1"}]}}}
    write(s, "PATCH", path, {**head, "spec": spec}, "main", content_type=APPLY)
    got = write(s, "PATCH", f"{path}/status", {"metadata": {
        "annotations": {"a": "1"}, "labels": {"l": "1"}, "finalizers": ["example.com/f"]},
        "status": {"replicas": 1}}, "y", content_type=MERGE)
    try:
        meta = got["metadata"]
        assert (meta.get("annotations"), meta.get("labels"), meta.get("finalizers")) == (
            {"a": "1"}, None, ["example.com/f"])
        assert managed(got)[1:] == [("y", "Update", "status", "FieldsV1", {
            "f:metadata": {"f:annotations": {".": {}, "f:a": {}},
                           "f:finalizers": {".": {}, 'v:"example.com/f"': {}}},
            "f:status": {"f:replicas": {}}})]
        got = write(s, "PATCH", f"{path}/status", {
            **head, "metadata": {"name": "d", "annotations": {"b": "2"}},
            "status": {"replicas": 2}}, "x", content_type=APPLY, force=True)
        assert got["metadata"]["annotations"] == {"a": "1", "b": "2"}
        assert managed(got)[1:] == [
            ("x", "Apply", "status", "FieldsV1", {"f:metadata": {"f:annotations": {"f:b": {}}},
                                                  "f:status": {"f:replicas": {}}}),
            ("y", "Update", "status", "FieldsV1", {"f:metadata": {
                "f:annotations": {".": {}, "f:a": {}},
                "f:finalizers": {".": {}, 'v:"example.com/f"': {}}}})]
    finally:
        write(s, "PATCH", path, {"metadata": {"finalizers": None}}, "y", content_type=MERGE)
    # a ReplicaSet's status update writes the labels: one without them removes them, from the
    # object and from every entry
    rs = f"/apis/apps/v1/namespaces/{s.namespace}/replicasets"
    write(s, "POST", rs, {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
        "name": "r", "labels": {"keep": "1"}}, "spec": {
        "replicas": 0, "selector": {"matchLabels": {"app": "d"}},
        "template": spec["template"]}}, "main")
    got = write(s, "PATCH", f"{rs}/r/status", {"metadata": {"labels": {"l": "1"}}, "status": {
        "replicas": 0, "observedGeneration": 1}}, "y", content_type=MERGE)
    assert got["metadata"]["labels"] == {"keep": "1", "l": "1"}
    assert managed(got)[1:] == [("y", "Update", "status", "FieldsV1", {
        "f:metadata": {"f:labels": {"f:l": {}}}, "f:status": {"f:observedGeneration": {}}})]
    got = write(s, "PUT", f"{rs}/r/status", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "r", "namespace": s.namespace}, "spec": got["spec"],
        "status": {"replicas": 0, "observedGeneration": 2}}, "z")
    assert got["metadata"].get("labels") is None
    entries = managed(got)
    assert [e[:3] for e in entries] == [("main", "Update", None), ("z", "Update", "status")]
    assert "f:metadata" not in entries[0][4]
    assert entries[1][4] == {"f:status": {"f:observedGeneration": {}}}
    # a pod's status writes the labels, not the owner references
    pods = f"/api/v1/namespaces/{s.namespace}/pods"
    write(s, "POST", pods, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                            "spec": {"containers": [{"name": "c",
                                                     "image": "registry.invalid/c"}]}}, "maker")
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o",
             "uid": "6b7f2b5e-0000-4000-8000-000000000000"}
    got = write(s, "PATCH", f"{pods}/p/status", {
        "metadata": {"labels": {"l": "1"}, "ownerReferences": [owner]},
        "status": {"phase": "Running"}}, "k", content_type=MERGE)
    assert (got["metadata"]["labels"], got["metadata"].get("ownerReferences")) == (
        {"l": "1"}, None)
    assert [e for e in managed(got) if e[0] == "k"] == [("k", "Update", "status", "FieldsV1", {
        "f:metadata": {"f:labels": {".": {}, "f:l": {}}}, "f:status": {"f:phase": {}}})]


def test_a_status_write_cannot_add_finalizers_to_an_object_being_deleted(any_api_server):
    # apimachinery validation.go ValidateObjectMetaUpdate, run by the status strategies'
    # ValidateUpdate too (ValidateDeploymentStatusUpdate)
    s = any_api_server
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/d"
    write(s, "PATCH", path, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "finalizers": ["example.com/a"]},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
                {"name": "a", "image": "registry.invalid/a:1"}]}}}}, "main", content_type=APPLY)
    try:
        assert call(s, "DELETE", path)[0] == 200
        code, got = call(s, "PATCH", f"{path}/status", json.dumps({"metadata": {
            "finalizers": ["example.com/a", "example.com/b"]}}), content_type=MERGE,
            query=[("fieldManager", "y")])
        assert (code, got["message"]) == (
            422, 'Deployment.apps "d" is invalid: metadata.finalizers: Forbidden: no new '
            'finalizers can be added if the object is being deleted, found new finalizers '
            '[]string{"example.com/b"}')
    finally:
        write(s, "PATCH", path, {"metadata": {"finalizers": None}}, "main", content_type=MERGE)
