"""Write rules of the embedded API server (informers/testing/strategy.py), through the official
client: server-set metadata, name validation, optimistic concurrency, status subresource,
finalizers, graceful pod deletion, NamespaceLifecycle and namespace deletion (checked against
kube-apiserver v1.36.3).

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
from informers.errors import StatusError
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


CONTAINERS = [{"name": "c", "image": "nginx"}]


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
    assert made["status"] == {"phase": "Pending", "qosClass": "BestEffort"}  # PrepareForCreate
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
        "details": {"kind": "Pod", "causes": [{
            "reason": "FieldValueRequired",
            "message": "Required value: name or generateName is required",
            "field": "metadata.name"}]},
        "code": 422}


@pytest.mark.parametrize(("call", "name", "rule"), [
    ("create_namespaced_pod", "Bad_Name", "a lowercase RFC 1123 subdomain"),
    ("create_namespaced_service", "1svc", "a DNS-1035 label"),
    ("create_namespace", "bad_ns", "a lowercase RFC 1123 label"),
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


def test_a_namespace_name_with_dots_is_a_valid_subdomain_but_no_label(core):
    # util/validation IsDNS1123Label: a valid subdomain that is no label "must not contain dots"
    with pytest.raises(ApiException) as info:
        core.create_namespace({"metadata": {"name": "has.dot"}})
    assert status_of(info.value)["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "message": 'Invalid value: "has.dot": must not contain dots',
        "field": "metadata.name"}]


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


def terminating_status(resource: str, name: str, namespace: str) -> dict[str, Any]:
    """What kube-apiserver's NamespaceLifecycle admission answers a create in a terminating
    namespace (lifecycle/admission.go: admission.NewForbidden plus the NamespaceTerminating
    StatusCause; the JSON key of a cause's type is "reason"), as captured from v1.36.3."""
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'{resource} "{name}" is forbidden: unable to create new content in '
                   f"namespace {namespace} because it is being terminated",
        "reason": "Forbidden",
        "details": {"name": name, "kind": resource, "causes": [{
            "reason": "NamespaceTerminating",
            "message": f"namespace {namespace} is being terminated",
            "field": "metadata.namespace"}]},
        "code": 403,
    }


def namespace(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, **meta}}


def configmap(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}


def watched(server: ApiServer, call: Any, start: str) -> list[dict[str, Any]]:
    """The events a watch from ``start`` replays (it ends when the fake clock passes its
    timeoutSeconds)."""
    assert server.wait_for_no_watches()
    stream = call(watch=True, resource_version=start, timeout_seconds=1,
                  _preload_content=False)
    assert server.wait_for_watches(1)
    server.clock.step(2)
    return [json.loads(line) for line in stream.data.splitlines()]


def test_namespace_lifecycle_admission(server, core):
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("missing", pod())
    # NamespaceLifecycle: errors.NewNotFound(namespaces, ns)
    assert status_of(info.value)["message"] == 'namespaces "missing" not found'
    assert info.value.status == 404
    server.create(namespace("leaving", finalizers=["example.com/hold"]))
    core.delete_namespace("leaving")
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("leaving", pod())
    assert info.value.status == 403
    assert status_of(info.value) == terminating_status("pods", "p", "leaving")
    # Admission runs before names are generated or validated, and before the store's
    # AlreadyExists check: the name in the message is the generateName, else "Unknown".
    for body, name in ((pod(metadata={"generateName": "web-"}), "web-"),
                       (pod(metadata={}), "Unknown"),
                       (pod("Not_A_Name"), "Not_A_Name")):
        with pytest.raises(ApiException) as info:
            core.create_namespaced_pod("leaving", body)
        assert status_of(info.value) == terminating_status("pods", name, "leaving")
    lease = {"metadata": {"name": "l"}}
    with pytest.raises(ApiException) as info:
        client.CoordinationV1Api(core.api_client).create_namespaced_lease("leaving", lease)
    expected = terminating_status("leases", "l", "leaving")
    expected["message"] = expected["message"].replace("leases", "leases.coordination.k8s.io")
    expected["details"] = {"name": "l", "group": "coordination.k8s.io", "kind": "leases",
                           "causes": expected["details"]["causes"]}
    assert status_of(info.value) == expected
    with pytest.raises(StatusError) as caught:  # the seeding helpers obey it too
        server.create(configmap("c"), namespace="leaving")
    assert caught.value.causes == expected["details"]["causes"]


