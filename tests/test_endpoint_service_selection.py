"""Tests for controllers.endpoint.service_selection: the Services a pod event may concern."""

from __future__ import annotations

import logging
import random

import pytest

from controllers.endpoint.membership import pod_service_memberships
from controllers.endpoint.service_selection import (
    SERVICE_SELECTOR_INDEX,
    ServiceSelector,
    service_selector_index_func,
)
from informers.indexer import Indexer
from informers.keys import NAMESPACE_INDEX, meta_namespace_index_func, meta_namespace_key_func
from informers.labels import EVERYTHING
from informers.listers import Lister
from informers.resources import lookup


class StandInInformer:
    """What ServiceSelector uses of an informer: a real Indexer behind add_indexers and
    get_indexer."""

    def __init__(self, fail_indexers: bool = False) -> None:
        self.indexer = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
        self.fail_indexers = fail_indexers

    def add_indexers(self, indexers) -> None:
        if self.fail_indexers:
            raise RuntimeError("informer has already started")
        self.indexer.add_indexers(indexers)

    def get_indexer(self) -> Indexer:
        return self.indexer


def svc(name, selector, ns="ns"):
    spec = {} if selector is None else {"selector": selector}
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def pod(labels, ns="ns"):
    return {"metadata": {"name": "p", "namespace": ns, "labels": labels}}


def selector_for(services: list[dict], fail_indexers: bool = False) -> ServiceSelector:
    informer = StandInInformer(fail_indexers)
    selector = ServiceSelector(informer, Lister(informer.indexer, lookup("services")), "test")
    for service in services:
        informer.indexer.add(service)
    return selector


def test_index_func_files_a_service_under_its_smallest_pair():
    assert service_selector_index_func(svc("a", {"tier": "fe", "app": "web"})) == ["ns/app=web"]
    assert service_selector_index_func(svc("a", {"app": "web"}, ns="other")) == [
        "other/app=web"]
    assert service_selector_index_func(svc("all", {})) == ["ns/"]  # selects every pod
    assert service_selector_index_func(svc("none", None)) == []  # selects nothing
    assert service_selector_index_func(svc("bad", {"app": 3})) == []  # malformed: nothing
    assert service_selector_index_func(svc("bad", ["app"])) == []
    assert service_selector_index_func("not a service") == []


def test_candidates_are_the_services_filed_under_the_pods_pairs_and_the_select_all_ones():
    services = [
        svc("web", {"app": "web"}),
        svc("web-fe", {"app": "web", "tier": "fe"}),
        svc("fe", {"tier": "fe"}),
        svc("all", {}),
        svc("none", None),
        svc("db", {"app": "db"}),
        svc("elsewhere", {"app": "web"}, ns="other"),
    ]
    selector = selector_for(services)
    assert selector.indexed

    def names(found):
        return sorted(s["metadata"]["name"] for s in found)

    assert names(selector.candidates("ns", pod({"app": "web"}))) == ["all", "web", "web-fe"]
    assert names(selector.candidates("ns", pod({"tier": "fe"}))) == ["all", "fe"]
    # Two pods (old and new labels of an update): each Service once.
    assert names(selector.candidates("ns", pod({"app": "web"}), pod({"app": "web"}))) == [
        "all", "web", "web-fe"]
    assert names(selector.candidates("ns", pod({"app": "web"}), pod({"app": "db"}))) == [
        "all", "db", "web", "web-fe"]
    assert names(selector.candidates("ns", pod(None))) == ["all"]
    assert names(selector.candidates("ns", pod({"app": 7}))) == ["all"]  # not a string label
    assert names(selector.candidates("other", pod({"app": "web"}))) == ["elsewhere"]
    assert selector.candidates("empty", pod({"app": "web"})) == []


def test_memberships_through_candidates_equal_those_over_the_whole_namespace():
    rng = random.Random(7)
    keys, values = ["app", "tier", "track"], ["a", "b"]

    def labels():
        return {k: rng.choice(values) for k in keys if rng.random() < 0.6}

    for _ in range(50):
        services = []
        for i in range(12):
            selector = None if rng.random() < 0.1 else labels()
            services.append(svc(f"s{i}", selector, ns=rng.choice(["ns", "other"])))
        selector = selector_for(services)
        whole = Lister(selector._informer.get_indexer(), lookup("services"))
        for _ in range(10):
            the_pod = pod(labels())
            expected = pod_service_memberships(
                whole.by_namespace("ns").list(EVERYTHING), the_pod["metadata"]["labels"])
            got = pod_service_memberships(
                selector.candidates("ns", the_pod), the_pod["metadata"]["labels"])
            assert got == expected


def test_index_follows_selector_changes_and_deletes():
    selector = selector_for([svc("web", {"app": "web"})])
    indexer = selector._informer.get_indexer()
    indexer.update(svc("web", {"app": "db"}))
    assert selector.candidates("ns", pod({"app": "web"})) == []
    assert [s["metadata"]["name"] for s in selector.candidates("ns", pod({"app": "db"}))] == [
        "web"]
    indexer.delete(svc("web", {"app": "db"}))
    assert selector.candidates("ns", pod({"app": "db"})) == []
    assert indexer.list_index_func_values(SERVICE_SELECTOR_INDEX) == []


def test_without_the_index_every_service_of_the_namespace_is_a_candidate(caplog):
    with caplog.at_level(logging.WARNING, logger="controllers.endpoint.service_selection"):
        selector = selector_for(
            [svc("web", {"app": "web"}), svc("db", {"app": "db"}), svc("x", {}, ns="other")],
            fail_indexers=True,
        )
    assert not selector.indexed
    assert [r.getMessage() for r in caplog.records] == [
        "test: no service selector index (informer has already started); pod events list "
        "whole namespaces"]
    found = selector.candidates("ns", pod({"app": "web"}))
    assert sorted(meta_namespace_key_func(s) for s in found) == ["ns/db", "ns/web"]


@pytest.mark.parametrize("labels", [{"app": "web"}, {}])
def test_candidates_never_mutate_the_indexers_lists(labels):
    selector = selector_for([svc("all", {}), svc("web", {"app": "web"})])
    first = selector.candidates("ns", pod(labels))
    first.append("junk")
    assert "junk" not in selector.candidates("ns", pod(labels))
