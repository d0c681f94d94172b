"""Server-side apply on both servers (the embedded one held to kube-apiserver v1.36.3):
apply-creates, managedFields entries, conflicts and their message, force, list merge by keys,
fields removed from the configuration."""

from __future__ import annotations

import json

from wire import call

APPLY = "application/apply-patch+yaml"


def deployment(name: str, **spec: object) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}}, "spec": {"containers": [
                    {"name": "a", "image": "registry.invalid/a:1"}]}}, **spec}}


def apply(server, name: str, body, manager: str | None = "m1", force: bool = False,
          yaml_body: bool = False) -> tuple[int, dict]:
    query = []
    if manager:
        query.append(("fieldManager", manager))
    if force:
        query.append(("force", "true"))
    text = body if isinstance(body, str) else json.dumps(body)
    return call(server, "PATCH",
                f"/apis/apps/v1/namespaces/{server.namespace}/deployments/{name}",
                text, content_type=APPLY, query=query)


def managed(obj: dict) -> list:
    return [(e["manager"], e["operation"], e["apiVersion"], e["fieldsType"], e["fieldsV1"])
            for e in obj["metadata"]["managedFields"]]


SPEC_FIELDS = {
    "f:selector": {},
    "f:template": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:containers": {
        'k:{"name":"a"}': {".": {}, "f:image": {}, "f:name": {}}}}},
}


def test_apply_creates_and_records_its_fields(any_api_server):
    s = any_api_server
    code, got = apply(s, "d", deployment("d", replicas=2))
    assert code == 201, got
    assert managed(got) == [("m1", "Apply", "apps/v1", "FieldsV1",
                             {"f:spec": {"f:replicas": {}, **SPEC_FIELDS}})]
    assert got["spec"]["replicas"] == 2
    code, again = apply(s, "d", deployment("d", replicas=2))
    assert code == 200
    assert again["metadata"]["resourceVersion"] == got["metadata"]["resourceVersion"]


def test_apply_requires_a_field_manager(any_api_server):
    s = any_api_server
    code, got = apply(s, "d", deployment("d"), manager=None)
    assert (code, got["reason"], got["message"]) == (
        422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required '
        'value: is required for apply patch')


def test_apply_conflicts_name_the_fields_and_force_takes_them(any_api_server):
    s = any_api_server
    apply(s, "d", deployment("d", replicas=2))
    changed = deployment("d", replicas=3)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.invalid/a:2"
    code, got = apply(s, "d", changed, manager="m2")
    assert code == 409
    assert got["reason"] == "Conflict"
    assert got["message"] == (
        'Apply failed with 2 conflicts: conflicts with "m1":\n- .spec.replicas\n'
        '- .spec.template.spec.containers[name="a"].image')
    assert got["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "m1"',
         "field": ".spec.replicas"},
        {"reason": "FieldManagerConflict", "message": 'conflict with "m1"',
         "field": '.spec.template.spec.containers[name="a"].image'}]
    code, one = apply(s, "d", {"apiVersion": "apps/v1", "kind": "Deployment",
                               "metadata": {"name": "d"}, "spec": {"replicas": 5}},
                      manager="m3")
    assert (code, one["message"]) == (
        409, 'Apply failed with 1 conflict: conflict with "m1": .spec.replicas')
    code, got = apply(s, "d", changed, manager="m2", force=True)
    assert code == 200
    assert got["spec"]["replicas"] == 3
    entries = {e["manager"]: e["fieldsV1"] for e in got["metadata"]["managedFields"]}
    assert "f:replicas" not in entries["m1"]["f:spec"]
    assert entries["m2"]["f:spec"]["f:replicas"] == {}
    # shared: both own the unchanged fields
    assert entries["m1"]["f:spec"]["f:selector"] == {}


def test_apply_merges_lists_by_key_and_removes_what_it_no_longer_applies(any_api_server):
    s = any_api_server
    base = deployment("d")
    base["metadata"]["labels"] = {"x": "1", "y": "2"}
    apply(s, "d", base)
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
             "spec": {"template": {"spec": {"containers": [
                 {"name": "b", "image": "registry.invalid/b:1"}]}}}}
    code, got = apply(s, "d", other, manager="m2")
    assert code == 200, got
    assert [c["name"] for c in got["spec"]["template"]["spec"]["containers"]] == ["a", "b"]
    smaller = deployment("d")
    smaller["metadata"]["labels"] = {"x": "1"}
    code, got = apply(s, "d", smaller)
    assert code == 200
    assert got["metadata"]["labels"] == {"x": "1"}
    code, got = apply(s, "d", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n"
                      "  labels:\n    x: '1'\nspec:\n  selector:\n    matchLabels: {app: d}\n"
                      "  template:\n    metadata:\n      labels: {app: d}\n    spec:\n"
                      "      containers:\n      - {name: a, image: 'registry.invalid/a:1'}\n",
                      yaml_body=True)
    assert code == 200


def test_an_update_without_managed_fields_keeps_them(any_api_server):
    s = any_api_server
    code, applied = apply(s, "d", deployment("d", replicas=2))
    assert code == 201
    body = dict(applied)
    body["metadata"] = {k: v for k, v in applied["metadata"].items() if k != "managedFields"}
    code, updated = call(s, "PUT",
                         f"/apis/apps/v1/namespaces/{s.namespace}/deployments/d", body,
                         query=[("fieldManager", "m1")])
    assert code == 200, updated
    assert managed(updated) == managed(applied)


