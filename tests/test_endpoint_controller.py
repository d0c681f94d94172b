"""Tests for controllers.endpoint.controller.

Handler logic is checked against stand-in informers (a real Indexer, handlers called inline)
looking only at the work queue; everything that writes goes through an API server over real
HTTP with the official client, with informers from the real factory. The scenario tests that
compare the exact Endpoints at the server run against the embedded server and the real
kube-apiserver (``any_cluster``: informers scoped to the test's namespace); those that need the
embedded server's request log, fault injection or leniency run against it alone (``cluster``).
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from servers import TestServer

from controllers.endpoint import (
    HEADLESS_SERVICE_LABEL,
    LEADER_ELECTION_ANNOTATION,
    OVER_CAPACITY_ANNOTATION,
    TRIGGER_TIME_ANNOTATION,
    EndpointController,
    StaleEndpointsCacheError,
    sort_subsets,
)
from controllers.endpoint.desired import MANAGED_BY_LABEL, MANAGED_BY_VALUE
from informers.clock import REAL_CLOCK, FakeClock
from informers.errors import NotFoundError, StatusError
from informers.factory import SharedInformerFactory
from informers.indexer import Indexer
from informers.keys import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_index_func,
)
from informers.testing import ApiServer

NS = "default"
MANAGED = {MANAGED_BY_LABEL: MANAGED_BY_VALUE}  # on every Endpoints written (Kubernetes v1.33+)
CLUSTER_IP = "10.96.0.10"
HTTP_PORT = {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}


# -- object builders ---------------------------------------------------------------------------


def make_service(name="web", selector=None, ports=(HTTP_PORT,), cluster_ip=CLUSTER_IP, ns=NS,
                 labels=None, **spec_extra):
    spec: dict[str, Any] = {"ports": [dict(p) if isinstance(p, dict) else p for p in ports]}
    if selector is not None:
        spec["selector"] = selector
    if cluster_ip is not None:
        spec["clusterIP"] = cluster_ip
    spec.update(spec_extra)
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def make_pod(name, ips=("10.0.0.1",), ready=True, labels=None, node="node-1", phase="Running",
             ns=NS, container_ports=(("http", 8080, "TCP"),), ready_time=None, **spec_extra):
    condition: dict[str, Any] = {"type": "Ready", "status": "True" if ready else "False"}
    if ready_time is not None:
        condition["lastTransitionTime"] = ready_time
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"app": "web"} if labels is None else labels},
        "spec": {"containers": [{"name": "c", "image": "x", "ports": [
            {"name": n, "containerPort": p, "protocol": proto} for n, p, proto in container_ports
        ]}], **spec_extra},
        "status": {"phase": phase, "conditions": [condition]},
    }
    if node is not None:
        pod["spec"]["nodeName"] = node
    if ips:
        pod["status"]["podIP"] = ips[0]
        pod["status"]["podIPs"] = [{"ip": ip} for ip in ips]
    return pod


def address(server, pod_name, ip, node="node-1", hostname=None, ns=NS):
    uid = server.get("pods", ns, pod_name)["metadata"]["uid"]
    out: dict[str, Any] = {"ip": ip}
    if hostname is not None:
        out["hostname"] = hostname
    out["nodeName"] = node
    out["targetRef"] = {"kind": "Pod", "namespace": ns, "name": pod_name, "uid": uid}
    return out


def eventually(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition"):
    """Poll (real time) until ``predicate()`` is truthy; return its value.

    A lister's NotFoundError counts as "not yet": the object may still be on its way to the
    informer's cache.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except NotFoundError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class RecordingRecorder:
    """An event recorder stand-in that keeps what it is given."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str]] = []
        self._lock = threading.Lock()

    def event(self, obj, type, reason, message):
        meta = obj["metadata"]
        with self._lock:
            self.events.append((f"{meta['namespace']}/{meta['name']}", type, reason, message,
                                obj.get("kind", "")))

    def reasons(self):
        with self._lock:
            return [e[2] for e in self.events]


# -- harness over the embedded API server --------------------------------------------------------


class Cluster:
    """An API server, a factory's informers and a running EndpointController.

    ``server`` is an embedded ``ApiServer`` (informers on all namespaces, objects in
    ``default``) or a server-neutral ``TestServer`` (informers and objects in its namespace);
    :attr:`embedded` is the embedded server, if there is one (request log, faults).
    """

    def __init__(self, server: ApiServer | TestServer) -> None:
        self.server: Any = server
        neutral = isinstance(server, TestServer)
        self.embedded: ApiServer | None = server.embedded if neutral else server
        self.ns: str = server.namespace if neutral else NS
        self.informer_ns: str | None = server.namespace if neutral else None
        self.client = server.api_client()
        self.factory: SharedInformerFactory | None = None
        self.controller: EndpointController | None = None
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.recorder = RecordingRecorder()
        self.add_after_calls: list[tuple[str, float]] = []

    def start(self, workers=2, batch_period=0.0, clock=REAL_CLOCK, wait=True, **kwargs):
        self.factory = SharedInformerFactory(self.client, namespace=self.informer_ns)
        core = self.factory.core().v1()
        kwargs.setdefault("event_recorder", self.recorder)
        self.controller = EndpointController(
            core.pods(), core.services(), core.endpoints(), self.client, batch_period,
            clock=clock, **kwargs,
        )
        original = self.controller.queue.add_after

        def recording_add_after(item, seconds):
            self.add_after_calls.append((item, seconds))
            original(item, seconds)

        self.controller.queue.add_after = recording_add_after  # type: ignore[method-assign]
        self.factory.start(self.stop)
        if wait:
            # Under a fake clock run() would poll the cache on that clock: sync first.
            eventually(self.controller.has_synced, what="caches to sync")
        self.thread = threading.Thread(
            target=self.controller.run, args=(workers, self.stop), name="test-controller-run"
        )
        self.thread.start()
        return self.controller

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=30)
            assert not self.thread.is_alive(), "controller did not stop"
        if self.factory is not None:
            self.factory.shutdown()
        self.client.close()

    # helpers

    def endpoints(self, name="web", ns=None):
        return self.server.get("endpoints", ns or self.ns, name)

    def wait_endpoints(self, predicate, name="web", ns=None, what=None):
        ns = ns or self.ns

        def check():
            ep = self.endpoints(name, ns)
            return ep if ep is not None and predicate(ep) else None

        return eventually(check, what=what or f"endpoints {ns}/{name}")

    def endpoint_writes(self):
        assert self.embedded is not None, "the request log is the embedded server's"
        return [(r.verb, r.name, r.status)
                for r in self.embedded.request_log(resource="endpoints")
                if r.verb in ("create", "update", "delete")]

    def syncs(self, result):
        assert self.controller is not None
        return self.controller.metrics.snapshot().syncs[result]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with ApiServer() as server:
        c = Cluster(server)
        try:
            yield c
        finally:
            c.close()


@pytest.fixture
def any_cluster(any_api_server) -> Iterator[Cluster]:
    c = Cluster(any_api_server)
    try:
        yield c
    finally:
        c.close()


def svc(cluster, name="web", **kwargs):
    """``make_service`` in the cluster's namespace; the clusterIP is the server's choice."""
    kwargs.setdefault("cluster_ip", None)
    return make_service(name, ns=cluster.ns, **kwargs)


def pod(cluster, name, *args, **kwargs):
    """``make_pod`` in the cluster's namespace."""
    return make_pod(name, *args, ns=cluster.ns, **kwargs)


def subsets_of(ep):
    return ep.get("subsets", [])


# -- integration: the rules of the specification ----------------------------------------------


def test_ready_and_not_ready_pods_exact_endpoints(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, selector={"app": "web"}, labels={"team": "a"}))
    s.create(pod(cluster, "pod0", ("10.0.0.1",)))
    s.create(pod(cluster, "pod1", ("10.0.0.2",), ready=False, node="node-2"))
    s.create(pod(cluster, "other", ("10.0.0.3",), labels={"app": "db"}))
    cluster.start()
    ep = cluster.wait_endpoints(lambda e: subsets_of(e))
    assert ep["subsets"] == [{
        "addresses": [address(s, "pod0", "10.0.0.1", ns=ns)],
        "notReadyAddresses": [address(s, "pod1", "10.0.0.2", node="node-2", ns=ns)],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }]
    assert ep["metadata"]["labels"] == {"team": "a", **MANAGED}
    created = s.get("services", ns, "web")["metadata"]["creationTimestamp"]
    assert ep["metadata"]["annotations"] == {TRIGGER_TIME_ANNOTATION: created}
    if cluster.embedded is not None:
        assert cluster.endpoint_writes() == [("create", "", 201)]


