"""The shared informer on its default RealFIFO: atomic relists seen by a concurrent lister, the
store's resourceVersion and read-your-writes (on the embedded and the real API server)."""

from __future__ import annotations

import threading

import pytest
from runtime_drivers import DRIVERS, AsyncDrivenInformer, AsyncServerInformer

from informers.client import list_watch_from_client
from informers.clock import FakeClock
from informers.informer_queue import InformerQueue
from informers.list_watch import ListWatch
from informers.listers import Lister
from informers.real_fifo import RealFIFO
from informers.resource_version import InvalidResourceVersionError
from informers.resources import lookup
from informers.shared_informer import SharedIndexInformer
from informers.wait import wait_for_cache_sync

WAIT = 10.0
PODS = lookup("pods")


def pod(name, rv, gen="a"):
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv,
                         "labels": {"gen": gen}}}


class _Stub:
    def __init__(self, fifo):
        self.fifo = fifo

    def run(self, stop):
        stop.wait()

    def last_sync_resource_version(self):
        return ""


class DrivenInformer(SharedIndexInformer):
    """The reflector replaced by the test, which writes the queue itself."""

    stub: _Stub

    def _new_reflector(self, fifo):
        self.stub = _Stub(fifo)
        return self.stub


def _never(_options):
    raise AssertionError("no list or watch")


@pytest.fixture
def driven():
    made = []

    def start(**kw):
        inf = DrivenInformer(ListWatch(_never, _never, resource=PODS), name="pods", **kw)
        stop = threading.Event()
        t = threading.Thread(target=inf.run, args=(stop,), daemon=True)
        t.start()
        for _ in range(5000):
            if getattr(inf, "stub", None) is not None:
                break
            threading.Event().wait(0.001)
        made.append((stop, t))
        return inf, inf.stub.fifo

    yield start
    for stop, t in made:
        stop.set()
        t.join(WAIT)


@pytest.fixture(params=DRIVERS)
def any_driven(request, driven):
    """``driven`` on every driver: threads, or an async informer on asyncio or trio
    (tests/runtime_drivers.py's AsyncDrivenInformer, whose ``fifo`` writes its queue)."""
    made = []

    def start(**kw):
        if request.param == "threads":
            return driven(**kw)
        inf = AsyncDrivenInformer(request.param, **kw).start()
        made.append(inf)
        return inf, inf.fifo

    yield start
    for inf in made:
        inf.stop()


def test_default_queue_is_the_atomic_real_fifo(driven):
    inf, fifo = driven()
    assert isinstance(fifo, RealFIFO)
    fifo.replace([pod("a", "1")], "1")
    assert wait_for_cache_sync(None, inf.has_synced, timeout=WAIT)
    assert inf.get_indexer().list_keys() == ["ns/a"]


def test_a_lister_never_sees_a_mixed_set_during_a_large_relist(driven):
    inf, fifo = driven()
    lister = Lister(inf.get_indexer(), PODS)
    n = 3000
    fifo.replace([pod(f"a-{i}", str(i + 1), "a") for i in range(n)], str(n))
    assert wait_for_cache_sync(None, inf.has_synced, timeout=WAIT)
    samples: list[tuple[int, frozenset[str]]] = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            objs = lister.list()
            samples.append((len(objs), frozenset(o["metadata"]["labels"]["gen"] for o in objs)))

    reader = threading.Thread(target=sample)
    reader.start()
    try:
        for round_, gen in enumerate("bab"):
            base = (round_ + 2) * n
            fifo.replace([pod(f"{gen}-{i}", str(base + i), gen) for i in range(n)],
                         str(base + n))
            for _ in range(10000):
                if inf.last_store_sync_resource_version() == str(base + n):
                    break
                threading.Event().wait(0.001)
    finally:
        stop.set()
        reader.join(WAIT)
    seen = {(size, gens) for size, gens in samples}
    assert seen <= {(n, frozenset("a")), (n, frozenset("b"))}, seen - {
        (n, frozenset("a")), (n, frozenset("b"))}
    assert len(samples) > 3


