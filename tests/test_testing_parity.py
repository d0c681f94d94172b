"""The embedded server (informers.testing) held to what the real kube-apiserver does, where the
two were found to differ and the embedded server was fixed: each test runs against both
(``any_api_server``) with the same expected values.

Fixed: a pod's delete writes its deletion mark before removing it (and honours
``spec.terminationGracePeriodSeconds``); a Service gets a cluster IP allocated and keeps it;
empty ``omitempty`` fields (labels, a Service's selector, an Endpoints' subsets, a ConfigMap's
data) are not stored; anonymous clients may read ``/version`` and the health checks only; a
pod's ``podIP`` and ``podIPs`` fill each other. Validation is held to kube-apiserver's in
tests/test_testing_validation.py. The differences left (the defaults and validation not covered,
compaction and the watch cache) are listed in the ``ApiServer`` docstring.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import ssl
import threading
from urllib.parse import urlsplit

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


# -- anonymous requests -------------------------------------------------------------------------


def anonymous(server, method: str, path: str, token: str | None = None) -> tuple[int, bytes]:
    """One request over TLS without credentials (or with ``token``)."""
    url = urlsplit(server.https_url)
    context = ssl.create_default_context(cafile=server.ca_file)
    connection = http.client.HTTPSConnection(url.hostname, url.port, context=context,
                                             timeout=WAIT)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def forbidden(message: str, **details: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": "Forbidden", "details": details, "code": 403}


def test_anonymous_clients_may_read_the_version_and_health_only(any_api_server):
    s = any_api_server
    # system:public-info-viewer, bound to system:unauthenticated
    for path in ("/healthz", "/livez", "/readyz"):
        assert anonymous(s, "GET", path) == (200, b"ok")
    for path in ("/version", "/version/"):
        code, body = anonymous(s, "GET", path)
        assert (code, json.loads(body)["major"]) == (200, "1")
    # only GET, only those paths
    code, body = anonymous(s, "POST", "/healthz")
    assert (code, json.loads(body)) == (403, forbidden(
        'forbidden: User "system:anonymous" cannot post path "/healthz"'))
    assert anonymous(s, "HEAD", "/version") == (403, b"")
    code, body = anonymous(s, "GET", "/api")
    assert (code, json.loads(body)) == (403, forbidden(
        'forbidden: User "system:anonymous" cannot get path "/api"'))
    code, body = anonymous(s, "GET", "/api/v1/namespaces")
    assert (code, json.loads(body)) == (403, forbidden(
        'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" '
        'in API group "" at the cluster scope', kind="namespaces"))
    code, body = anonymous(s, "GET", f"/api/v1/namespaces/{s.namespace}/pods/p/status")
    assert (code, json.loads(body)) == (403, forbidden(
        'pods "p" is forbidden: User "system:anonymous" cannot get resource "pods/status" '
        f'in API group "" in the namespace "{s.namespace}"', name="p", kind="pods"))
    code, body = anonymous(s, "GET", "/apis/coordination.k8s.io/v1/leases?watch=1")
    assert (code, json.loads(body)) == (403, forbidden(
        'leases.coordination.k8s.io is forbidden: User "system:anonymous" cannot watch '
        'resource "leases" in API group "coordination.k8s.io" at the cluster scope',
        group="coordination.k8s.io", kind="leases"))
    # a wrong token is not anonymous: 401, on the public paths too
    unauthorized = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
    for path in ("/healthz", "/version", "/api/v1/namespaces"):
        code, body = anonymous(s, "GET", path, token="wrong")
        assert (code, json.loads(body)) == (401, unauthorized)


# -- pod IPs ------------------------------------------------------------------------------------


# The cases of Test_v1_PodStatus_to_core_PodStatus (pkg/apis/core/v1/conversion_test.go), as a
# client sees them after the round trip through the internal version: (podIP, podIPs written)
# -> (podIP, podIPs stored).
POD_IP_CASES = [
    ("mismatched podIP", "1.1.2.1", ["1.1.1.1", "2000::1"], "1.1.2.1", ["1.1.2.1"]),
    ("matching podIP", "1.1.1.1", ["1.1.1.1", "2000::1"], "1.1.1.1", ["1.1.1.1", "2000::1"]),
    ("empty podIP", "", ["1.1.1.1", "2000::1"], "1.1.1.1", ["1.1.1.1", "2000::1"]),
    ("only Primary IP Provided", "1.1.1.1", None, "1.1.1.1", ["1.1.1.1"]),
    ("both are not provided", "", None, None, None),
    ("v6 and v4", "2000::1", ["2000::1", "1.1.1.1"], "2000::1", ["2000::1", "1.1.1.1"]),
]


def test_pod_ip_and_pod_ips_fill_each_other(any_api_server):
    # A pod written with podIP only has podIPs on kube-apiserver, which is what the endpoint
    # controller reads.
    s, ns = any_api_server, any_api_server.namespace
    for index, (case, pod_ip, pod_ips, want_ip, want_ips) in enumerate(POD_IP_CASES):
        name = f"p{index}"
        status: dict = {"phase": "Running"}
        if pod_ip:
            status["podIP"] = pod_ip
        if pod_ips is not None:
            status["podIPs"] = [{"ip": ip} for ip in pod_ips]
        s.create(new_pod(name, node="node-1") | {"status": status}, namespace=ns)
        stored = s.get("pods", ns, name)["status"]
        got_ips = [entry["ip"] for entry in stored["podIPs"]] if "podIPs" in stored else None
        assert (stored.get("podIP"), got_ips) == (want_ip, want_ips), case
    # A later status patch of podIP alone replaces podIPs too (it differs from their first).
    patched = s.patch("pods", ns, "p1", {"status": {"podIP": "1.1.9.9"}})
    assert (patched["status"]["podIP"], patched["status"]["podIPs"]) == (
        "1.1.9.9", [{"ip": "1.1.9.9"}])