def test_a_pod_written_with_pod_ip_only_gets_an_address(any_cluster):
    # The controller reads status.podIPs only; the API server fills them from podIP (issue
    # 14: the embedded server did not, so such a pod had no address there).
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, selector={"app": "web"}))
    only_ip = pod(cluster, "a", ())
    only_ip["status"]["podIP"] = "10.0.0.7"
    s.create(only_ip)
    cluster.start()
    ep = cluster.wait_endpoints(lambda e: subsets_of(e))
    assert ep["subsets"][0]["addresses"] == [address(s, "a", "10.0.0.7", ns=ns)]


def test_an_empty_selector_is_no_selector_through_the_api(any_cluster):
    """Go's JSON encoding omits an empty map, so a Service created with ``selector: {}`` is
    stored without a selector, like one created without: neither gets Endpoints. (The rule
    that an empty selector selects every pod of the namespace is only reachable with
    stand-in informers: test_pod_events_enqueue_selecting_services.)"""
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, "all", selector={}))
    s.create(svc(cluster, "manual", selector=None))
    s.create(pod(cluster, "a", ("10.0.0.1",), labels={"x": "1"}))
    s.create(pod(cluster, "b", ("10.0.0.2",), labels={}))
    assert "selector" not in s.get("services", ns, "all")["spec"]
    assert "labels" not in s.get("pods", ns, "b")["metadata"]  # the same for any empty map
    cluster.start()
    eventually(lambda: cluster.syncs("skipped") >= 2, what="both services synced")
    assert cluster.endpoints("all") is None
    assert cluster.endpoints("manual") is None


def test_external_name_gets_no_endpoints(any_cluster):
    cluster, s = any_cluster, any_cluster.server
    s.create(svc(cluster, "ext", selector={"app": "web"}, type="ExternalName",
                 externalName="example.com"))
    s.create(pod(cluster, "a"))
    cluster.start()
    eventually(lambda: cluster.syncs("skipped") >= 1)
    assert cluster.endpoints("ext") is None
    if cluster.embedded is not None:
        assert cluster.endpoint_writes() == []


def test_terminal_and_ip_less_pods_are_left_out(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, selector={"app": "web"}))
    s.create(pod(cluster, "failed", ("10.0.0.1",), phase="Failed"))
    s.create(pod(cluster, "done", ("10.0.0.2",), phase="Succeeded", ready=False))
    s.create(pod(cluster, "noip", ()))
    s.create(pod(cluster, "ok", ("10.0.0.4",)))
    cluster.start()
    ep = cluster.wait_endpoints(lambda e: subsets_of(e))
    assert ep["subsets"] == [{
        "addresses": [address(s, "ok", "10.0.0.4", ns=ns)],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }]


def _terminating_pods(cluster):
    s = cluster.server
    s.create(pod(cluster, "stay", ("10.0.0.1",)))
    s.create(pod(cluster, "leaving", ("10.0.0.2",)))
    s.create(pod(cluster, "leaving-unready", ("10.0.0.3",), ready=False))
    for name in ("leaving", "leaving-unready"):
        marked = s.delete("pods", cluster.ns, name, grace_period_seconds=30)
        assert marked["metadata"]["deletionTimestamp"]


def test_terminating_pods_are_left_out_without_publish_not_ready(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, selector={"app": "web"}))
    _terminating_pods(cluster)
    cluster.start()
    ep = cluster.wait_endpoints(lambda e: subsets_of(e))
    assert ep["subsets"] == [{
        "addresses": [address(s, "stay", "10.0.0.1", ns=ns)],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }]


def test_terminating_and_unready_pods_are_ready_with_publish_not_ready(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, selector={"app": "web"}, publishNotReadyAddresses=True))
    _terminating_pods(cluster)
    cluster.start()
    ep = cluster.wait_endpoints(lambda e: subsets_of(e))
    assert ep["subsets"] == [{
        "addresses": [address(s, "stay", "10.0.0.1", ns=ns),
                      address(s, "leaving", "10.0.0.2", ns=ns),
                      address(s, "leaving-unready", "10.0.0.3", ns=ns)],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }]


def test_named_ports_that_match_and_that_do_not_and_multiple_ports(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, selector={"app": "web"}, ports=(
        {"name": "web", "port": 80, "targetPort": "http", "protocol": "TCP"},
        {"name": "metrics", "port": 9100, "targetPort": "metrics", "protocol": "TCP"},
        {"name": "dns", "port": 53, "targetPort": 5353, "protocol": "UDP"},
    )))
    s.create(pod(cluster, "a", ("10.0.0.1",),
                 container_ports=(("http", 8080, "TCP"), ("metrics", 9100, "TCP"))))
    s.create(pod(cluster, "b", ("10.0.0.2",), container_ports=(("http", 8081, "TCP"),)))
    s.create(pod(cluster, "c", ("10.0.0.3",), container_ports=(("http", 8080, "UDP"),)))
    cluster.start()
    ep = cluster.wait_endpoints(lambda e: len(subsets_of(e)) == 3)
    dns = {"name": "dns", "port": 5353, "protocol": "UDP"}
    web = {"name": "web", "port": 8080, "protocol": "TCP"}
    metrics = {"name": "metrics", "port": 9100, "protocol": "TCP"}
    a, b, c = (address(s, "a", "10.0.0.1", ns=ns), address(s, "b", "10.0.0.2", ns=ns),
               address(s, "c", "10.0.0.3", ns=ns))
    # Pod UIDs are random, so the order (by the FNV-1a 128 of Go spew dumps, pinned against Go in
    # test_endpoint_repack) is computed with sort_subsets.
    assert ep["subsets"] == sort_subsets([
        {"addresses": [a], "ports": [metrics, web]},
        {"addresses": [b], "ports": [{"name": "web", "port": 8081, "protocol": "TCP"}]},
        {"addresses": [a, b, c], "ports": [dns]},
    ])


