"""List consistency (``resourceVersion``/``resourceVersionMatch``) and ``dryRun`` writes, on the
embedded server and on the real kube-apiserver v1.36.3: the same test, the same exact bodies
(tests/conftest.py ``any_api_server``).

Upstream: ``apimachinery/pkg/apis/meta/internalversion/validation`` ``ValidateListOptions``,
``apiserver/pkg/storage/cacher`` (the wait for a future resourceVersion, 3 s, and its 504),
``apiserver/pkg/registry/generic/registry/store.go`` (dry-run writes and deletes).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import wire


def config_map(name: str, **meta: object) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta},
            "data": {"k": "v"}}


def cm_path(server, name: str = "") -> str:
    base = f"/api/v1/namespaces/{server.namespace}/configmaps"
    return f"{base}/{name}" if name else base


def names(body: dict) -> list[str]:
    return sorted(item["metadata"]["name"] for item in body["items"])


def status(code: int, message: str, reason: str | None = None, details: dict | None = None
           ) -> dict:
    body: dict = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message}
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


# -- resourceVersion and resourceVersionMatch on list ----------------------------------------

def test_exact_and_not_older_than(any_api_server):
    server = any_api_server
    first = server.create(config_map("a"))
    rv_a = first["metadata"]["resourceVersion"]
    server.create(config_map("b"))

    code, body = wire.call(server, "GET", cm_path(server) + f"?resourceVersion={rv_a}"
                           "&resourceVersionMatch=Exact")
    assert (code, names(body), body["metadata"]["resourceVersion"]) == (200, ["a"], rv_a)
    code, body = wire.call(server, "GET", cm_path(server) + f"?resourceVersion={rv_a}"
                           "&resourceVersionMatch=NotOlderThan")
    assert (code, names(body)) == (200, ["a", "b"])
    assert int(body["metadata"]["resourceVersion"]) > int(rv_a)
    # A paginated list at a resourceVersion without a match is an exact one (legacy).
    code, body = wire.call(server, "GET", cm_path(server) + f"?resourceVersion={rv_a}&limit=5")
    assert (code, names(body), body["metadata"]["resourceVersion"]) == (200, ["a"], rv_a)


LIST_OPTIONS_422 = [
    ("resourceVersionMatch=Exact",
     "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
     "resourceVersion is provided", "FieldValueForbidden",
     "resourceVersionMatch is forbidden unless resourceVersion is provided"),
    ("resourceVersion=0&resourceVersionMatch=Exact",
     'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
     'resourceVersion "0"', "FieldValueForbidden",
     'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
    ("resourceVersion=1&resourceVersionMatch=Newest",
     'resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", '
     '"NotOlderThan", ""', "FieldValueNotSupported",
     'Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""'),
    ("resourceVersion=1&resourceVersionMatch=NotOlderThan&continue=abc",
     "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is "
     "provided", "FieldValueForbidden",
     "resourceVersionMatch is forbidden when continue is provided"),
]


@pytest.mark.parametrize("query,message,reason,cause",
                         [(q, m, r, ("Forbidden: " if r == "FieldValueForbidden" else "") + c)
                          for (q, m, r, c) in LIST_OPTIONS_422])
def test_invalid_list_options_are_422(any_api_server, query, message, reason, cause):
    server = any_api_server
    assert wire.call(server, "GET", cm_path(server) + "?" + query) == (422, status(
        422, f'ListOptions.meta.k8s.io "" is invalid: {message}', "Invalid",
        {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [
            {"reason": reason, "message": cause, "field": "resourceVersionMatch"}]}))


def test_a_resource_version_not_reached_yet_waits_then_answers_504(any_api_server):
    server = any_api_server
    made = server.create(config_map("a"))
    future = int(server.resource_version) + 1000
    paths = [cm_path(server) + f"?resourceVersion={future}",
             cm_path(server) + f"?resourceVersion={future}&resourceVersionMatch=NotOlderThan",
             cm_path(server) + f"?resourceVersion={future}&resourceVersionMatch=Exact",
             cm_path(server, "a") + f"?resourceVersion={future}"]
    def timed(path: str) -> tuple[float, tuple[int, dict]]:
        started = time.monotonic()
        answer = wire.call(server, "GET", path)
        return time.monotonic() - started, answer

    with ThreadPoolExecutor(len(paths)) as pool:  # each waits 3 s (the watch cache's wait)
        answers = list(pool.map(timed, paths))
    for waited, (code, body) in answers:
        assert 2.9 <= waited < 6, (waited, body)
        current = body["message"].rpartition("current: ")[2]
        assert int(current) >= int(made["metadata"]["resourceVersion"])
        assert (code, body) == (504, status(
            504, f"Timeout: Too large resource version: {future}, current: {current}",
            "Timeout", {"causes": [{"reason": "ResourceVersionTooLarge",
                                    "message": "Too large resource version"}],
                        "retryAfterSeconds": 1}))


def test_an_invalid_resource_version(any_api_server):
    server = any_api_server
    server.create(config_map("a"))
    parse = 'resourceVersion: Invalid value: "{v}": strconv.ParseUint: parsing "{v}": ' \
            'invalid syntax'
    for value in ("abc", "-1"):
        # A list: cacher.go GetList's NewBadRequest("invalid resource version: ...").
        assert wire.call(server, "GET", cm_path(server) + f"?resourceVersion={value}") == (
            400, status(400, "invalid resource version: " + parse.format(v=value),
                        "BadRequest"))
    assert wire.call(server, "GET", cm_path(server) + "?resourceVersion=abc"
                     "&resourceVersionMatch=Exact") == (
        400, status(400, "invalid resource version: " + parse.format(v="abc"), "BadRequest"))
    # A get and a watch: the versioner's plain error, a 500 with no reason.
    for path in (cm_path(server, "a") + "?resourceVersion=abc",
                 cm_path(server) + "?watch=1&resourceVersion=abc"):
        assert wire.call(server, "GET", path) == (500, status(500, parse.format(v="abc")))


# -- dryRun on every write -------------------------------------------------------------------

def watched(server, since: str) -> list[tuple[str, str]]:
    """The ConfigMap events of the test's namespace after ``since`` (a 1-second watch)."""
    code, text = wire.call(server, "GET", cm_path(server) +
                           f"?watch=1&resourceVersion={since}&timeoutSeconds=1")
    assert code == 200, text
    lines = text.splitlines() if isinstance(text, str) else [json.dumps(text)]
    return [(e["type"], e["object"]["metadata"]["name"])
            for e in map(json.loads, filter(str.strip, lines))]


