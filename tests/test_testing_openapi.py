"""The OpenAPI documents of the embedded API server (informers/testing/openapi.py, with
informers/testing/schemas.py) and the fieldValidation of writes
(informers/testing/field_validation.py): document shapes, caching headers, every
fieldValidation mode through the official client, and kubectl with its default validation.

Expected values are what kube-apiserver v1.36.3 answers (observed with kubectl 1.32 -v=8 and
curl against the project's real control plane), unless a comment says otherwise.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from informers.clock import FakeClock
from informers.testing import ApiServer

WIDGETS = ("example.com", "v1", "widgets", "Widget")
BUILTIN_DOCUMENTS = {"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/coordination.k8s.io/v1",
                     "apis/discovery.k8s.io/v1", "apis/apiextensions.k8s.io/v1",
                     "apis/admissionregistration.k8s.io/v1"}
LIST = ["allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
        "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "shardSelector",
        "timeoutSeconds", "watch"]
WRITE = ["dryRun", "fieldManager", "fieldValidation"]
DELETE = ["dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
          "orphanDependents", "propagationPolicy"]
DELETE_COLLECTION = ["continue", "dryRun", "fieldSelector", "gracePeriodSeconds",
                     "ignoreStoreReadErrorWithClusterBreakingPotential", "labelSelector",
                     "limit", "orphanDependents", "propagationPolicy", "resourceVersion",
                     "resourceVersionMatch", "sendInitialEvents", "shardSelector",
                     "timeoutSeconds"]
kubectl_missing = pytest.mark.skipif(shutil.which("kubectl") is None,
                                     reason="kubectl is not installed")


@pytest.fixture(scope="module")
def server():
    with ApiServer() as srv:
        srv.register_resource(*WIDGETS, short_names=("wd",))
        yield srv


@pytest.fixture(scope="module")
def http():
    return urllib3.PoolManager()


def get(http: urllib3.PoolManager, srv: ApiServer, path: str, **headers: str):
    return http.request("GET", srv.url + path, retries=False, headers={
        "Authorization": f"Bearer {srv.token}", **headers})


def write(http: urllib3.PoolManager, srv: ApiServer, method: str, path: str, body: str,
          content_type: str = "application/json"):
    return http.request(method, srv.url + path, body=body.encode(), retries=False, headers={
        "Authorization": f"Bearer {srv.token}", "Content-Type": content_type})


def root(http: urllib3.PoolManager, srv: ApiServer) -> dict[str, str]:
    response = get(http, srv, "/openapi/v3")
    assert response.status == 200
    return {name: entry["serverRelativeURL"]
            for name, entry in json.loads(response.data)["paths"].items()}


def document(http: urllib3.PoolManager, srv: ApiServer, name: str) -> dict[str, Any]:
    response = get(http, srv, root(http, srv)[name])
    assert response.status == 200
    return json.loads(response.data)


def names(parameters: list[dict[str, Any]] | None) -> list[str]:
    return [p["name"] for p in parameters or []]


# -- the documents --------------------------------------------------------------------------


def test_root_names_each_group_version_document_by_its_sha512(server, http):
    response = get(http, server, "/openapi/v3")
    # kube-openapi handler3 writes the root without a Content-Type: Go sniffs text/plain.
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-cache, private"
    urls = root(http, server)
    assert set(urls) == BUILTIN_DOCUMENTS | {"apis/example.com/v1"}
    for name, url in urls.items():
        body = get(http, server, url).data
        assert url == f"/openapi/v3/{name}?hash={hashlib.sha512(body).hexdigest().upper()}"


def test_pod_paths_verbs_and_parameters_are_kube_apiservers(server, http):
    doc = document(http, server, "api/v1")
    assert doc["openapi"] == "3.0.0"
    assert doc["info"] == {"title": "Kubernetes", "version": "1.36"}
    pods = {path: sorted(k for k in item if k != "parameters")
            for path, item in doc["paths"].items() if "pods" in path}
    # kube-apiserver also lists the subresources this server does not serve (log, exec,
    # binding, eviction, ephemeralcontainers, resize, attach, portforward, proxy).
    assert pods == {
        "/api/v1/namespaces/{namespace}/pods": ["delete", "get", "post"],
        "/api/v1/namespaces/{namespace}/pods/{name}": ["delete", "get", "patch", "put"],
        "/api/v1/namespaces/{namespace}/pods/{name}/status": ["get", "patch", "put"],
        "/api/v1/pods": ["get"],
        "/api/v1/watch/namespaces/{namespace}/pods": ["get"],
        "/api/v1/watch/namespaces/{namespace}/pods/{name}": ["get"],
        "/api/v1/watch/pods": ["get"],
    }
    collection = doc["paths"]["/api/v1/namespaces/{namespace}/pods"]
    item = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]
    assert [(p["name"], p["in"], p.get("required", False)) for p in item["parameters"]] == [
        ("name", "path", True), ("namespace", "path", True), ("pretty", "query", False)]
    assert names(collection["get"]["parameters"]) == LIST
    assert names(collection["post"]["parameters"]) == WRITE
    assert names(collection["delete"]["parameters"]) == DELETE_COLLECTION
    assert names(item["get"].get("parameters")) == []
    assert names(item["put"]["parameters"]) == WRITE
    assert names(item["patch"]["parameters"]) == [*WRITE, "force"]
    assert names(item["delete"]["parameters"]) == DELETE
    assert names(doc["paths"]["/api/v1/pods"]["parameters"]) == sorted([*LIST, "pretty"])
    patch = item["patch"]
    assert patch["operationId"] == "patchCoreV1NamespacedPod"
    assert patch["x-kubernetes-action"] == "patch"
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1",
                                                        "kind": "Pod"}
    # Not application/apply-patch+yaml, which kube-apiserver lists: server-side apply is 415.
    assert sorted(patch["requestBody"]["content"]) == [
        "application/json-patch+json", "application/merge-patch+json",
        "application/strategic-merge-patch+json"]
    assert collection["post"]["requestBody"] == {"content": {"*/*": {"schema": {
        "$ref": "#/components/schemas/io.k8s.api.core.v1.Pod"}}}, "required": True}
    assert item["delete"]["responses"]["200"]["content"]["application/json"] == {
        "schema": {"$ref": "#/components/schemas/io.k8s.api.core.v1.Pod"}}
    assert collection["get"]["responses"]["200"]["content"]["application/json"] == {
        "schema": {"$ref": "#/components/schemas/io.k8s.api.core.v1.PodList"}}


def test_namespaces_nodes_and_leases_follow_their_scope(server, http):
    doc = document(http, server, "api/v1")
    finalize = doc["paths"]["/api/v1/namespaces/{name}/finalize"]
    # kube-apiserver lists the finalize parameters on the path, not the operation.
    assert names(finalize["parameters"]) == ["dryRun", "fieldManager", "fieldValidation",
                                             "name", "pretty"]
    assert finalize["put"]["operationId"] == "replaceCoreV1NamespaceFinalize"
    assert "delete" not in doc["paths"]["/api/v1/namespaces"]  # no deletecollection
    assert doc["paths"]["/api/v1/namespaces/{name}"]["delete"]["responses"]["200"][
        "content"]["application/json"]["schema"]["$ref"].endswith("meta.v1.Status")
    nodes = doc["paths"]["/api/v1/nodes/{name}"]
    assert names(nodes["parameters"]) == ["name", "pretty"]
    assert nodes["get"]["operationId"] == "readCoreV1Node"
    leases = document(http, server, "apis/coordination.k8s.io/v1")["paths"]
    assert sorted(leases) == [
        "/apis/coordination.k8s.io/v1/", "/apis/coordination.k8s.io/v1/leases",
        "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
        "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}",
        "/apis/coordination.k8s.io/v1/watch/leases",
        "/apis/coordination.k8s.io/v1/watch/namespaces/{namespace}/leases",
        "/apis/coordination.k8s.io/v1/watch/namespaces/{namespace}/leases/{name}"]
    create = leases["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"]["post"]
    assert (create["operationId"], create["tags"]) == (
        "createCoordinationV1NamespacedLease", ["coordination_v1"])


def test_custom_resource_document_is_the_crd_builders(server, http):
    doc = document(http, server, "apis/example.com/v1")
    assert doc["info"] == {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}
    # The CRD builder publishes no watch paths.
    assert sorted(doc["paths"]) == [
        "/apis/example.com/v1/namespaces/{namespace}/widgets",
        "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}",
        "/apis/example.com/v1/widgets"]
    item = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    assert names(item["get"]["parameters"]) == ["resourceVersion"]
    assert names(item["patch"]["parameters"]) == [*WRITE, "force"]
    assert sorted(item["patch"]["requestBody"]["content"]) == [
        "application/json-patch+json", "application/merge-patch+json"]  # no strategic
    assert sorted(item["put"]["requestBody"]["content"]) == ["application/json",
                                                             "application/yaml"]
    collection = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets"]
    # The CRD builder gives deletecollection the list parameters (a quirk kept).
    assert names(collection["delete"]["parameters"]) == LIST
    assert collection["get"]["description"] == "list objects of kind Widget"
    widget = doc["components"]["schemas"]["com.example.v1.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "kind": "Widget", "version": "v1"}]
    assert widget["x-kubernetes-preserve-unknown-fields"] is True
    assert sorted(widget["properties"]) == ["apiVersion", "kind", "metadata"]
    assert "securitySchemes" not in doc["components"]


def test_components_are_the_go_types_with_their_group_version_kinds(server, http):
    schemas = document(http, server, "apis/apps/v1")["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}]
    assert sorted(deployment["properties"]) == ["apiVersion", "kind", "metadata", "spec",
                                                "status"]
    assert deployment["properties"]["spec"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}]
    spec = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert spec["containers"] == {"type": "array", "items": {"allOf": [
        {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}]}}
    assert spec["nodeSelector"] == {"type": "object",
                                    "additionalProperties": {"type": "string"}}
    # No patch strategies: kubectl computes strategic merge patches that replace lists.
    assert "x-kubernetes-patch-merge-key" not in json.dumps(schemas)
    # A kind used inside another group's document still names itself.
    assert schemas["io.k8s.api.core.v1.PersistentVolumeClaim"][
        "x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "PersistentVolumeClaim", "version": "v1"}]
    assert schemas["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"][
        "x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "DeleteOptions", "version": "v1"},
        {"group": "apps", "kind": "DeleteOptions", "version": "v1"}]


def test_registering_a_resource_changes_the_hashes_it_touches(http):
    with ApiServer() as srv:
        before = root(http, srv)
        assert set(before) == BUILTIN_DOCUMENTS
        srv.register_resource("example.com", "v1", "gadgets", "Gadget", namespaced=False)
        after = root(http, srv)
        assert set(after) == BUILTIN_DOCUMENTS | {"apis/example.com/v1"}
        assert {k: after[k] for k in before} == before
        srv.register_resource("apps", "v1", "widgets", "Widget")  # into a built-in group
        again = root(http, srv)
        assert again["apis/apps/v1"] != after["apis/apps/v1"]
        assert again["api/v1"] == before["api/v1"]
        paths = document(http, srv, "apis/apps/v1")["paths"]
        assert "/apis/apps/v1/namespaces/{namespace}/widgets/{name}" in paths
        # The old URL redirects to the current one (kube-openapi handler3: 301).
        stale = http.request("GET", srv.url + after["apis/apps/v1"], redirect=False,
                             retries=False, headers={"Authorization": f"Bearer {srv.token}"})
        assert stale.status == 301
        assert stale.headers["Location"] == again["apis/apps/v1"]


def test_caching_headers_etag_and_304():
    with ApiServer(clock=FakeClock()) as srv:
        http = urllib3.PoolManager()
        url = root(http, srv)["api/v1"]
        etag = '"' + url.rsplit("=", 1)[1] + '"'
        fresh = get(http, srv, url)
        assert (fresh.status, fresh.headers["Content-Type"], fresh.headers["ETag"]) == (
            200, "application/json", etag)
        assert fresh.headers["Cache-Control"] == "public, immutable"
        assert fresh.headers["Expires"] == "Fri, 01 Jan 2027 00:00:00 UTC"  # a year on
        assert fresh.headers["Vary"] == "Accept"
        unchanged = get(http, srv, url, **{"If-None-Match": etag})
        assert (unchanged.status, unchanged.data, unchanged.headers["ETag"]) == (
            304, b"", etag)
        unhashed = get(http, srv, "/openapi/v3/api/v1")
        assert (unhashed.status, unhashed.headers["Cache-Control"]) == (200,
                                                                        "no-cache, private")
        assert unhashed.data == fresh.data
        # Only JSON is produced: a protobuf-only Accept is 406; JSON among others is fine.
        assert get(http, srv, url, Accept="application/com.github.proto-openapi.spec.v3@v1.0"
                   "+protobuf").status == 406
        assert get(http, srv, url, Accept="application/json, */*").status == 200
        assert get(http, srv, "/openapi/v3/apis/nope/v1").status == 404


def test_swagger_v2_document(server, http):
    response = get(http, server, "/openapi/v2", Accept="application/json")
    assert response.status == 200
    doc = json.loads(response.data)
    assert (doc["swagger"], doc["info"]) == ("2.0", {"title": "Kubernetes", "version": "1.36"})
    assert response.headers["ETag"] == '"' + hashlib.sha512(
        response.data).hexdigest().upper() + '"'
    assert get(http, server, "/openapi/v2", **{
        "If-None-Match": response.headers["ETag"]}).status == 304
    assert doc["definitions"]["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]
    put = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["put"]
    assert put["parameters"][0] == {"name": "body", "in": "body", "required": True, "schema": {
        "$ref": "#/definitions/io.k8s.api.core.v1.Pod"}}
    assert names(put["parameters"][1:]) == WRITE
    assert "#/components/" not in response.data.decode()
    assert "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}" in doc["paths"]
    # kubectl accepts v2 only as gnostic's protobuf message (openapi.v2.Document).
    proto = get(http, server, "/openapi/v2", Accept="application/com.github.proto-openapi"
                ".spec.v2@v1.0+protobuf")
    assert (proto.status, proto.headers["Content-Type"], proto.headers["ETag"]) == (
        200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        response.headers["ETag"])
    assert proto.data.startswith(b"\n\x032.0\x12\x12\n\nKubernetes\x12\x041.36")  # swagger, info
    # A custom resource that keeps unknown fields is any object in Swagger 2.0.
    assert doc["definitions"]["com.example.v1.Widget"] == {
        "type": "object", "x-kubernetes-group-version-kind": [
            {"group": "example.com", "kind": "Widget", "version": "v1"}]}
    # Swagger 2.0 refers without allOf (kubectl's v2 reader takes allOf for "anything").
    assert doc["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"] == {
        "$ref": "#/definitions/io.k8s.api.core.v1.PodSpec"}


# -- fieldValidation --------------------------------------------------------------------------


def configmap(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"a": "b"}, **extra}


def test_strict_create_fails_with_every_unknown_field(server):
    # The typed client's models refuse unknown fields, so the dynamic client sends them.
    configmaps = DynamicClient(server.api_client()).resources.get(api_version="v1",
                                                                  kind="ConfigMap")
    body = configmap("strict", bar={"x": 1}, spec={"y": 2})
    body["metadata"]["foo"] = 1
    with pytest.raises(ApiException) as info:
        configmaps.create(body=body, namespace="default",
                          query_params=[("fieldValidation", "Strict")])
    assert info.value.status == 400
    assert json.loads(info.value.body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict '
                   'decoding error: unknown field "metadata.foo", unknown field "bar", '
                   'unknown field "spec"',
        "reason": "BadRequest", "code": 400}
    assert server.get("configmaps", "default", "strict") is None
    # Without unknown fields, Strict creates (typed client, field_validation=).
    api = client.CoreV1Api(server.api_client())
    created = api.create_namespaced_config_map("default", configmap("strict"),
                                               field_validation="Strict")
    assert created.data == {"a": "b"}


def test_warn_is_the_default_and_drops_unknown_fields_with_warnings(server, http):
    body = json.dumps(configmap("warned", zz=1, metadata={"name": "warned", "foo": 1}))
    response = write(http, server, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert response.status == 201
    assert response.headers.getlist("Warning") == [
        '299 - "unknown field \\"metadata.foo\\""', '299 - "unknown field \\"zz\\""']
    stored = server.get("configmaps", "default", "warned")
    assert "zz" not in stored and "foo" not in stored["metadata"]
    configmaps = DynamicClient(server.api_client()).resources.get(api_version="v1",
                                                                  kind="ConfigMap")
    created = configmaps.create(body=configmap("ignored", zz=1), namespace="default",
                                query_params=[("fieldValidation", "Ignore")])
    assert created.metadata.name == "ignored"
    assert "zz" not in server.get("configmaps", "default", "ignored")
    ignored = write(http, server, "POST",
                    "/api/v1/namespaces/default/configmaps?fieldValidation=Ignore",
                    json.dumps(configmap("ignored-raw", zz=1)))
    assert (ignored.status, ignored.headers.getlist("Warning")) == (201, [])


def test_yaml_bodies_are_checked_too(server, http):
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yaml, foo: 1}\ndata: {a: b}\n"
    strict = write(http, server, "POST",
                   "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", body,
                   "application/yaml")
    assert (strict.status, json.loads(strict.data)["message"]) == (400, (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "metadata.foo"'))
    warned = write(http, server, "POST", "/api/v1/namespaces/default/configmaps", body,
                   "application/yaml")
    assert (warned.status, warned.headers.getlist("Warning")) == (
        201, ['299 - "unknown field \\"metadata.foo\\""'])


def test_without_the_field_table_kinds_are_permissive(tmp_path):
    from informers.testing.resources import ResourceRegistry
    from informers.testing.schemas import Schemas

    schemas = Schemas(tmp_path / "missing.json")
    pods = ResourceRegistry().find("pods")
    assert not schemas.complete
    assert schemas.fields(pods).clean({"spec": {"anything": 1}, "metadata": {"x": 1}})
    component = schemas.components(pods)["io.k8s.api.core.v1.Pod"]
    assert component["x-kubernetes-preserve-unknown-fields"] is True
    assert component["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]


def test_an_invalid_directive_is_422_before_anything_else(server):
    api = client.CoreV1Api(server.api_client())
    with pytest.raises(ApiException) as info:
        api.create_namespaced_config_map("default", configmap("x"), field_validation="strict")
    status = json.loads(info.value.body)
    assert (info.value.status, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": '
        'supported values: "", "Ignore", "Strict", "Warn"')
    assert status["details"]["causes"] == [{
        "reason": "FieldValueNotSupported", "field": "fieldValidation",
        "message": 'Unsupported value: "strict": supported values: "", "Ignore", "Strict", '
                   '"Warn"'}]
    with pytest.raises(ApiException) as info:
        api.patch_namespaced_config_map("x", "default", {"data": {}}, field_validation="no")
    assert json.loads(info.value.body)["message"].startswith("PatchOptions.meta.k8s.io")


def test_duplicate_fields_in_document_order_and_merged_as_go_decodes(server, http):
    body = ('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","labels":{"a":"b"},'
            '"labels":{"c":"d"}},"data":{"a":"b"},"zz":1,"data":{"c":"d"}}')
    strict = write(http, server, "POST",
                   "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", body)
    assert strict.status == 400
    assert json.loads(strict.data)["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "metadata.labels", unknown field "zz", duplicate field "data"')
    warned = write(http, server, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert warned.headers.getlist("Warning") == [
        '299 - "duplicate field \\"metadata.labels\\""', '299 - "unknown field \\"zz\\""',
        '299 - "duplicate field \\"data\\""']
    stored = server.get("configmaps", "default", "dup")
    # A Go map decoded twice keeps the first object's keys.
    assert (stored["metadata"]["labels"], stored["data"]) == ({"a": "b", "c": "d"},
                                                              {"a": "b", "c": "d"})


def test_custom_resources_keep_unknown_fields_but_check_metadata(server, http):
    path = "/apis/example.com/v1/namespaces/default/widgets"
    body = ('{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","foo":1},'
            '"spec":{"x":{"a":1},"x":{"b":2},"anything":[1]}}')
    strict = write(http, server, "POST", path + "?fieldValidation=Strict", body)
    assert json.loads(strict.data)["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
        'duplicate field "spec.x", unknown field "metadata.foo"')  # duplicates first
    warned = write(http, server, "POST", path, body)
    assert (warned.status, warned.headers.getlist("Warning")) == (201, [
        '299 - "duplicate field \\"spec.x\\""', '299 - "unknown field \\"metadata.foo\\""'])
    assert server.get("widgets", "default", "w")["spec"] == {"x": {"b": 2}, "anything": [1]}


def test_strict_patches_fail_with_the_patched_value(server, http):
    server.create(configmap("patched"), namespace="default")
    path = "/api/v1/namespaces/default/configmaps/patched?fieldValidation=Strict"
    merge = write(http, server, "PATCH", path, '{"data":{"x":"y"},"zz":{"a":1}}',
                  "application/merge-patch+json")
    status = json.loads(merge.data)
    assert (merge.status, status["reason"], status["details"]["causes"][0]["field"]) == (
        422, "Invalid", "patch")
    assert status["message"].startswith(' "" is invalid: patch: Invalid value: "{\\"apiVersion')
    assert status["message"].endswith('": strict decoding error: unknown field "zz"')
    strategic = write(http, server, "PATCH", path,
                      '{"data":{"x":"y"},"zz":{"a":1000000.0,"b":[1,true,null,"s"],"c":0.5}}',
                      "application/strategic-merge-patch+json")
    assert json.loads(strategic.data)["message"] == (
        ' "" is invalid: patch: Invalid value: "map[data:map[x:y] zz:map[a:1e+06 b:[1 true '
        '<nil> s] c:0.5]]": strict decoding error: unknown field "zz"')
    duplicate = write(http, server, "PATCH", path, '{"data":{"x":"y"},"data":{"a":"c"}}',
                      "application/merge-patch+json")
    assert json.loads(duplicate.data)["message"].endswith(
        'strict decoding error: duplicate field "data"')
    assert server.get("configmaps", "default", "patched")["data"] == {"a": "b"}
    warned = write(http, server, "PATCH", path.replace("Strict", "Warn"),
                   '{"data":{"x":"y"},"data":{"a":"c"},"zz":1}', "application/merge-patch+json")
    assert warned.headers.getlist("Warning") == ['299 - "duplicate field \\"data\\""',
                                                 '299 - "unknown field \\"zz\\""']
    stored = server.get("configmaps", "default", "patched")
    assert stored["data"] == {"a": "c"} and "zz" not in stored


# -- kubectl ----------------------------------------------------------------------------------


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: c
        image: nginx:1
        ports:
        - containerPort: 80
"""


