"""Verb semantics of the embedded API server (informers/testing/endpoints.py): list
resourceVersion modes, pagination, get, delete answers, deletecollection, dry run, discovery.

Cited behaviour: Kubernetes API Concepts, "Resource versions" / "Semantics for get and list"
and "Retrieving large results sets in chunks"; kube-apiserver ``storage/etcd3/store.go`` and
``storage/cacher``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from informers.testing.endpoints import KUBERNETES_VERSION

pytestmark = pytest.mark.api_server(fresh_wait=0.2)


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


@pytest.fixture
def core(api_client: Any) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


def raw_list(core: client.CoreV1Api, namespace: str = "default", **kw: Any) -> dict[str, Any]:
    resp = core.list_namespaced_pod(namespace, _preload_content=False, **kw)
    return json.loads(resp.data)


def status_of(err: ApiException) -> dict[str, Any]:
    return json.loads(err.body)


def names(items: list[Any]) -> list[str]:
    return [i["metadata"]["name"] if isinstance(i, dict) else i.metadata.name for i in items]


def test_list_without_resource_version_is_the_latest_state_in_key_order(api_server, core):
    api_server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a-b"}})
    for name, ns in (("z", "default"), ("b", "default"), ("x", "a-b")):
        api_server.create(pod(name, ns))
    everything = json.loads(core.list_pod_for_all_namespaces(_preload_content=False).data)
    # etcd key order: /registry/pods/<namespace>/<name>, and "a-b/" sorts before "a/"-like keys
    assert names(everything["items"]) == ["x", "b", "z"]
    assert everything["metadata"] == {"resourceVersion": api_server.resource_version}
    assert (everything["kind"], everything["apiVersion"]) == ("PodList", "v1")
    # List items of built-in kinds carry no kind/apiVersion, as kube-apiserver sends them.
    assert "kind" not in everything["items"][0] and "apiVersion" not in everything["items"][0]
    assert names(core.list_namespaced_pod("default").items) == ["b", "z"]


def test_resource_version_zero_is_served_from_the_watch_cache_ignoring_limit(api_server, core):
    for name in "abc":
        api_server.create(pod(name))
    page = raw_list(core, resource_version="0", limit=1)
    # delegator.go shouldDelegateList: "Serve paginated requests about revision "0" from watch
    # cache", which does not paginate.
    assert names(page["items"]) == ["a", "b", "c"]
    assert "continue" not in page["metadata"]


@pytest.mark.api_server(watch_cache=False)
def test_without_watch_cache_resource_version_zero_paginates(api_server, core):
    for name in "abc":
        api_server.create(pod(name))
    page = raw_list(core, resource_version="0", limit=1)
    assert names(page["items"]) == ["a"]
    assert page["metadata"]["remainingItemCount"] == 2


def test_exact_list_reconstructs_the_state_at_that_version(api_server, core):
    first = api_server.create(pod("a", app="old"))["metadata"]["resourceVersion"]
    api_server.create(pod("b"))
    api_server.patch("pods", "default", "a", {"metadata": {"labels": {"app": "new"}}})
    api_server.create(pod("c"))
    api_server.delete("pods", "default", "b")
    at_first = core.list_namespaced_pod("default", resource_version=first,
                                        resource_version_match="Exact")
    assert at_first.metadata.resource_version == first
    assert [(p.metadata.name, p.metadata.labels) for p in at_first.items] == [
        ("a", {"app": "old"})]
    second = str(int(first) + 1)
    assert names(core.list_namespaced_pod("default", resource_version=second,
                                          resource_version_match="Exact").items) == ["a", "b"]
    # Legacy: a limit with a version other than "0" and no match is an exact list.
    assert names(core.list_namespaced_pod("default", resource_version=first, limit=10).items) \
        == ["a"]


def test_exact_list_at_a_compacted_version_is_410_expired(api_server, core):
    old = api_server.create(pod("a"))["metadata"]["resourceVersion"]
    api_server.create(pod("b"))
    api_server.compact()
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod("default", resource_version=old, resource_version_match="Exact")
    assert info.value.status == 410
    assert status_of(info.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "The resourceVersion for the provided list is too old.",
        "reason": "Expired", "code": 410}


def test_not_older_than_serves_the_latest_state(api_server, core):
    old = api_server.create(pod("a"))["metadata"]["resourceVersion"]
    api_server.create(pod("b"))
    listed = core.list_namespaced_pod("default", resource_version=old)
    assert names(listed.items) == ["a", "b"]
    assert listed.metadata.resource_version == api_server.resource_version


@pytest.mark.parametrize("match", [None, "NotOlderThan", "Exact"])
def test_a_version_newer_than_the_server_has_is_504_too_large(api_server, core, match):
    current = int(api_server.resource_version)
    kw = {"resource_version_match": match} if match else {}
    started = time.monotonic()
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod("default", resource_version=str(current + 10), **kw)
    # storage/errors.go NewTooLargeResourceVersionError: a Timeout with the
    # ResourceVersionTooLarge cause, retry after 1 s (cacher resourceVersionTooHighRetrySeconds).
    assert info.value.status == 504
    assert info.value.headers["Retry-After"] == "1"
    assert status_of(info.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"Timeout: Too large resource version: {current + 10}, current: {current}",
        "reason": "Timeout",
        "details": {"retryAfterSeconds": 1, "causes": [
            {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]},
        "code": 504}
    # The watch cache first waits (fresh_wait) for the version to appear, Exact too
    # (checked on kube-apiserver in tests/test_testing_consistency_parity.py).
    assert time.monotonic() - started >= 0.19


def test_not_older_than_waits_for_a_version_that_arrives(api_server, core):
    import threading

    target = str(int(api_server.resource_version) + 1)
    timer = threading.Timer(0.05, lambda: api_server.create(pod("late")))
    timer.start()
    try:
        listed = core.list_namespaced_pod("default", resource_version=target)
    finally:
        timer.join()
    assert names(listed.items) == ["late"]


def test_pages_come_from_the_snapshot_of_the_first_page(api_server, core):
    for name in ("b", "c", "d", "e", "f"):
        api_server.create(pod(name))
    first = raw_list(core, limit=2)
    snapshot_rv = first["metadata"]["resourceVersion"]
    assert names(first["items"]) == ["b", "c"]
    assert first["metadata"]["remainingItemCount"] == 3
    # Changes after the first page must not show: new objects before and after the cursor,
    # a deletion and an update of objects not yet listed.
    api_server.create(pod("a"))
    api_server.create(pod("g"))
    api_server.delete("pods", "default", "e")
    api_server.patch("pods", "default", "d", {"metadata": {"labels": {"changed": "yes"}}})
    second = raw_list(core, limit=2, _continue=first["metadata"]["continue"])
    third = raw_list(core, limit=2, _continue=second["metadata"]["continue"])
    assert names(second["items"]) == ["d", "e"]
    assert "labels" not in second["items"][0]["metadata"]  # not changed yet (empty: omitted)
    assert names(third["items"]) == ["f"]
    assert second["metadata"]["remainingItemCount"] == 1
    assert "continue" not in third["metadata"] and "remainingItemCount" not in third["metadata"]
    # "The resourceVersion field returned when using this continue value will be identical
    # to the value in the first response."
    assert {p["metadata"]["resourceVersion"] for p in (second, third)} == {snapshot_rv}


def test_paginated_list_with_a_selector_has_no_remaining_item_count(api_server, core):
    for i, app in enumerate(["x", "y", "x", "x"]):
        api_server.create(pod(f"p{i}", app=app))
    first = raw_list(core, limit=1, label_selector="app=x")
    assert names(first["items"]) == ["p0"]
    assert "remainingItemCount" not in first["metadata"]  # etcd3 sets it only without selectors
    second = raw_list(core, limit=5, label_selector="app=x",
                      _continue=first["metadata"]["continue"])
    assert names(second["items"]) == ["p2", "p3"]
    assert "continue" not in second["metadata"]


def test_continue_token_expires_with_410_and_offers_an_inconsistent_continuation(api_server,
                                                                                 core):
    for name in "abc":
        api_server.create(pod(name))
    first = raw_list(core, limit=1)
    api_server.create(pod("d"))
    api_server.compact()
    with pytest.raises(ApiException) as info:
        raw_list(core, limit=1, _continue=first["metadata"]["continue"])
    status = status_of(info.value)
    assert (info.value.status, status["reason"]) == (410, "Expired")
    # etcd3 store.go inconsistentContinue, with a token continuing from the latest state.
    assert status["message"].startswith(
        "The provided continue parameter is too old to display a consistent list result. You "
        "can start a new list without the continue parameter, or use the continue token in "
        "this response to retrieve the remainder of the results.")
    rest = raw_list(core, _continue=status["metadata"]["continue"])
    assert names(rest["items"]) == ["b", "c", "d"]


@pytest.mark.parametrize("token", ["not-a-token", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MH0"])
def test_invalid_continue_token_is_400(core, token):
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod("default", _continue=token)
    assert info.value.status == 400
    assert status_of(info.value)["message"].startswith(
        "invalid continue token: continue key is not valid")


def test_continue_with_a_resource_version_is_400(api_server, core):
    for name in "ab":
        api_server.create(pod(name))
    token = raw_list(core, limit=1)["metadata"]["continue"]
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod("default", _continue=token, resource_version="5")
    assert status_of(info.value)["message"] == (
        "specifying resource version is not allowed when using continue")


def test_get_honours_resource_version(api_server, core):
    created = api_server.create(pod("a"))
    got = core.read_namespaced_pod("a", "default", _preload_content=False)
    body = json.loads(got.data)
    assert (body["kind"], body["apiVersion"]) == ("Pod", "v1")  # single objects are typed
    assert body["metadata"]["uid"] == created["metadata"]["uid"]
    resp = core.api_client.call_api(
        "GET", f"{api_server.url}/api/v1/namespaces/default/pods/a"
        f"?resourceVersion={int(api_server.resource_version) + 5}",
        header_params={"Authorization": f"Bearer {api_server.token}"})
    resp.read()
    assert resp.status == 504
    assert json.loads(resp.data)["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


def test_get_of_a_missing_object_is_404_with_details(api_server, core):
    with pytest.raises(ApiException) as info:
        core.read_namespaced_pod("nope", "default")
    assert status_of(info.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods "nope" not found', "reason": "NotFound",
        "details": {"name": "nope", "kind": "pods"}, "code": 404}
    leases = client.CoordinationV1Api(core.api_client)
    with pytest.raises(ApiException) as info:
        leases.read_namespaced_lease("l", "default")
    assert status_of(info.value)["message"] == 'leases.coordination.k8s.io "l" not found'
    assert status_of(info.value)["details"] == {
        "name": "l", "group": "coordination.k8s.io", "kind": "leases"}


def test_delete_answers_the_final_object_and_deletecollection_the_deleted_list(api_server,
                                                                              core):
    api_server.create(pod("a", app="x"))
    api_server.create(pod("b", app="x"))
    api_server.create(pod("c", app="y"))
    gone = json.loads(core.delete_namespaced_pod("a", "default", _preload_content=False).data)
    assert (gone["kind"], gone["metadata"]["name"]) == ("Pod", "a")
    assert gone["metadata"]["resourceVersion"] == api_server.resource_version
    resp = core.delete_collection_namespaced_pod("default", label_selector="app=x",
                                                 _preload_content=False)
    deleted = json.loads(resp.data)
    assert deleted["kind"] == "PodList" and names(deleted["items"]) == ["b"]
    assert names(core.list_namespaced_pod("default").items) == ["c"]
    assert [r.verb for r in api_server.request_log(resource="pods")][-3:] == [
        "delete", "deletecollection", "list"]
    # Kinds whose store does not set ReturnDeletedObject answer a Success Status.
    made = api_server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    status = json.loads(core.delete_namespaced_config_map("c", "default",
                                                          _preload_content=False).data)
    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                      "details": {"name": "c", "kind": "configmaps",
                                  "uid": made["metadata"]["uid"]}}


def test_dry_run_validates_without_storing(api_server, core):
    created = core.create_namespaced_pod("default", pod("dry"), dry_run="All")
    assert created.metadata.name == "dry"
    assert api_server.get("pods", "default", "dry") is None
    api_server.create(pod("a"))
    before = api_server.resource_version
    core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"x": "1"}}},
                              dry_run="All")
    core.delete_namespaced_pod("a", "default", dry_run="All")
    assert api_server.resource_version == before
    assert "labels" not in api_server.get("pods", "default", "a")["metadata"]  # {}: omitted


def test_discovery_and_version(api_server, api_client):
    core_resources = client.CoreV1Api(api_client).get_api_resources()
    by_name = {r.name: r for r in core_resources.resources}
    assert by_name["pods"].short_names == ["po"] and by_name["pods"].namespaced is True
    assert by_name["pods/status"].verbs == ["get", "patch", "update"]
    assert by_name["nodes"].namespaced is False
    assert sorted(by_name["configmaps"].verbs) == [
        "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    groups = {g.name: g for g in client.ApisApi(api_client).get_api_versions().groups}
    assert {"apps", "coordination.k8s.io", "discovery.k8s.io"} <= set(groups)
    assert groups["apps"].preferred_version.group_version == "apps/v1"
    apps = client.AppsV1Api(api_client).get_api_resources()
    assert {"deployments", "deployments/status", "replicasets"} <= {
        r.name for r in apps.resources}
    assert client.CoreApi(api_client).get_api_versions().versions == ["v1"]
    # As kube-apiserver v1.36.3: namespaces have no deletecollection, and a finalize
    # subresource; the group order of /apis.
    assert by_name["namespaces"].verbs == [
        "create", "delete", "get", "list", "patch", "update", "watch"]
    assert by_name["namespaces/finalize"].verbs == ["update"]
    assert [g.name for g in client.ApisApi(api_client).get_api_versions().groups] == [
        "apps", "batch", "coordination.k8s.io", "discovery.k8s.io", "apiextensions.k8s.io"]


def test_version_is_the_release_of_the_real_control_plane(api_server, api_client):
    # Field for field what the kube-apiserver that tools/control-plane/build.sh builds
    # answers (captured from v1.36.3).
    answer = api_client.call_api(
        "GET", f"{api_server.url}/version",
        header_params={"Authorization": f"Bearer {api_server.token}"})
    answer.read()
    assert json.loads(answer.data) == {
        "major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36",
        "minCompatibilityMajor": "1", "minCompatibilityMinor": "35",
        "gitVersion": "v1.36.3", "gitCommit": "$Format:%H$", "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z", "goVersion": "go1.26.8", "compiler": "gc",
        "platform": "linux/amd64"}
    assert client.VersionApi(api_client).get_code().git_version == "v1.36.3"
    # The release the project builds its real control plane from.
    script = (Path(__file__).resolve().parent.parent / "tools" / "control-plane" / "build.sh")
    pinned = re.search(r"^K8S_VERSION=\$\{K8S_VERSION:-(v[0-9.]+)\}$", script.read_text(),
                       re.MULTILINE)
    assert pinned is not None and pinned.group(1) == KUBERNETES_VERSION == "v1.36.3"


def test_dynamic_client_lists_through_discovery(api_server, api_client):
    from kubernetes.dynamic import DynamicClient

    api_server.create(pod("a"))
    dynamic = DynamicClient(api_client)
    pods = dynamic.resources.get(api_version="v1", kind="Pod")
    assert [p.metadata.name for p in pods.get(namespace="default").items] == ["a"]
    leases = dynamic.resources.get(api_version="coordination.k8s.io/v1", kind="Lease")
    made = leases.create(body={"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}},
                         namespace="default")
    assert made.spec.holderIdentity == "me"


def test_version_fields_match_the_real_control_plane(any_api_server):
    api_client = any_api_server.api_client()
    try:
        version = client.VersionApi(api_client).get_code()
    finally:
        api_client.close()
    assert (version.git_version, version.major, version.minor, version.emulation_major,
            version.emulation_minor, version.min_compatibility_major,
            version.min_compatibility_minor, version.git_tree_state) == (
        "v1.36.3", "1", "36", "1", "36", "1", "35", "clean")


@pytest.mark.parametrize("match", ["NotOlderThan", "Exact"])
def test_the_wait_for_a_future_version_runs_on_the_servers_clock(match):
    # kube-apiserver's watch cache blocks 3 s (watch_cache.go blockTimeout); on a FakeClock
    # the test steps those 3 s instead of waiting them.
    import threading

    from informers.clock import FakeClock
    from informers.testing import ApiServer

    clock = FakeClock()
    with ApiServer(clock=clock) as server:
        future = int(server.resource_version) + 1
        api = server.api_client()
        answers: list[Any] = []

        def list_at(rv: int) -> None:
            try:
                answers.append(client.CoreV1Api(api).list_namespaced_config_map(
                    "default", resource_version=str(rv), resource_version_match=match))
            except ApiException as err:
                answers.append(err)

        try:
            first = threading.Thread(target=list_at, args=(future,))
            first.start()
            assert clock.wait_for_waiters(1)
            server.create({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "a", "namespace": "default"}})
            first.join(5)  # the version arrived: answered at once
            assert [a.metadata.resource_version for a in answers] == [str(future)]

            second = threading.Thread(target=list_at, args=(future + 5,))
            second.start()
            assert clock.wait_for_waiters(1)
            clock.step(2.9)
            second.join(0.2)
            assert second.is_alive()
            clock.step(0.2)
            second.join(5)
            assert answers[1].status == 504
        finally:
            api.close()