def test_dry_run_writes_answer_as_done_and_store_nothing(any_api_server):
    server = any_api_server
    live = server.create(config_map("live"))
    rv = live["metadata"]["resourceVersion"]
    dry = "?dryRun=All"

    code, body = wire.call(server, "POST", cm_path(server) + dry, config_map("new"))
    assert (code, body["metadata"]["name"], body["data"]) == (201, "new", {"k": "v"})
    assert body["metadata"]["uid"] and body["metadata"]["creationTimestamp"]
    assert "resourceVersion" not in body["metadata"]

    changed = {**live, "data": {"k": "changed"}}
    code, body = wire.call(server, "PUT", cm_path(server, "live") + dry, changed)
    assert (code, body["data"], body["metadata"]["resourceVersion"]) == (
        200, {"k": "changed"}, rv)

    code, body = wire.call(server, "PATCH", cm_path(server, "live") + dry,
                           {"data": {"k": "patched"}},
                           content_type="application/merge-patch+json")
    assert (code, body["data"], body["metadata"]["resourceVersion"]) == (
        200, {"k": "patched"}, rv)

    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"},
               "data": {"a": "b"}}
    code, body = wire.call(server, "PATCH", cm_path(server, "applied") + dry + "&fieldManager=t",
                           applied, content_type="application/apply-patch+yaml")
    assert (code, body["data"]) == (201, {"a": "b"})

    code, body = wire.call(server, "DELETE", cm_path(server, "live") + dry)
    assert (code, body) == (200, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": {"name": "live", "kind": "configmaps", "uid": live["metadata"]["uid"]}})

    code, body = wire.call(server, "DELETE", cm_path(server) + dry)
    assert (code, body["kind"], names(body)) == (200, "ConfigMapList", ["live"])

    # Nothing was stored, nothing was sent to watchers.
    assert server.get("configmaps", server.namespace, "live") == live
    assert [o["metadata"]["name"] for o in server.list("configmaps", server.namespace)] == [
        "live"]
    assert watched(server, rv) == []


def test_dry_run_on_the_status_subresource(any_api_server):
    server = any_api_server
    pod = server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"containers": [{"name": "c", "image": "example.invalid/c"}]}})
    path = f"/api/v1/namespaces/{server.namespace}/pods/p/status?dryRun=All"
    body = {**pod, "status": {**pod["status"], "message": "dry"}}
    code, answer = wire.call(server, "PUT", path, body)
    assert (code, answer["status"]["message"]) == (200, "dry"), answer
    code, answer = wire.call(server, "PATCH", path, {"status": {"message": "patched"}},
                             content_type="application/merge-patch+json")
    assert (code, answer["status"]["message"]) == (200, "patched"), answer
    assert server.get("pods", server.namespace, "p")["status"] == pod["status"]


def test_a_dry_run_delete_of_an_object_with_finalizers_answers_it_marked(any_api_server):
    server = any_api_server
    live = server.create(config_map("held", finalizers=["example.com/hold"]))
    try:
        code, body = wire.call(server, "DELETE", cm_path(server, "held") + "?dryRun=All")
        assert code == 200
        meta = body["metadata"]
        assert (meta["deletionGracePeriodSeconds"], meta["finalizers"],
                meta["resourceVersion"]) == (0, ["example.com/hold"],
                                             live["metadata"]["resourceVersion"])
        assert meta["deletionTimestamp"]
        stored = server.get("configmaps", server.namespace, "held")
        assert "deletionTimestamp" not in stored["metadata"]
    finally:
        server.patch("configmaps", server.namespace, "held", {"metadata": {"finalizers": None}})


