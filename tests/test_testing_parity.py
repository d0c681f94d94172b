"""The embedded server (informers.testing) held to what the real kube-apiserver does, where the
two were found to differ and the embedded server was fixed: each test runs against both
(``any_api_server``) with the same expected values.

Fixed: a pod's delete writes its deletion mark before removing it (and honours
``spec.terminationGracePeriodSeconds``); a Service gets a cluster IP allocated and keeps it;
empty ``omitempty`` fields (labels, a Service's selector, an Endpoints' subsets, a ConfigMap's
data) are not stored. The differences left (no defaulting, no validation, compaction and the
watch cache) are listed in the ``ApiServer`` docstring.
"""

from __future__ import annotations

import ipaddress
import threading

import pytest

from informers.client import list_watch_from_client
from informers.list_watch import ListOptions

WAIT = 10.0


def new_pod(name: str, node: str | None = None, **spec: object) -> dict:
    body: dict = {"containers": [{"name": "c", "image": "registry.invalid/pause:1"}], **spec}
    if node is not None:
        body["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body}


def service(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec}}


def rv_of(obj: dict) -> str:
    return obj["metadata"]["resourceVersion"]


def watch_events(server, resource_version: str, count: int) -> list[dict]:
    """The first ``count`` pod events of the test's namespace after ``resource_version``."""
    api = server.api_client()
    stream = list_watch_from_client(api, "pods", namespace=server.namespace).watch(
        ListOptions(resource_version=resource_version, timeout_seconds=30))
    events: list[dict] = []
    done = threading.Event()

    def read() -> None:
        try:
            for event in stream:
                events.append({"type": event.type, **event.object["metadata"]})
                if len(events) == count:
                    break
        finally:
            done.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    try:
        assert done.wait(WAIT), events
    finally:
        stream.close()
        thread.join(WAIT)
        api.close()
    return events


def summary(events: list[dict]) -> list[tuple]:
    return [(e["type"], e["name"], "deletionTimestamp" in e, e.get("deletionGracePeriodSeconds"))
            for e in events]


# -- pod deletion ---------------------------------------------------------------------------


def test_deleting_a_pod_marks_it_then_removes_it(any_api_server):
    s, ns = any_api_server, any_api_server.namespace
    start = rv_of(s.create(new_pod("unbound"), namespace=ns))
    s.create(new_pod("done", node="node-1"), namespace=ns)
    s.patch("pods", ns, "done", {"status": {"phase": "Succeeded"}})
    gone = s.delete("pods", ns, "unbound")  # no node: period 0, whatever was asked
    assert gone["metadata"]["deletionGracePeriodSeconds"] == 0
    assert gone["metadata"]["deletionTimestamp"]
    assert s.get("pods", ns, "unbound") is None
    s.delete("pods", ns, "done", grace_period_seconds=30)  # terminal: period 0 too
    assert s.get("pods", ns, "done") is None
    assert summary(watch_events(s, start, 6)) == [
        ("ADDED", "done", False, None), ("MODIFIED", "done", False, None),  # the status
        ("MODIFIED", "unbound", True, 0), ("DELETED", "unbound", True, 0),
        ("MODIFIED", "done", True, 0), ("DELETED", "done", True, 0),
    ]


def test_a_bound_pod_is_deleted_gracefully_and_only_a_shorter_period_is_taken(any_api_server):
    s, ns = any_api_server, any_api_server.namespace
    start = rv_of(s.create(new_pod("p", node="node-1", terminationGracePeriodSeconds=20),
                           namespace=ns))
    marked = s.delete("pods", ns, "p")  # no period asked: the pod's own
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 20
    assert marked["metadata"]["generation"] == 2
    longer = s.delete("pods", ns, "p", grace_period_seconds=60)  # longer: changes nothing
    assert rv_of(longer) == rv_of(marked)
    assert s.delete("pods", ns, "p", grace_period_seconds=5)["metadata"][
        "deletionGracePeriodSeconds"] == 5
    before = _now_seconds()
    gone = s.delete("pods", ns, "p", grace_period_seconds=0)
    after = _now_seconds()
    assert s.get("pods", ns, "p") is None
    events = watch_events(s, start, 4)
    assert summary(events) == [
        ("MODIFIED", "p", True, 20), ("MODIFIED", "p", True, 5), ("MODIFIED", "p", True, 0),
        ("DELETED", "p", True, 0)]
    assert events[3]["resourceVersion"] == rv_of(gone)
    # A shortening moves the deadline back by the difference (the first mark set it to
    # now + 20), but never into the past: the last one, 20 s back, is now.
    first, shortened, last = (e["deletionTimestamp"] for e in events[:3])
    assert _seconds(first) - _seconds(shortened) == 15
    assert before <= _seconds(last) <= after


