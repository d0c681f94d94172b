"""What the embedded server serves beside plain objects, on both servers (the embedded one
held to kube-apiserver v1.36.3): the ``scale`` subresources (``deployments/scale``,
``replicasets/scale``, ``statefulsets/scale`` and a CRD's ``subresources.scale`` answer
``autoscaling/v1`` ``Scale`` objects for GET, PUT and PATCH), the ``kubernetes`` Service, and
the discovery entries ``kubectl api-resources`` prints.

Upstream: ``k8s.io/kubernetes@v1.36.3`` ``pkg/registry/apps/deployment/storage/storage.go``
(``ScaleREST``, ``scaleFromDeployment``, ``scaleUpdatedObjectInfo``),
``pkg/apis/autoscaling/validation`` ``ValidateScale``; ``apiextensions-apiserver@v0.36.3``
``pkg/registry/customresource/etcd.go`` (``ScaleREST``, ``scaleFromCustomResource``) and
``validator.go`` (``ValidateScaleSpec``, ``ValidateScaleStatus``);
``pkg/controlplane/controller/kubernetesservice``.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_testing_crds import call, crd_body, install, new_group, ok, uninstall

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def deployment(name: str, replicas: int, **labels: str) -> dict[str, Any]:
    labels = labels or {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "containers": [{"name": "c", "image": "registry.invalid/c"}]}}}}


def scale_view(scale: dict[str, Any]) -> dict[str, Any]:
    """The Scale without the server-made metadata values (kept: which keys exist)."""
    meta = scale["metadata"]
    return {**scale, "metadata": {k: (v if k in ("name", "namespace") else "<set>")
                                  for k, v in meta.items()}}


def test_deployment_scale_get_answers_a_scale(any_api_server):
    s = any_api_server
    created = s.create(deployment("web", 2))
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/web/scale"
    scale = ok(s, "GET", path)
    assert scale_view(scale) == {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": "web", "namespace": s.namespace, "uid": "<set>",
                     "resourceVersion": "<set>", "creationTimestamp": "<set>"},
        "spec": {"replicas": 2}, "status": {"replicas": 0, "selector": "app=web"}}
    assert scale["metadata"]["uid"] == created["metadata"]["uid"]
    assert scale["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_deployment_scale_put_changes_spec_replicas(any_api_server):
    s = any_api_server
    s.create(deployment("web", 2))
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/web/scale"
    scale = ok(s, "GET", path)
    scale["spec"]["replicas"] = 3
    updated = ok(s, "PUT", path, scale)
    assert updated["spec"] == {"replicas": 3}
    stored = s.get("deployments", s.namespace, "web")
    assert (stored["spec"]["replicas"], stored["metadata"]["generation"]) == (3, 2)
    assert updated["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    # a stale resourceVersion is a conflict on the deployment
    code, answer = call(s, "PUT", path, scale)
    assert code == 409
    assert (answer["reason"], answer["message"], answer["details"]) == (
        "Conflict",
        'Operation cannot be fulfilled on deployments.apps "web": the object has been '
        "modified; please apply your changes to the latest version and try again",
        {"name": "web", "group": "apps", "kind": "deployments"})
    # no resourceVersion: unconditional
    del scale["metadata"]["resourceVersion"]
    scale["spec"]["replicas"] = 0
    assert ok(s, "PUT", path, scale)["spec"] == {}
    assert s.get("deployments", s.namespace, "web")["spec"]["replicas"] == 0


@pytest.mark.parametrize("content_type,patch", [
    (MERGE, {"spec": {"replicas": 5}}),
    (STRATEGIC, {"spec": {"replicas": 5}}),
    (JSON_PATCH, [{"op": "replace", "path": "/spec/replicas", "value": 5}]),
])
def test_deployment_scale_patch(any_api_server, content_type, patch):
    s = any_api_server
    s.create(deployment("web", 1))
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/web/scale"
    patched = ok(s, "PATCH", path, patch, content_type)
    assert (patched["kind"], patched["spec"], patched["status"]) == (
        "Scale", {"replicas": 5}, {"replicas": 0, "selector": "app=web"})
    assert s.get("deployments", s.namespace, "web")["spec"]["replicas"] == 5


def test_negative_replicas_is_invalid(any_api_server):
    s = any_api_server
    s.create(deployment("web", 1))
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/web/scale"
    code, answer = call(s, "PATCH", path, {"spec": {"replicas": -1}}, MERGE)
    assert code == 422
    assert (answer["reason"], answer["message"], answer["details"]) == (
        "Invalid",
        'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be '
        "greater than or equal to 0",
        {"name": "web", "group": "autoscaling", "kind": "Scale", "causes": [
            {"reason": "FieldValueInvalid",
             "message": "Invalid value: -1: must be greater than or equal to 0",
             "field": "spec.replicas"}]})
    assert s.get("deployments", s.namespace, "web")["spec"]["replicas"] == 1


def test_scale_of_a_missing_deployment_is_not_found(any_api_server):
    s = any_api_server
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/nope/scale"
    for method, body, content_type in (("GET", None, "application/json"),
                                       ("PATCH", {"spec": {"replicas": 1}}, MERGE)):
        code, answer = call(s, method, path, body, content_type)
        assert (code, answer["reason"], answer["message"], answer["details"]) == (
            404, "NotFound", 'deployments.apps "nope" not found',
            {"name": "nope", "group": "apps", "kind": "deployments"}), method


def test_scale_answers_405_to_other_verbs(any_api_server):
    s = any_api_server
    s.create(deployment("web", 1))
    path = f"/apis/apps/v1/namespaces/{s.namespace}/deployments/web/scale"
    assert call(s, "DELETE", path)[0] == 405
    assert call(s, "POST", path, {})[0] == 405


def test_replicaset_and_statefulset_scale(any_api_server):
    s = any_api_server
    template = deployment("x", 1)["spec"]["template"]
    s.create({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
              "spec": {"replicas": 2, "selector": {
                  "matchLabels": {"app": "x"},
                  "matchExpressions": [{"key": "tier", "operator": "In",
                                        "values": ["b", "a"]}]},
                  "template": {**template, "metadata": {"labels": {"app": "x",
                                                                   "tier": "a"}}}}})
    s.create({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "ss"},
              "spec": {"replicas": 4, "serviceName": "ss",
                       "selector": {"matchLabels": {"app": "x"}}, "template": template}})
    base = f"/apis/apps/v1/namespaces/{s.namespace}"
    rs = ok(s, "GET", f"{base}/replicasets/rs/scale")
    assert (rs["spec"], rs["status"]) == (
        {"replicas": 2}, {"replicas": 0, "selector": "app=x,tier in (a,b)"})
    ss = ok(s, "PATCH", f"{base}/statefulsets/ss/scale", {"spec": {"replicas": 1}}, MERGE)
    assert (ss["spec"], ss["status"]) == ({"replicas": 1}, {"replicas": 0, "selector": "app=x"})
    assert s.get("statefulsets", s.namespace, "ss")["spec"]["replicas"] == 1


def test_discovery_lists_the_scale_subresources(any_api_server):
    s = any_api_server
    resources = {r["name"]: r for r in ok(s, "GET", "/apis/apps/v1")["resources"]}
    for plural in ("deployments", "replicasets", "statefulsets"):
        assert resources[f"{plural}/scale"] == {
            "name": f"{plural}/scale", "singularName": "", "namespaced": True,
            "group": "autoscaling", "version": "v1", "kind": "Scale",
            "verbs": ["get", "patch", "update"]}
    assert "daemonsets/scale" not in resources


# -- custom resources ----------------------------------------------------------------------

SCALE_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        "status": {"type": "object", "properties": {
            "replicas": {"type": "integer"}, "selector": {"type": "string"}}},
    },
}


@pytest.fixture
def scaled(any_api_server):
    """A Widget CRD with the status and scale subresources; yields the collection path."""
    group = new_group()
    crd = crd_body(group, schema=SCALE_SCHEMA, subresources={
        "status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                "statusReplicasPath": ".status.replicas",
                                "labelSelectorPath": ".status.selector"}})
    install(any_api_server, crd)
    yield f"/apis/{group}/v1/namespaces/{any_api_server.namespace}/widgets"
    uninstall(any_api_server, crd["metadata"]["name"])


def test_custom_resource_scale(any_api_server, scaled):
    s = any_api_server
    group = scaled.split("/")[2]
    created = ok(s, "POST", scaled, {"apiVersion": f"{group}/v1", "kind": "Widget",
                                     "metadata": {"name": "w"}, "spec": {"replicas": 2}})
    created["status"] = {"replicas": 1, "selector": "app=w"}
    ok(s, "PUT", f"{scaled}/w/status", created)
    scale = ok(s, "GET", f"{scaled}/w/scale")
    assert scale_view(scale) == {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": "w", "namespace": s.namespace, "uid": "<set>",
                     "resourceVersion": "<set>", "creationTimestamp": "<set>"},
        "spec": {"replicas": 2}, "status": {"replicas": 1, "selector": "app=w"}}
    scale["spec"]["replicas"] = 7
    assert ok(s, "PUT", f"{scaled}/w/scale", scale)["spec"] == {"replicas": 7}
    code, answer = call(s, "PUT", f"{scaled}/w/scale", scale)
    assert (code, answer["reason"]) == (409, "Conflict")
    assert answer["message"] == (
        f'Operation cannot be fulfilled on widgets.{group} "w": the object has been '
        "modified; please apply your changes to the latest version and try again")
    stored = ok(s, "GET", f"{scaled}/w")
    assert (stored["spec"], stored["metadata"]["generation"]) == ({"replicas": 7}, 2)
    code, answer = call(s, "PATCH", f"{scaled}/w/scale", {"spec": {"replicas": -2}}, MERGE)
    assert (code, answer["reason"], answer["message"]) == (
        422, "Invalid",
        f'Widget.{group} "w" is invalid: .spec.replicas: Invalid value: -2: should be a '
        "non-negative integer")
    assert answer["details"]["causes"] == [
        {"reason": "FieldValueInvalid",
         "message": "Invalid value: -2: should be a non-negative integer",
         "field": ".spec.replicas"}]


def test_custom_resource_scale_without_spec_replicas(any_api_server, scaled):
    s = any_api_server
    group = scaled.split("/")[2]
    ok(s, "POST", scaled, {"apiVersion": f"{group}/v1", "kind": "Widget",
                           "metadata": {"name": "w"}, "spec": {}})
    code, answer = call(s, "GET", f"{scaled}/w/scale")
    assert (code, answer["reason"], answer["message"]) == (
        500, "InternalError",
        'Internal error occurred: the spec replicas field ".spec.replicas" does not exist')
    code, answer = call(s, "PATCH", f"{scaled}/w/scale", {"metadata": {"labels": {"a": "b"}}},
                        MERGE)
    assert (code, answer["reason"], answer["message"]) == (
        400, "BadRequest", 'the spec replicas field ".spec.replicas" cannot be empty')
    patched = ok(s, "PATCH", f"{scaled}/w/scale", {"spec": {"replicas": 1}}, MERGE)
    assert (patched["spec"], patched["status"]) == ({"replicas": 1}, {"replicas": 0})
    resources = {r["name"]: r for r in ok(s, "GET", f"/apis/{group}/v1")["resources"]}
    assert resources["widgets/scale"] == {
        "name": "widgets/scale", "singularName": "", "namespaced": True,
        "group": "autoscaling", "version": "v1", "kind": "Scale",
        "verbs": ["get", "patch", "update"]}


def test_custom_resource_with_negative_spec_replicas_is_invalid(any_api_server, scaled):
    s = any_api_server
    group = scaled.split("/")[2]
    code, answer = call(s, "POST", scaled, {"apiVersion": f"{group}/v1", "kind": "Widget",
                                            "metadata": {"name": "w"},
                                            "spec": {"replicas": -1}})
    assert (code, answer["message"]) == (
        422, f'Widget.{group} "w" is invalid: .spec.replicas: Invalid value: -1: should be a '
        "non-negative integer")


# -- the kubernetes Service ----------------------------------------------------------------


def test_the_kubernetes_service(any_api_server):
    """kube-apiserver's kubernetesservice controller: ``default/kubernetes``, 10.0.0.1,
    https 443 to the secure port, managed by ``kube-apiserver``; no Endpoints (the real
    control plane of these tests runs with ``--endpoint-reconciler-type=none``)."""
    s = any_api_server
    service = ok(s, "GET", "/api/v1/namespaces/default/services/kubernetes")
    secure_port = int(s.https_url.rsplit(":", 1)[1].rstrip("/"))
    meta = service["metadata"]
    assert {k: meta[k] for k in ("name", "namespace", "labels")} == {
        "name": "kubernetes", "namespace": "default",
        "labels": {"component": "apiserver", "provider": "kubernetes"}}
    assert [{k: v for k, v in e.items() if k != "time"} for e in meta["managedFields"]] == [{
        "manager": "kube-apiserver", "operation": "Update", "apiVersion": "v1",
        "fieldsType": "FieldsV1", "fieldsV1": {
            "f:metadata": {"f:labels": {".": {}, "f:component": {}, "f:provider": {}}},
            "f:spec": {
                "f:clusterIP": {}, "f:internalTrafficPolicy": {}, "f:ipFamilyPolicy": {},
                "f:ports": {".": {}, 'k:{"port":443,"protocol":"TCP"}': {
                    ".": {}, "f:name": {}, "f:port": {}, "f:protocol": {},
                    "f:targetPort": {}}},
                "f:sessionAffinity": {}, "f:type": {}}}}]
    assert (service["spec"], service["status"]) == ({
        "ports": [{"name": "https", "protocol": "TCP", "port": 443,
                   "targetPort": secure_port}],
        "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "type": "ClusterIP",
        "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
        "internalTrafficPolicy": "Cluster"}, {"loadBalancer": {}})
    assert call(s, "GET", "/api/v1/namespaces/default/endpoints/kubernetes")[0] == 404
    namespaces = {n["metadata"]["name"] for n in ok(s, "GET", "/api/v1/namespaces")["items"]}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= namespaces


# -- discovery as kubectl api-resources reads it ---------------------------------------------


def _resources(s, path: str) -> dict[str, dict[str, Any]]:
    keep = ("name", "singularName", "namespaced", "kind", "verbs", "shortNames", "categories",
            "group", "version")
    return {r["name"]: {k: r[k] for k in keep if k in r}
            for r in ok(s, "GET", path)["resources"]}


def test_discovery_of_the_served_builtin_resources(any_api_server):
    """Every built-in resource and subresource the embedded server serves is listed as
    kube-apiserver lists it (short names, categories, verbs, kind); the real server serves
    more (bindings, pods/exec...), which are left out of the comparison."""
    from informers.testing.resources import BUILTIN_RESOURCES

    s = any_api_server
    paths = sorted({rt.path_prefix for rt in BUILTIN_RESOURCES})
    served = {(rt.path_prefix, rt.plural) for rt in BUILTIN_RESOURCES}
    got = {}
    for path in paths:
        for name, entry in _resources(s, path).items():
            if (path, name.split("/")[0]) in served and name.split("/")[-1] in (
                    name.split("/")[0], "status", "scale", "finalize"):
                got[(path, name)] = entry
    assert got[("/api/v1", "pods")] == {
        "name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                  "watch"], "shortNames": ["po"], "categories": ["all"]}
    assert got[("/apis/apps/v1", "deployments")]["categories"] == ["all"]
    assert got[("/apis/apps/v1", "deployments")]["shortNames"] == ["deploy"]
    assert {name: (e.get("shortNames"), e.get("categories"))
            for (_, name), e in got.items() if "/" not in name} == {
        "configmaps": (["cm"], None), "endpoints": (["ep"], None), "events": (["ev"], None),
        "namespaces": (["ns"], None), "nodes": (["no"], None),
        "persistentvolumeclaims": (["pvc"], None), "persistentvolumes": (["pv"], None),
        "pods": (["po"], ["all"]), "secrets": (None, None), "serviceaccounts": (["sa"], None),
        "services": (["svc"], ["all"]), "daemonsets": (["ds"], ["all"]),
        "deployments": (["deploy"], ["all"]), "replicasets": (["rs"], ["all"]),
        "statefulsets": (["sts"], ["all"]), "jobs": (None, ["all"]), "leases": (None, None),
        "endpointslices": (None, None)}


@pytest.mark.real_apiserver
def test_embedded_discovery_equals_the_real_one(real_api_server):
    """Each entry the embedded server lists, field for field as the real server lists it."""
    from servers import EmbeddedServer, RealServer

    from informers.testing import ApiServer

    real = RealServer(real_api_server)
    embedded = EmbeddedServer(ApiServer().start())
    try:
        from informers.testing.resources import BUILTIN_RESOURCES

        for path in sorted({rt.path_prefix for rt in BUILTIN_RESOURCES}):
            mine = _resources(embedded, path)
            theirs = _resources(real, path)
            for name, entry in mine.items():
                assert theirs.get(name) == entry, (path, name)
    finally:
        embedded.close()
        real.close()


AGGREGATED = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
              "application/json")


def _aggregated(s, path: str) -> tuple[dict[str, str], dict[str, Any]]:
    api = s.api_client()
    try:
        _, url, headers, _, _ = api.param_serialize(
            "GET", path, header_params={"Accept": AGGREGATED}, auth_settings=["BearerToken"])
        response = api.rest_client.pool_manager.request("GET", url, headers=headers)
        import json

        return dict(response.headers), json.loads(response.data)
    finally:
        api.close()


@pytest.mark.real_apiserver
def test_embedded_aggregated_discovery_equals_the_real_one(real_api_server):
    """``/api`` and ``/apis`` asked for ``apidiscovery.k8s.io/v2`` (what kubectl asks first):
    the document's shape and, for each resource the embedded server serves, its entry
    (subresources limited to those served) as the real server writes it."""
    from servers import EmbeddedServer, RealServer

    from informers.testing import ApiServer

    real = RealServer(real_api_server)
    embedded = EmbeddedServer(ApiServer().start())
    group = new_group()
    crd = crd_body(group, schema=SCALE_SCHEMA, subresources={
        "status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                "statusReplicasPath": ".status.replicas"}})
    try:
        for s in (real, embedded):
            install(s, crd)
        for path in ("/api", "/apis"):
            docs = {}
            for name, s in (("real", real), ("embedded", embedded)):
                headers, doc = _aggregated(s, path)
                assert (headers["Content-Type"], headers["Vary"], headers["Cache-Control"]) == (
                    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
                    "Accept", "public"), name
                assert headers["Etag"].startswith('"') and len(headers["Etag"]) == 130
                assert {k: v for k, v in doc.items() if k != "items"} == {
                    "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                    "metadata": {}}
                docs[name] = {(item["metadata"].get("name", ""), v["version"], r["resource"]): (
                    item["metadata"], v["freshness"], r)
                    for item in doc["items"] for v in item["versions"]
                    for r in v["resources"]}
            assert docs["embedded"], path
            for key, (meta, freshness, entry) in docs["embedded"].items():
                real_meta, real_freshness, real_entry = docs["real"][key]
                served = {sub["subresource"] for sub in entry.get("subresources", [])}
                real_entry = {**real_entry, "subresources": [
                    sub for sub in real_entry.get("subresources", [])
                    if sub["subresource"] in served]}
                if not real_entry["subresources"]:
                    del real_entry["subresources"]
                assert (meta, freshness, entry) == (real_meta, real_freshness, real_entry), key
        assert (group, "v1", "widgets") in docs["embedded"]
    finally:
        uninstall(real, crd["metadata"]["name"])
        embedded.close()
        real.close()


def test_legacy_discovery_lists_a_crds_status_before_its_scale(any_api_server, scaled):
    group = scaled.split("/")[2]
    names = [r["name"] for r in ok(any_api_server, "GET", f"/apis/{group}/v1")["resources"]]
    assert names == ["widgets", "widgets/status", "widgets/scale"]


# -- defaulting on read ----------------------------------------------------------------------


def test_defaults_added_to_a_schema_show_on_read(any_api_server):
    """apiextensions-apiserver applies the schema's defaults when it decodes a stored object:
    an object stored before a default was added reads with it, at the same
    resourceVersion, before any write."""
    import time

    s = any_api_server
    group = new_group()
    schema: dict = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer"}, "color": {"type": "string"}}}}}
    crd = crd_body(group, schema=schema)
    install(s, crd)
    try:
        where = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets"
        created = ok(s, "POST", where, {"apiVersion": f"{group}/v1", "kind": "Widget",
                                        "metadata": {"name": "w"}, "spec": {"size": 1}})
        name = crd["metadata"]["name"]
        current = ok(s, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        current["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
            "properties"]["color"]["default"] = "red"
        ok(s, "PUT", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", current)
        deadline = time.monotonic() + 10
        while True:
            got = ok(s, "GET", f"{where}/w")
            if "color" in got["spec"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert got["spec"] == {"size": 1, "color": "red"}
        assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        listed = ok(s, "GET", where)["items"]
        assert [item["spec"] for item in listed] == [{"size": 1, "color": "red"}]
    finally:
        uninstall(s, crd["metadata"]["name"])