def test_store_resource_version_follows_every_applied_event(driven):
    inf, fifo = driven()
    fifo.replace([pod("a", "5")], "7")
    assert wait_for_cache_sync(None, inf.has_synced, timeout=WAIT)
    assert inf.last_store_sync_resource_version() == "7"
    fifo.update(pod("a", "9"))
    assert inf.wait_for_resource_version("9", WAIT)
    assert inf.last_store_sync_resource_version() == "9"
    fifo.delete(pod("a", "11"))
    assert inf.wait_for_resource_version("11", WAIT)
    assert inf.get_indexer().list_keys() == []
    fifo.bookmark("15")
    assert inf.wait_for_resource_version("15", WAIT)


def test_wait_for_resource_version_times_out_on_the_clock_and_rejects_bad_versions(driven):
    clock = FakeClock()
    inf, fifo = driven(clock=clock)
    fifo.replace([pod("a", "5")], "5")
    assert wait_for_cache_sync(None, inf.has_synced, timeout=WAIT)
    result: list[bool] = []
    t = threading.Thread(target=lambda: result.append(inf.wait_for_resource_version("6", 2.0)))
    t.start()
    assert clock.wait_for_waiters(1, WAIT)
    clock.step(2.0)
    t.join(WAIT)
    assert result == [False]
    assert inf.wait_for_resource_version("5", 0) is True
    for bad in ("", "0", "007", "abc"):
        with pytest.raises(InvalidResourceVersionError):
            inf.wait_for_resource_version(bad, 1.0)


def test_classic_delta_fifo_queue_can_be_chosen(driven):
    from informers.delta_fifo import DeltaFIFO

    inf, fifo = driven(queue="DeltaFIFO")
    assert isinstance(fifo, DeltaFIFO)
    fifo.replace([pod("a", "3")], "3")
    assert wait_for_cache_sync(None, inf.has_synced, timeout=WAIT)
    assert inf.last_store_sync_resource_version() == "3"
    with pytest.raises(ValueError):
        SharedIndexInformer(ListWatch(_never, _never, resource=PODS), queue="LIFO")
    assert InformerQueue("RealFIFO") is InformerQueue.REAL_FIFO


class _ThreadedInformer:
    """A pods informer of ``server`` on a thread: the interface the async driver's
    ``AsyncServerInformer`` (tests/runtime_drivers.py) also has."""

    def __init__(self, server, namespace: str) -> None:
        self.api = server.api_client()
        self.inf = SharedIndexInformer(list_watch_from_client(self.api, "pods",
                                                              namespace=namespace), name="pods")
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.inf.run, args=(self.stop_event,),
                                       daemon=True)
        self.thread.start()
        assert wait_for_cache_sync(self.stop_event, self.inf.has_synced, timeout=WAIT)

    def indexer(self):
        return self.inf.get_indexer()

    def wait_for_resource_version(self, rv: str, timeout: float) -> bool:
        return self.inf.wait_for_resource_version(rv, timeout)

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(WAIT)
        self.api.close()


class _AsyncInformer:
    def __init__(self, server, namespace: str, backend: str) -> None:
        self.si = AsyncServerInformer(server, backend, namespace).start()
        self.si.wait_synced()

    def indexer(self):
        return self.si.async_informer.indexer

    def wait_for_resource_version(self, rv: str, timeout: float) -> bool:
        return bool(self.si.portal.call(self.si.async_informer.wait_for_resource_version,
                                        rv, timeout))

    def stop(self) -> None:
        self.si.stop()


@pytest.mark.parametrize("driver", DRIVERS)
def test_read_your_writes_through_the_api_server(any_api_server, driver):
    from kubernetes import client

    server = any_api_server
    ns = server.namespace
    inf = (_ThreadedInformer(server, ns) if driver == "threads"
           else _AsyncInformer(server, ns, driver))
    api = server.api_client()
    try:
        v1 = client.CoreV1Api(api)
        lister = Lister(inf.indexer(), PODS)
        for i in range(3):
            created = v1.create_namespaced_pod(ns, {
                "metadata": {"name": f"ryw-{i}"},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            })
            assert inf.wait_for_resource_version(created.metadata.resource_version, WAIT)
            assert lister.pods(ns).get(f"ryw-{i}")["metadata"]["resourceVersion"] == (
                created.metadata.resource_version)
        gone = v1.delete_namespaced_pod("ryw-0", ns, grace_period_seconds=0)
        rv = gone.metadata.resource_version if hasattr(gone, "metadata") else None
        if rv:
            assert inf.wait_for_resource_version(rv, WAIT)
        # a version far ahead is not reached: False after the timeout
        assert inf.wait_for_resource_version(str(10**15), 0.05) is False
        with pytest.raises(InvalidResourceVersionError):
            inf.wait_for_resource_version("not-a-version", 0.05)
    finally:
        inf.stop()
        api.close()