def test_deleting_a_namespace_goes_through_terminating(server, core):
    server.create(namespace("team"))
    server.create(pod("a"), namespace="team")
    server.create(configmap("held", finalizers=["example.com/hold"]), namespace="team")
    server.create(pod("keep"))
    start = server.resource_version
    # registry/core/namespace/storage REST.Delete: the first delete marks the namespace and
    # answers it (200), like kube-apiserver v1.36.3.
    answered = raw(core, "delete_namespace", "team")
    assert answered["metadata"]["deletionTimestamp"] == WALL
    assert "deletionGracePeriodSeconds" not in answered["metadata"]
    assert (answered["spec"], answered["status"]) == (
        {"finalizers": ["kubernetes"]}, {"phase": "Terminating"})
    # The namespace controller's work: what has no finalizer is gone, the rest is marked and
    # keeps the namespace Terminating; creates are refused, updates are not.
    assert server.list("pods") == [server.get("pods", "default", "keep")]
    held = server.get("configmaps", "team", "held")
    assert held["metadata"]["deletionTimestamp"] == WALL
    ns = server.get("namespaces", None, "team")
    assert (ns["spec"], ns["status"]) == ({"finalizers": ["kubernetes"]}, {"phase": "Terminating"})
    assert raw(core, "delete_namespace", "team") == ns  # a second delete changes nothing
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map("team", configmap("new"))
    assert status_of(info.value) == terminating_status("configmaps", "new", "team")
    core.patch_namespaced_config_map("held", "team", {"metadata": {"labels": {"a": "b"}}})
    # Dropping the last finalizer removes the object, which empties the namespace: the
    # controller finalizes it and the namespace goes.
    core.patch_namespaced_config_map("held", "team", {"metadata": {"finalizers": None}})
    assert server.get("configmaps", "team", "held") is None
    assert server.get("namespaces", None, "team") is None
    seen = watched(server, core.list_namespace, start)
    assert [(e["type"], e["object"]["status"]["phase"], e["object"]["spec"]) for e in seen] == [
        ("MODIFIED", "Terminating", {"finalizers": ["kubernetes"]}),
        ("DELETED", "Terminating", {}),  # finalized: spec.finalizers is empty (omitted)
    ]
    assert [(e["type"], e["object"]["metadata"]["name"])
            for e in watched(server, core.list_pod_for_all_namespaces, start)] == [
        ("MODIFIED", "a"), ("DELETED", "a")]  # a pod's delete marks it, then removes it


def test_an_empty_namespace_is_finalized_at_once(server, core):
    server.create(namespace("empty"))
    answered = raw(core, "delete_namespace", "empty")
    assert answered["status"] == {"phase": "Terminating"}
    assert server.get("namespaces", None, "empty") is None


def test_spec_finalizers_change_only_through_finalize(server, core):
    made = raw(core, "create_namespace", namespace("ext"))
    # namespace strategy PrepareForCreate appends the controller's finalizer; defaulting
    # adds the name label (SetDefaults_Namespace).
    assert made["metadata"]["labels"] == {"kubernetes.io/metadata.name": "ext"}
    assert made["spec"] == {"finalizers": ["kubernetes"]}
    made = raw(core, "create_namespace", {"metadata": {"name": "ext2", "labels": {"a": "b"}},
                                          "spec": {"finalizers": ["example.com/x"]}})
    assert made["metadata"]["labels"] == {"a": "b", "kubernetes.io/metadata.name": "ext2"}
    assert made["spec"] == {"finalizers": ["example.com/x", "kubernetes"]}
    # A main-resource update keeps spec.finalizers and puts the name label back.
    made["spec"] = {"finalizers": []}
    made["metadata"]["labels"] = {}
    kept = raw(core, "replace_namespace", "ext2", made)
    assert kept["spec"] == {"finalizers": ["example.com/x", "kubernetes"]}
    assert kept["metadata"]["labels"] == {"kubernetes.io/metadata.name": "ext2"}
    # Deleting it: the controller removes only its own finalizer, the other one holds it.
    core.delete_namespace("ext2")
    ns = server.get("namespaces", None, "ext2")
    assert (ns["spec"], ns["status"]) == ({"finalizers": ["example.com/x"]},
                                          {"phase": "Terminating"})
    ns["spec"]["finalizers"] = []
    finalized = raw(core, "replace_namespace_finalize", "ext2", ns)
    assert (finalized["spec"], finalized["status"]) == ({}, {"phase": "Terminating"})
    assert server.get("namespaces", None, "ext2") is None