def test_other_writes_record_update_entries_and_apply_conflicts_with_them(any_api_server):
    s = any_api_server
    path = f"/api/v1/namespaces/{s.namespace}/configmaps"
    code, made = call(s, "POST", path, {"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}},
                      query=[("fieldManager", "m0")])
    assert code == 201, made
    assert [(e["manager"], e["operation"], e["apiVersion"], e["fieldsV1"])
            for e in made["metadata"]["managedFields"]] == [
        ("m0", "Update", "v1", {"f:data": {".": {}, "f:a": {}, "f:b": {}}})]
    body = dict(made)
    body["data"] = {"a": "1", "b": "3"}
    code, updated = call(s, "PUT", f"{path}/c", body, query=[("fieldManager", "m2")])
    assert code == 200, updated
    assert [(e["manager"], e["operation"], e["fieldsV1"])
            for e in updated["metadata"]["managedFields"]] == [
        ("m0", "Update", {"f:data": {".": {}, "f:a": {}}}),
        ("m2", "Update", {"f:data": {"f:b": {}}})]
    code, got = call(s, "PATCH", f"{path}/c", json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
         "data": {"a": "9"}}), content_type=APPLY, query=[("fieldManager", "m1")])
    assert code == 409
    assert got["message"] == (
        'Apply failed with 1 conflict: conflict with "m0" using v1: .data.a')


def test_a_status_write_records_an_update_entry_of_the_subresource(any_api_server):
    s = any_api_server
    path = f"/api/v1/namespaces/{s.namespace}/pods"
    code, made = call(s, "POST", path, {"apiVersion": "v1", "kind": "Pod",
                                        "metadata": {"name": "p"}, "spec": {"containers": [
                                            {"name": "c", "image": "registry.invalid/c"}]}},
                      query=[("fieldManager", "maker")])
    assert code == 201, made
    body = dict(made)
    stamp = "2020-01-01T00:00:00Z"  # Go writes zero times as null fields: set them
    body["status"] = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastProbeTime": stamp,
         "lastTransitionTime": stamp}]}
    code, got = call(s, "PUT", f"{path}/p/status", body, query=[("fieldManager", "kubelet")])
    assert code == 200, got
    entries = [e for e in got["metadata"]["managedFields"] if e["manager"] == "kubelet"]
    assert [(e["operation"], e.get("subresource"), e["fieldsV1"]) for e in entries] == [
        ("Update", "status", {"f:status": {"f:conditions": {
            ".": {}, 'k:{"type":"Ready"}': {".": {}, "f:lastProbeTime": {},
                                            "f:lastTransitionTime": {}, "f:status": {},
                                            "f:type": {}}},
            "f:phase": {}}})]


def test_apply_keys_list_items_by_the_defaults_of_their_keys(any_api_server):
    # structured-merge-diff typed/helpers.go keyedAssociativeListItemToPathElement: a port
    # applied without its protocol is the item keyed by the default, TCP; the applier owns
    # the fields it sent, not the defaulted protocol.
    s = any_api_server
    path = f"/api/v1/namespaces/{s.namespace}/services/web"
    config = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
              "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}}
    code, got = call(s, "PATCH", path, json.dumps(config), content_type=APPLY,
                     query=[("fieldManager", "m1")])
    assert code == 201, got
    assert managed(got) == [("m1", "Apply", "v1", "FieldsV1", {"f:spec": {
        "f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}}},
        "f:selector": {}}})]
    assert got["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    second = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
              "spec": {"ports": [{"port": 80, "name": "http"}]}}
    code, got = call(s, "PATCH", path, json.dumps(second), content_type=APPLY,
                     query=[("fieldManager", "m2")])
    assert code == 200, got
    assert got["spec"]["ports"] == [{"name": "http", "port": 80, "protocol": "TCP",
                                     "targetPort": 80}]
    assert managed(got)[1] == ("m2", "Apply", "v1", "FieldsV1", {"f:spec": {"f:ports": {
        'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:name": {}, "f:port": {}}}}})
    pod = deployment("d")
    pod["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 8080}]
    code, got = apply(s, "d", pod)
    assert code == 201, got
    containers = managed(got)[0][4]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert containers['k:{"name":"a"}']["f:ports"] == {
        'k:{"containerPort":8080,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}


def test_apply_of_fields_the_kind_lacks_is_a_500_whatever_the_field_validation(
        any_api_server):
    # structured-merge-diff types the configuration before fieldValidation is looked at
    # (internal/structuredmerge.go "failed to create typed patch object").
    s = any_api_server
    for mode in ("Strict", "Warn", "Ignore"):
        code, got = call(s, "PATCH",
                         f"/apis/apps/v1/namespaces/{s.namespace}/deployments/d",
                         json.dumps(deployment("d", replicas=1, bogus=1)), content_type=APPLY,
                         query=[("fieldManager", "m1"), ("fieldValidation", mode)])
        assert (code, got.get("reason"), got["message"]) == (
            500, None, "failed to create typed patch object (/d; apps/v1, Kind=Deployment): "
            ".spec.bogus: field not declared in schema")
    code, got = call(s, "PATCH", f"/api/v1/namespaces/{s.namespace}/configmaps/c", json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "bogus": 1},
         "other": 2}), content_type=APPLY, query=[("fieldManager", "m1")])
    # kube-apiserver reports both fields, or (in some runs) only ".other": its field sets are
    # Go maps. The embedded server always reports both.
    assert code == 500
    assert got["message"] in (
        "failed to create typed patch object (/c; /v1, Kind=ConfigMap): errors:\n"
        "  .metadata.bogus: field not declared in schema\n"
        "  .other: field not declared in schema",
        "failed to create typed patch object (/c; /v1, Kind=ConfigMap): "
        ".other: field not declared in schema")
    if s.embedded is not None:
        assert "  .metadata.bogus: field not declared in schema\n" in got["message"]
    assert call(s, "GET", f"/apis/apps/v1/namespaces/{s.namespace}/deployments/d")[0] == 404
