"""Tests for controllers.endpoint.membership: which Services a pod event concerns (upstream:
k8s.io/endpointslice v0.36.3 util/controller_utils.go)."""

from __future__ import annotations

import copy

import pytest

from controllers.endpoint.membership import (
    pod_endpoints_changed,
    pod_service_memberships,
    services_to_update_on_pod_change,
    valid_selector,
)


def svc(name, selector, ns="ns"):
    spec = {} if selector is None else {"selector": selector}
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


SERVICES = [
    svc("web", {"app": "web"}),
    svc("web-canary", {"app": "web", "track": "canary"}),
    svc("all", {}),
    svc("none", None),
    svc("db", {"app": "db"}),
]


def pod(labels=None, rv="1", ready=True, ips=("10.0.0.1",), deleting=False, hostname=None,
        subdomain=None):
    p = {
        "metadata": {"name": "p", "namespace": "ns", "resourceVersion": rv},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                   "podIPs": [{"ip": ip} for ip in ips]},
    }
    if labels is not None:
        p["metadata"]["labels"] = labels
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if hostname is not None:
        p["spec"]["hostname"] = hostname
    if subdomain is not None:
        p["spec"]["subdomain"] = subdomain
    return p


def test_memberships_nil_selects_nothing_empty_selects_all():
    assert pod_service_memberships(SERVICES, {"app": "web"}) == {"ns/web", "ns/all"}
    assert pod_service_memberships(SERVICES, {"app": "web", "track": "canary"}) == {
        "ns/web", "ns/web-canary", "ns/all"
    }
    assert pod_service_memberships(SERVICES, None) == {"ns/all"}
    assert pod_service_memberships(SERVICES, {}) == {"ns/all"}


def test_malformed_selectors_select_nothing():
    bad = [svc("list", ["app", "web"]), svc("intval", {"app": 1}), svc("str", "app=web")]
    assert pod_service_memberships(bad, {"app": "web"}) == set()
    assert valid_selector(svc("x", {"a": "b"})) == {"a": "b"}
    assert valid_selector(svc("x", None)) is None
    assert valid_selector({"spec": "junk"}) is None


def test_services_without_usable_key_are_skipped(caplog):
    odd = {"metadata": {"namespace": "ns"}, "spec": {"selector": {}}}
    assert pod_service_memberships([odd, svc("all", {})], {}) == {"ns/all"}
    assert "without a usable key" in caplog.text


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (pod({"a": "b"}), pod({"a": "b"}, rv="2"), (False, False)),
        (pod({"a": "b"}), pod({"a": "c"}, rv="2"), (False, True)),
        (pod(None), pod({}, rv="2"), (False, True)),  # nil map != empty map (reflect.DeepEqual)
        (pod({}), pod({}, rv="2", hostname="h"), (False, True)),
        (pod({}), pod({}, rv="2", subdomain="s"), (False, True)),
        (pod({}), pod({}, rv="2", ready=False), (True, False)),
        (pod({}), pod({}, rv="2", deleting=True), (True, False)),
        (pod({}, deleting=True), pod({}, rv="2", deleting=True), (True, False)),
        (pod({}), pod({}, rv="2", ips=()), (True, False)),
        (pod({}), pod({}, rv="2", ips=("10.0.0.2",)), (True, False)),
        (pod({}), pod({}, rv="2", ips=("10.0.0.1", "fd00::1")), (True, False)),
        (pod({"a": "b"}), pod({"a": "c"}, rv="2", ready=False), (True, True)),
    ],
)
def test_pod_endpoints_changed(old, new, expected):
    assert pod_endpoints_changed(old, new) == expected


def test_pod_ip_and_node_name_alone_do_not_count():
    old = pod({})
    new = copy.deepcopy(old)
    new["metadata"]["resourceVersion"] = "2"
    new["status"]["podIP"] = "10.9.9.9"
    new["spec"]["nodeName"] = "n"
    assert pod_endpoints_changed(old, new) == (False, False)


def lister(services):
    calls = []

    def services_in(ns):
        calls.append(ns)
        return [s for s in services if s["metadata"]["namespace"] == ns]

    return services_in, calls


def test_update_resync_enqueues_nothing_and_lists_nothing():
    services_in, calls = lister(SERVICES)
    p = pod({"app": "web"}, ready=False)
    q = pod({"app": "web"}, ready=True)  # same resourceVersion: a resync
    assert services_to_update_on_pod_change(services_in, p, q) == set()
    assert calls == []


def test_update_pod_changed_only_uses_new_memberships():
    services_in, _ = lister(SERVICES)
    got = services_to_update_on_pod_change(
        services_in, pod({"app": "web"}), pod({"app": "web"}, rv="2", ready=False)
    )
    assert got == {"ns/web", "ns/all"}


def test_update_labels_only_gives_symmetric_difference():
    services_in, _ = lister(SERVICES)
    got = services_to_update_on_pod_change(
        services_in, pod({"app": "web"}), pod({"app": "db"}, rv="2")
    )
    assert got == {"ns/web", "ns/db"}  # "all" selects both: unaffected


def test_update_labels_and_pod_changed_gives_union():
    services_in, _ = lister(SERVICES)
    got = services_to_update_on_pod_change(
        services_in, pod({"app": "web"}), pod({"app": "db"}, rv="2", ready=False)
    )
    assert got == {"ns/web", "ns/db", "ns/all"}


def test_update_nothing_relevant_changed():
    services_in, calls = lister(SERVICES)
    old = pod({"app": "web"})
    new = copy.deepcopy(old)
    new["metadata"]["resourceVersion"] = "2"
    new["metadata"]["annotations"] = {"x": "y"}
    assert services_to_update_on_pod_change(services_in, old, new) == set()
    assert calls == []


def test_update_only_looks_at_the_pods_namespace():
    services = [*SERVICES, svc("web", {"app": "web"}, ns="other")]
    services_in, calls = lister(services)
    got = services_to_update_on_pod_change(
        services_in, pod({"app": "web"}), pod({"app": "web"}, rv="2", ready=False)
    )
    assert got == {"ns/web", "ns/all"}
    assert calls == ["ns"]