def test_namespace_deletion_admission_and_verbs(server, core):
    for name in ("default", "kube-system", "kube-public"):
        with pytest.raises(ApiException) as info:
            core.delete_namespace(name)
        assert status_of(info.value) == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'namespaces "{name}" is forbidden: this namespace may not be deleted',
            "reason": "Forbidden", "details": {"name": name, "kind": "namespaces"},
            "code": 403}
    core.delete_namespace("kube-node-lease")  # not immortal
    # The namespace storage has no DeleteCollection: the route is not served (405).
    answer = core.api_client.call_api(
        "DELETE", f"{core.api_client.configuration.host}/api/v1/namespaces",
        header_params={"Authorization": f"Bearer {server.token}"})
    answer.read()
    assert (answer.status, json.loads(answer.data)["reason"]) == (405, "MethodNotAllowed")
    assert [n["metadata"]["name"] for n in server.list("namespaces")] == [
        "default", "kube-public", "kube-system"]


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
    # A status update writes the labels too (podStatusStrategy PrepareForUpdate resets the
    # spec and owner references only; parity-tested in test_testing_apply_status_parity.py).
    kept.metadata.labels = {"a": "2"}
    kept.status = client.V1PodStatus(phase="Running", pod_ip="10.0.0.1")
    running = core.replace_namespaced_pod_status("p", "default", kept)
    assert (running.metadata.labels, running.status.phase, running.status.pod_ip) == (
        {"a": "2"}, "Running", "10.0.0.1")
    patched = core.patch_namespaced_pod_status("p", "default", {
        "status": {"phase": "Succeeded"}, "spec": {"nodeName": "ignored"}})
    assert (patched.status.phase, patched.spec.node_name) == ("Succeeded", None)
    # Only spec changes move the generation.
    assert patched.metadata.generation == 1
    moved = core.patch_namespaced_pod("p", "default", {"spec": {"activeDeadlineSeconds": 60}})
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
    server.create(pod("bound", spec={"nodeName": "n1", "containers": CONTAINERS},
                      status={"phase": "Running"}))
    server.create(pod("loose", status={"phase": "Running"}))
    server.create(pod("done", spec={"nodeName": "n1", "containers": CONTAINERS},
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


def test_a_shortened_deadline_never_moves_into_the_past(server, core):
    """Kubernetes v1.34+ ``BeforeDelete``: a shorter period moves the deadline back by the
    difference, but a deadline already passed becomes now, with period 1 (still graceful)
    unless 0 was asked."""
    clock = server.clock
    for name in ("slow", "gone"):
        server.create(pod(name, spec={"nodeName": "n1", "containers": CONTAINERS},
                          status={"phase": "Running"}))
        core.delete_namespaced_pod(name, "default", grace_period_seconds=10)  # deadline 00:10
    clock.step(4)
    moved = raw(core, "delete_namespaced_pod", "slow", "default", grace_period_seconds=8)
    assert moved["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:08Z"  # 00:10 - 2
    assert moved["metadata"]["deletionGracePeriodSeconds"] == 8
    clock.step(3)  # now 00:07
    clamped = raw(core, "delete_namespaced_pod", "slow", "default", grace_period_seconds=2)
    assert clamped["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:07Z"  # not 00:02
    assert clamped["metadata"]["deletionGracePeriodSeconds"] == 1
    assert server.get("pods", "default", "slow") is not None
    final = raw(core, "delete_namespaced_pod", "gone", "default", grace_period_seconds=0)
    assert final["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:07Z"  # now, not 00:00
    assert final["metadata"]["deletionGracePeriodSeconds"] == 0
    assert server.get("pods", "default", "gone") is None


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




def test_a_terminating_namespace_answers_like_kube_apiserver(any_api_server):
    # The same assertions against the embedded server and the real kube-apiserver (v1.36.3).
    srv = any_api_server
    ns = srv.new_namespace("doomed")
    srv.create(configmap("held", finalizers=["example.com/hold"]), namespace=ns)
    api_client = srv.api_client()
    core = client.CoreV1Api(api_client)
    try:
        answered = raw(core, "delete_namespace", ns)
        assert answered["status"] == {"phase": "Terminating"}
        assert answered["spec"] == {"finalizers": ["kubernetes"]}
        assert answered["metadata"]["labels"] == {"kubernetes.io/metadata.name": ns}
        assert answered["metadata"]["deletionTimestamp"]
        assert "deletionGracePeriodSeconds" not in answered["metadata"]
        for body, name in ((pod(), "p"), (pod(metadata={"generateName": "web-"}), "web-"),
                           (pod(metadata={}), "Unknown")):
            with pytest.raises(ApiException) as info:
                core.create_namespaced_pod(ns, body)
            assert status_of(info.value) == terminating_status("pods", name, ns)
        # Updates of what is left are allowed; a second delete changes nothing.
        core.patch_namespaced_config_map("held", ns, {"metadata": {"labels": {"a": "b"}}})
        again = raw(core, "delete_namespace", ns)
        assert again["metadata"]["resourceVersion"] == answered["metadata"]["resourceVersion"]
    finally:
        srv.patch("configmaps", ns, "held", {"metadata": {"finalizers": None}})
        api_client.close()
