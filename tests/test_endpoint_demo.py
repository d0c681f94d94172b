"""Tests of the endpoint controller's demo: the workload, the convergence check, the display."""

from __future__ import annotations

import io
import logging
import threading
import time

import pytest

from controllers.endpoint.controller import LEADER_ELECTION_ANNOTATION
from controllers.endpoint.demo import (
    ActivityLog,
    DemoWorkload,
    convergence_problems,
    endpoint_counts,
    render_table,
    run_table_reporter,
    wait_converged,
    write_table,
)
from controllers.endpoint.subsets import compute_subsets
from informers.clock import FakeClock
from informers.keys import DeletedFinalStateUnknown

SETUP = [
    "service web created",
    "pod web-0 created (ready, 10.244.0.2)",
    "pod web-1 created (ready, 10.244.0.3)",
    "pod web-2 created (ready, 10.244.0.4)",
    "service api created",
    "pod api-0 created (ready, 10.244.0.5)",
    "pod api-1 created (not ready, 10.244.0.6)",
    "service db created",
    "pod db-0 created (ready, 10.244.0.7)",
    "service cache created",
    "pod cache-0 created (ready, 10.244.0.8)",
]

SEED_1_STEPS = [
    "pod web-2 not ready",
    "pod api-0 deleted",
    "pod web-0 not ready",
    "pod cache-1 created (not ready, 10.244.0.9)",
    "pod api-2 created (not ready, 10.244.0.10)",
    "service cache deleted",
    "service cache created",
    "pod cache-1 deleted",
]


def _until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# -- the workload ----------------------------------------------------------------------------------


