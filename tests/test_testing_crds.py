"""CustomResourceDefinitions on the embedded server, held to kube-apiserver v1.36.3: each test
runs against both servers (``any_api_server``) with the same expected values.

Upstream: ``k8s.io/apiextensions-apiserver@v0.36.3`` (``pkg/apis/apiextensions/validation``,
``pkg/apiserver/schema``, ``pkg/apiserver/validation``, ``pkg/registry/customresource``).
CRDs are cluster-scoped and the real server is shared by the session, so every test makes its
own API group.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import shutil
import subprocess
import time
from typing import Any

import pytest

from informers.errors import StatusError

WAIT = 10.0


def call(server, method: str, path: str, body: Any = None,
         content_type: str = "application/json") -> tuple[int, Any]:
    """One request; (status code, decoded JSON body, or the text of another body)."""
    api = server.api_client()
    try:
        method, url, headers, data, _ = api.param_serialize(
            method, path, header_params={"Content-Type": content_type,
                                         "Accept": "application/json"},
            body=body, auth_settings=["BearerToken"])
        response = api.call_api(method, url, headers, data, _request_timeout=30)
        raw = response.read()
        if not response.getheader("Content-Type", "").startswith("application/json"):
            return response.status, raw.decode()
        return response.status, json.loads(raw) if raw else None
    finally:
        api.close()


def ok(server, method: str, path: str, body: Any = None,
       content_type: str = "application/json") -> Any:
    code, answer = call(server, method, path, body, content_type)
    assert 200 <= code < 300, (code, json.dumps(answer))
    return answer


def new_group() -> str:
    return f"t{secrets.token_hex(4)}.example.com"


SCHEMA: dict = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
                "when": {"type": "string", "format": "date-time"},
                "port": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "tags": {"type": "array", "items": {"type": "string"},
                         "x-kubernetes-list-type": "set"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def crd_body(group: str, *, plural: str = "widgets", kind: str = "Widget",
             schema: dict | None = None, versions: list | None = None,
             scope: str = "Namespaced", **version_extra: Any) -> dict:
    version = {"name": "v1", "served": True, "storage": True,
               "schema": {"openAPIV3Schema": schema or SCHEMA}, **version_extra}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": scope,
                 "names": {"plural": plural, "kind": kind, "shortNames": ["wd"],
                           "categories": ["all"]},
                 "versions": versions or [version]},
    }


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def install(server, crd: dict, *, create: bool = True) -> dict:
    """Create ``crd`` (unless done) and wait until it is Established and its resource
    answers."""
    if create:
        ok(server, "POST", CRDS, crd)
    name = crd["metadata"]["name"]
    deadline = time.monotonic() + WAIT
    while True:
        current = ok(server, "GET", f"{CRDS}/{name}")
        conditions = {c["type"]: c["status"] for c in current["status"].get("conditions") or []}
        if conditions.get("Established") == "True":
            group = crd["spec"]["group"]
            served = [v["name"] for v in crd["spec"]["versions"] if v["served"]]
            plural = crd["spec"]["names"]["plural"]
            if all(call(server, "GET", f"/apis/{group}/{v}/{plural}")[0] == 200
                   for v in served):
                return current
        assert time.monotonic() < deadline, current
        time.sleep(0.05)


def uninstall(server, name: str) -> None:
    call(server, "DELETE", f"{CRDS}/{name}")


@pytest.fixture
def widgets(any_api_server):
    """A namespaced Widget CRD with SCHEMA and the status subresource; yields the path of
    the test namespace's widgets."""
    group = new_group()
    crd = crd_body(group, subresources={"status": {}})
    install(any_api_server, crd)
    yield f"/apis/{group}/v1/namespaces/{any_api_server.namespace}/widgets"
    uninstall(any_api_server, crd["metadata"]["name"])


