"""A Manager stopped and started again (informers.manager "Restart"), on both servers: fresh
informers, queues, workers, elector and health server each run; the runner's ``with`` block
used twice on one manager; no thread left behind. Also the pytest plugin's ``manager`` fixture
on the real control plane."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import LOOP_THREADS

from informers.client import Client
from informers.clock import FakeClock
from informers.controller import Controller, ControllerBuilder, EnqueueRequestForObject, Request
from informers.errors import AlreadyStartedError, InformerStoppedError
from informers.factory import SharedInformerFactory
from informers.manager import LeaderElectionConfig, Manager
from informers.resources import Resource
from informers.testing.runner import eventually, run_manager

FAST: dict[str, Any] = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.2}


def threads() -> set[threading.Thread]:
    """The live threads on the client side (the embedded server serves each kept-alive
    connection on a thread of its own, which lives as long as the client's pool keeps it)."""
    return {t for t in threading.enumerate()
            if not t.name.startswith(("informers-testing-", *LOOP_THREADS))}


def configmap(name: str, ns: str, value: str = "v") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": {"k": value}}


@pytest.fixture
def setup(any_api_server: Any) -> Iterator[tuple[Manager, Client, str]]:
    api = any_api_server.api_client()
    ns = any_api_server.namespace
    manager = Manager(api, factory=SharedInformerFactory(api, namespace=ns), shutdown_timeout=5.0)
    yield manager, Client(api, field_manager="test-restart"), ns
    api.close()


def test_a_stopped_manager_starts_again_and_reconciles(setup: tuple[Manager, Client, str]) -> None:
    manager, client, ns = setup
    before = threads()
    seen: list[tuple[str, str]] = []  # (request key, the data the cache had)
    builder = ControllerBuilder(manager).for_("configmaps").owns("secrets")

    def reconcile(request: Request) -> None:
        cm = builder.listers.get(request)
        seen.append((request.key, (cm or {}).get("data", {}).get("k", "gone")))

    controller = builder.complete(reconcile)
    client.create(configmap("a", ns, "1"))
    informer = manager.factory.informer_for("configmaps")  # type: ignore[union-attr]
    with run_manager(manager):
        eventually(lambda: (f"{ns}/a", "1") in seen)
    first_queue = controller.queue
    assert first_queue.shutting_down() and informer.is_stopped()
    assert threads() == before

    # Between the runs: a change and a new object; the next run lists them afresh.
    client.patch("configmaps", "a", {"data": {"k": "2"}}, ns)
    client.create(configmap("b", ns, "3"))
    with run_manager(manager):
        eventually(lambda: {(f"{ns}/a", "2"), (f"{ns}/b", "3")} <= set(seen))
        assert controller.queue is not first_queue
        assert manager.factory.informer_for("configmaps") is not informer  # type: ignore[union-attr]
        # the new informers feed the new queue: a change while running is reconciled
        client.patch("configmaps", "b", {"data": {"k": "4"}}, ns)
        eventually(lambda: (f"{ns}/b", "4") in seen)
    assert threads() == before
    # the old informer's cache stayed as it was at its stop
    assert [o["data"]["k"] for o in informer.get_indexer().list()] == ["1"]


def test_the_runner_twice_and_errors_re_raised_on_exit(api_server: Any) -> None:
    api = api_server.api_client()
    before = threads()
    manager = Manager(api, shutdown_timeout=2.0)
    calls: list[int] = []

    def runnable(stop: threading.Event) -> None:
        calls.append(len(calls) + 1)
        if len(calls) == 2:
            raise RuntimeError("second run broke")
        stop.wait()

    manager.add_runnable(runnable, name="counts")
    with run_manager(manager):
        eventually(lambda: calls == [1])
    with pytest.raises(RuntimeError, match="second run broke"), run_manager(manager):
        eventually(lambda: False, timeout=0.3)  # the error is raised at entry or at exit
    with run_manager(manager):  # and a third run works again
        eventually(lambda: calls == [1, 2, 3])
        assert manager.running() and manager.caches_synced()
    assert not manager.running()
    assert threads() == before
    api.close()


def test_leader_election_and_the_health_server_start_over(server: Any) -> None:
    api = server.api_client()
    lease = f"restart-{uuid.uuid4().hex[:8]}"
    manager = Manager(api, health_address="127.0.0.1:0", shutdown_timeout=2.0,
                      leader_election=LeaderElectionConfig(lease, "default", **FAST))
    led: list[bool] = []

    def leader(stop: threading.Event) -> None:
        led.append(manager.is_leader())
        stop.wait()

    manager.add_runnable(leader, needs_leader=True, name="leader")
    before = threads()
    electors, urls = [], []
    for _ in range(2):
        with run_manager(manager):
            eventually(manager.elected.is_set)
            url = manager.health_server.url  # type: ignore[union-attr]
            with urllib.request.urlopen(url + "/readyz?verbose", timeout=5) as resp:
                assert "[+]caches-synced ok" in resp.read().decode()
            with urllib.request.urlopen(url + "/healthz?verbose", timeout=5) as resp:
                assert "[+]leader-election ok" in resp.read().decode()
            record = server.get("leases", "default", lease)
            assert record["spec"]["holderIdentity"] == manager.identity
            electors.append(manager.elector)
            urls.append(url)
        # the lease was released and the server closed at the stop
        assert server.get("leases", "default", lease)["spec"].get("holderIdentity", "") == ""
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(url + "/healthz", timeout=2)
    assert led == [True, True]
    assert electors[0] is not electors[1]
    assert threads() == before
    api.close()


def test_a_restart_is_refused_while_the_last_run_has_not_let_go() -> None:
    clock = FakeClock()
    release = threading.Event()
    manager = Manager(clock=clock, shutdown_timeout=1.0)
    manager.add_runnable(lambda stop: release.wait(30), name="stuck")
    stop = threading.Event()
    thread = threading.Thread(target=manager.start, args=(stop,), daemon=True)
    thread.start()
    try:
        eventually(manager.elected.is_set)
        stop.set()
        eventually(lambda: clock.next_deadline() == 1.0)
        clock.step(1.0)
        thread.join(5)
        assert manager.unstopped == ("stuck",)
        with pytest.raises(AlreadyStartedError, match="cannot start the manager again: "
                           r"runnable\(s\) stuck from the last run still running"):
            manager.start(threading.Event())
        assert not manager.running() and not manager.caches_synced()
    finally:
        release.set()
    eventually(lambda: not any(t.name == "manager-stuck" for t in threading.enumerate()))
    with run_manager(manager):
        eventually(manager.elected.is_set)


def test_a_reconcile_abandoned_by_the_stop_holds_the_restart_back(api_server: Any) -> None:
    api = api_server.api_client()
    manager = Manager(api, shutdown_timeout=2.0)
    release, started = threading.Event(), threading.Event()
    done: list[str] = []

    def reconcile(key: str) -> None:
        if key == "default/slow":
            started.set()
            release.wait(10)
        done.append(key)

    controller = Controller("slow", reconcile, drain_timeout=0.1)
    controller.watch(manager.factory.informer_for("configmaps"),  # type: ignore[union-attr]
                     EnqueueRequestForObject)
    manager.add(controller)
    api_server.create(configmap("slow", "default"))
    with run_manager(manager):
        eventually(started.is_set)
    assert controller.hanging_keys == ("default/slow",)
    with pytest.raises(AlreadyStartedError, match="controller slow: the reconcile of "
                       "default/slow from the last run is still running"), run_manager(manager):
        pass
    release.set()
    eventually(lambda: done == ["default/slow"])
    api_server.create(configmap("fast", "default"))
    with run_manager(manager):  # the controller moved to the newest informers
        eventually(lambda: {"default/slow", "default/fast"} <= set(done[1:]))
    api.close()


def test_a_running_manager_or_controller_is_not_restarted(api_server: Any) -> None:
    api = api_server.api_client()
    manager = Manager(api, shutdown_timeout=2.0)
    controller = ControllerBuilder(manager).for_("configmaps").complete(lambda r: None)
    with run_manager(manager):
        eventually(manager.elected.is_set)
        with pytest.raises(AlreadyStartedError, match="the manager is running"):
            manager.start(threading.Event())
        with pytest.raises(AlreadyStartedError, match="controller configmap is running"):
            controller.reset()
    api.close()


def test_controller_reset_moves_its_watches_to_the_new_informers(api_server: Any) -> None:
    api = api_server.api_client()
    factory = SharedInformerFactory(api)
    informer = factory.informer_for("configmaps")
    keys: list[str] = []
    controller = Controller("c", keys.append)
    controller.watch(informer, EnqueueRequestForObject)
    api_server.create(configmap("x", "default"))
    factory.start()
    stop = threading.Event()
    run = threading.Thread(target=controller.run, args=(stop,))
    run.start()
    eventually(lambda: keys == ["default/x"])
    stop.set()
    run.join()
    factory.shutdown()
    with pytest.raises(InformerStoppedError):
        controller.reset()  # its informer stopped and nothing replaces it
    replaced = factory.reset()
    assert list(replaced) == [informer] and replaced[informer] is not informer
    controller.reset(replaced)
    factory.start()
    stop = threading.Event()
    run = threading.Thread(target=controller.run, args=(stop,))
    run.start()
    eventually(lambda: keys == ["default/x", "default/x"])
    stop.set()
    run.join()
    factory.shutdown()
    api.close()


def test_a_builder_needs_a_manager_with_a_factory() -> None:
    with pytest.raises(ValueError, match="the manager has no informer factory"):
        ControllerBuilder(Manager())


def test_factory_reset_needs_a_shutdown(api_server: Any) -> None:
    api = api_server.api_client()
    factory = SharedInformerFactory(api)
    factory.informer_for("pods")
    with pytest.raises(RuntimeError, match="reset\\(\\) needs a factory that was shut down"):
        factory.reset()
    factory.shutdown()
    api.close()


# -- the pytest plugin's fixtures on the real control plane ------------------------------------


@pytest.mark.real_apiserver
class TestThePluginFixturesOnTheRealControlPlane:
    """``manager`` (informers.testing.pytest_plugin) on the real kube-apiserver, by overriding
    ``api_client`` as the plugin's docstring says."""

    @pytest.fixture
    def api_client(self, real_api_server: Any) -> Iterator[Any]:
        client = real_api_server.api_client()
        yield client
        client.close()

    def test_the_manager_fixture_runs_a_controller_twice(self, manager: Manager,
                                                          api_client: Any,
                                                          real_api_server: Any) -> None:
        assert manager.api_client is api_client
        assert api_client.configuration.host == real_api_server.url
        client = Client(api_client, field_manager="test-plugin")
        ns = f"plugin-{uuid.uuid4().hex[:8]}"
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        try:
            seen: list[str] = []
            ControllerBuilder(manager).for_("configmaps").complete(
                lambda r: seen.append(r.key) if r.namespace == ns else None)
            for name in ("one", "two"):
                with run_manager(manager):
                    client.create(configmap(name, ns))
                    eventually(lambda: f"{ns}/{name}" in seen, timeout=10)  # noqa: B023
        finally:
            client.delete("namespaces", ns)


# -- the runner's errors -----------------------------------------------------------------------


def test_the_runner_says_which_caches_did_not_sync(api_server: Any) -> None:
    api = api_server.api_client()
    before = threads()
    manager = Manager(api, shutdown_timeout=2.0)
    gadgets = Resource("example.com", "v1", "gadgets", "Gadget", namespaced=True)  # not served
    manager.factory.informer_for(gadgets)  # type: ignore[union-attr]
    manager.factory.informer_for("configmaps")  # type: ignore[union-attr]
    with pytest.raises(TimeoutError) as info, run_manager(manager, sync_timeout=0.3):
        pass
    assert str(info.value) == ("the manager's caches did not sync within 0.3s "
                               "(unsynced: gadgets.example.com)")
    assert not manager.running()
    assert threads() == before
    api.close()


def test_the_runner_says_when_the_manager_does_not_stop(api_server: Any) -> None:
    api = api_server.api_client()
    manager = Manager(api, shutdown_timeout=30.0)
    release = threading.Event()
    manager.add_runnable(lambda stop: release.wait(10), name="deaf")
    try:
        with pytest.raises(TimeoutError, match=r"^the manager did not stop within 0.2s$"), \
                run_manager(manager, stop_timeout=0.2):
            pass
    finally:
        release.set()
    eventually(lambda: not manager.running())
    api.close()
