"""Request classification of the embedded API server (informers/testing/request_info.py),
as recorded in the request log for calls of the official client (kube-apiserver
``RequestInfoFactory`` semantics)."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from informers.testing.request_info import resolve
from informers.testing.resources import ResourceRegistry


def test_verbs_resources_and_names_of_client_calls(api_server, api_client):
    core = client.CoreV1Api(api_client)
    api_server.clear_request_log()
    core.read_namespace("default")
    core.read_namespace_status("default")
    core.list_namespaced_pod("kube-system")
    core.list_pod_for_all_namespaces()
    core.list_node(watch=True, timeout_seconds=1, _preload_content=False).close()
    core.delete_collection_namespaced_config_map("default")
    client.AppsV1Api(api_client).list_namespaced_deployment("default")
    seen = [(r.verb, r.group, r.resource, r.namespace, r.name, r.subresource)
            for r in api_server.requests]
    assert seen == [
        ("get", "", "namespaces", "", "default", ""),
        ("get", "", "namespaces", "", "default", "status"),
        ("list", "", "pods", "kube-system", "", ""),
        ("list", "", "pods", "", "", ""),
        ("watch", "", "nodes", "", "", ""),
        ("deletecollection", "", "configmaps", "default", "", ""),
        ("list", "apps", "deployments", "default", "", ""),
    ]


def info(method: str, path: str, query: dict[str, str] | None = None) -> Any:
    return resolve(method, path, query or {}, ResourceRegistry())


def test_resolve_paths():
    legacy = info("GET", "/api/v1/watch/namespaces/default/pods/p")
    assert (legacy.verb, legacy.namespace, legacy.resource, legacy.name) == (
        "watch", "default", "pods", "p")
    assert info("GET", "/api/v1/pods", {"watch": "0"}).verb == "list"
    assert info("GET", "/api/v1/pods", {"watch": "true"}).verb == "watch"
    discovery = info("GET", "/apis/apps/v1")
    assert (discovery.is_resource, discovery.verb) == (False, "get")
    assert info("GET", "/api/v1/namespaces/default/things").unknown
    assert info("GET", "/api/v1/namespaces/default/pods/a/status/x").extra_parts
    assert info("POST", "/apis/coordination.k8s.io/v1/namespaces/n/leases").verb == "create"
    assert info("PATCH", "/api/v1/nodes/n1/status").subresource == "status"