def test_headless_without_ports_and_with_ports(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, "bare", selector={"app": "web"}, ports=(), cluster_ip="None"))
    s.create(svc(cluster, "named", selector={"app": "web"}, cluster_ip="None"))
    s.create(pod(cluster, "a", ("10.0.0.1",)))
    s.create(pod(cluster, "b", ("10.0.0.2",), ready=False))
    cluster.start()
    bare = cluster.wait_endpoints(lambda e: subsets_of(e), name="bare")
    assert bare["subsets"] == [{"addresses": [address(s, "a", "10.0.0.1", ns=ns)],
                                "notReadyAddresses": [address(s, "b", "10.0.0.2", ns=ns)]}]
    assert bare["metadata"]["labels"] == {HEADLESS_SERVICE_LABEL: "", **MANAGED}
    named = cluster.wait_endpoints(lambda e: subsets_of(e), name="named")
    assert named["subsets"] == [{"addresses": [address(s, "a", "10.0.0.1", ns=ns)],
                                 "notReadyAddresses": [address(s, "b", "10.0.0.2", ns=ns)],
                                 "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]


def test_dual_stack_families(cluster):
    s = cluster.server
    s.create(make_service("v6", selector={"app": "web"}, cluster_ip="fd00:96::1",
                          ipFamilies=["IPv6", "IPv4"]))
    s.create(make_service("v4", selector={"app": "web"}, ipFamilies=["IPv4", "IPv6"]))
    s.create(make_service("headless", selector={"app": "web"}, cluster_ip="None"))
    s.create(make_pod("a", ("10.0.0.1", "fd00::1")))
    s.create(make_pod("b", ("fd00::2", "10.0.0.2")))
    s.create(make_pod("v6only", ("fd00::3",)))
    cluster.start()
    http = [{"name": "http", "port": 8080, "protocol": "TCP"}]
    v6 = cluster.wait_endpoints(lambda e: subsets_of(e), name="v6")
    assert v6["subsets"] == [{"addresses": [address(s, "a", "fd00::1"), address(s, "b", "fd00::2"),
                                            address(s, "v6only", "fd00::3")], "ports": http}]
    v4 = cluster.wait_endpoints(lambda e: subsets_of(e), name="v4")
    assert v4["subsets"] == [{"addresses": [address(s, "a", "10.0.0.1"),
                                            address(s, "b", "10.0.0.2")], "ports": http}]
    headless = cluster.wait_endpoints(lambda e: subsets_of(e), name="headless")
    # kube-apiserver gives a headless service with a selector ipFamilies [IPv4] on a
    # single-stack cluster (a legacy one without families: test_endpoint_subsets.py)
    assert headless["subsets"] == [{"addresses": [address(s, "a", "10.0.0.1"),
                                                  address(s, "b", "10.0.0.2")], "ports": http}]


def test_hostname_and_subdomain(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, "db", selector={"app": "web"}, cluster_ip="None"))
    s.create(pod(cluster, "db-0", ("10.0.0.1",), hostname="db-0", subdomain="db"))
    s.create(pod(cluster, "db-1", ("10.0.0.2",), hostname="db-1", subdomain="elsewhere"))
    cluster.start()
    ep = cluster.wait_endpoints(lambda e: subsets_of(e), name="db")
    assert ep["subsets"][0]["addresses"] == [
        address(s, "db-0", "10.0.0.1", hostname="db-0", ns=ns),
        address(s, "db-1", "10.0.0.2", ns=ns),
    ]


def test_label_replacement_and_headless_label(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, selector={"app": "web"}, labels={"team": "a"}))
    s.create({"apiVersion": "v1", "kind": "Endpoints",
              "metadata": {"name": "web", "namespace": ns,
                           "labels": {"stale": "x", HEADLESS_SERVICE_LABEL: "",
                                      "team": "old"},
                           "annotations": {"keep": "me"}}})
    s.create(pod(cluster, "a", ("10.0.0.1",)))
    cluster.start()
    ep = cluster.wait_endpoints(lambda e: subsets_of(e))
    assert ep["metadata"]["labels"] == {"team": "a", **MANAGED}
    assert ep["metadata"]["annotations"]["keep"] == "me"
    # A label change on the service replaces all the labels.
    service = s.get("services", ns, "web")
    service["metadata"]["labels"] = {"team": "b"}
    s.update(service)
    ep = cluster.wait_endpoints(lambda e: e["metadata"].get("labels") == {"team": "b", **MANAGED})
    assert ep["subsets"][0]["addresses"] == [address(s, "a", "10.0.0.1", ns=ns)]
    if cluster.embedded is None:
        return  # kube-apiserver keeps spec.clusterIP immutable
    # Made headless (and relabelled: the headless label alone causes no write), the service
    # gets the headless label.
    service = s.get("services", ns, "web")
    service["spec"]["clusterIP"] = "None"
    service["metadata"]["labels"] = {"team": "c"}
    s.update(service)
    ep = cluster.wait_endpoints(lambda e: e["metadata"].get("labels") == {
        "team": "c", HEADLESS_SERVICE_LABEL: "", **MANAGED})
    assert ep["subsets"][0]["addresses"] == [address(s, "a", "10.0.0.1", ns=ns)]


def test_no_write_when_nothing_changed(cluster):
    s = cluster.server
    s.create(make_service(selector={"app": "web"}))
    s.create(make_pod("a", ("10.0.0.1",)))
    cluster.start()
    cluster.wait_endpoints(lambda e: subsets_of(e))
    eventually(lambda: cluster.controller.queue.__len__() == 0 and cluster.syncs("created") == 1)
    s.clear_request_log()
    before = cluster.syncs("unchanged")
    # An irrelevant pod change enqueues nothing; a service change syncs without a write.
    pod = s.get("pods", NS, "a")
    pod["metadata"]["annotations"] = {"note": "x"}
    pod["status"]["message"] = "busy"  # not looked at (a new podIP would be: it sets podIPs)
    s.update(pod)
    svc = s.get("services", NS, "web")
    svc["metadata"]["annotations"] = {"note": "y"}
    s.update(svc)
    eventually(lambda: cluster.syncs("unchanged") == before + 1, what="the no-op sync")
    assert cluster.endpoint_writes() == []


def test_trigger_time_annotation_follows_pod_readiness(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, selector={"app": "web"}))
    s.create(pod(cluster, "a", ("10.0.0.1",), ready=False, ready_time="2030-01-01T00:00:00Z"))
    cluster.start()
    created = s.get("services", ns, "web")["metadata"]["creationTimestamp"]
    cluster.wait_endpoints(lambda e: e["metadata"].get("annotations", {}).get(
        TRIGGER_TIME_ANNOTATION) == created)
    s.patch("pods", ns, "a", {"status": {"conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2030-01-02T03:04:05Z"}]}})
    ep = cluster.wait_endpoints(lambda e: subsets_of(e) and "addresses" in e["subsets"][0])
    assert ep["metadata"]["annotations"][TRIGGER_TIME_ANNOTATION] == "2030-01-02T03:04:05Z"


@pytest.mark.slow
def test_over_capacity_truncation_at_the_reference_numbers(cluster):
    # upstream TestSyncServiceOverCapacity: maxCapacity-3 ready + 4 not ready desired ->
    # maxCapacity-3 ready, 3 not ready, annotation "truncated".
    s = cluster.server
    s.create(make_service(selector={"app": "web"}))
    for i in range(997):
        s.create(make_pod(f"r{i}", (f"10.1.{i // 250}.{i % 250}",)))
    for i in range(4):
        s.create(make_pod(f"n{i}", (f"10.2.0.{i}",), ready=False))
    cluster.start()
    ep = cluster.wait_endpoints(lambda e: subsets_of(e), what="truncated endpoints")
    assert ep["metadata"]["annotations"][OVER_CAPACITY_ANNOTATION] == "truncated"
    (subset,) = ep["subsets"]
    assert len(subset["addresses"]) == 997
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.2.0.0", "10.2.0.1", "10.2.0.2"]
    # Back under capacity: the annotation goes away.
    s.delete("pods", NS, "n3")
    ep = cluster.wait_endpoints(lambda e: OVER_CAPACITY_ANNOTATION not in e["metadata"].get(
        "annotations", {}), what="annotation removal")
    assert len(ep["subsets"][0]["notReadyAddresses"]) == 3


def test_orphans_deleted_at_startup_but_not_leader_records(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "orphan",
                                                                    "namespace": ns}})
    s.create({"apiVersion": "v1", "kind": "Endpoints", "metadata": {
        "name": "leader", "namespace": ns,
        "annotations": {LEADER_ELECTION_ANNOTATION: '{"holderIdentity":"x"}'}}})
    s.create(svc(cluster, "manual", selector=None))
    manual = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "manual",
                                                                    "namespace": ns},
              "subsets": [{"addresses": [{"ip": "192.0.2.1"}],
                           "ports": [{"port": 1, "protocol": "TCP"}]}]}
    s.create(manual)
    cluster.start()
    eventually(lambda: cluster.endpoints("orphan") is None, what="orphan deletion")
    eventually(lambda: cluster.syncs("skipped") >= 1)
    assert cluster.endpoints("leader") is not None
    assert cluster.endpoints("manual")["subsets"] == manual["subsets"]
    if cluster.embedded is not None:
        assert ("delete", "orphan", 200) in cluster.endpoint_writes()
        assert all(name != "leader" for _, name, _ in cluster.endpoint_writes())


def test_service_deletion_deletes_its_endpoints(any_cluster):
    cluster, s = any_cluster, any_cluster.server
    s.create(svc(cluster, selector={"app": "web"}))
    s.create(pod(cluster, "a"))
    cluster.start()
    cluster.wait_endpoints(lambda e: subsets_of(e))
    s.delete("services", cluster.ns, "web")
    eventually(lambda: cluster.endpoints() is None, what="endpoints deletion")
    eventually(lambda: cluster.syncs("deleted") >= 1)


