"""Server-side apply and ``fieldValidation`` on the ``scale`` subresource, on both servers (the
embedded one held to kube-apiserver v1.36.3, whose answers these values are).

Upstream: ``k8s.io/apimachinery@v0.36.3`` ``pkg/util/managedfields/scalehandler.go``
(``ToSubresource``, ``ToParent``; its cases in ``scalehandler_test.go`` are unit tests of the
conversion, pinned here through the wire instead), ``k8s.io/kubernetes@v1.36.3``
``pkg/registry/apps/deployment/storage/storage.go`` ``scaleUpdatedObjectInfo``.
"""

from __future__ import annotations

import json
from typing import Any

import urllib3
from test_testing_crds import crd_body, install, new_group, uninstall
from test_testing_serving_parity import SCALE_SCHEMA
from wire import call

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
SCALE_REPLICAS = {"f:spec": {"f:replicas": {}}}


def deployment(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}}, "spec": {"containers": [
                    {"name": "a", "image": "registry.invalid/a:1"}]}}, **spec}}


def scale(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": name},
            "spec": {"replicas": replicas, **extra}}


def entries(obj: dict[str, Any]) -> list[tuple[Any, ...]]:
    """managedFields as (manager, operation, apiVersion, has time, subresource, fields)."""
    return [(e["manager"], e["operation"], e["apiVersion"], "time" in e, e.get("subresource"),
             e["fieldsV1"]) for e in obj["metadata"]["managedFields"]]


def apply_scale(s, path: str, body: Any, manager: str = "hpa",
                *query: tuple[str, str]) -> tuple[int, Any]:
    text = body if isinstance(body, str) else json.dumps(body)
    return call(s, "PATCH", f"{path}/scale", text, content_type=APPLY,
                query=[("fieldManager", manager), *query])


def test_apply_to_scale_conflicts_with_the_owner_of_the_replicas_and_force_takes_them(
        any_api_server):
    s = any_api_server
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/d"
    code, made = call(s, "PATCH", path, json.dumps(deployment("d", replicas=2)),
                      content_type=APPLY, query=[("fieldManager", "m1")])
    assert code == 201, made
    code, got = apply_scale(s, path, scale("d", 3))
    assert (code, got["reason"], got["message"]) == (
        409, "Conflict", 'Apply failed with 1 conflict: conflict with "m1": .spec.replicas')
    assert got["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                         "message": 'conflict with "m1"',
                                         "field": ".spec.replicas"}]
    code, got = apply_scale(s, path, scale("d", 3), "hpa", ("force", "true"))
    assert code == 200, got
    assert (got["kind"], got["spec"], got["status"]) == (
        "Scale", {"replicas": 3}, {"replicas": 0, "selector": "app=d"})
    assert "managedFields" not in got["metadata"]
    code, again = apply_scale(s, path, "apiVersion: autoscaling/v1\nkind: Scale\n"
                              "metadata:\n  name: d\nspec:\n  replicas: 3\n")
    assert (code, again["metadata"]["resourceVersion"]) == (
        200, got["metadata"]["resourceVersion"])
    code, parent = call(s, "GET", path)
    assert parent["spec"]["replicas"] == 3
    m1 = entries(made)[0][5]
    assert entries(parent) == [
        ("hpa", "Apply", "apps/v1", False, "scale", SCALE_REPLICAS),
        ("m1", "Apply", "apps/v1", True, None,
         {"f:spec": {k: v for k, v in m1["f:spec"].items() if k != "f:replicas"}})]
    code, got = call(s, "PATCH", path, json.dumps(deployment("d", replicas=2)),
                     content_type=APPLY, query=[("fieldManager", "m1")])
    assert (code, got["message"]) == (
        409, 'Apply failed with 1 conflict: conflict with "hpa" with subresource "scale": '
        ".spec.replicas")


