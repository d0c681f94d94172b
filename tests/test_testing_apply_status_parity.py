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