def test_pod_changes_update_endpoints(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, selector={"app": "web"}))
    s.create(pod(cluster, "a", ("10.0.0.1",)))
    cluster.start()
    cluster.wait_endpoints(lambda e: subsets_of(e))
    s.create(pod(cluster, "b", ("10.0.0.2",)))
    cluster.wait_endpoints(lambda e: len(e["subsets"][0].get("addresses", [])) == 2)
    s.patch("pods", ns, "a", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    ep = cluster.wait_endpoints(lambda e: "notReadyAddresses" in e["subsets"][0])
    assert ep["subsets"][0]["notReadyAddresses"] == [address(s, "a", "10.0.0.1", ns=ns)]
    s.patch("pods", ns, "b", {"metadata": {"labels": {"app": "other"}}})
    ep = cluster.wait_endpoints(lambda e: "addresses" not in e["subsets"][0])
    s.delete("pods", ns, "a", grace_period_seconds=0)
    ep = cluster.wait_endpoints(lambda e: not subsets_of(e))
    assert ep["metadata"]["name"] == "web"


def test_batching_coalesces_pod_adds_and_updates(cluster):
    clock = FakeClock()
    s = cluster.server
    s.create(make_service(selector={"app": "web"}))
    controller = cluster.start(batch_period=1.0, clock=clock)
    cluster.wait_endpoints(lambda e: True)  # the service add syncs at once
    eventually(lambda: len(controller.queue) == 0 and cluster.syncs("created") == 1)
    s.clear_request_log()
    # Three pod adds within the batch period: one sync, one write (upstream TestPodAddsBatching).
    for i in range(3):
        s.create(make_pod(f"p{i}", (f"10.0.0.{i + 1}",)))
    eventually(lambda: len(cluster.add_after_calls) == 3, what="three batched enqueues")
    assert cluster.add_after_calls == [("default/web", 1.0)] * 3
    assert cluster.endpoint_writes() == []
    clock.step(1.0)
    ep = cluster.wait_endpoints(lambda e: len(subsets_of(e)) == 1 and len(
        e["subsets"][0].get("addresses", [])) == 3)
    eventually(lambda: len(controller.queue) == 0)
    assert cluster.endpoint_writes() == [("update", "web", 200)]
    # Three pod updates, the last 0.5 s after the first: still one sync at 1 s after the first.
    s.clear_request_log()
    cluster.add_after_calls.clear()
    for i in range(3):
        s.patch("pods", NS, f"p{i}",
                {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
        eventually(lambda i=i: len(cluster.add_after_calls) == i + 1, what="a batched enqueue")
        if i == 1:
            clock.step(0.5)
    assert cluster.endpoint_writes() == []
    clock.step(0.5)
    ep = cluster.wait_endpoints(lambda e: "addresses" not in e["subsets"][0])
    assert [a["ip"] for a in ep["subsets"][0]["notReadyAddresses"]] == [
        "10.0.0.1", "10.0.0.2", "10.0.0.3"
    ]
    eventually(lambda: len(controller.queue) == 0)
    assert cluster.endpoint_writes() == [("update", "web", 200)]


def test_retries_on_conflict(cluster):
    s = cluster.server
    s.create(make_service(selector={"app": "web"}))
    s.create(make_pod("a", ("10.0.0.1",)))
    cluster.start()
    cluster.wait_endpoints(lambda e: subsets_of(e))
    s.fail_next(1, 409, verb="update", resource="endpoints")
    s.create(make_pod("b", ("10.0.0.2",)))
    cluster.wait_endpoints(lambda e: len(e["subsets"][0]["addresses"]) == 2)
    assert [w for w in cluster.endpoint_writes() if w[0] == "update"] == [
        ("update", "web", 409), ("update", "web", 200)
    ]
    assert cluster.recorder.reasons() == ["FailedToUpdateEndpoint"]
    (key, type_, _reason, message, kind) = cluster.recorder.events[0]
    assert (key, type_, kind) == ("default/web", "Warning", "Endpoints")
    assert message.startswith("Failed to update endpoint default/web: 409")
    assert cluster.controller.metrics.snapshot().retries == 1


def test_no_sync_and_no_write_while_leadership_is_in_doubt(cluster):
    s = cluster.server
    leading = threading.Event()
    leading.set()
    s.create(make_service(selector={"app": "web"}))
    s.create(make_pod("a", ("10.0.0.1",)))
    controller = cluster.start(leader_check=leading.is_set)
    cluster.wait_endpoints(lambda e: subsets_of(e))
    eventually(lambda: len(controller.queue) == 0 and cluster.syncs("created") == 1)
    leading.clear()  # e.g. the process was paused past its renew deadline
    s.clear_request_log()
    s.create(make_service("api", selector={"app": "web"}))
    s.create(make_pod("b", ("10.0.0.2",)))
    eventually(lambda: len(controller.queue) == 2, what="both keys queued")
    time.sleep(0.3)  # several leadership polls
    assert cluster.endpoint_writes() == []
    assert len(controller.queue) == 2
    assert controller.queue.num_requeues("default/web") == 0
    assert cluster.syncs("created") == 1 and cluster.syncs("error") == 0
    leading.set()  # a renewal confirmed it
    cluster.wait_endpoints(lambda e: len(e["subsets"][0]["addresses"]) == 2)
    cluster.wait_endpoints(lambda e: subsets_of(e), name="api")
    assert sorted(cluster.endpoint_writes()) == [("create", "", 201), ("update", "web", 200)]


def test_a_sync_whose_leadership_lapses_before_the_write_writes_nothing(cluster):
    s = cluster.server
    s.create(make_service(selector={"app": "web"}))
    s.create(make_pod("a", ("10.0.0.1",)))
    answers = iter([True, True])  # before get() and before the sync; then False ...
    resumed = threading.Event()

    def check():
        return next(answers, False) or resumed.is_set()

    controller = cluster.start(workers=1, leader_check=check)
    time.sleep(0.3)
    assert cluster.endpoint_writes() == []  # the write was not sent, and no other sync ran
    assert len(controller.queue) == 1 and controller.queue.num_requeues("default/web") == 0
    assert cluster.syncs("error") == 0 and cluster.syncs("created") == 0
    resumed.set()
    cluster.wait_endpoints(lambda e: subsets_of(e))
    assert cluster.endpoint_writes() == [("create", "", 201)]


def test_retries_on_server_errors_then_success(cluster):
    s = cluster.server
    s.fail_next(2, 500, verb="create", resource="endpoints")
    s.create(make_service(selector={"app": "web"}))
    s.create(make_pod("a", ("10.0.0.1",)))
    cluster.start()
    cluster.wait_endpoints(lambda e: subsets_of(e))
    assert cluster.endpoint_writes() == [("create", "", 500), ("create", "", 500),
                                         ("create", "", 201)]
    assert cluster.recorder.reasons() == ["FailedToCreateEndpoint"] * 2
    assert cluster.recorder.events[0][3].startswith(
        "Failed to create endpoint for service default/web: 500")


def test_gives_up_after_max_retries(cluster):
    s = cluster.server
    s.fail_next(10, 500, verb="create", resource="endpoints")
    s.create(make_service(selector={"app": "web"}))
    cluster.start(max_retries=2)
    eventually(lambda: cluster.controller.metrics.snapshot().dropped == 1, what="the drop")
    assert cluster.endpoint_writes() == [("create", "", 500)] * 3
    snap = cluster.controller.metrics.snapshot()
    assert (snap.retries, snap.syncs["error"]) == (2, 3)


def test_hand_edited_endpoints_are_corrected(any_cluster, caplog):
    caplog.set_level(logging.INFO, logger="controllers.endpoint.controller")
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, selector={"app": "web"}))
    s.create(pod(cluster, "a", ("10.0.0.1",)))
    cluster.start()
    good = cluster.wait_endpoints(lambda e: subsets_of(e))
    edited = copy.deepcopy(good)
    edited["subsets"] = [{"addresses": [{"ip": "203.0.113.9"}], "ports": [{"port": 1}]}]
    edited["metadata"]["labels"] = {"hand": "made"}
    s.update(edited)
    fixed = cluster.wait_endpoints(lambda e: e["subsets"] == good["subsets"], what="correction")
    assert fixed["metadata"]["labels"] == MANAGED
    assert f"Endpoints {ns}/web was changed by another writer" in caplog.text


def _foreign_write_logs(caplog):
    return [(r.levelno, r.args[1]) for r in caplog.records
            if r.name == "controllers.endpoint.controller" and "another writer" in r.msg]


def _queue_idle(controller):
    """Nothing queued, dirty, being synced or waiting (the work queue's own state)."""
    q = controller.queue
    with q._lock:
        busy = q._queue or q._dirty or q._processing
    with q._waiting_cond:
        return not busy and not q._waiting


def test_echoes_arriving_before_our_writes_return_cause_no_syncs(cluster, caplog):
    """Every write of ours is made to return only after the controller's Endpoints handler has
    handled its watch echo (the race the benchmark showed); none may cause a sync, and a
    genuine hand edit is still corrected."""
    caplog.set_level(logging.DEBUG, logger="controllers.endpoint.controller")
    s = cluster.server
    s.create(make_service(selector={"app": "web"}))
    for i in range(3):
        s.create(make_pod(f"p{i}", (f"10.0.0.{i + 1}",)))
    factory = cluster.factory = SharedInformerFactory(cluster.client)
    informer = factory.core().v1().endpoints().informer()
    handled: list[str] = []  # resourceVersions the controller's Endpoints handler has handled
    handled_cond = threading.Condition()

    class Observed:
        def __init__(self, handler):
            self._handler = handler

        def _record(self, obj):
            with handled_cond:
                handled.append(obj["metadata"]["resourceVersion"])
                handled_cond.notify_all()

        def on_add(self, obj, is_in_initial_list):
            self._handler.on_add(obj, is_in_initial_list)
            self._record(obj)

        def on_update(self, old, new):
            self._handler.on_update(old, new)
            self._record(new)

        def on_delete(self, obj):
            self._handler.on_delete(obj)

    real_add_event_handler = informer.add_event_handler
    informer.add_event_handler = lambda handler, *a, **kw: real_add_event_handler(
        Observed(handler), *a, **kw)
    core = factory.core().v1()
    controller = cluster.controller = EndpointController(
        core.pods(), core.services(), core.endpoints(), cluster.client)

    def echo_first(write):
        def wrapped(key, namespace, body):
            answer = write(key, namespace, body)
            rv = answer["metadata"]["resourceVersion"]
            with handled_cond:  # return only once the echo has been handled
                assert handled_cond.wait_for(lambda: rv in handled, timeout=10), rv
            return answer
        return wrapped

    # One startup order is pinned: the startup sweep enqueues before our first write. Upstream
    # Run starts the workers and then checkLeftoverEndpoints in a goroutine of its own, so the
    # sweep may also list the Endpoints a worker has just created and cost one more, no-op
    # sync; test_startup_sweep_after_our_create_costs_one_unchanged_sync pins that order.
    swept = threading.Event()
    sweep = controller.check_leftover_endpoints

    def sweep_then_signal():
        sweep()
        swept.set()

    controller.check_leftover_endpoints = sweep_then_signal

    def echo_first_after_sweep(write):
        held = echo_first(write)

        def wrapped(key, namespace, body):
            assert swept.wait(timeout=10), "the startup sweep did not run"
            return held(key, namespace, body)
        return wrapped

    controller.writer.create = echo_first_after_sweep(controller.writer.create)
    controller.writer.update = echo_first_after_sweep(controller.writer.update)
    factory.start(cluster.stop)
    cluster.thread = threading.Thread(target=controller.run, args=(2, cluster.stop))
    cluster.thread.start()

    def settled_syncs():
        eventually(lambda: _queue_idle(controller), what="the controller to settle")
        return dict(controller.metrics.snapshot().syncs)

    def syncs(created=0, updated=0, unchanged=0):  # skipped: default/kubernetes, no selector
        return {"created": created, "updated": updated, "deleted": 0, "unchanged": unchanged,
                "skipped": 1, "error": 0}

    cluster.wait_endpoints(lambda e: len(subsets_of(e)) == 1
                           and len(e["subsets"][0].get("addresses", [])) == 3)
    assert settled_syncs() == syncs(created=1)
    changes = 6
    for n in range(changes):
        ready = n >= 3  # p0, p1, p2 become not ready, then ready again
        s.patch("pods", NS, f"p{n % 3}", {"status": {"conditions": [
            {"type": "Ready", "status": "True" if ready else "False"}]}})
        cluster.wait_endpoints(lambda e, n=n, ready=ready: (f"10.0.0.{n % 3 + 1}" in [
            a["ip"] for a in e["subsets"][0].get(
                "addresses" if ready else "notReadyAddresses", [])]), what=f"change {n}")
        assert settled_syncs() == syncs(created=1, updated=n + 1)
    assert _foreign_write_logs(caplog) == []
    held = [r for r in caplog.records if "while our write is in flight" in r.getMessage()]
    assert [r.levelno for r in held] == [logging.DEBUG] * (1 + changes)

    # A genuine hand edit is still corrected, and logged at INFO.
    good = cluster.endpoints()
    edited = copy.deepcopy(good)
    edited["subsets"] = [{"addresses": [{"ip": "203.0.113.9"}], "ports": [{"port": 1}]}]
    hand_rv = s.update(edited)["metadata"]["resourceVersion"]
    cluster.wait_endpoints(lambda e: e["metadata"]["resourceVersion"] not in (
        good["metadata"]["resourceVersion"], hand_rv), what="the correction")
    assert cluster.endpoints()["subsets"] == good["subsets"]
    assert settled_syncs() == syncs(created=1, updated=changes + 1)
    assert _foreign_write_logs(caplog) == [(logging.INFO, hand_rv)]
    assert cluster.endpoint_writes() == [("create", "", 201)] + [
        ("update", "web", 200)] * (changes + 1)


def test_startup_sweep_after_our_create_costs_one_unchanged_sync(cluster, caplog):
    """The other startup order: the startup sweep lists the Endpoints a worker has just
    created. Upstream ``Run`` (endpoints_controller.go, k8s.io/kubernetes v1.36.3) starts the
    workers and then ``checkLeftoverEndpoints`` in a goroutine of its own, which enqueues every
    cached Endpoints' key, so this order is legitimate: the Service is synced once more and
    finds its Endpoints up to date. One "unchanged" sync, no second write, nothing logged as
    another writer's."""
    caplog.set_level(logging.DEBUG, logger="controllers.endpoint.controller")
    s = cluster.server
    s.create(make_service(selector={"app": "web"}))
    s.create(make_pod("p0", ("10.0.0.1",)))
    factory = cluster.factory = SharedInformerFactory(cluster.client)
    core = factory.core().v1()
    controller = cluster.controller = EndpointController(
        core.pods(), core.services(), core.endpoints(), cluster.client)
    lister = core.endpoints().lister()
    sweep = controller.check_leftover_endpoints
    swept = threading.Event()

    def sweep_once_our_endpoints_are_cached():
        eventually(lambda: lister.endpoints(NS).get("web"), what="our Endpoints in the cache")
        sweep()
        swept.set()

    controller.check_leftover_endpoints = sweep_once_our_endpoints_are_cached
    factory.start(cluster.stop)
    cluster.thread = threading.Thread(target=controller.run, args=(2, cluster.stop))
    cluster.thread.start()
    assert swept.wait(timeout=10)
    eventually(lambda: _queue_idle(controller), what="the controller to settle")
    assert dict(controller.metrics.snapshot().syncs) == {
        "created": 1, "updated": 0, "deleted": 0, "unchanged": 1, "skipped": 1, "error": 0}
    assert cluster.endpoint_writes() == [("create", "", 201)]
    assert _foreign_write_logs(caplog) == []


def test_hand_edits_linger_when_endpoints_updates_are_not_watched(any_cluster):
    cluster, s, ns = any_cluster, any_cluster.server, any_cluster.ns
    s.create(svc(cluster, selector={"app": "web"}))
    s.create(pod(cluster, "a", ("10.0.0.1",)))
    cluster.start(watch_endpoints_updates=False)
    good = cluster.wait_endpoints(lambda e: subsets_of(e))
    edited = copy.deepcopy(good)
    edited["subsets"] = []
    rv = s.update(edited)["metadata"]["resourceVersion"]
    lister = cluster.factory.core().v1().endpoints().lister()
    eventually(lambda: lister.endpoints(ns).get("web")["metadata"]["resourceVersion"] == rv,
               what="the informer to see the edit")
    assert cluster.endpoints()["metadata"]["resourceVersion"] == rv  # not corrected by itself
    # upstream behaviour: corrected only when something else triggers a sync
    service = s.get("services", ns, "web")
    service["metadata"]["annotations"] = {"poke": "1"}
    s.update(service)
    cluster.wait_endpoints(lambda e: e.get("subsets") == good["subsets"])


def store_unvalidated(server: ApiServer, obj: dict[str, Any]) -> None:
    """Write ``obj`` straight into the embedded server's storage, past defaulting and
    validation: a malformed object kube-apiserver would refuse (as the embedded server's API
    does), for a test of what a client does when a cache holds one anyway."""
    rt = server.registry.for_object(obj)
    body = {k: v for k, v in copy.deepcopy(obj).items() if k not in ("kind", "apiVersion")}
    body["metadata"].update(uid=f"uid-{body['metadata']['name']}",
                            creationTimestamp="2026-01-01T00:00:00Z")
    with server.storage.lock:
        server.storage.put(rt, body)


def test_bad_input_is_logged_and_never_crashes(cluster, caplog):
    s = cluster.server
    s.create(make_service("badsel", selector=["app", "web"]))
    store_unvalidated(s, make_service("badport", selector={"app": "web"}, ports=(
        {"name": "bad", "port": 81, "targetPort": True, "protocol": "TCP"},
        "junk",
        HTTP_PORT,
    )))
    s.create(make_pod("ok", ("10.0.0.1",)))
    broken = make_pod("broken", ("10.0.0.2",))
    broken["status"] = {"phase": "Running", "podIPs": [{"ip": "not-an-ip"}, {"ip": "10.0.0.2"}],
                        "conditions": "junk"}
    s.create(broken)
    weird = make_pod("weird", ())
    weird["status"] = "not an object"
    s.create(weird)
    cluster.start()
    ep = cluster.wait_endpoints(lambda e: subsets_of(e), name="badport")
    assert ep["subsets"] == [{
        "addresses": [address(s, "ok", "10.0.0.1")],
        "notReadyAddresses": [address(s, "broken", "10.0.0.2")],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }]
    eventually(lambda: "Service default/badsel: spec.selector is not a map" in caplog.text)
    assert "spec.ports[0].targetPort True is neither a number nor a name" in caplog.text
    assert "spec.ports[1] is not an object" in caplog.text
    assert "malformed status.podIPs entry 'not-an-ip'" in caplog.text
    assert cluster.endpoints("badsel") is None
    assert cluster.controller.metrics.snapshot().syncs["error"] == 0


def test_run_waits_for_caches_and_makes_no_request_if_stopped_first():
    with ApiServer() as server:
        server.create(make_service(selector={}))
        client = server.api_client()
        try:
            factory = SharedInformerFactory(client)
            core = factory.core().v1()
            controller = EndpointController(core.pods(), core.services(), core.endpoints(),
                                            client)
            stop = threading.Event()
            thread = threading.Thread(target=controller.run, args=(1, stop))
            thread.start()  # informers never started: caches never sync
            time.sleep(0.3)
            assert not controller.has_synced()
            stop.set()
            thread.join(timeout=10)
            assert not thread.is_alive()
            assert server.request_log(resource="endpoints") == []
            with pytest.raises(RuntimeError, match="only once"):
                controller.run(1, stop)
        finally:
            client.close()


# -- the stale-cache guard, with stand-in informers over the embedded server ------------------


class StubInformer:
    """A stand-in SharedIndexInformer: a real Indexer; events are delivered inline."""

    def __init__(self) -> None:
        self.indexer = Indexer(deletion_handling_meta_namespace_key_func,
                               {NAMESPACE_INDEX: meta_namespace_index_func})
        self.handlers: list[Any] = []
        self.synced = True

    def add_event_handler(self, handler):
        self.handlers.append(handler)

    def get_indexer(self):
        return self.indexer

    def has_synced(self):
        return self.synced

    def add(self, obj, initial=False):
        self.indexer.add(obj)
        for h in self.handlers:
            h.on_add(obj, initial)

    def update(self, obj):
        old = self.indexer.get(obj)
        self.indexer.update(obj)
        for h in self.handlers:
            h.on_update(old, obj)

    def delete(self, obj):
        self.indexer.delete(obj)
        for h in self.handlers:
            h.on_delete(obj)


class Stubs:
    def __init__(self, api_client=None, batch_period=0.0, **kwargs):
        self.pods, self.services, self.endpoints = StubInformer(), StubInformer(), StubInformer()
        self.clock = FakeClock()
        self.controller = EndpointController(self.pods, self.services, self.endpoints, api_client,
                                             batch_period, clock=self.clock, **kwargs)

    def queued(self):
        """Keys ready in the queue (without processing them)."""
        q = self.controller.queue
        keys = []
        while len(q):
            key, _ = q.get()
            keys.append(key)
            q.done(key)
            q.forget(key)
        return sorted(keys)

    def close(self):
        self.controller.queue.shut_down()


@pytest.fixture
def stubs():
    s = Stubs()
    yield s
    s.close()


def test_stale_cache_guard():
    with ApiServer() as server:
        client = server.api_client()
        st = Stubs(api_client=client)
        try:
            svc = server.create(make_service(selector={"app": "web"}))
            pod = server.create(make_pod("a", ("10.0.0.1",)))
            old = server.create({"apiVersion": "v1", "kind": "Endpoints",
                                 "metadata": {"name": "web", "namespace": NS}})
            st.services.indexer.add(svc)
            st.pods.indexer.add(pod)
            st.endpoints.indexer.add(old)
            assert st.controller.sync_service("default/web") == "updated"
            new = server.get("endpoints", NS, "web")
            assert new["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]
            server.clear_request_log()
            # The informer has not seen our write yet: retry instead of computing against it.
            with pytest.raises(StaleEndpointsCacheError, match="out of date"):
                st.controller.sync_service("default/web")
            assert server.request_log(resource="endpoints") == []
            st.endpoints.indexer.update(new)
            assert st.controller.sync_service("default/web") == "unchanged"
            # the key is retried with rate limiting when the guard fires from a worker
            st.endpoints.indexer.update(old)
            st.controller.queue.add("default/web")
            assert st.controller.process_next_work_item()
            assert st.controller.queue.num_requeues("default/web") == 1
        finally:
            st.close()
            client.close()


# -- handlers -> queue keys (NewEndpointController's), stand-in informers, no API -------------


def test_service_events_enqueue_at_once(stubs):
    svc = make_service(selector={"app": "web"})
    stubs.services.add(svc)
    assert stubs.queued() == ["default/web"]
    stubs.services.update(copy.deepcopy(svc))
    assert stubs.queued() == ["default/web"]
    stubs.services.delete(svc)
    assert stubs.queued() == ["default/web"]
    stubs.controller._triggers.on_service_delete(DeletedFinalStateUnknown("default/gone", None))
    assert stubs.queued() == ["default/gone"]


def test_pod_events_enqueue_selecting_services(stubs):
    for svc in (make_service("web", selector={"app": "web"}), make_service("all", selector={}),
                make_service("manual"), make_service("db", selector={"app": "db"}),
                make_service("elsewhere", selector={}, ns="other")):
        stubs.services.indexer.add(svc)
    pod = make_pod("a")
    pod["metadata"]["resourceVersion"] = "1"
    stubs.pods.add(pod)
    assert stubs.queued() == ["default/all", "default/web"]
    moved = copy.deepcopy(pod)
    moved["metadata"]["resourceVersion"] = "2"
    moved["metadata"]["labels"] = {"app": "db"}
    stubs.pods.update(moved)
    assert stubs.queued() == ["default/db", "default/web"]
    stubs.pods.delete(moved)
    assert stubs.queued() == ["default/all", "default/db"]
    stubs.pods.handlers[0].on_delete(DeletedFinalStateUnknown("default/a", pod))
    assert stubs.queued() == ["default/all", "default/web"]
    stubs.pods.handlers[0].on_delete(DeletedFinalStateUnknown("default/a", None))
    assert stubs.queued() == []


def test_pod_resync_and_irrelevant_updates_enqueue_nothing(stubs):
    stubs.services.indexer.add(make_service(selector={"app": "web"}))
    pod = make_pod("a")
    pod["metadata"]["resourceVersion"] = "1"
    stubs.pods.indexer.add(pod)
    stubs.pods.handlers[0].on_update(pod, pod)
    changed = copy.deepcopy(pod)
    changed["metadata"]["resourceVersion"] = "2"
    changed["metadata"]["annotations"] = {"a": "b"}
    stubs.pods.update(changed)
    assert stubs.queued() == []


def test_batch_period_delays_pod_triggered_keys_only():
    st = Stubs(batch_period=2.0)
    try:
        st.services.indexer.add(make_service(selector={}))
        pod = make_pod("a")
        st.pods.add(pod)
        assert st.queued() == []
        st.clock.step(1.9)
        st.pods.add(make_pod("b"))  # coalesced: the earlier deadline stays
        st.clock.step(0.1)
        eventually(lambda: len(st.controller.queue) == 1, what="the batched key")
        assert st.queued() == ["default/web"]
        st.endpoints.delete({"metadata": {"name": "web", "namespace": NS}})
        assert st.queued() == ["default/web"]
    finally:
        st.close()


def test_endpoints_updates_by_others_enqueue_but_our_echo_does_not(stubs):
    stubs.services.indexer.add(make_service(selector={"app": "web"}))
    stubs.services.indexer.add(make_service("manual"))
    ep = {"metadata": {"name": "web", "namespace": NS, "resourceVersion": "5"}}
    stubs.endpoints.add(ep, initial=True)
    assert stubs.queued() == []  # the initial list is the startup sweep's business
    edited = copy.deepcopy(ep)
    edited["metadata"]["resourceVersion"] = "6"
    stubs.endpoints.update(edited)
    assert stubs.queued() == ["default/web"]
    stubs.controller._echoes.write_started("default/web")
    stubs.controller._echoes.write_finished("default/web", "7")  # as if we had written "7"
    ours = copy.deepcopy(ep)
    ours["metadata"]["resourceVersion"] = "7"
    stubs.endpoints.update(ours)
    assert stubs.queued() == []
    stubs.endpoints.handlers[0].on_update(ours, ours)  # resync
    stubs.endpoints.add({"metadata": {"name": "manual", "namespace": NS,
                                      "resourceVersion": "8"}})
    stubs.endpoints.add({"metadata": {"name": "nosvc", "namespace": NS,
                                      "resourceVersion": "9"}})
    assert stubs.queued() == []


def test_own_write_echoes_are_told_apart_however_they_race(caplog):
    """Stand-in informers over the embedded server, events delivered exactly when the test
    says: an echo before the write returns, an echo after a newer write, a hand edit
    delivered while our write is in flight (then ours succeeds, or gets a 409)."""
    caplog.set_level(logging.DEBUG, logger="controllers.endpoint.controller")
    with ApiServer() as server:
        client = server.api_client()
        st = Stubs(api_client=client)
        ctl = st.controller
        create, update = ctl.writer.create, ctl.writer.update
        try:
            st.services.indexer.add(server.create(make_service(selector={"app": "web"})))
            st.pods.indexer.add(server.create(make_pod("a", ("10.0.0.1",))))

            def flip(ready):
                st.pods.indexer.update(server.patch("pods", NS, "a", {"status": {"conditions": [
                    {"type": "Ready", "status": "True" if ready else "False"}]}}))

            # 1. The watch delivers the echo before the write returns: create, then update.
            def create_echo_first(key, namespace, body):
                answer = create(key, namespace, body)
                st.endpoints.add(answer)
                return answer

            def update_echo_first(key, namespace, body):
                answer = update(key, namespace, body)
                st.endpoints.update(answer)
                return answer

            ctl.writer.create, ctl.writer.update = create_echo_first, update_echo_first
            assert ctl.sync_service("default/web") == "created"
            assert st.queued() == []
            flip(False)
            assert ctl.sync_service("default/web") == "updated"
            assert st.queued() == []

            # 2. The handler lags its cache: the echoes arrive after a newer write returned.
            late: list[tuple[Any, Any]] = []

            def update_echo_late(key, namespace, body):
                answer = update(key, namespace, body)
                late.append((st.endpoints.indexer.get(answer), answer))
                st.endpoints.indexer.update(answer)  # the cache has it, the handler not yet
                return answer

            ctl.writer.update = update_echo_late
            for ready in (True, False, True):
                flip(ready)
                assert ctl.sync_service("default/web") == "updated"
            assert len(late) == 3
            for old, new in late:
                st.endpoints.handlers[0].on_update(old, new)
            assert st.queued() == []
            assert _foreign_write_logs(caplog) == []

            # 3. A hand edit lands just after our write and is delivered while it is in flight.
            hand: list[str] = []

            def update_then_hand_edit(key, namespace, body):
                answer = update(key, namespace, body)
                edited = copy.deepcopy(answer)
                edited["metadata"]["labels"] = {"hand": "made"}
                foreign = server.update(edited)
                hand.append(foreign["metadata"]["resourceVersion"])
                st.endpoints.update(answer)
                st.endpoints.update(foreign)
                return answer

            ctl.writer.update = update_then_hand_edit
            flip(False)
            assert ctl.sync_service("default/web") == "updated"
            assert st.queued() == ["default/web"]  # the hand edit, once the write returned
            assert _foreign_write_logs(caplog) == [(logging.INFO, hand[0])]

            # 4. A hand edit lands before our write, which then fails with a 409.
            def hand_edit_then_update(key, namespace, body):
                current = server.get("endpoints", NS, "web")
                current["metadata"]["annotations"] = {"hand": "made"}
                foreign = server.update(current)
                hand.append(foreign["metadata"]["resourceVersion"])
                st.endpoints.update(foreign)
                return update(key, namespace, body)

            ctl.writer.update = hand_edit_then_update
            with pytest.raises(StatusError) as failed:
                ctl.sync_service("default/web")
            assert failed.value.code == 409
            assert st.queued() == ["default/web"]
            assert _foreign_write_logs(caplog) == [(logging.INFO, hand[0]),
                                                   (logging.INFO, hand[1])]
            # the stale-cache guard is untouched: the cache holds the hand edit, not a version
            # we replaced, so the next sync corrects it
            ctl.writer.update = update_echo_first
            assert ctl.sync_service("default/web") == "updated"
            assert st.queued() == []
            assert len(ctl._echoes) == 0
        finally:
            st.close()
            client.close()


def test_check_leftover_endpoints_skips_leader_records(stubs):
    stubs.endpoints.indexer.add({"metadata": {"name": "a", "namespace": NS}})
    stubs.endpoints.indexer.add({"metadata": {"name": "b", "namespace": "kube-system",
                                              "annotations": {LEADER_ELECTION_ANNOTATION: "x"}}})
    stubs.controller.check_leftover_endpoints()
    assert stubs.queued() == ["default/a"]


def test_constructor_and_run_validate_arguments(stubs):
    with pytest.raises(ValueError, match="batch_period"):
        EndpointController(StubInformer(), StubInformer(), StubInformer(), None, -1)
    with pytest.raises(ValueError, match="workers"):
        stubs.controller.run(0, threading.Event())


def test_stop_lets_the_sync_in_flight_finish(cluster, monkeypatch):
    from controllers.endpoint.writer import EndpointsWriter

    s = cluster.server
    s.create(make_service(selector={"app": "web"}))
    s.create(make_pod("a"))
    s.delay(0.3, verb="create", resource="endpoints")
    started = threading.Event()
    real_create = EndpointsWriter.create

    def create(self, *args, **kwargs):  # instrumentation only: still real HTTP
        started.set()
        return real_create(self, *args, **kwargs)

    monkeypatch.setattr(EndpointsWriter, "create", create)
    controller = cluster.start(workers=3)
    assert started.wait(10)
    cluster.stop.set()
    cluster.thread.join(timeout=10)
    assert not cluster.thread.is_alive()
    # run() returned only after the worker finished its sync
    assert controller.metrics.snapshot().syncs["created"] == 1
    assert cluster.endpoint_writes() == [("create", "", 201)]
    assert all(not t.is_alive() for t in threading.enumerate()
               if t.name.startswith("endpoint-controller-worker"))


@pytest.mark.slow
def test_churn_with_faults_converges_to_the_specification(cluster):
    import random

    from controllers.endpoint import compute_subsets

    rng = random.Random(42)
    s = cluster.server
    apps = [f"app{i}" for i in range(6)]
    for i, app in enumerate(apps):
        s.create(make_service(f"svc{i}", selector={"app": app},
                              cluster_ip="None" if i % 3 == 0 else f"10.96.0.{i + 1}",
                              labels={"n": str(i)}))
    s.create(make_service("everything", selector={"tier": "all"}))
    for i in range(40):
        s.create(make_pod(f"p{i}", (f"10.0.{i // 200}.{i % 200 + 1}",), ready=rng.random() < 0.5,
                          labels={"app": rng.choice(apps), "tier": "all"}))
    cluster.start(workers=5)

    def converged():
        pods = s.list("pods", NS)
        for svc in s.list("services", NS):
            if svc["metadata"]["name"] == "kubernetes":  # the server's own: no selector
                continue
            selector = svc["spec"]["selector"]
            selected = [p for p in pods
                        if p["metadata"].get("labels", {}).items() >= selector.items()]
            want = compute_subsets(svc, selected).subsets
            ep = s.get("endpoints", NS, svc["metadata"]["name"])
            if ep is None or ep.get("subsets", []) != want:
                return False
        return True

    # Let the initial creates land first, so the churn below needs updates.
    eventually(converged, timeout=30, what="the initial endpoints")

    def failures():  # injected ones only: a create may also meet a natural 409 AlreadyExists
        return [r.status for r in s.request_log(verb="update", resource="endpoints")
                if r.status == 500]

    for step in range(120):
        name = f"p{rng.randrange(40)}"
        if step % 40 == 0:
            if step:  # the faults injected 40 steps ago were hit (and retried)
                eventually(lambda step=step: len(failures()) == 2 * (step // 40),
                           what="injected failures")
            s.fail_next(2, 500, verb="update", resource="endpoints")
        choice = rng.random()
        if choice < 0.6:
            s.patch("pods", NS, name, {"status": {"conditions": [
                {"type": "Ready", "status": rng.choice(["True", "False"])}]}})
        elif choice < 0.9:
            s.patch("pods", NS, name, {"metadata": {"labels": {"app": rng.choice(apps)}}})
        else:
            pod = s.get("pods", NS, name)
            s.delete("pods", NS, name, grace_period_seconds=0)  # bound: graceful otherwise
            pod["metadata"] = {"name": name, "namespace": NS, "labels": pod["metadata"]["labels"]}
            s.create(pod)
    eventually(lambda: len(failures()) == 6, what="the last injected failures")

    eventually(converged, timeout=30, what="convergence after churn")
    everything = s.get("endpoints", NS, "everything")
    assert sum(len(x.get("addresses", [])) + len(x.get("notReadyAddresses", []))
               for x in everything["subsets"]) == 40
    assert len(failures()) == 6
    for i in range(len(apps)):
        labels = s.get("endpoints", NS, f"svc{i}")["metadata"].get("labels")
        assert labels == ({"n": str(i), HEADLESS_SERVICE_LABEL: "", **MANAGED} if i % 3 == 0
                          else {"n": str(i), **MANAGED})


def test_failures_become_core_v1_events_through_the_library_recorder(cluster):
    from informers.events import EventRecorder

    s = cluster.server
    recorder = EventRecorder(cluster.client, "endpoint-controller", host="test")
    recorder.start(cluster.stop)
    s.fail_next(1, 500, verb="create", resource="endpoints")
    s.create(make_service(selector={"app": "web"}))
    try:
        cluster.start(event_recorder=recorder)
        cluster.wait_endpoints(lambda e: True)
        events = eventually(lambda: s.list("events", NS), what="the warning event")
    finally:
        recorder.stop()
    (event,) = events
    assert (event["type"], event["reason"]) == ("Warning", "FailedToCreateEndpoint")
    assert event["involvedObject"]["kind"] == "Endpoints"
    assert event["involvedObject"]["name"] == "web"
    assert event["message"].startswith("Failed to create endpoint for service default/web: 500")
    assert event["source"] == {"component": "endpoint-controller", "host": "test"}


def test_creates_refused_in_a_terminating_namespace_drop_the_key(cluster):
    # The embedded server answers such a create as kube-apiserver's NamespaceLifecycle does
    # (403 with a NamespaceTerminating cause), and the controller drops the key on it, as
    # endpoints_controller.go does: no retry, no warning event.
    s = cluster.server
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}})
    service = make_service(selector={"app": "web"}, ns="doomed")
    service["metadata"]["finalizers"] = ["example.com/hold"]  # outlives the namespace sweep
    s.create(service)
    # no grace period: the namespace sweep removes the (bound) pod at once
    s.create(make_pod("p1", ns="doomed", terminationGracePeriodSeconds=0))
    cluster.start()
    cluster.wait_endpoints(lambda e: len(subsets_of(e)) == 1, ns="doomed")
    skipped = cluster.syncs("skipped")
    s.delete("namespaces", None, "doomed")  # pods and endpoints go, the service is marked
    assert s.get("namespaces", None, "doomed")["status"] == {"phase": "Terminating"}

    def refused():
        return [r for r in s.request_log(verb="create", resource="endpoints")
                if r.namespace == "doomed" and r.status == 403]

    eventually(refused, what="the create in the terminating namespace")
    eventually(lambda: cluster.syncs("skipped") > skipped, what="the key to be dropped")
    assert cluster.controller.queue.num_requeues("doomed/web") == 0  # forgotten
    # (An update from a stale cache may have failed first: the endpoints were gone.)
    assert "FailedToCreateEndpoint" not in cluster.recorder.reasons()
    assert s.get("endpoints", "doomed", "web") is None
    # Once the finalizer goes, the service goes and with it the namespace.
    s.patch("services", "doomed", "web", {"metadata": {"finalizers": None}})
    assert s.get("namespaces", None, "doomed") is None