@pytest.fixture(scope="module")
def kubectl(server, tmp_path_factory):
    path = server.write_kubeconfig(tmp_path_factory.mktemp("kubectl") / "kubeconfig")
    directory = tmp_path_factory.mktemp("manifests")

    def run(*args: str, manifest: str | None = None) -> subprocess.CompletedProcess[str]:
        if manifest is not None:
            (directory / "m.yaml").write_text(manifest)
            args = tuple(str(directory / "m.yaml") if a == "@" else a for a in args)
        return subprocess.run(["kubectl", "--kubeconfig", path, *args], capture_output=True,
                              text=True, timeout=60, check=False)

    return run


@kubectl_missing
def test_kubectl_apply_twice_replace_and_diff_with_default_validation(server, kubectl):
    assert kubectl("apply", "-f", "@", manifest=DEPLOYMENT).stdout == (
        "deployment.apps/web created\n")
    changed = DEPLOYMENT.replace("replicas: 1", "replicas: 3").replace("nginx:1", "nginx:2")
    second = kubectl("apply", "-f", "@", manifest=changed)
    assert (second.stdout, second.stderr) == ("deployment.apps/web configured\n", "")
    stored = server.get("deployments", "default", "web")
    assert stored["spec"]["replicas"] == 3
    # The patch kubectl computed from the documents replaced the list whole: nothing lost.
    assert stored["spec"]["template"]["spec"]["containers"] == [
        {"name": "c", "image": "nginx:2", "ports": [{"containerPort": 80}]}]
    assert server.request_log("patch", "deployments")[-1].query == {
        "fieldManager": "kubectl-client-side-apply", "fieldValidation": "Strict"}
    assert kubectl("apply", "-f", "@", manifest=changed).stdout == (
        "deployment.apps/web unchanged\n")
    diff = kubectl("diff", "-f", "@", manifest=DEPLOYMENT)
    assert diff.returncode == 1  # differences found
    assert "-  replicas: 3\n+  replicas: 1\n" in diff.stdout
    assert server.get("deployments", "default", "web")["spec"]["replicas"] == 3  # a dry run
    assert kubectl("replace", "-f", "@", manifest=DEPLOYMENT).stdout == (
        "deployment.apps/web replaced\n")
    assert server.get("deployments", "default", "web")["spec"]["replicas"] == 1


