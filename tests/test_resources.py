"""Tests for informers.resources: paths, api versions and lookup."""

from __future__ import annotations

import dataclasses

import pytest

from informers.resources import BUILTIN_RESOURCES, Resource, lookup


def test_core_paths():
    pods = lookup("pods")
    assert pods == Resource("", "v1", "pods", "Pod", True)
    assert pods.api_version == "v1"
    assert pods.path() == "/api/v1/pods"
    assert pods.path("") == "/api/v1/pods"
    assert pods.path("kube-system") == "/api/v1/namespaces/kube-system/pods"
    assert pods.path("ns", "web-0") == "/api/v1/namespaces/ns/pods/web-0"
    assert pods.path("ns", "web-0", "status") == "/api/v1/namespaces/ns/pods/web-0/status"
    assert str(pods) == "v1/pods"


def test_group_paths_and_cluster_scope():
    dep = lookup("deployments")
    assert dep.api_version == "apps/v1"
    assert dep.path() == "/apis/apps/v1/deployments"
    assert dep.path("prod", "api") == "/apis/apps/v1/namespaces/prod/deployments/api"
    assert str(dep) == "apps/v1/deployments"
    nodes = lookup("nodes")
    assert nodes.namespaced is False
    # A namespace never appears in a cluster-scoped path.
    assert nodes.path("ignored", "n1") == "/api/v1/nodes/n1"


def test_path_quotes_segments():
    cm = lookup("configmaps")
    assert cm.path("a b", "x/y") == "/api/v1/namespaces/a%20b/configmaps/x%2Fy"


def test_subresource_needs_name():
    with pytest.raises(ValueError, match="subresource 'status' needs a name"):
        lookup("pods").path("ns", subresource="status")


def test_lookup_spellings():
    assert lookup("deployments.apps") is lookup("deployments")
    assert lookup(("apps", "v1", "deployments")) is lookup("deployments")
    assert lookup(("", "v1", "pods")).kind == "Pod"
    assert lookup("leases").group == "coordination.k8s.io"
    assert lookup("leases.coordination.k8s.io").kind == "Lease"
    assert lookup("endpointslices").path("ns") == (
        "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices"
    )
    assert lookup("jobs.batch").api_version == "batch/v1"


def test_lookup_unknown_names_the_resource():
    with pytest.raises(KeyError, match="unknown resource 'widgets'"):
        lookup("widgets")
    with pytest.raises(KeyError, match=r"unknown resource widgets\.example\.com/v1"):
        lookup(("example.com", "v1", "widgets"))


def test_builtin_table():
    names = sorted(r.group_resource for r in BUILTIN_RESOURCES)
    assert names == sorted([
        "pods", "services", "endpoints", "nodes", "namespaces", "configmaps", "secrets",
        "events", "serviceaccounts", "persistentvolumeclaims", "persistentvolumes",
        "deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps",
        "leases.coordination.k8s.io", "endpointslices.discovery.k8s.io", "jobs.batch",
    ])
    cluster = sorted(r.plural for r in BUILTIN_RESOURCES if not r.namespaced)
    assert cluster == ["namespaces", "nodes", "persistentvolumes"]


def test_resource_is_frozen_and_hashable():
    r = lookup("pods")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.plural = "x"  # type: ignore[misc]
    assert {r: 1}[Resource("", "v1", "pods", "Pod", True)] == 1