# -- pod label index: syncs read only the selector's pods --------------------------------------


def test_pod_label_index_func_indexes_string_labels_by_namespace():
    from controllers.endpoint.pod_selection import pod_label_index_func

    obj = {"metadata": {"namespace": "ns1", "labels": {"app": "web", "n": 3, "tier": "fe"}}}
    assert pod_label_index_func(obj) == ["ns1/app=web", "ns1/tier=fe"]
    assert pod_label_index_func({"metadata": {"name": "x"}}) == []


def test_sync_reads_pods_through_the_label_index_and_falls_back_without_it(cluster, caplog):
    from controllers.endpoint.pod_selection import POD_LABEL_INDEX

    for name, ip, labels, ns in [
        ("a", "10.0.0.1", {"app": "web", "tier": "fe"}, NS),
        ("b", "10.0.0.2", {"app": "web"}, NS),
        ("c", "10.0.0.3", {"app": "web", "tier": "be"}, NS),
        ("d", "10.0.0.4", {"app": "web", "tier": "fe"}, "kube-system"),
        ("e", "10.0.0.5", {"tier": "fe", "app": "web", "x": "y"}, NS),
    ]:
        cluster.server.create(make_pod(name, ips=(ip,), labels=labels, ns=ns))
    cluster.server.create(svc(cluster, selector={"app": "web", "tier": "fe"}))
    controller = cluster.start()
    ep = cluster.wait_endpoints(lambda e: subsets_of(e))
    assert sorted(a["ip"] for s in subsets_of(ep) for a in s.get("addresses", [])) == [
        "10.0.0.1", "10.0.0.5"]
    indexer = controller._pod_informer.get_indexer()
    assert sorted(indexer.index_keys(POD_LABEL_INDEX, f"{NS}/tier=fe")) == [
        f"{NS}/a", f"{NS}/e"]

    # A second controller on the same informers cannot add the index: it lists the namespace.
    assert cluster.factory is not None
    core = cluster.factory.core().v1()
    with caplog.at_level(logging.WARNING, logger="controllers.endpoint.pod_selection"):
        second = EndpointController(core.pods(), core.services(), core.endpoints(),
                                    cluster.client)
    assert any("no pod label index" in r.getMessage() for r in caplog.records)
    assert second.sync_service(f"{NS}/web") == "unchanged"
    assert controller.sync_service(f"{NS}/web") == "unchanged"