@pytest.mark.parametrize("method,name,kind,body", [
    ("POST", "", "CreateOptions", config_map("x")),
    ("PUT", "x", "UpdateOptions", config_map("x")),
    ("PATCH", "x", "PatchOptions", {"data": {"a": "b"}}),
    ("DELETE", "x", "DeleteOptions", None),
])
def test_an_invalid_dry_run_is_422_on_the_verbs_options(any_api_server, method, name, kind,
                                                        body):
    server = any_api_server
    server.create(config_map("x"))
    content_type = ("application/merge-patch+json" if method == "PATCH"
                    else "application/json")
    message = 'Unsupported value: ["Some"]: supported values: "All"'
    assert wire.call(server, method, cm_path(server, name) + "?dryRun=Some", body,
                     content_type=content_type) == (422, status(
        422, f'{kind}.meta.k8s.io "" is invalid: dryRun: {message}', "Invalid",
        {"group": "meta.k8s.io", "kind": kind, "causes": [
            {"reason": "FieldValueNotSupported", "message": message, "field": "dryRun"}]}))


def test_dry_run_deletes_of_pods_and_namespaces(any_api_server):
    server = any_api_server
    spec = {"containers": [{"name": "c", "image": "example.invalid/c"}],
            "terminationGracePeriodSeconds": 30}
    unbound = server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "free"},
                             "spec": spec})
    bound = server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound"},
                           "spec": {**spec, "nodeName": "node-1"}})
    pods = f"/api/v1/namespaces/{server.namespace}/pods"
    # An unbound pod would go at once, after its graceful-deletion mark with period 0: the
    # dry-run answers the marked pod (pods return the deleted object).
    code, body = wire.call(server, "DELETE", f"{pods}/free?dryRun=All")
    assert (code, body["kind"], "deletionTimestamp" in body["metadata"],
            body["metadata"]["deletionGracePeriodSeconds"],
            body["metadata"]["resourceVersion"]) == (
        200, "Pod", True, 0, unbound["metadata"]["resourceVersion"])
    # A bound pod would be marked with its grace period.
    code, body = wire.call(server, "DELETE", f"{pods}/bound?dryRun=All")
    assert (code, body["metadata"]["deletionGracePeriodSeconds"],
            body["metadata"]["resourceVersion"]) == (
        200, 30, bound["metadata"]["resourceVersion"])
    assert "deletionTimestamp" in body["metadata"]
    # A namespace would be marked Terminating.
    code, body = wire.call(server, "DELETE", f"/api/v1/namespaces/{server.namespace}?dryRun=All")
    assert (code, body["kind"], body["status"]["phase"]) == (200, "Namespace", "Terminating")
    assert "deletionTimestamp" in body["metadata"]
    for name in ("free", "bound"):
        assert "deletionTimestamp" not in server.get("pods", server.namespace, name)["metadata"]
    stored = server.get("namespaces", None, server.namespace)
    assert stored["status"]["phase"] == "Active"


def test_a_watch_from_a_future_version_waits_quietly(any_api_server):
    # A watch (not streaming) from a version the server has not reached sends nothing until
    # its timeout: no 504 and no ERROR event (the watch cache waits for the version).
    server = any_api_server
    future = int(server.resource_version) + 1000
    code, text = wire.call(server, "GET", cm_path(server) +
                           f"?watch=1&resourceVersion={future}&timeoutSeconds=1")
    assert (code, text) == (200, "")


def test_not_found_bodies_name_the_resource_and_group(any_api_server):
    server = any_api_server
    path = f"/apis/coordination.k8s.io/v1/namespaces/{server.namespace}/leases/missing"
    assert wire.call(server, "GET", path) == (404, status(
        404, 'leases.coordination.k8s.io "missing" not found', "NotFound",
        {"name": "missing", "group": "coordination.k8s.io", "kind": "leases"}))
    assert wire.call(server, "GET", cm_path(server, "missing")) == (404, status(
        404, 'configmaps "missing" not found', "NotFound",
        {"name": "missing", "kind": "configmaps"}))


def test_a_dry_run_create_is_validated_and_named(any_api_server):
    server = any_api_server
    server.create(config_map("taken"))
    path = cm_path(server) + "?dryRun=All"
    code, body = wire.call(server, "POST", path, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}})
    assert (code, body["metadata"]["name"].startswith("gen-"),
            len(body["metadata"]["name"])) == (201, True, len("gen-") + 5)
    code, body = wire.call(server, "POST", path, config_map("taken"))
    assert (code, body["reason"], body["message"]) == (
        409, "AlreadyExists", 'configmaps "taken" already exists')
    code, body = wire.call(server, "POST", path, config_map("Not_Valid"))
    assert (code, body["reason"], [c["field"] for c in body["details"]["causes"]]) == (
        422, "Invalid", ["metadata.name"])
    assert [o["metadata"]["name"] for o in server.list("configmaps", server.namespace)] == [
        "taken"]