@kubectl_missing
def test_kubectl_reports_unknown_fields_as_kube_apiserver(server, kubectl):
    manifest = ("apiVersion: v1\nkind: Pod\nmetadata: {name: typo, namespace: default}\n"
                "spec:\n  foo: 1\n  containers:\n  - {name: c, image: nginx, bar: 2}\n")
    created = kubectl("create", "-f", "@", manifest=manifest)
    assert created.returncode == 1
    assert created.stderr.endswith(
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field '
        '"spec.containers[0].bar", unknown field "spec.foo"\n')
    warned = kubectl("create", "--validate=warn", "-f", "@", manifest=manifest)
    assert (warned.stdout, warned.stderr) == ("pod/typo created\n", (
        'Warning: unknown field "spec.containers[0].bar"\nWarning: unknown field "spec.foo"\n'))
    assert server.get("pods", "default", "typo")["spec"] == {
        "containers": [{"name": "c", "image": "nginx"}]}


@kubectl_missing
def test_kubectl_validates_list_manifests_with_the_v2_document(server, kubectl):
    # kubectl validates a kind: List on the client, against /openapi/v2 in protobuf.
    items = ("- {apiVersion: v1, kind: ConfigMap, metadata: {name: listed, namespace: default},"
             " data: {a: b}}\n"
             "- {apiVersion: example.com/v1, kind: Widget, metadata: {name: listed, namespace:"
             " default}, spec: {x: 1}}\n")
    listed = kubectl("apply", "-f", "@", manifest="apiVersion: v1\nkind: List\nitems:\n" + items)
    assert listed.stdout == "configmap/listed created\nwidget.example.com/listed created\n"
    bad = kubectl("create", "-f", "@", manifest=(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n"
        "  metadata: {name: bad, namespace: default, foo: 1}\n  spec: {replicas: '3'}\n"))
    assert bad.returncode == 1
    # As against kube-apiserver v1.36.3, less its missing required fields ("selector",
    # "template"): the documents mark none required, as the server checks none.
    assert bad.stderr == (
        'error: error validating "' + bad.args[-1] + '": error validating data: ['
        'ValidationError(Deployment.metadata): unknown field "foo" in '
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta, ValidationError(Deployment.spec"
        ".replicas): invalid type for io.k8s.api.apps.v1.DeploymentSpec.replicas: got "
        '"string", expected "integer"]; if you choose to ignore these errors, turn validation '
        "off with --validate=false\n")


@kubectl_missing
def test_kubectl_custom_resources_explain_and_server_side_apply(server, kubectl):
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\n"
    assert kubectl("apply", "-f", "@", manifest=widget + "spec: {size: 1}\n").stdout == (
        "widget.example.com/w1 created\n")
    assert kubectl("apply", "-f", "@", manifest=widget + "spec: {size: 2}\n").stdout == (
        "widget.example.com/w1 configured\n")
    assert server.get("widgets", "default", "w1")["spec"] == {"size": 2}
    explained = kubectl("explain", "pods.spec.containers.ports")
    assert explained.returncode == 0
    assert "containerPort\t<integer>" in explained.stdout
    assert "KIND:       Widget" in kubectl("explain", "widgets").stdout
    # Server-side apply (informers.testing.apply): a field client-side apply wrote (an Update
    # entry of kubectl-client-side-apply) conflicts when changed...
    conflict = kubectl("apply", "--server-side", "-f", "@", manifest=widget + "spec: {size: 3}\n")
    assert conflict.returncode == 1
    assert conflict.stderr.startswith(
        'error: Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
        'using example.com/v1: .spec.size\n')
    # ... and is taken over with --force-conflicts; kubectl then migrates the CSA entries.
    ssa = kubectl("apply", "--server-side", "--force-conflicts", "-f", "@",
                  manifest=widget + "spec: {size: 3}\n")
    assert (ssa.returncode, ssa.stdout) == (
        0, "widget.example.com/w1 serverside-applied\n"), ssa.stderr
    stored = server.get("widgets", "default", "w1")
    assert stored["spec"] == {"size": 3}
    assert [(e["manager"], e["operation"], e["fieldsV1"])
            for e in stored["metadata"]["managedFields"]] == [
        ("kubectl", "Apply", {"f:spec": {"f:size": {}}}),
        # kubectl's migration from client-side apply takes over its annotation
        ("kubectl-last-applied", "Apply", {"f:metadata": {"f:annotations": {
            "f:kubectl.kubernetes.io/last-applied-configuration": {}}}})]
