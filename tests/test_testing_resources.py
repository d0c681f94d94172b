"""Served resource types of the embedded API server (informers/testing/resources.py): the
built-ins, registered custom resources and their discovery, through the official client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from informers import resources as library
from informers.errors import StatusError
from informers.resources import Resource
from informers.testing import BUILTIN_RESOURCES

GROUP, VERSION = "example.com", "v1"


@pytest.fixture
def widgets(api_server: Any) -> Any:
    return api_server.register_resource(GROUP, VERSION, "widgets", "Widget", has_status=True,
                                        short_names=["wd"])


@pytest.fixture
def custom(api_client: Any) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def widget(name: str, size: int = 1) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget",
            "metadata": {"name": name}, "spec": {"size": size}}


def test_every_builtin_kind_supports_create_and_list(api_server, api_client):
    dynamic = DynamicClient(api_client)
    for rt in BUILTIN_RESOURCES:
        api = dynamic.resources.get(api_version=rt.api_version, kind=rt.kind)
        name = "n" if rt.plural != "namespaces" else "new-ns"
        kw = {"namespace": "default"} if rt.namespaced else {}
        made = api.create(body={"metadata": {"name": name}}, **kw)
        assert (made.kind, made.apiVersion, made.metadata.name) == (rt.kind, rt.api_version,
                                                                     name)
        listed = api.get(**kw)
        assert listed.kind == rt.list_kind
        assert name in [i.metadata.name for i in listed.items]


def test_custom_resources_crud_with_typed_list_items(api_server, widgets, custom):
    made = custom.create_namespaced_custom_object(GROUP, VERSION, "default", "widgets",
                                                  widget("w1"))
    assert made["metadata"]["generation"] == 1
    assert "status" not in made
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", "widgets", widget("w2"))
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, "default", "widgets")
    assert listed["kind"] == "WidgetList" and listed["apiVersion"] == "example.com/v1"
    # Custom resource list items keep kind and apiVersion (unstructured), unlike built-ins.
    assert [(i["kind"], i["metadata"]["name"]) for i in listed["items"]] == [
        ("Widget", "w1"), ("Widget", "w2")]
    grown = custom.patch_namespaced_custom_object(GROUP, VERSION, "default", "widgets", "w1",
                                                  {"spec": {"size": 5}})
    assert (grown["spec"], grown["metadata"]["generation"]) == ({"size": 5}, 2)
    status = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", "widgets", "w1", {"status": {"ready": True}})
    assert (status["status"], status["metadata"]["generation"]) == ({"ready": True}, 2)
    deleted = custom.delete_namespaced_custom_object(GROUP, VERSION, "default", "widgets", "w2")
    # A custom resource store answers a delete with a Status (registry store.go).
    assert (deleted["kind"], deleted["status"]) == ("Status", "Success")
    assert deleted["details"]["name"] == "w2" and deleted["details"]["group"] == GROUP
    with pytest.raises(ApiException) as info:
        custom.get_namespaced_custom_object(GROUP, VERSION, "default", "widgets", "w2")
    assert json.loads(info.value.body)["message"] == 'widgets.example.com "w2" not found'


def test_cluster_scoped_custom_resource(api_server, custom):
    api_server.register_resource(GROUP, VERSION, "gadgets", "Gadget", namespaced=False)
    custom.create_cluster_custom_object(GROUP, VERSION, "gadgets", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Gadget", "metadata": {"name": "g"}})
    listed = custom.list_cluster_custom_object(GROUP, VERSION, "gadgets")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["g"]
    assert "namespace" not in listed["items"][0]["metadata"]


def test_registered_resources_appear_in_discovery(api_server, widgets, api_client):
    groups = client.ApisApi(api_client).get_api_versions().groups
    example = next(g for g in groups if g.name == GROUP)
    assert [v.group_version for v in example.versions] == ["example.com/v1"]
    resources = client.CustomObjectsApi(api_client).get_api_resources(GROUP, VERSION)
    assert [(r.name, r.kind, r.namespaced) for r in resources.resources] == [
        ("widgets", "Widget", True), ("widgets/status", "Widget", True)]
    assert resources.resources[0].short_names == ["wd"]
    api = DynamicClient(api_client).resources.get(api_version="example.com/v1", kind="Widget")
    api.create(body=widget("w"), namespace="default")
    assert [w.metadata.name for w in api.get(namespace="default").items] == ["w"]
    # Seeding helpers find the kind from apiVersion/kind, short names or group-qualified names.
    api_server.create(widget("seeded"))
    assert api_server.get("wd", "default", "seeded")["kind"] == "Widget"
    assert api_server.get("widgets.example.com", "default", "w")["spec"] == {"size": 1}


def test_unknown_kinds_are_refused_by_the_helpers(api_server):
    # As the API answers a request to a path nothing serves (issue 16: not a KeyError).
    with pytest.raises(StatusError) as created:
        api_server.create(widget("w"))
    with pytest.raises(StatusError) as got:
        api_server.get("widgets", "default", "w")
    assert [(e.value.code, e.value.status["message"]) for e in (created, got)] == [
        (404, "the server could not find the requested resource")] * 2


def test_builtin_table_derives_from_the_library_table():
    # One source of truth: every library Resource is served, with the same identity.
    assert [rt.resource for rt in BUILTIN_RESOURCES] == sorted(
        library.BUILTIN_RESOURCES,
        key=lambda r: ["", "apps", "batch", "coordination.k8s.io", "discovery.k8s.io"].index(
            r.group))
    for rt in BUILTIN_RESOURCES:
        assert isinstance(rt, Resource)
        assert library.lookup((rt.group, rt.version, rt.plural)) == rt.resource
        assert rt.path("ns", "x") == rt.resource.path("ns", "x")
    # The server's own facts sit on top (kube-apiserver v1.36.3 discovery and strategies).
    facts = {rt.qualified: (rt.short_names, rt.subresources, rt.name_rule, rt.create_status,
                            rt.returns_deleted_object) for rt in BUILTIN_RESOURCES}
    assert facts["statefulsets.apps"] == (
        ("sts",), ("status",), "label", {"replicas": 0, "availableReplicas": 0}, False)
    assert facts["persistentvolumeclaims"] == (
        ("pvc",), ("status",), "subdomain", {"phase": "Pending"}, True)
    assert facts["namespaces"] == (
        ("ns",), ("status", "finalize"), "label", {"phase": "Active"}, True)
    assert facts["jobs.batch"] == ((), ("status",), "subdomain", {}, False)


def test_library_kinds_new_to_the_server_are_served(api_server, api_client):
    template = {"metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "db"}]}}
    made = client.AppsV1Api(api_client).create_namespaced_stateful_set("default", {
        "metadata": {"name": "db"}, "status": {"replicas": 3},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
                 "template": template}})
    assert (made.metadata.generation, made.status.replicas) == (1, 0)  # create resets status
    claim = client.CoreV1Api(api_client).create_namespaced_persistent_volume_claim(
        "default", {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}})
    assert claim.status.phase == "Pending"
    jobs = client.BatchV1Api(api_client).list_job_for_all_namespaces()
    assert (jobs.kind, jobs.items) == ("JobList", [])
    groups = [g.name for g in client.ApisApi(api_client).get_api_versions().groups]
    assert groups == ["apps", "batch", "coordination.k8s.io", "discovery.k8s.io",
                      "apiextensions.k8s.io",  # CustomResourceDefinitions (crds.py)
                      "admissionregistration.k8s.io"]  # webhook configurations (admission.py)