def _now_seconds() -> int:
    import time

    return int(time.time())


def _seconds(timestamp: str) -> int:
    import datetime

    moment = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return int(moment.timestamp())


# -- services: cluster IPs --------------------------------------------------------------------


def test_a_service_gets_a_cluster_ip_and_keeps_it(any_api_server):
    s, ns = any_api_server, any_api_server.namespace
    web = s.create(service("web"), namespace=ns)
    ip = web["spec"]["clusterIP"]
    # both servers: kube-apiserver's default --service-cluster-ip-range, 10.0.0.1 taken
    assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.0.0.0/24")
    assert ip != "10.0.0.1"
    assert web["spec"]["clusterIPs"] == [ip]
    headless = s.create(service("db", clusterIP="None"), namespace=ns)
    assert (headless["spec"]["clusterIP"], headless["spec"]["clusterIPs"]) == ("None", ["None"])
    external = s.create(service("ext", type="ExternalName", externalName="example.com"),
                        namespace=ns)
    assert "clusterIP" not in external["spec"]
    # an update that leaves the cluster IPs out keeps them
    body = s.get("services", ns, "web")
    del body["spec"]["clusterIP"], body["spec"]["clusterIPs"]
    body["metadata"]["labels"] = {"v": "2"}
    updated = s.update(body)
    assert (updated["spec"]["clusterIP"], updated["spec"]["clusterIPs"]) == (ip, [ip])


# -- empty omitempty fields ---------------------------------------------------------------------


def test_empty_omitempty_fields_are_not_stored(any_api_server):
    s, ns = any_api_server, any_api_server.namespace
    svc = s.create({"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": "all", "labels": {}, "annotations": {},
                                 "finalizers": []},
                    "spec": {"selector": {}, "ports": [{"port": 80}]}}, namespace=ns)
    assert not {"labels", "annotations", "finalizers"} & set(svc["metadata"])
    assert "selector" not in svc["spec"]  # {} is no selector: the service selects nothing
    ep = s.create({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"},
                   "subsets": [{"addresses": [], "notReadyAddresses": [{"ip": "10.1.0.2"}],
                                "ports": [{"port": 80, "protocol": "TCP"}]}]}, namespace=ns)
    assert ep["subsets"] == [{"notReadyAddresses": [{"ip": "10.1.0.2"}],
                              "ports": [{"port": 80, "protocol": "TCP"}]}]
    ep["subsets"] = []
    assert "subsets" not in s.update(ep)
    cm = s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                   "data": {}}, namespace=ns)
    assert "data" not in cm
    patched = s.patch("configmaps", ns, "c", {"metadata": {"labels": {"a": "b"}}})
    assert patched["metadata"]["labels"] == {"a": "b"}
    cleared = s.patch("configmaps", ns, "c", {"metadata": {"labels": {"a": None}}})
    assert "labels" not in cleared["metadata"]


@pytest.mark.parametrize("any_api_server", ["embedded"], indirect=True)
def test_the_seeding_helpers_follow_the_same_rules(any_api_server):
    server = any_api_server.embedded
    web = server.create(service("web"))
    assert web["spec"]["clusterIPs"] == [web["spec"]["clusterIP"]]
    assert "labels" not in server.create({"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": "c", "labels": {}}})["metadata"]
