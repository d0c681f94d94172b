"""Tests for informers.manager: start and stop order, leader-only runnables, probes, signals.

The order is recorded by the pieces themselves: a recording factory and runnables that, at
each step, look at what the others expose (the probes over HTTP, the Lease in the embedded API
server), so the assertions are about the state each step saw.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest

from informers.clock import FakeClock
from informers.controller import Controller, EnqueueRequestForObject
from informers.errors import AlreadyStartedError, LeaderElectionConfigError, LeaderElectionLostError
from informers.factory import SharedInformerFactory
from informers.manager import CACHES_SYNCED_CHECK, LeaderElectionConfig, Manager
from informers.signals import SHUTDOWN_SIGNALS

FAST = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.2}


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


def status(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as err:
        with err:
            return err.code


class RecordingFactory:
    """Stands in for SharedInformerFactory; ``synced`` gates wait_for_cache_sync."""

    def __init__(self, record, api_client=None):
        self.record = record
        self.api_client = api_client
        self.synced = threading.Event()
        self.synced.set()
        self.on_wait = lambda: None
        self.on_shutdown = lambda: None

    def start(self, stop_event=None):
        self.record.append(("factory.start",))

    def wait_for_cache_sync(self, stop_event=None, timeout=None):
        self.on_wait()
        while not self.synced.wait(0.01):
            if stop_event is not None and stop_event.is_set():
                return {"configmaps": False}
        return {"configmaps": True}

    def shutdown(self):
        self.on_shutdown()


class ManagerThread:
    def __init__(self, manager):
        self.manager = manager
        self.stop_event = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.manager.start(self.stop_event)
        except BaseException as err:
            self.error = err

    def stop(self, timeout=15.0):
        self.stop_event.set()
        self.join(timeout)

    def join(self, timeout=15.0):
        self.thread.join(timeout)
        assert not self.thread.is_alive()


@pytest.fixture
def client(server):
    c = server.api_client()
    yield c
    c.close()


def holder(server, name):
    lease = server.get("leases", "default", name)
    return None if lease is None else lease["spec"].get("holderIdentity", "")


# -- order -------------------------------------------------------------------------------------


def test_start_and_stop_order_without_leader_election():
    record = []
    factory = RecordingFactory(record)
    m = Manager(factory=factory, health_address="127.0.0.1:0")

    def base():  # the port is known once the manager has started the server
        return m.health_server.url

    factory.on_wait = lambda: record.append(
        ("factory.wait", status(base() + "/readyz"), status(base() + "/healthz")))
    factory.on_shutdown = lambda: record.append(
        ("factory.shutdown", status(base() + "/healthz")))

    def runnable(name):
        def fn(stop):
            record.append(("start", name, m.caches_synced(), status(base() + "/readyz")))
            stop.wait()
            record.append(("stop", name))
        return fn

    m.add_runnable(runnable("other"), name="other")
    m.add_runnable(runnable("leader"), needs_leader=True, name="leader")
    mt = ManagerThread(m)
    wait_until(lambda: m.elected.is_set() and len(record) == 4)
    url = base()
    mt.stop()
    assert mt.error is None
    assert record[:2] == [("factory.start",), ("factory.wait", 503, 200)]
    assert sorted(record[2:4]) == [("start", "leader", True, 200), ("start", "other", True, 200)]
    assert sorted(record[4:6]) == [("stop", "leader"), ("stop", "other")]
    assert record[6:] == [("factory.shutdown", 200)]  # the server outlives the informers
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/healthz", timeout=2)
    assert m.unstopped == ()


def test_stop_order_with_leader_election(server, client):
    record = []
    factory = RecordingFactory(record, api_client=client)
    lease = "order-lease"
    m = Manager(factory=factory, leader_election=LeaderElectionConfig(
        lease, "default", identity="me", **FAST))
    assert m.identity == "me"
    factory.on_wait = lambda: record.append(("factory.wait", holder(server, lease)))
    factory.on_shutdown = lambda: record.append(("factory.shutdown", holder(server, lease)))

    def leader(stop):
        record.append(("start", holder(server, lease)))
        stop.wait()
        record.append(("stop", holder(server, lease)))

    m.add_runnable(leader, needs_leader=True, name="leader")
    mt = ManagerThread(m)
    wait_until(lambda: len(record) == 3 and m.is_leader())
    mt.stop()
    assert mt.error is None
    assert record == [
        ("factory.start",),
        ("factory.wait", None),  # no lease before the caches synced
        ("start", "me"),
        ("stop", "me"),  # the runnables stop while the lease is still held ...
        ("factory.shutdown", ""),  # ... and it is released before the informers stop
    ]
    assert not m.is_leader()


# -- leader election with two managers ---------------------------------------------------------


def test_only_the_leader_reconciles_and_the_standby_takes_over(server):
    lease = "two-managers"
    clients = [server.api_client(), server.api_client()]
    reconciled = {"a": [], "b": []}
    managers, controllers = {}, {}
    for name, api in zip("ab", clients, strict=True):
        m = Manager(api, leader_election=LeaderElectionConfig(lease, "default", identity=name,
                                                              **FAST))
        c = Controller(f"cm-{name}", lambda key, name=name: reconciled[name].append(key),
                       workers=2)
        c.watch(m.factory.core().v1().config_maps().informer(), EnqueueRequestForObject)
        m.add(c)
        managers[name], controllers[name] = m, c
    mt_a = ManagerThread(managers["a"])
    wait_until(lambda: managers["a"].elected.is_set())
    mt_b = ManagerThread(managers["b"])
    try:
        wait_until(lambda: managers["b"].caches_synced())
        server.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "first", "namespace": "default"}})
        wait_until(lambda: "default/first" in reconciled["a"])
        # The standby's cache is warm and its queue holds the key, but it does not reconcile.
        wait_until(lambda: len(controllers["b"].queue) >= 1)
        time.sleep(0.3)
        assert reconciled["b"] == []
        assert not managers["b"].elected.is_set()
        assert holder(server, lease) == "a"

        mt_a.stop()
        assert mt_a.error is None
        wait_until(lambda: managers["b"].elected.is_set(), timeout=10)
        assert holder(server, lease) == "b"
        wait_until(lambda: "default/first" in reconciled["b"])
        server.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "second", "namespace": "default"}})
        wait_until(lambda: "default/second" in reconciled["b"])
        assert "default/second" not in reconciled["a"]
    finally:
        mt_a.stop()
        mt_b.stop()
        for api in clients:
            api.close()
    assert mt_b.error is None


def test_losing_the_lease_stops_the_manager_and_raises(server, client):
    lease = "lost-lease"
    m = Manager(client, leader_election=LeaderElectionConfig(lease, "default", identity="me",
                                                             **FAST))
    stopped = threading.Event()

    def leader(stop):
        stop.wait()
        stopped.set()

    m.add_runnable(leader, needs_leader=True)
    mt = ManagerThread(m)
    try:
        wait_until(lambda: m.elected.is_set())
        current = server.get("leases", "default", lease)
        current["spec"]["holderIdentity"] = "intruder"
        current["spec"]["leaseDurationSeconds"] = 60
        server.update(current)
        mt.join(timeout=10)
    finally:
        mt.stop()
    assert isinstance(mt.error, LeaderElectionLostError)
    assert "default/lost-lease" in str(mt.error)
    assert stopped.is_set()
    assert holder(server, lease) == "intruder"  # never released a lease it does not hold


def test_a_leader_whose_renewal_is_overdue_hands_out_no_keys(server, client):
    clock = FakeClock()  # the elector's; the informers and the controller run on real time
    lease = "overdue-lease"
    m = Manager(client, factory=SharedInformerFactory(client), clock=clock,
                leader_election=LeaderElectionConfig(lease, "default", identity="me"))
    reconciled = []
    c = Controller("overdue", reconciled.append)
    c.watch(m.factory.core().v1().config_maps().informer(), EnqueueRequestForObject)
    m.add(c)
    assert c.leader_check == m.is_leader
    mt = ManagerThread(m)
    try:
        wait_until(lambda: m.elected.is_set() and clock.next_deadline() == 2.0)
        server.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "overdue-one", "namespace": "default"}})
        wait_until(lambda: "default/overdue-one" in reconciled)
        server.fail_next(1000, 500, verb="update", resource="leases")
        # The renewal due at 2 runs at 11 (the process was paused), past the renew deadline
        # of the renewal at 0: from this instant on the manager may not act ...
        clock.step(11)
        assert not m.is_leader()
        # ... while its elector, whose lease others see until 15, retries every 2 s.
        wait_until(lambda: clock.next_deadline() == 13.0)
        assert m.elected.is_set() and m.elector.is_leader()
        server.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "overdue-two", "namespace": "default"}})
        wait_until(lambda: len(c.queue) == 1)  # taken, put back, and left queued
        time.sleep(0.3)  # six leadership polls of the workers
        assert "default/overdue-two" not in reconciled
        server.clear_faults()
        clock.step(2)  # the renewal at 13 succeeds: leadership is confirmed
        wait_until(lambda: "default/overdue-two" in reconciled)
        assert m.is_leader()
    finally:
        server.clear_faults()
        mt.stop()
    assert mt.error is None
    assert holder(server, lease) == ""  # released on the clean stop


# -- failures and timeouts ---------------------------------------------------------------------


def test_a_runnable_that_raises_stops_the_manager():
    record = []
    factory = RecordingFactory(record)
    factory.on_shutdown = lambda: record.append(("factory.shutdown",))

    def healthy(stop):
        stop.wait()
        record.append(("stop", "healthy"))

    def broken(stop):
        raise RuntimeError("cannot run")

    m = Manager(factory=factory)
    m.add_runnable(healthy)
    m.add_runnable(broken)
    with pytest.raises(RuntimeError, match="cannot run"):
        m.start(threading.Event())
    assert record == [("factory.start",), ("stop", "healthy"), ("factory.shutdown",)]


def test_a_runnable_that_does_not_stop_is_abandoned_after_the_timeout(caplog):
    clock = FakeClock()
    record = []
    factory = RecordingFactory(record)
    factory.on_shutdown = lambda: record.append(("factory.shutdown",))
    release = threading.Event()
    m = Manager(factory=factory, clock=clock, shutdown_timeout=5.0)
    m.add_runnable(lambda stop: release.wait(30), name="stuck")
    m.add_runnable(lambda stop: stop.wait(), name="polite")
    mt = ManagerThread(m)
    try:
        wait_until(lambda: m.elected.is_set())
        mt.stop_event.set()
        wait_until(lambda: clock.next_deadline() == 5.0)
        assert mt.thread.is_alive()
        clock.step(5.0)
        mt.join(5)
        assert m.unstopped == ("stuck",)
        assert record == [("factory.start",), ("factory.shutdown",)]
        assert "runnable stuck did not stop within 5.0s" in caplog.text
    finally:
        release.set()


def test_start_twice_and_add_after_start_are_refused():
    m = Manager()
    mt = ManagerThread(m)
    wait_until(lambda: m.elected.is_set())
    with pytest.raises(AlreadyStartedError):
        m.start(threading.Event())
    with pytest.raises(AlreadyStartedError):
        m.add_runnable(lambda stop: None)
    mt.stop()
    assert mt.error is None


def test_stopping_before_the_caches_sync_starts_no_runnable():
    record = []
    factory = RecordingFactory(record)
    factory.synced.clear()
    started = []
    m = Manager(factory=factory)
    m.add_runnable(started.append)
    stop = threading.Event()
    factory.on_wait = stop.set
    m.start(stop)
    assert started == []
    assert not m.caches_synced()
    assert not m.elected.is_set()


# -- probes and metrics ------------------------------------------------------------------------


def test_readyz_waits_for_the_caches_and_metrics_are_served():
    prometheus_client = pytest.importorskip("prometheus_client")
    registry = prometheus_client.CollectorRegistry()
    record = []
    factory = RecordingFactory(record)
    factory.synced.clear()
    waiting = threading.Event()
    factory.on_wait = waiting.set
    m = Manager(factory=factory, health_address="127.0.0.1:0", metrics_registry=registry)
    c = Controller("probed", lambda key: None, metrics=m.metrics_provider)
    m.add(c)
    mt = ManagerThread(m)
    try:
        assert waiting.wait(5)
        base = m.health_server.url
        assert status(base + "/readyz") == 503
        assert status(base + f"/readyz/{CACHES_SYNCED_CHECK}") == 503
        assert status(base + "/healthz") == 200
        factory.synced.set()
        wait_until(lambda: status(base + "/readyz") == 200)
        c.enqueue("ns/a")
        with urllib.request.urlopen(base + "/metrics", timeout=5) as resp:
            text = resp.read().decode()
        for name in ("controller_runtime_reconcile_total",
                     "controller_runtime_reconcile_errors_total",
                     "controller_runtime_terminal_reconcile_errors_total",
                     "controller_runtime_reconcile_time_seconds",
                     "controller_runtime_active_workers",
                     "controller_runtime_max_concurrent_reconciles", "workqueue_adds_total"):
            assert any(line.startswith(f"# TYPE {name} ") for line in text.splitlines()), name
        wait_until(lambda: registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "probed", "result": "success"}
        ) == 1.0)
    finally:
        mt.stop()
    assert m.metrics_provider is m.metrics_provider


def test_leader_election_adds_a_liveness_check(server, client):
    m = Manager(client, health_address="127.0.0.1:0",
                leader_election=LeaderElectionConfig("probe-lease", "default", **FAST))
    host, _, suffix = m.identity.rpartition("_")
    assert host == socket.gethostname()
    assert str(uuid.UUID(suffix)) == suffix
    mt = ManagerThread(m)
    try:
        wait_until(lambda: m.elected.is_set())
        with urllib.request.urlopen(m.health_server.url + "/healthz?verbose", timeout=5) as r:
            body = r.read().decode()
        assert "[+]leader-election ok" in body.splitlines()
    finally:
        mt.stop()


def test_leader_election_metrics_go_to_the_provider_given(server, client):
    prometheus_client = pytest.importorskip("prometheus_client")
    from informers.leaderelection import PrometheusMetricsProvider, get_provider

    registry = prometheus_client.CollectorRegistry()
    lease = "metrics-lease"
    process_wide = get_provider()
    m = Manager(client, health_address="127.0.0.1:0", metrics_registry=registry,
                leader_election=LeaderElectionConfig(lease, "default", identity="me", **FAST),
                leader_election_metrics_provider=PrometheusMetricsProvider(registry))
    assert get_provider() is process_wide  # nothing process-wide was touched

    def master_status():
        return registry.get_sample_value("leader_election_master_status", {"name": lease})

    assert master_status() == 0.0  # set off when the elector is built
    mt = ManagerThread(m)
    try:
        wait_until(lambda: m.is_leader())
        assert master_status() == 1.0
        with urllib.request.urlopen(m.health_server.url + "/metrics", timeout=5) as resp:
            text = resp.read().decode()
        assert f'leader_election_master_status{{name="{lease}"}} 1.0' in text.splitlines()
    finally:
        mt.stop()
    assert mt.error is None
    assert master_status() == 0.0
    # The default stays the process-wide provider (client-go's SetProvider hook).
    default = Manager(client, leader_election=LeaderElectionConfig("other-lease", "default"))
    assert default.elector is not None
    assert registry.get_sample_value("leader_election_master_status",
                                     {"name": "other-lease"}) is None


# -- construction ------------------------------------------------------------------------------


def test_construction_choices(client):
    m = Manager(client)
    assert isinstance(m.factory, SharedInformerFactory)
    assert m.factory.api_client is client
    assert m.health_server is None
    assert m.elector is None and m.identity is None
    assert Manager(health_address="0").health_server is None
    with pytest.raises(ValueError, match="needs an api_client"):
        Manager(leader_election=LeaderElectionConfig("x", "default"))
    with pytest.raises(LeaderElectionConfigError):
        Manager(client, leader_election=LeaderElectionConfig(
            "x", "default", lease_duration=5.0, renew_deadline=5.0))
    with pytest.raises(ValueError, match="invalid address"):
        Manager(health_address="nowhere")


def test_duplicate_runnable_names_are_made_unique():
    m = Manager()
    m.add_runnable(lambda stop: None, name="job")
    m.add_runnable(lambda stop: None, name="job")
    assert [r.name for r in m._runnables] == ["job", "job#2"]


# -- signals -----------------------------------------------------------------------------------


def test_run_stops_on_sigterm_and_restores_the_handlers():
    before = {s: signal.getsignal(s) for s in SHUTDOWN_SIGNALS}
    record = []
    m = Manager(factory=RecordingFactory(record))

    def send_sigterm(stop):
        os.kill(os.getpid(), signal.SIGTERM)
        stop.wait()
        record.append(("stopped",))

    m.add_runnable(send_sigterm)
    m.run()  # returns once the signal stopped it
    assert record == [("factory.start",), ("stopped",)]
    assert {s: signal.getsignal(s) for s in SHUTDOWN_SIGNALS} == before