def widget(where: str, name: str, spec: dict | None = None, version: str = "v1",
           **extra: Any) -> dict:
    """A Widget of the group ``where`` (or of the collection path ``where``)."""
    group = where.split("/")[2] if where.startswith("/") else where
    return {"apiVersion": f"{group}/{version}", "kind": "Widget", "metadata": {"name": name},
            "spec": {"size": 2} if spec is None else spec, **extra}


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """``apiserver/pkg/endpoints/discovery`` ``StorageVersionHash``."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def causes(answer: dict) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in answer["details"]["causes"]]


# -- the CRD object --------------------------------------------------------------------------


def test_a_crd_is_established_and_serves_its_resource(any_api_server):
    s = any_api_server
    group = new_group()
    crd = crd_body(group, subresources={"status": {}})
    created = ok(s, "POST", CRDS, crd)
    assert created["spec"]["names"] == {
        "plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
        "shortNames": ["wd"], "categories": ["all"]}
    assert created["spec"]["conversion"] == {"strategy": "None"}
    assert created["status"]["storedVersions"] == ["v1"]
    current = install(s, crd, create=False)
    try:
        assert "finalizers" not in current["metadata"]  # added by a delete
        st = current["status"]
        assert st["acceptedNames"] == created["spec"]["names"]
        assert [(c["type"], c["status"], c["reason"], c["message"]) for c in st["conditions"]] == [
            ("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
            ("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
        ]
        discovery = ok(s, "GET", f"/apis/{group}/v1")
        assert discovery["groupVersion"] == f"{group}/v1"
        assert discovery["resources"] == [
            {"name": "widgets", "singularName": "widget", "namespaced": True, "kind": "Widget",
             "verbs": ["delete", "deletecollection", "get", "list", "patch", "create", "update",
                       "watch"],
             "shortNames": ["wd"], "categories": ["all"],
             "storageVersionHash": storage_version_hash(group, "v1", "Widget")},
            {"name": "widgets/status", "singularName": "", "namespaced": True, "kind": "Widget",
             "verbs": ["get", "patch", "update"]},
        ]
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets"
        ok(s, "POST", path, widget(group, "one"))
        listed = ok(s, "GET", path)
        assert listed["kind"] == "WidgetList"
        assert [(i["kind"], i["apiVersion"], i["metadata"]["name"]) for i in listed["items"]] == [
            ("Widget", f"{group}/v1", "one")]
    finally:
        uninstall(s, crd["metadata"]["name"])


def test_deleting_a_crd_deletes_its_objects_and_its_resource(any_api_server):
    s = any_api_server
    group = new_group()
    crd = crd_body(group)
    install(s, crd)
    path = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets"
    ok(s, "POST", path, widget(group, "one"))
    marked = ok(s, "DELETE", f"{CRDS}/{crd['metadata']['name']}")
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    assert [(c["type"], c["status"], c["reason"], c["message"])
            for c in marked["status"]["conditions"]][-1] == (
        "Terminating", "True", "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon")
    deadline = time.monotonic() + WAIT
    while call(s, "GET", f"{CRDS}/{crd['metadata']['name']}")[0] != 404:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert call(s, "GET", path) == (404, "404 page not found\n")


def test_a_crd_whose_name_is_not_plural_dot_group_is_invalid(any_api_server):
    group = new_group()
    crd = crd_body(group)
    crd["metadata"]["name"] = f"gadgets.{group}"
    code, answer = call(any_api_server, "POST", CRDS, crd)
    assert (code, answer["reason"]) == (422, "Invalid")
    assert causes(answer) == [(
        "FieldValueInvalid", "metadata.name",
        f'Invalid value: "gadgets.{group}": must be spec.names.plural+"."+spec.group')]


def test_a_non_structural_schema_is_refused(any_api_server):
    group = new_group()
    schema = {"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}
    code, answer = call(any_api_server, "POST", CRDS, crd_body(group, schema=schema))
    assert (code, answer["reason"]) == (422, "Invalid")
    assert causes(answer) == [(
        "FieldValueRequired", "spec.validation.openAPIV3Schema.properties[spec].type",
        "Required value: must not be empty for specified object fields")]
    assert call(any_api_server, "GET", "/version")[0] == 200  # still serving


def test_a_rule_that_does_not_compile_is_refused(any_api_server):
    group = new_group()
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"size": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.size >"}]}}}
    code, answer = call(any_api_server, "POST", CRDS, crd_body(group, schema=schema))
    assert (code, answer["reason"]) == (422, "Invalid")
    [(reason, field, message)] = causes(answer)
    assert (reason, field) == (
        "FieldValueInvalid",
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule")
    assert "compilation failed: ERROR: <input>:1:12: Syntax error: mismatched input '<EOF>'" in (
        message)


# -- custom resources: schema ----------------------------------------------------------------


def test_custom_resources_are_defaulted_and_pruned(any_api_server, widgets):
    created = ok(any_api_server, "POST", widgets, widget(
        widgets, "one", {"size": 2, "unknown": 1, "free": {"any": {"thing": 1}}}, extra=True))
    assert created["spec"] == {"size": 2, "color": "red", "free": {"any": {"thing": 1}}}
    assert "extra" not in created


@pytest.mark.parametrize(("spec", "expected"), [
    ({"size": "two"}, [("FieldValueTypeInvalid", "spec.size",
                        'Invalid value: "string": spec.size in body must be of type integer: '
                        '"string"')]),
    ({}, [("FieldValueRequired", "spec.size", "Required value")]),
    ({"size": 11}, [("FieldValueInvalid", "spec.size",
                     "Invalid value: 11: spec.size in body should be less than or equal to 10")]),
    ({"size": 0}, [("FieldValueInvalid", "spec.size",
                    "Invalid value: 0: spec.size in body should be greater than or equal to 1")]),
    ({"size": 1, "color": "pink"}, [("FieldValueNotSupported", "spec.color",
                                     'Unsupported value: "pink": supported values: "red", '
                                     '"blue"')]),
    ({"size": 1, "name": "abcdefg"}, [("FieldValueTooLong", "spec.name",
                                      "Too long: may not be more than 5 bytes")]),
    ({"size": 1, "name": "AB"}, [("FieldValueInvalid", "spec.name",
                                 "Invalid value: \"AB\": spec.name in body should match "
                                 "'^[a-z]+$'")]),
    ({"size": 1, "when": "yesterday"}, [("FieldValueTypeInvalid", "spec.when",
                                         'Invalid value: "yesterday": spec.when in body must '
                                         'be of type date-time: "yesterday"')]),
    ({"size": 1, "port": True}, [("FieldValueTypeInvalid", "spec.port",
                                  'Invalid value: "boolean": spec.port in body must be of type '
                                  'integer,string: "boolean"')]),
    ({"size": 1, "note": None, "port": "http"}, []),
    ({"size": 1, "tags": ["a", "b", "a"]}, [("FieldValueDuplicate", "spec.tags[2]",
                                             'Duplicate value: "a"')]),
], ids=["type", "required", "maximum", "minimum", "enum", "maxLength", "pattern", "format",
        "int-or-string", "nullable", "set"])
def test_custom_resources_are_validated_by_the_schema(any_api_server, widgets, spec, expected):
    name = f"w{secrets.token_hex(3)}"
    code, answer = call(any_api_server, "POST", widgets, widget(widgets, name, spec))
    if not expected:
        assert code == 201, answer
        return
    assert (code, answer["reason"], answer["details"]["kind"]) == (422, "Invalid", "Widget")
    assert causes(answer) == expected


# -- custom resources: status subresource and generation --------------------------------------


def test_status_is_dropped_on_create_and_kept_by_main_resource_updates(any_api_server, widgets):
    s = any_api_server
    created = ok(s, "POST", widgets, widget(widgets, "one", status={"ready": True}))
    assert "status" not in created
    assert created["metadata"]["generation"] == 1
    with_status = ok(s, "PUT", f"{widgets}/one/status", {**created, "status": {"ready": True},
                                                          "spec": {"size": 9}})
    assert with_status["status"] == {"ready": True}
    assert with_status["spec"]["size"] == 2  # /status ignores the spec
    assert with_status["metadata"]["generation"] == 1
    updated = ok(s, "PUT", f"{widgets}/one", {**with_status, "spec": {"size": 3},
                                               "status": {"ready": False}})
    assert updated["status"] == {"ready": True}  # the main resource ignores the status
    assert updated["metadata"]["generation"] == 2
    relabeled = ok(s, "PATCH", f"{widgets}/one", {"metadata": {"labels": {"a": "b"}}},
                   "application/merge-patch+json")
    assert relabeled["metadata"]["generation"] == 2


def test_a_cel_rule_that_fails_is_a_422(any_api_server):
    s = any_api_server
    group = new_group()
    schema = {"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "self.max < 100"}]}}}
    crd = crd_body(group, schema=schema)
    install(s, crd)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets"
        code, answer = call(s, "POST", path, widget(group, "bad", {"min": 5, "max": 200}))
        assert code == 422
        assert causes(answer) == [
            ("FieldValueInvalid", "spec", 'Invalid value: failed rule: self.max < 100'),
        ]
        code, answer = call(s, "POST", path, widget(group, "worse", {"min": 500, "max": 200}))
        assert causes(answer) == [
            ("FieldValueInvalid", "spec", 'Invalid value: min must not exceed max'),
            ("FieldValueInvalid", "spec", 'Invalid value: failed rule: self.max < 100'),
        ]
        assert call(s, "POST", path, widget(group, "good", {"min": 1, "max": 2}))[0] == 201
    finally:
        uninstall(s, crd["metadata"]["name"])


def test_cel_rules_run_beside_non_blocking_schema_errors_only(any_api_server):
    # apiextensions-apiserver registry/customresource/strategy.go hasBlockingErr: a pattern
    # or minimum error lets the rules run; a type, enum, required, maxLength or maxItems
    # error stops them, with one cause saying so.
    s = any_api_server
    group = new_group()
    schema = {"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"min": {"type": "integer", "minimum": 0},
                       "max": {"type": "integer"},
                       "name": {"type": "string", "pattern": "^[a-z]+$"}},
        "x-kubernetes-validations": [{"rule": "self.max < 100"}]}}}
    crd = crd_body(group, schema=schema)
    install(s, crd)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets"
        code, answer = call(s, "POST", path, widget(group, "a", {"min": -1, "max": 200,
                                                                   "name": "X"}))
        assert code == 422
        # kube-apiserver walks the schema's properties in Go map order, so the two schema
        # errors come in either order there; the CEL error comes after them.
        got = causes(answer)
        assert sorted(got[:2]) == [
            ("FieldValueInvalid", "spec.min",
             "Invalid value: -1: spec.min in body should be greater than or equal to 0"),
            ("FieldValueInvalid", "spec.name",
             'Invalid value: "X": spec.name in body should match \'^[a-z]+$\'')]
        assert got[2:] == [
            ("FieldValueInvalid", "spec", "Invalid value: failed rule: self.max < 100")]
        code, answer = call(s, "POST", path, widget(group, "b", {"min": "x", "max": 200}))
        assert causes(answer) == [
            ("FieldValueTypeInvalid", "spec.min",
             'Invalid value: "string": spec.min in body must be of type integer: "string"'),
            ("FieldValueInvalid", "<nil>",
             "Invalid value: null: some validation rules were not checked because the object "
             "was invalid; correct the existing errors to complete validation")]
    finally:
        uninstall(s, crd["metadata"]["name"])


def test_several_versions_serve_the_same_objects(any_api_server):
    s = any_api_server
    group = new_group()
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    crd = crd_body(group, versions=[
        {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}},
        {"name": "v1beta1", "served": True, "storage": False,
         "schema": {"openAPIV3Schema": schema}},
        {"name": "v1alpha1", "served": False, "storage": False,
         "schema": {"openAPIV3Schema": schema}},
    ])
    install(s, crd)
    try:
        ok(s, "POST", f"/apis/{group}/v1beta1/namespaces/{s.namespace}/widgets",
           widget(group, "one", {"x": 1}, "v1beta1"))
        got = ok(s, "GET", f"/apis/{group}/v1/namespaces/{s.namespace}/widgets/one")
        assert (got["apiVersion"], got["spec"]) == (f"{group}/v1", {"x": 1})
        assert call(s, "GET", f"/apis/{group}/v1alpha1/namespaces/{s.namespace}/widgets") == (
            404, "404 page not found\n")
        assert [v["version"] for v in ok(s, "GET", f"/apis/{group}")["versions"]] == [
            "v1", "v1beta1"]
    finally:
        uninstall(s, crd["metadata"]["name"])


# -- embedded only: the seeding helpers and crds= -----------------------------------------------


def test_create_of_a_kind_not_served_raises_the_api_404():
    from informers.testing import ApiServer

    server = ApiServer()
    with pytest.raises(StatusError) as caught:
        server.create({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "w"}})
    assert (caught.value.code, caught.value.status["reason"], caught.value.status["message"]) == (
        404, "NotFound", "the server could not find the requested resource")


def test_apiserver_installs_the_crds_of_files_and_folders(tmp_path):
    from informers.testing import ApiServer

    group = new_group()
    folder = tmp_path / "crds"
    folder.mkdir()
    (folder / "a.yaml").write_text(json.dumps(crd_body(group)) + "\n")
    (folder / "notes.txt").write_text("not a manifest")
    other = crd_body(group, plural="gadgets", kind="Gadget")
    single = tmp_path / "gadget.yaml"
    single.write_text("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: skipped}\n---\n"
                      + json.dumps(other) + "\n")
    server = ApiServer(crds=[folder, single])
    assert sorted(c["metadata"]["name"] for c in server.list("customresourcedefinitions")) == [
        f"gadgets.{group}", f"widgets.{group}"]
    made = server.create(widget(group, "w", {"size": 1}))
    assert made["spec"] == {"size": 1, "color": "red"}  # the schema defaults it
    with pytest.raises(FileNotFoundError):
        ApiServer(crds=[tmp_path / "missing"])


# -- kubectl end to end (embedded) ---------------------------------------------------------------


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_creates_a_crd_then_gets_and_explains_its_kind(api_server, tmp_path):
    group = new_group()
    config = api_server.write_kubeconfig(tmp_path / "kubeconfig")

    def kubectl(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(["kubectl", "--kubeconfig", config, *args], capture_output=True,
                              text=True, timeout=60)
        assert not check or done.returncode == 0, done.stderr
        return done

    manifest = tmp_path / "crd.yaml"
    manifest.write_text(json.dumps(crd_body(group)))
    assert kubectl("create", "-f", str(manifest)).stdout == (
        f"customresourcedefinition.apiextensions.k8s.io/widgets.{group} created\n")
    cr = tmp_path / "widget.yaml"
    cr.write_text(json.dumps({**widget(group, "one", {"size": 3}),
                              "metadata": {"name": "one", "namespace": "default"}}))
    assert kubectl("create", "-f", str(cr)).stdout == f"widget.{group}/one created\n"
    listed = json.loads(kubectl("get", f"widgets.{group}", "-o", "json").stdout)
    assert [(i["metadata"]["name"], i["spec"]) for i in listed["items"]] == [
        ("one", {"size": 3, "color": "red"})]
    assert kubectl("get", f"widgets.{group}").stdout.splitlines()[1].startswith("one ")
    explained = kubectl("explain", f"widgets.{group}.spec").stdout
    assert "size\t<integer> -required-" in explained
    assert "color\t<string>" in explained
    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps({**widget(group, "bad", {"size": "x"}),
                               "metadata": {"name": "bad", "namespace": "default"}}))
    refused = kubectl("create", "-f", str(bad), check=False)
    assert refused.returncode == 1
    assert 'spec.size: Invalid value: "string": spec.size in body must be of type integer' in (
        refused.stderr)


# -- updates and conflicts -----------------------------------------------------------------------


def test_updating_a_crd_changes_what_is_served_and_validated(any_api_server):
    s = any_api_server
    group = new_group()
    crd = crd_body(group)
    current = install(s, crd)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets"
        made = ok(s, "POST", path, widget(group, "one", {"size": 2, "extra": "x"}))
        assert "extra" not in made["spec"]
        schema = json.loads(json.dumps(SCHEMA))
        schema["properties"]["spec"]["properties"]["extra"] = {"type": "string",
                                                               "maxLength": 2}
        current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema
        updated = ok(s, "PUT", f"{CRDS}/{crd['metadata']['name']}", current)
        assert updated["metadata"]["generation"] == 2
        deadline = time.monotonic() + WAIT
        while True:  # kube-apiserver swaps the handler for the new schema asynchronously
            code, answer = call(s, "POST", path, widget(group, "two", {"size": 2,
                                                                      "extra": "xyz"}))
            if code == 422 or time.monotonic() > deadline:
                break
            call(s, "DELETE", f"{path}/two")
            time.sleep(0.1)
        assert causes(answer) == [("FieldValueTooLong", "spec.extra",
                                   "Too long: may not be more than 2 bytes")]
        kept = ok(s, "POST", path, widget(group, "three", {"size": 2, "extra": "ok"}))
        assert kept["spec"]["extra"] == "ok"
    finally:
        uninstall(s, crd["metadata"]["name"])


def test_a_crd_whose_kind_is_taken_in_its_group_is_not_established(any_api_server):
    s = any_api_server
    group = new_group()
    first = crd_body(group)
    install(s, first)
    second = crd_body(group, plural="gizmos")
    second["spec"]["names"]["shortNames"] = ["gz"]
    second["spec"]["names"]["categories"] = []
    try:
        ok(s, "POST", CRDS, second)
        deadline = time.monotonic() + WAIT
        while True:
            current = ok(s, "GET", f"{CRDS}/{second['metadata']['name']}")
            conditions = {c["type"]: (c["status"], c["reason"], c["message"])
                          for c in current["status"].get("conditions") or []}
            if "NamesAccepted" in conditions or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        # Every name is checked; the condition tells the last conflict (the list kind).
        assert conditions == {
            "NamesAccepted": ("False", "ListKindConflict", '"WidgetList" is already in use'),
            "Established": ("False", "NotAccepted", "not all names are accepted"),
        }
        assert current["status"]["acceptedNames"] == {"plural": "gizmos", "shortNames": ["gz"],
                                                      "kind": ""}
        assert call(s, "GET", f"/apis/{group}/v1/gizmos")[0] == 404
    finally:
        uninstall(s, second["metadata"]["name"])
        uninstall(s, first["metadata"]["name"])


def test_selectable_fields_select_custom_resources(any_api_server):
    s = any_api_server
    group = new_group()
    crd = crd_body(group, selectableFields=[{"jsonPath": ".spec.color"}])
    install(s, crd)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets"
        ok(s, "POST", path, widget(group, "red", {"size": 1}))
        ok(s, "POST", path, widget(group, "blue", {"size": 1, "color": "blue"}))

        def names(selector: str) -> Any:
            code, answer = call(s, "GET", f"{path}?fieldSelector={selector}")
            if code != 200:
                return code, answer["message"]
            return [i["metadata"]["name"] for i in answer["items"]]

        assert names("spec.color=blue") == ["blue"]
        assert names("spec.color!=blue,metadata.name=red") == ["red"]
        assert names("spec.size=1") == (400, "field label not supported: spec.size")
    finally:
        uninstall(s, crd["metadata"]["name"])


def test_unknown_fields_of_a_custom_resource_follow_field_validation(any_api_server, widgets):
    s = any_api_server
    body = widget(widgets, "strict", {"size": 1, "extra": 1, "free": {"kept": 1}}, more=2)
    code, answer = call(s, "POST", f"{widgets}?fieldValidation=Strict", body)
    assert (code, answer["reason"], answer["message"]) == (
        400, "BadRequest", 'Widget in version "v1" cannot be handled as a Widget: strict '
        'decoding error: unknown field "more", unknown field "spec.extra"')
    api = s.api_client()
    try:
        method, url, headers, data, _ = api.param_serialize(
            "POST", f"{widgets}", header_params={"Content-Type": "application/json"},
            body={**body, "metadata": {"name": "warned"}}, auth_settings=["BearerToken"])
        response = api.call_api(method, url, headers, data, _request_timeout=30)
        assert response.status == 201
        assert response.getheader("Warning") == (
            '299 - "unknown field \\"more\\"", 299 - "unknown field \\"spec.extra\\""')
    finally:
        api.close()


def test_a_transition_rule_sees_the_old_value(any_api_server):
    s = any_api_server
    group = new_group()
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"size": {
            "type": "integer",
            "x-kubernetes-validations": [{"rule": "self >= oldSelf",
                                          "message": "may only grow"}]}}}}}
    crd = crd_body(group, schema=schema)
    install(s, crd)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets"
        made = ok(s, "POST", path, widget(group, "one", {"size": 5}))  # no old value: skipped
        code, answer = call(s, "PUT", f"{path}/one", {**made, "spec": {"size": 4}})
        assert (code, causes(answer)) == (422, [
            ("FieldValueInvalid", "spec.size", "Invalid value: 4: may only grow")])
        assert ok(s, "PUT", f"{path}/one", {**made, "spec": {"size": 6}})["spec"] == {"size": 6}
    finally:
        uninstall(s, crd["metadata"]["name"])


def test_a_deprecated_version_warns_on_every_request(any_api_server):
    """apiextensions-apiserver ``customresource_handler.go``: a deprecated version's
    ``deprecationWarning``, else ``defaultDeprecationWarning`` naming the newest served
    version that is not deprecated; on errors and watches too; none for the other
    versions."""
    s = any_api_server
    group = new_group()
    schema = {"openAPIV3Schema": SCHEMA}
    crd = crd_body(group, versions=[
        {"name": "v1", "served": True, "storage": True, "schema": schema},
        {"name": "v1beta1", "served": True, "storage": False, "schema": schema,
         "deprecated": True, "deprecationWarning": "widgets v1beta1 are going away"},
        {"name": "v1alpha1", "served": True, "storage": False, "schema": schema,
         "deprecated": True}])
    install(s, crd)
    api = s.api_client()

    def warnings(version: str, name: str = "", query: str = "") -> tuple[int, list[str]]:
        path = f"/apis/{group}/{version}/namespaces/{s.namespace}/widgets"
        method, url, headers, _, _ = api.param_serialize(
            "GET", (f"{path}/{name}" if name else path) + query, header_params={
                "Accept": "application/json"}, auth_settings=["BearerToken"])
        response = api.call_api(method, url, headers, None, _request_timeout=30)
        response.read()
        return response.status, [v for k, v in response.getheaders().items()
                                 if k.lower() == "warning"]

    try:
        assert [warnings(v) for v in ("v1", "v1beta1", "v1alpha1")] == [
            (200, []), (200, ['299 - "widgets v1beta1 are going away"']),
            (200, [f'299 - "{group}/v1alpha1 Widget is deprecated; use {group}/v1 Widget"'])]
        assert warnings("v1alpha1", "missing") == (
            404, [f'299 - "{group}/v1alpha1 Widget is deprecated; use {group}/v1 Widget"'])
        assert warnings("v1beta1", query="?watch=true&timeoutSeconds=1") == (
            200, ['299 - "widgets v1beta1 are going away"'])
    finally:
        api.close()
        uninstall(s, crd["metadata"]["name"])
