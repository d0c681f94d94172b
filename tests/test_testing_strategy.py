"""Write rules of the embedded API server (informers/testing/strategy.py), through the official
client: server-set metadata, name validation, optimistic concurrency, status subresource,
finalizers, graceful pod deletion, NamespaceLifecycle and namespace deletion.

Cited behaviour: kube-apiserver ``registry/generic/registry/store.go`` and the per-kind
strategies (``pkg/registry/core/pod/strategy.go``...), ``apimachinery/pkg/api/errors``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from informers.clock import FakeClock
from informers.testing import ApiServer

WALL = "2026-01-01T00:00:00Z"  # FakeClock's default wall start


@pytest.fixture
def server():
    with ApiServer(clock=FakeClock()) as srv:
        yield srv


@pytest.fixture
def core(server: ApiServer):
    api_client = server.api_client()
    yield client.CoreV1Api(api_client)
    api_client.close()


def pod(name: str = "p", **extra: Any) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    body.update(extra)
    return body


def status_of(err: ApiException) -> dict[str, Any]:
    return json.loads(err.body)


def raw(api: client.CoreV1Api, call: str, *args: Any, **kw: Any) -> dict[str, Any]:
    return json.loads(getattr(api, call)(*args, _preload_content=False, **kw).data)


def test_create_sets_server_owned_metadata_and_resets_pod_status(server, core):
    made = raw(core, "create_namespaced_pod", "default",
               pod(status={"phase": "Running"}, metadata={"name": "p", "uid": "mine"}))
    meta = made["metadata"]
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                        meta["uid"])
    assert meta["creationTimestamp"] == WALL
    assert meta["resourceVersion"] == server.resource_version
    assert meta["generation"] == 1  # pods carry a generation since Kubernetes 1.33
    assert meta["namespace"] == "default"
    assert made["status"] == {"phase": "Pending"}  # pod strategy PrepareForCreate
    cm = raw(core, "create_namespaced_config_map", "default", {"metadata": {"name": "c"}})
    assert "generation" not in cm["metadata"]
    ns = raw(core, "create_namespace", {"metadata": {"name": "team"}})
    assert (ns["status"], ns["spec"]) == ({"phase": "Active"}, {"finalizers": ["kubernetes"]})


def test_generate_name_appends_five_random_characters(core):
    made = core.create_namespaced_pod("default", pod(metadata={"generateName": "web-"}))
    # names.SimpleNameGenerator: 5 characters of utilrand's alphabet.
    assert re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]{5}", made.metadata.name)


def test_missing_name_is_422_invalid_with_a_cause(core):
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod(metadata={}))
    assert info.value.status == 422
    assert status_of(info.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Pod "" is invalid: metadata.name: Required value: name or generateName '
                   "is required",
        "reason": "Invalid",
        "details": {"name": "", "kind": "Pod", "causes": [{
            "reason": "FieldValueRequired",
            "message": "Required value: name or generateName is required",
            "field": "metadata.name"}]},
        "code": 422}


@pytest.mark.parametrize(("call", "name", "rule"), [
    ("create_namespaced_pod", "Bad_Name", "a lowercase RFC 1123 subdomain"),
    ("create_namespaced_service", "1svc", "a DNS-1035 label"),
    ("create_namespace", "has.dot", "a lowercase RFC 1123 label"),
])
def test_invalid_names_are_422_with_the_validation_message(core, call, name, rule):
    body = {"metadata": {"name": name}}
    args = ("default", body) if call != "create_namespace" else (body,)
    with pytest.raises(ApiException) as info:
        getattr(core, call)(*args)
    status = status_of(info.value)
    assert (info.value.status, status["reason"]) == (422, "Invalid")
    cause = status["details"]["causes"][0]
    assert (cause["reason"], cause["field"]) == ("FieldValueInvalid", "metadata.name")
    assert cause["message"].startswith(f'Invalid value: "{name}": {rule} must consist of')


def test_create_conflicts(server, core):
    core.create_namespaced_pod("default", pod("p"))
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod("p"))
    assert status_of(info.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods "p" already exists', "reason": "AlreadyExists",
        "details": {"name": "p", "kind": "pods"}, "code": 409}
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod("q", metadata={"name": "q",
                                                                 "resourceVersion": "3"}))
    assert status_of(info.value)["message"] == (
        "Internal error occurred: resourceVersion should not be set on objects to be created")
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod(metadata={"name": "r", "namespace": "other"}))
    assert (info.value.status, status_of(info.value)["message"]) == (
        400, "the namespace of the provided object does not match the namespace sent on the "
             "request")


def test_namespace_lifecycle_admission(server, core):
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("missing", pod())
    # NamespaceLifecycle: errors.NewNotFound(namespaces, ns)
    assert status_of(info.value)["message"] == 'namespaces "missing" not found'
    assert info.value.status == 404
    server.create({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "leaving", "finalizers": ["example.com/hold"]}})
    core.delete_namespace("leaving")
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("leaving", pod())
    assert info.value.status == 403
    assert status_of(info.value)["message"] == (
        'pods "p" is forbidden: unable to create new content in namespace leaving because it '
        "is being terminated")


def test_stale_update_is_409_conflict_and_missing_version_is_unconditional(server, core):
    made = core.create_namespaced_pod("default", pod())
    made.metadata.labels = {"a": "1"}
    updated = core.replace_namespaced_pod("p", "default", made)
    made.metadata.labels = {"a": "2"}
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_pod("p", "default", made)
    assert status_of(info.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Operation cannot be fulfilled on pods "p": the object has been modified; '
                   "please apply your changes to the latest version and try again",
        "reason": "Conflict", "details": {"name": "p", "kind": "pods"}, "code": 409}
    made.metadata.resource_version = None
    forced = core.replace_namespaced_pod("p", "default", made)
    assert forced.metadata.labels == {"a": "2"}
    assert int(forced.metadata.resource_version) == int(updated.metadata.resource_version) + 1


def test_an_update_that_changes_nothing_writes_nothing(server, core):
    made = core.create_namespaced_pod("default", pod())
    again = core.replace_namespaced_pod("p", "default", made)
    patched = core.patch_namespaced_pod("p", "default", {"metadata": {"labels": None}})
    assert again.metadata.resource_version == made.metadata.resource_version
    assert patched.metadata.resource_version == made.metadata.resource_version
    assert server.resource_version == made.metadata.resource_version


def test_update_checks_name_and_existence(core):
    core.create_namespaced_pod("default", pod())
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_pod("p", "default", pod("other"))
    assert (info.value.status, status_of(info.value)["message"]) == (
        400, "the name of the object (other) does not match the name on the URL (p)")
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_pod("nope", "default", pod("nope"))
    assert info.value.status == 404


def test_status_subresource_separates_status_from_the_rest(server, core):
    core.create_namespaced_pod("default", pod())
    current = core.read_namespaced_pod("p", "default")
    current.metadata.labels = {"a": "1"}
    current.status = client.V1PodStatus(phase="Running")
    kept = core.replace_namespaced_pod("p", "default", current)
    # A main-resource update keeps the stored status (pod strategy PrepareForUpdate).
    assert (kept.metadata.labels, kept.status.phase) == ({"a": "1"}, "Pending")
    kept.metadata.labels = {"a": "ignored"}
    kept.status = client.V1PodStatus(phase="Running", pod_ip="10.0.0.1")
    running = core.replace_namespaced_pod_status("p", "default", kept)
    assert (running.metadata.labels, running.status.phase, running.status.pod_ip) == (
        {"a": "1"}, "Running", "10.0.0.1")
    patched = core.patch_namespaced_pod_status("p", "default", {
        "status": {"phase": "Succeeded"}, "spec": {"nodeName": "ignored"}})
    assert (patched.status.phase, patched.spec.node_name) == ("Succeeded", None)
    # Only spec changes move the generation.
    assert patched.metadata.generation == 1
    moved = core.patch_namespaced_pod("p", "default", {"spec": {"nodeName": "n1"}})
    assert moved.metadata.generation == 2


def test_finalizers_mark_the_object_until_the_last_one_is_removed(server, core):
    core.create_namespaced_pod("default", pod(metadata={"name": "p",
                                                        "finalizers": ["example.com/x"]}))
    marked = raw(core, "delete_namespaced_pod", "p", "default")
    assert marked["metadata"]["deletionTimestamp"] == WALL
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert core.read_namespaced_pod("p", "default").metadata.finalizers == ["example.com/x"]
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod("p", "default", {"metadata": {
            "finalizers": ["example.com/x", "example.com/y"]}})
    assert status_of(info.value)["details"]["causes"][0]["message"] == (
        "Forbidden: no new finalizers can be added if the object is being deleted, found new "
        'finalizers []string{"example.com/y"}')
    last = core.patch_namespaced_pod("p", "default", {"metadata": {"finalizers": None}})
    assert last.metadata.deletion_timestamp is not None
    assert server.get("pods", "default", "p") is None


def test_bound_pods_are_deleted_gracefully_only_when_asked(server, core):
    server.create(pod("bound", spec={"nodeName": "n1", "containers": []},
                      status={"phase": "Running"}))
    server.create(pod("loose", status={"phase": "Running"}))
    server.create(pod("done", spec={"nodeName": "n1", "containers": []},
                      status={"phase": "Succeeded"}))
    marked = core.delete_namespaced_pod("bound", "default", grace_period_seconds=30)
    assert marked.metadata.deletion_grace_period_seconds == 30
    assert marked.metadata.deletion_timestamp.isoformat() == "2026-01-01T00:00:30+00:00"
    assert marked.metadata.generation == 2
    assert server.get("pods", "default", "bound") is not None
    core.delete_namespaced_pod("bound", "default", grace_period_seconds=0)  # the kubelet's
    for name in ("bound", "loose", "done"):
        if name != "bound":
            core.delete_namespaced_pod(name, "default", grace_period_seconds=30)
        assert server.get("pods", "default", name) is None


def test_delete_preconditions(server, core):
    made = core.create_namespaced_pod("default", pod())
    with pytest.raises(ApiException) as info:
        core.delete_namespaced_pod("p", "default", body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid="other")))
    assert status_of(info.value)["message"] == (
        'Operation cannot be fulfilled on pods "p": Precondition failed: UID in precondition: '
        f"other, UID in object meta: {made.metadata.uid}")
    with pytest.raises(ApiException) as info:
        core.delete_namespaced_pod("p", "default", body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(resource_version="1")))
    assert info.value.status == 409
    core.delete_namespaced_pod("p", "default", body=client.V1DeleteOptions(
        preconditions=client.V1Preconditions(uid=made.metadata.uid)))
    assert server.get("pods", "default", "p") is None


def test_deleting_a_namespace_removes_its_contents(server, core):
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    server.create(pod("a"), namespace="team")
    server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
                  namespace="team")
    server.create(pod("keep"))
    start = server.resource_version
    core.delete_namespace("team")
    assert server.list("pods") == [server.get("pods", "default", "keep")]
    assert server.list("configmaps", "team") == []
    assert server.get("namespaces", None, "team") is None
    events = core.list_pod_for_all_namespaces(watch=True, resource_version=start,
                                              timeout_seconds=1, _preload_content=False)
    first = json.loads(next(iter(events.stream())).split(b"\n")[0])
    events.close()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("DELETED", "a")