def test_apply_to_scale_beside_an_update_manager_of_the_replicas(any_api_server):
    # The parent's Update manager owns the replicas in the scale under the scale's
    # apiVersion; sharing them (the same value) leaves it twice in the parent, as
    # scalehandler.go ToParent does.
    s = any_api_server
    base = f"/apis/apps/v1/namespaces/{s.namespace}/deployments"
    code, made = call(s, "POST", base, deployment("d"), query=[("fieldManager", "m0")])
    assert code == 201, made
    path = f"{base}/d"
    code, got = apply_scale(s, path, scale("d", 3))
    assert (code, got["message"]) == (
        409, 'Apply failed with 1 conflict: conflict with "m0" using autoscaling/v1: '
        ".spec.replicas")
    code, got = apply_scale(s, path, scale("d", 1))
    assert (code, got["spec"]) == (200, {"replicas": 1})
    code, parent = call(s, "GET", path)
    rest = {"f:spec": {k: v for k, v in entries(made)[0][5]["f:spec"].items()
                       if k != "f:replicas"}}
    assert entries(parent) == [
        ("hpa", "Apply", "apps/v1", False, "scale", SCALE_REPLICAS),
        ("m0", "Update", "apps/v1", False, None, SCALE_REPLICAS),
        ("m0", "Update", "apps/v1", True, None, rest)]
    code, got = call(s, "PUT", f"{path}/scale", scale("d", 4),
                     query=[("fieldManager", "putter")])
    assert (code, got["spec"]) == (200, {"replicas": 4})
    code, parent = call(s, "GET", path)
    assert entries(parent) == [
        ("putter", "Update", "apps/v1", False, "scale", SCALE_REPLICAS),
        ("m0", "Update", "apps/v1", True, None, rest)]


def test_apply_to_scale_refuses_other_kinds_unknown_fields_and_missing_parents(
        any_api_server):
    s = any_api_server
    base = f"/apis/apps/v1/namespaces/{s.namespace}/deployments"
    code, got = apply_scale(s, f"{base}/nope", scale("nope", 1))
    assert (code, got["reason"], got["message"]) == (
        404, "NotFound", 'deployments.apps "nope" not found')
    assert call(s, "POST", base, deployment("d"))[0] == 201
    code, got = apply_scale(s, f"{base}/d", {**deployment("d"), "spec": {"replicas": 2}})
    assert (code, got["reason"], got["message"]) == (
        400, "BadRequest", "invalid object type: apps/v1, Kind=Deployment")
    for mode in ("Strict", "Warn", "Ignore"):
        code, got = apply_scale(s, f"{base}/d", scale("d", 4, bogus=1), "hpa",
                                ("fieldValidation", mode))
        assert (code, got.get("reason"), got["message"]) == (
            500, None, "failed to create typed patch object (/d; autoscaling/v1, Kind=Scale): "
            ".spec.bogus: field not declared in schema")
    code, got = call(s, "PATCH", f"{base}/d/scale", json.dumps(scale("d", 4)),
                     content_type=APPLY)
    assert (code, got["message"]) == (
        422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
        "required for apply patch")


