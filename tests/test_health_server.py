"""Tests for informers.health_server over real HTTP on a loopback port."""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request

import pytest

from informers.controller import Controller, PrometheusMetricsProvider
from informers.health_server import HealthServer, parse_address, run_check


def get(url):
    """(status, body) of a GET; HTTP errors are answers too."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.read().decode()


@pytest.fixture
def server():
    srv = HealthServer("127.0.0.1:0")
    srv.start()
    yield srv
    srv.stop()


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (":8080", ("", 8080)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9443", ("::1", 9443)),
        ("8081", ("", 8081)),
        ("0.0.0.0:65535", ("0.0.0.0", 65535)),
    ],
)
def test_parse_address(address, expected):
    assert parse_address(address) == expected


@pytest.mark.parametrize("address", ["", "host:", "host:http", ":70000", "::1:80", ":-1"])
def test_parse_address_rejects(address):
    with pytest.raises(ValueError, match="invalid address"):
        parse_address(address)


def test_run_check():
    assert run_check("a", lambda: None) is None
    assert run_check("a", lambda: True) is None
    assert run_check("a", lambda: False) == "check returned false"
    assert run_check("a", lambda: "lease expired") == "lease expired"
    assert run_check("a", lambda: 1 / 0) == "ZeroDivisionError: division by zero"


def test_healthz_ping_and_unknown_paths(server):
    assert server.port != 0
    assert get(server.url + "/healthz") == (200, "ok")
    assert get(server.url + "/healthz/ping") == (200, "ok")
    assert get(server.url + "/healthz?verbose") == (200, "[+]ping ok\nhealthz check passed\n")
    assert get(server.url + "/healthz/nope")[0] == 404
    assert get(server.url + "/other")[0] == 404
    # No readiness check yet: ready.
    assert get(server.url + "/readyz") == (200, "ok")


def test_failing_checks_answer_503_and_withhold_the_reason(server, caplog):
    caplog.set_level(logging.INFO, logger="informers.health_server")
    synced = threading.Event()
    server.add_readyz_check("informers-synced", synced.is_set)
    server.add_readyz_check("always", lambda: True)
    status, body = get(server.url + "/readyz")
    assert status == 503
    assert body == (
        "[-]informers-synced failed: reason withheld\n[+]always ok\nreadyz check failed\n"
    )
    assert any("'informers-synced' failed: check returned false" in r.getMessage()
               for r in caplog.records)
    assert get(server.url + "/readyz?exclude=informers-synced") == (200, "ok")
    assert get(server.url + "/readyz/always") == (200, "ok")
    assert get(server.url + "/readyz/informers-synced")[0] == 503
    synced.set()
    assert get(server.url + "/readyz") == (200, "ok")
    server.add_healthz_check("broken", lambda: "deadlocked")
    assert get(server.url + "/healthz") == (
        503, "[+]ping ok\n[-]broken failed: reason withheld\nhealthz check failed\n")


def test_bad_check_names(server):
    for name in ("", "a/b"):
        with pytest.raises(ValueError):
            server.add_healthz_check(name, lambda: True)


def test_metrics_serves_the_registry():
    prometheus_client = pytest.importorskip("prometheus_client")
    registry = prometheus_client.CollectorRegistry()
    c = Controller("served", lambda k: None, metrics=PrometheusMetricsProvider(registry))
    c.queue.shut_down()
    with HealthServer("127.0.0.1:0", registry=registry) as srv:
        srv.start()
        with urllib.request.urlopen(srv.url + "/metrics", timeout=5) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain; version=")
            text = resp.read().decode()
    for line in (
        'controller_runtime_reconcile_total{controller="served",result="success"} 0.0',
        'controller_runtime_reconcile_errors_total{controller="served"} 0.0',
        'controller_runtime_terminal_reconcile_errors_total{controller="served"} 0.0',
        'controller_runtime_max_concurrent_reconciles{controller="served"} 1.0',
        'controller_runtime_active_workers{controller="served"} 0.0',
        'controller_runtime_reconcile_time_seconds_count{controller="served"} 0.0',
        'workqueue_depth{name="served"} 0.0',
    ):
        assert line in text.splitlines()


def test_stop_closes_the_port_and_is_idempotent():
    srv = HealthServer("127.0.0.1:0")
    srv.start()
    url = srv.url
    assert get(url + "/healthz")[0] == 200
    srv.stop()
    srv.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/healthz", timeout=2)
    assert not any(t.name == "health-server" and t.is_alive() for t in threading.enumerate())
    with pytest.raises(RuntimeError):
        srv.start()


def test_start_with_a_stop_event_stops_by_itself():
    stop = threading.Event()
    srv = HealthServer("127.0.0.1:0")
    srv.start(stop)
    assert get(srv.url + "/healthz")[0] == 200
    stop.set()
    deadline = time.monotonic() + 5
    while any(t.name.startswith("health-server") and t.is_alive() for t in threading.enumerate()):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(srv.url + "/healthz", timeout=2)


def test_a_busy_address_fails_at_start(server):
    other = HealthServer(f"127.0.0.1:{server.port}")
    with pytest.raises(OSError):
        other.start()
    other.stop()