def test_controller_reconciles_only_after_its_handler_received_the_initial_list(driven):
    """controller-runtime v0.23 (pkg/internal/source/kind.go) waits for the handler
    registration's HasSynced, not only the informer's: the informer is synced once its cache
    holds the list, the registration once this handler was handed every initial add."""
    from informers.controller import Controller

    inf, fifo = driven()
    gate = threading.Event()
    delivered: list[str] = []
    reconciled: list[tuple[str, int]] = []

    class SlowEnqueue:
        def __init__(self, controller):
            self.controller = controller

        def on_add(self, obj, is_in_initial_list):
            gate.wait(WAIT)  # a slow handler: the informer syncs long before it is done
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            delivered.append(key)
            self.controller.enqueue(key)

        def on_update(self, old, new):
            pass

        def on_delete(self, obj):
            pass

    ctrl = Controller("slow", lambda key: reconciled.append((key, len(delivered))))
    ctrl.watch(inf, SlowEnqueue)
    stop = threading.Event()
    runner = threading.Thread(target=ctrl.run, args=(stop,), daemon=True)
    runner.start()
    try:
        fifo.replace([pod("a", "1"), pod("b", "2"), pod("c", "3")], "3")
        assert wait_for_cache_sync(None, inf.has_synced, timeout=WAIT)
        threading.Event().wait(0.05)  # the controller had the chance to start early
        assert reconciled == [] and delivered == []
        gate.set()
        for _ in range(5000):
            if len(reconciled) == 3:
                break
            threading.Event().wait(0.001)
        # every reconcile started after all three initial adds were delivered
        assert sorted(reconciled) == [("ns/a", 3), ("ns/b", 3), ("ns/c", 3)]
    finally:
        gate.set()
        stop.set()
        runner.join(WAIT)


def test_a_named_informer_publishes_the_fifo_metrics_client_go_names(any_driven):
    prometheus_client = pytest.importorskip("prometheus_client")
    from informers.fifo_metrics import set_informer_metrics_provider
    from informers.fifo_prometheus_metrics import PrometheusInformerMetricsProvider

    registry = prometheus_client.CollectorRegistry()
    previous = set_informer_metrics_provider(PrometheusInformerMetricsProvider(registry))
    try:
        inf, fifo = any_driven()
        fifo.replace([pod("a", "1")], "1")
        fifo.update(pod("a", "2"))
        assert inf.wait_for_resource_version("2", WAIT)
    finally:
        set_informer_metrics_provider(previous)
    labels = {"name": "pods", "group": "", "version": "v1", "resource": "pods"}
    assert registry.get_sample_value("informer_queued_items", labels) == 0
    count = registry.get_sample_value("informer_processing_latency_seconds_count", labels)
    assert count is not None and count >= 2


def test_watch_events_are_applied_and_synchronous_handlers_called_on_the_producer_thread(
    driven,
):
    """The fast paths on the default queue: when the process loop is idle, a watch event is
    applied by the thread that queued it (direct hand-off), and a synchronous handler runs
    right there, before the producer's call returns."""
    inf, fifo = driven()
    calls: list[tuple[str, str]] = []

    class Enqueue:
        def on_add(self, obj, is_in_initial_list):
            calls.append((threading.current_thread().name, obj["metadata"]["name"]))

        def on_update(self, old, new):
            calls.append((threading.current_thread().name, new["metadata"]["name"]))

        def on_delete(self, obj):
            pass

    inf.add_event_handler(Enqueue(), synchronous=True)
    fifo.replace([pod("a", "1")], "1")
    assert wait_for_cache_sync(None, inf.has_synced, timeout=WAIT)
    for _ in range(5000):  # the process loop waits in pop_batch again
        if fifo._idle:
            break
        threading.Event().wait(0.001)
    me = threading.current_thread().name
    fifo.update(pod("a", "2"))
    assert calls[-1] == (me, "a")  # already called, on this thread
    assert inf.last_store_sync_resource_version() == "2"
