"""Tests for informers.listers: reads by name, namespace and selector over an Indexer."""

from __future__ import annotations

import logging

import pytest

from informers import labels
from informers.errors import NotFoundError, SelectorError
from informers.indexer import Indexer
from informers.keys import NAMESPACE_INDEX, meta_namespace_index_func
from informers.listers import Lister, NamespaceLister
from informers.resources import Resource, lookup

PODS = lookup("pods")
NODES = lookup("nodes")


def _obj(name: str, ns: str | None = None, **lbls: str) -> dict:
    meta: dict = {"name": name, "labels": dict(lbls)}
    if ns is not None:
        meta["namespace"] = ns
    return {"metadata": meta}


def _names(objs: list) -> list[str]:
    return sorted(
        (o["metadata"].get("namespace", "") + "/" + o["metadata"]["name"]).lstrip("/")
        for o in objs
    )


@pytest.fixture
def pods() -> Lister:
    idx = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    for o in (
        _obj("web-1", "default", app="web", tier="front"),
        _obj("web-2", "default", app="web"),
        _obj("db-1", "default", app="db"),
        _obj("web-1", "prod", app="web"),
        {"metadata": {"name": "bare", "namespace": "prod"}},  # no labels at all
    ):
        idx.add(o)
    return Lister(idx, PODS)


def test_list_everything_nothing_and_selectors(pods: Lister) -> None:
    all_ = ["default/db-1", "default/web-1", "default/web-2", "prod/bare", "prod/web-1"]
    assert _names(pods.list()) == all_
    assert _names(pods.list(labels.EVERYTHING)) == all_
    assert _names(pods.list(None)) == all_
    assert pods.list(labels.NOTHING) == []
    assert _names(pods.list(labels.parse("app=web"))) == [
        "default/web-1",
        "default/web-2",
        "prod/web-1",
    ]
    assert _names(pods.list("app=web,tier=front")) == ["default/web-1"]
    assert _names(pods.list("!app")) == ["prod/bare"]
    assert _names(pods.list("app notin (web)")) == ["default/db-1", "prod/bare"]
    with pytest.raises(SelectorError):
        pods.list("app in (")


def test_returned_objects_are_the_cached_ones(pods: Lister) -> None:
    cached = pods.indexer.get_by_key("default/web-1")
    assert pods.pods("default").get("web-1") is cached
    assert any(o is cached for o in pods.list())


def test_namespace_lister_uses_the_index(pods: Lister) -> None:
    default = pods.pods("default")
    assert isinstance(default, NamespaceLister)
    assert _names(default.list()) == ["default/db-1", "default/web-1", "default/web-2"]
    assert _names(default.list("app=web")) == ["default/web-1", "default/web-2"]
    assert default.list(labels.NOTHING) == []
    assert _names(pods.by_namespace("prod").list()) == ["prod/bare", "prod/web-1"]
    assert pods.by_namespace("missing").list() == []
    assert len(pods.by_namespace("").list()) == 5  # NamespaceAll
    assert pods.pods("prod").get("web-1")["metadata"]["namespace"] == "prod"


def test_not_found_names_resource_and_key(pods: Lister) -> None:
    with pytest.raises(NotFoundError) as info:
        pods.pods("default").get("nope")
    assert str(info.value) == 'pods "default/nope" not found'
    assert info.value.resource == "pods"
    assert isinstance(info.value, LookupError)
    with pytest.raises(NotFoundError, match='pods "prod/db-1" not found'):
        pods.by_namespace("prod").get("db-1")


def test_cluster_scoped_get_and_list() -> None:
    idx = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    idx.add(_obj("node-a", role="worker"))
    idx.add(_obj("node-b", role="master"))
    nodes = Lister(idx, NODES)
    assert nodes.get("node-a")["metadata"]["name"] == "node-a"
    assert _names(nodes.list("role=worker")) == ["node-a"]
    with pytest.raises(NotFoundError, match='nodes "node-c" not found'):
        nodes.get("node-c")


def test_namespaced_get_by_key(pods: Lister) -> None:
    assert pods.get("prod/web-1")["metadata"]["namespace"] == "prod"
    with pytest.raises(NotFoundError, match='pods "web-1" not found'):
        pods.get("web-1")


def test_missing_namespace_index_falls_back_to_a_scan(caplog) -> None:
    idx = Indexer()
    idx.add(_obj("a", "x", k="v"))
    idx.add(_obj("b", "y", k="v"))
    lister = Lister(idx, PODS)
    with caplog.at_level(logging.WARNING, logger="informers.listers"):
        assert _names(lister.pods("x").list("k=v")) == ["x/a"]
    assert len(caplog.records) == 1
    assert "no 'namespace' index" in caplog.records[0].getMessage()


def test_typed_accessors_check_the_resource() -> None:
    idx = Indexer()
    deployments = Lister(idx, lookup("deployments"))
    assert deployments.deployments("ns").namespace == "ns"
    with pytest.raises(TypeError, match=r"pods lister requested from .* deployments\.apps"):
        deployments.pods("ns")
    for plural, method in [
        ("services", "services"),
        ("endpoints", "endpoints"),
        ("configmaps", "config_maps"),
        ("secrets", "secrets"),
        ("events", "events"),
        ("serviceaccounts", "service_accounts"),
        ("persistentvolumeclaims", "persistent_volume_claims"),
        ("leases", "leases"),
        ("endpointslices", "endpoint_slices"),
        ("deployments", "deployments"),
        ("replicasets", "replica_sets"),
        ("statefulsets", "stateful_sets"),
        ("daemonsets", "daemon_sets"),
        ("jobs", "jobs"),
        ("pods", "pods"),
    ]:
        lister = Lister(idx, lookup(plural))
        assert getattr(lister, method)("ns").resource is lookup(plural)


def test_generic_lister_for_a_custom_resource() -> None:
    crd = Resource("example.com", "v1", "widgets", "Widget", True)
    idx = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    idx.add(_obj("w", "ns", color="red"))
    lister = Lister(idx, crd)
    assert lister.by_namespace("ns").get("w")["metadata"]["name"] == "w"
    with pytest.raises(NotFoundError, match=r'widgets\.example\.com "ns/x" not found'):
        lister.by_namespace("ns").get("x")
    assert repr(lister) == "<Lister widgets.example.com>"


def test_lister_exposes_the_store_resource_version_of_the_last_write():
    indexer = Indexer()
    lister = Lister(indexer, PODS)
    assert lister.last_store_sync_resource_version() == ""
    indexer.add({"metadata": {"namespace": "ns", "name": "a", "resourceVersion": "42"}})
    assert lister.last_store_sync_resource_version() == "42"