def test_apply_to_a_custom_resource_scale_fails_as_on_kube_apiserver(any_api_server):
    # kube-apiserver v1.36.3 cannot convert a Scale with a CRD's converter: an apply to a
    # custom resource's scale that passes the conflict check is a 500 and changes nothing.
    s = any_api_server
    group = new_group()
    crd = crd_body(group, schema=SCALE_SCHEMA, subresources={
        "status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                "statusReplicasPath": ".status.replicas"}})
    install(s, crd)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets/w"
        code, made = call(s, "PATCH", path, json.dumps(
            {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"},
             "spec": {"replicas": 1}}), content_type=APPLY, query=[("fieldManager", "m1")])
        assert code == 201, made
        code, got = apply_scale(s, path, scale("w", 5))
        assert (code, got["message"]) == (
            409, 'Apply failed with 1 conflict: conflict with "m1": .spec.replicas')
        code, got = apply_scale(s, path, scale("w", 5), "hpa", ("force", "true"))
        assert (code, got.get("reason"), got["message"]) == (
            500, None, "failed to convert new object (/w; autoscaling/v1, Kind=Scale) to "
            "proper version: request to convert CR to an invalid group/version: "
            "autoscaling/v1")
        code, parent = call(s, "GET", path)
        assert (parent["spec"], parent["metadata"]["resourceVersion"]) == (
            {"replicas": 1}, made["metadata"]["resourceVersion"])
        code, got = call(s, "PATCH", f"{path}/scale", json.dumps({"spec": {"replicas": 2}}),
                         content_type=MERGE, query=[("fieldManager", "hpa")])
        assert (code, got["spec"]) == (200, {"replicas": 2})
        code, parent = call(s, "GET", path)
        assert entries(parent) == [  # m1 owned only the replicas: its entry is gone
            ("hpa", "Update", f"{group}/v1", False, "scale", SCALE_REPLICAS)]
    finally:
        uninstall(s, crd["metadata"]["name"])


def request(s, method: str, path: str, body: Any, *, content_type: str = "application/json",
            query: list[tuple[str, str]] | None = None,
            user_agent: str | None = None) -> tuple[int, Any, list[str]]:
    """(status, decoded body, Warning headers); ``user_agent=""`` sends none."""
    api = s.api_client()
    try:
        _, url, headers, _, _ = api.param_serialize(
            method, path, query_params=query or [],
            header_params={"Content-Type": content_type, "Accept": "application/json"},
            auth_settings=["BearerToken"])
        if user_agent is not None:
            headers = {k: v for k, v in headers.items() if k.lower() != "user-agent"}
            headers["User-Agent"] = user_agent or urllib3.util.SKIP_HEADER
        response = api.rest_client.pool_manager.request(
            method, url, body=json.dumps(body), headers=headers, timeout=30)
        return (response.status, json.loads(response.data),
                response.headers.getlist("Warning"))
    finally:
        api.close()


def test_scale_bodies_get_field_validation(any_api_server):
    s = any_api_server
    base = f"/apis/apps/v1/namespaces/{s.namespace}/deployments"
    assert call(s, "POST", base, deployment("d"))[0] == 201
    body = {**scale("d", 5, bogus=1), "extra": 2}
    code, got, _ = request(s, "PUT", f"{base}/d/scale", body,
                           query=[("fieldValidation", "Strict")])
    assert (code, got["reason"], got["message"]) == (
        400, "BadRequest", 'Scale in version "v1" cannot be handled as a Scale: strict '
        'decoding error: unknown field "spec.bogus", unknown field "extra"')
    code, got, warnings = request(s, "PUT", f"{base}/d/scale", body)
    assert (code, got["spec"], warnings) == (
        200, {"replicas": 5},
        ['299 - "unknown field \\"spec.bogus\\""', '299 - "unknown field \\"extra\\""'])
    code, got, warnings = request(s, "PUT", f"{base}/d/scale", {**body, "spec": {
        "replicas": 6, "bogus": 1}}, query=[("fieldValidation", "Ignore")])
    assert (code, got["spec"], warnings) == (200, {"replicas": 6}, [])
    patch = {"spec": {"replicas": 7, "bogus": 1}}
    code, got, _ = request(s, "PATCH", f"{base}/d/scale", patch, content_type=MERGE,
                           query=[("fieldValidation", "Strict")])
    assert (code, got["reason"], got["details"]["causes"][0]["field"]) == (
        422, "Invalid", "patch")
    assert got["message"].startswith(' "" is invalid: patch: Invalid value: "{\\"apiVersion\\":'
                                     '\\"autoscaling/v1\\",\\"kind\\":\\"Scale\\",')
    assert got["message"].endswith('": strict decoding error: unknown field "spec.bogus"')
    code, got, warnings = request(s, "PATCH", f"{base}/d/scale", patch, content_type=MERGE)
    assert (code, got["spec"], warnings) == (
        200, {"replicas": 7}, ['299 - "unknown field \\"spec.bogus\\""'])


def test_a_write_without_field_manager_or_user_agent_is_managed_by_unknown(any_api_server):
    s = any_api_server
    code, got, _ = request(s, "POST", f"/api/v1/namespaces/{s.namespace}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}},
        user_agent="")
    assert code == 201, got
    assert [(e["manager"], e["operation"], e["fieldsV1"])
            for e in got["metadata"]["managedFields"]] == [
        ("unknown", "Update", {"f:data": {".": {}, "f:a": {}}})]