def test_setup_creates_the_services_and_pods(api_server, api_client):
    workload = DemoWorkload(api_client)
    assert workload.setup() == SETUP
    web = api_server.get("services", "default", "web")
    assert web["spec"] == {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                           "selector": {"app": "web"},
                           "ports": [{"name": "http", "port": 80, "targetPort": 8080,
                                      "protocol": "TCP"}],
                           "type": "ClusterIP", "sessionAffinity": "None",
                           "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"],
                           "ipFamilyPolicy": "SingleStack"}
    assert api_server.get("services", "default", "api")["spec"]["ports"][0]["targetPort"] == (
        "grpc")
    assert api_server.get("services", "default", "db")["spec"]["clusterIP"] == "None"
    pods = {p["metadata"]["name"]: p for p in api_server.list("pods", "default")}
    assert sorted(pods) == ["api-0", "api-1", "cache-0", "db-0", "web-0", "web-1", "web-2"]
    assert pods["api-1"]["status"] == {
        "phase": "Running", "hostIP": "192.168.0.10", "podIP": "10.244.0.6",
        "podIPs": [{"ip": "10.244.0.6"}], "conditions": [{"type": "Ready", "status": "False"}],
        "qosClass": "BestEffort",
    }
    assert pods["web-0"]["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert pods["db-0"]["spec"]["hostname"] == "db-0"
    assert pods["db-0"]["spec"]["subdomain"] == "db"
    assert pods["api-0"]["spec"]["containers"][0]["ports"] == [
        {"name": "grpc", "containerPort": 9000, "protocol": "TCP"}]


def test_the_same_seed_makes_the_same_changes(api_server, api_client):
    api_server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    first = DemoWorkload(api_client, seed=1)
    second = DemoWorkload(api_client, seed=1, namespace="other")
    third = DemoWorkload(api_client, seed=2, namespace="kube-public")
    for workload in (first, second, third):
        workload.setup()
    steps = [[w.step() for _ in range(30)] for w in (first, second, third)]
    assert steps[0][:len(SEED_1_STEPS)] == SEED_1_STEPS
    assert steps[0] == steps[1]
    assert steps[0] != steps[2]


def test_the_model_matches_the_server_after_many_changes(api_server, api_client):
    workload = DemoWorkload(api_client, seed=5)
    workload.setup()
    for _ in range(40):
        workload.step()
    pods = {p["metadata"]["name"]: p for p in api_server.list("pods", "default")}
    assert sorted(pods) == sorted(workload.pods)
    for name, pod in workload.pods.items():
        status = pods[name]["status"]
        assert status["podIP"] == pod.ip
        assert status["conditions"] == [{"type": "Ready",
                                         "status": "True" if pod.ready else "False"}]
    assert {s["metadata"]["name"] for s in api_server.list("services", "default")} == (
        workload.services | {"kubernetes"})  # and the server's own
    per_app = {}
    for pod in workload.pods.values():
        per_app[pod.app] = per_app.get(pod.app, 0) + 1
    assert max(per_app.values()) <= 4
    assert min(per_app.values()) >= 1  # a pod is only deleted while its app has another


def test_run_sets_up_then_changes_every_interval_until_stopped(api_server, api_client):
    clock = FakeClock()
    stop = threading.Event()
    workload = DemoWorkload(api_client, interval=2.0, clock=clock)
    thread = threading.Thread(target=workload.run, args=(stop,))
    thread.start()
    try:
        assert clock.wait_for_waiters(1)
        assert workload.changes == SETUP
        clock.step(1.9)
        assert workload.changes == SETUP
        clock.step(0.1)
        assert _until(lambda: len(workload.changes) == len(SETUP) + 1)
        assert workload.changes == [*SETUP, SEED_1_STEPS[0]]
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
    assert workload.changes == [*SETUP, SEED_1_STEPS[0]]


def test_run_survives_api_errors(api_server, api_client, caplog):
    clock = FakeClock()
    stop = threading.Event()
    workload = DemoWorkload(api_client, interval=1.0, clock=clock)
    thread = threading.Thread(target=workload.run, args=(stop,))
    thread.start()
    try:
        assert clock.wait_for_waiters(1)
        api_server.fail_next(1, 500, verb="patch", resource="pods")
        clock.step(1.0)  # "pod web-2 not ready": its status patch fails
        assert _until(lambda: any(r.getMessage().startswith("demo: change failed: 500 ")
                                  for r in caplog.records))
        assert clock.wait_for_waiters(1)
        clock.step(1.0)  # and the workload carries on
        assert _until(lambda: len(workload.changes) == len(SETUP) + 1)
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
    # The failed flip is not recorded and left the model as the server has it.
    assert workload.changes == [*SETUP, SEED_1_STEPS[1]]
    assert workload.pods["web-2"].ready is True
    assert api_server.get("pods", "default", "web-2")["status"]["conditions"] == [
        {"type": "Ready", "status": "True"}]


def test_interval_must_be_positive(api_client):
    with pytest.raises(ValueError, match="interval must be > 0"):
        DemoWorkload(api_client, interval=0)


# -- the convergence check -------------------------------------------------------------------------


def _write_expected_endpoints(server, namespace="default"):
    pods = server.list("pods", namespace)
    for service in server.list("services", namespace):
        selector = service["spec"].get("selector")
        if selector is None or service["spec"].get("type") == "ExternalName":
            continue
        selected = [p for p in pods
                    if all(p["metadata"]["labels"].get(k) == v for k, v in selector.items())]
        subsets = compute_subsets(service, selected).subsets
        body = {"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": service["metadata"]["name"], "namespace": namespace}}
        if subsets:
            body["subsets"] = subsets
        if server.get("endpoints", namespace, service["metadata"]["name"]) is None:
            server.create(body)
        else:
            server.update(body)


def test_convergence_problems(api_server, api_client):
    DemoWorkload(api_client).setup()
    assert convergence_problems(api_client) == [
        "endpoints default/api missing", "endpoints default/cache missing",
        "endpoints default/db missing", "endpoints default/web missing",
    ]
    _write_expected_endpoints(api_server)
    assert convergence_problems(api_client) == []

    api_server.patch("pods", "default", "web-1",
                     {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    api_server.create({"apiVersion": "v1", "kind": "Endpoints",
                       "metadata": {"name": "orphan", "namespace": "default"}})
    api_server.create({"apiVersion": "v1", "kind": "Endpoints",
                       "metadata": {"name": "lock", "namespace": "default",
                                    "annotations": {LEADER_ELECTION_ANNOTATION: "{}"}}})
    api_server.create({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "external", "namespace": "default"},
                       "spec": {"type": "ExternalName", "externalName": "example.com",
                                "selector": {"app": "web"}}})
    api_server.create({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "manual", "namespace": "default"},
                       "spec": {"ports": [{"port": 80}]}})
    assert convergence_problems(api_client) == [
        "endpoints default/web differ from its pods", "endpoints default/orphan has no service",
    ]
    _write_expected_endpoints(api_server)  # also fixes web
    api_server.delete("endpoints", "default", "orphan")
    assert convergence_problems(api_client) == []


def test_wait_converged_gives_up_after_the_timeout(api_server, api_client):
    DemoWorkload(api_client).setup()
    assert wait_converged(api_client, 0.2, poll=0.05) == [
        "endpoints default/api missing", "endpoints default/cache missing",
        "endpoints default/db missing", "endpoints default/web missing",
    ]
    _write_expected_endpoints(api_server)
    assert wait_converged(api_client, 5.0) == []


# -- the display -----------------------------------------------------------------------------------


ENDPOINTS = {
    "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7"},
    "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
         "notReadyAddresses": [{"ip": "10.0.0.3"}],
         "ports": [{"port": 8080, "protocol": "TCP"}]},
        {"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 9090, "protocol": "UDP"}]},
    ],
}


def test_endpoint_counts():
    assert endpoint_counts(ENDPOINTS) == (["10.0.0.1", "10.0.0.2"], ["10.0.0.3"])
    assert endpoint_counts({"metadata": {}}) == ([], [])
    assert endpoint_counts({"subsets": [None, {"addresses": [{"ip": 1}, "x"]}]}) == ([], [])


def test_render_table():
    services = [{"metadata": {"name": n, "namespace": "default"}} for n in ("web", "api")]
    orphan = {"metadata": {"name": "old", "namespace": "default"}}
    assert render_table(services, [ENDPOINTS, orphan]).splitlines() == [
        "SERVICE      READY  NOT READY  PORTS              ADDRESSES",
        "default/api      -          -  -                  (no endpoints)",
        "default/old      0          0  -                  -",
        "default/web      2          1  8080/TCP,9090/UDP  10.0.0.1 10.0.0.2 | not ready: 10.0.0.3",
    ]


def test_write_table_and_the_reporter(api_server, api_client):
    DemoWorkload(api_client).setup()
    _write_expected_endpoints(api_server)
    out = io.StringIO()
    write_table(api_client, out, title="now")
    table = render_table(api_server.list("services", "default"),
                         api_server.list("endpoints", "default"))
    assert out.getvalue() == f"--- now ---\n{table}\n"
    assert "default/api 1 1 9000/TCP 10.244.0.5 | not ready: 10.244.0.6" in (
        " ".join(line.split()) for line in table.splitlines())

    clock = FakeClock()
    stop = threading.Event()
    out = io.StringIO()
    thread = threading.Thread(target=run_table_reporter, args=(api_client, out, stop),
                              kwargs={"period": 5.0, "clock": clock})
    thread.start()
    try:
        assert clock.wait_for_waiters(1)
        assert out.getvalue() == ""
        clock.step(5.0)
        assert _until(lambda: out.getvalue() != "")
        assert out.getvalue() == f"--- endpoints at the server ---\n{table}\n"
    finally:
        stop.set()
        thread.join(5)


def test_activity_log(caplog):
    caplog.set_level(logging.DEBUG, logger="controllers.endpoint.demo")
    log = ActivityLog()
    newer = {**ENDPOINTS, "metadata": {**ENDPOINTS["metadata"], "resourceVersion": "8"}}
    log.on_add(ENDPOINTS, True)  # the initial list: not logged
    log.on_add(ENDPOINTS, False)
    log.on_update(ENDPOINTS, ENDPOINTS)  # a resync: not logged
    log.on_update(ENDPOINTS, newer)
    log.on_delete(newer)
    log.on_delete(DeletedFinalStateUnknown("default/gone", {"metadata": {
        "name": "gone", "namespace": "default"}}))
    log.on_delete(DeletedFinalStateUnknown("default/x", None))
    ActivityLog(logging.DEBUG).on_add(ENDPOINTS, False)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "synced endpoints default/web: 2 ready, 1 not ready"),
        (logging.INFO, "synced endpoints default/web: 2 ready, 1 not ready"),
        (logging.INFO, "deleted endpoints default/web"),
        (logging.INFO, "deleted endpoints default/gone"),
        (logging.DEBUG, "synced endpoints default/web: 2 ready, 1 not ready"),
    ]
