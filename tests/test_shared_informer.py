"""Tests for informers.shared_informer.

Most tests drive the informer's DeltaFIFO directly, playing the reflector (a stub whose
``run`` only waits for stop), so every delta is chosen by the test. The end-to-end tests at
the bottom go through an API server with the official client: the embedded one and the real
kube-apiserver (``any_api_server``, informers scoped to the test's namespace), or the embedded
one alone where they need its fault injection, request log or delays.
"""

from __future__ import annotations

import copy
import logging
import os
import signal
import threading
import time

import pytest
from runtime_drivers import DRIVERS, AsyncDrivenInformer, AsyncServerInformer

from informers.client import list_watch_from_client
from informers.clock import FakeClock
from informers.delta_fifo import DeltaFIFO
from informers.errors import (
    IndexConflictError,
    InformerStartedError,
    InformerStoppedError,
)
from informers.handlers import ResourceEventHandlerFuncs
from informers.informer_queue import InformerQueue
from informers.keys import NAMESPACE_INDEX, DeletedFinalStateUnknown, meta_namespace_index_func
from informers.list_watch import ListWatch
from informers.memory import MemoryTuning
from informers.resources import lookup
from informers.shared_informer import (
    MINIMUM_RESYNC_PERIOD,
    SharedIndexInformer,
    strip_managed_fields,
)

WAIT = 10.0


class Recorder:
    """A handler recording ``(kind, ...)`` tuples; can block inside a call until released."""

    def __init__(self, block_on: str | None = None) -> None:
        self.events: list[tuple] = []
        self.cond = threading.Condition()
        self.block_on = block_on
        self.entered = threading.Event()
        self.release = threading.Event()

    def _record(self, event: tuple, obj: object) -> None:
        if self.block_on is not None and _name(obj) == self.block_on:
            self.entered.set()
            assert self.release.wait(WAIT)
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def on_add(self, obj, is_in_initial_list):
        self._record(("add", _name(obj), _rv(obj), is_in_initial_list), obj)

    def on_update(self, old, new):
        self._record(("update", _name(new), _rv(old), _rv(new)), new)

    def on_delete(self, obj):
        if isinstance(obj, DeletedFinalStateUnknown):
            self._record(("delete-unknown", obj.key, _rv(obj.obj)), obj)
        else:
            self._record(("delete", _name(obj), _rv(obj)), obj)

    def wait_for(self, count: int) -> list[tuple]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.events) >= count, WAIT), self.events
            return list(self.events)


def _name(obj) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return obj["metadata"]["name"]


def _rv(obj) -> str | None:
    if obj is None:
        return None
    return obj["metadata"].get("resourceVersion")


def pod(name: str, rv: str, ns: str = "ns", **extra) -> dict:
    meta = {"name": name, "namespace": ns, "resourceVersion": rv}
    meta.update(extra)
    return {"metadata": meta, "spec": {}}


class StubReflector:
    """Stands in for the reflector: the test writes the FIFO itself."""

    def __init__(self, fifo: DeltaFIFO, should_resync) -> None:
        self.fifo = fifo
        self.should_resync = should_resync
        self.rv = ""

    def run(self, stop: threading.Event) -> None:
        stop.wait()

    def last_sync_resource_version(self) -> str:
        return self.rv


class DrivenInformer(SharedIndexInformer):
    stub: StubReflector

    def _new_reflector(self, fifo):
        self.stub = StubReflector(fifo, self._processor.should_resync)
        return self.stub


def _unused_list_watch() -> ListWatch:
    def fail(_options):
        raise AssertionError("the stub reflector never lists or watches")

    return ListWatch(fail, fail, resource=lookup("pods"))


class Running:
    """Runs an informer on a thread; ``stop()`` ends it and joins."""

    def __init__(self, informer: SharedIndexInformer) -> None:
        self.informer = informer
        self.stop_event = threading.Event()
        self.thread = threading.Thread(
            target=informer.run, args=(self.stop_event,), name="test-informer-run", daemon=True
        )
        self.thread.start()
        for _ in range(10000):
            if informer.has_started() and getattr(informer, "stub", None) is not None:
                break
            threading.Event().wait(0.001)

    @property
    def fifo(self) -> DeltaFIFO:
        return self.informer.stub.fifo  # type: ignore[attr-defined]

    def drain(self) -> None:
        """Wait until the process loop has applied everything queued."""
        for _ in range(10000):
            if len(self.fifo) == 0 and self.informer._block_deltas.acquire(timeout=WAIT):
                self.informer._block_deltas.release()
                if len(self.fifo) == 0:
                    return
            threading.Event().wait(0.001)
        raise AssertionError("FIFO not drained")

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()


def _maker(runtime: str, compact: bool, running: list):
    """``factory(start=True, **kw) -> (informer, running or None)`` on ``runtime``; what it
    starts is appended to ``running`` (the compact cache needs the RealFIFO: a DeltaFIFO
    informer stays plain)."""

    def factory(start=True, **kw):
        if str(kw.get("queue", InformerQueue.REAL_FIFO)) == str(InformerQueue.REAL_FIFO):
            kw.setdefault("compact", compact)
        if runtime == "threads":
            kw.setdefault("name", "pods")
            inf = DrivenInformer(_unused_list_watch(), **kw)
        else:
            inf = AsyncDrivenInformer(runtime, **kw)
            running.append(inf)
        if not start:
            return inf, None
        r = run_informer(inf)
        running.append(r)
        return inf, r

    return factory


@pytest.fixture(params=[False, True], ids=["plain", "compact"])
def make(request):
    """Makes threaded informers; every test using it runs on a plain and on a compact cache."""
    running: list = []
    yield _maker("threads", request.param, running)
    for r in running:
        r.stop()


@pytest.fixture(params=[(d, c) for d in DRIVERS for c in (False, True)],
                ids=[f"{d}-{'compact' if c else 'plain'}" for d in DRIVERS for c in (False, True)])
def any_make(request):
    """``make`` on every driver: the threaded informer, and the async one on asyncio and on
    trio (tests/runtime_drivers.py's AsyncDrivenInformer, the same surface), each with a plain
    and a compact cache. Start an unstarted one with :func:`run_informer`."""
    running: list = []
    yield _maker(*request.param, running)
    for r in running:
        r.stop()


def run_informer(inf):
    """Start a ``make``/``any_make`` informer: a :class:`Running` (or the async one itself)."""
    if isinstance(inf, AsyncDrivenInformer):
        return inf.start()
    return Running(inf)


# -- the flow: list, watch events, fan-out --------------------------------------------------------


@pytest.mark.parametrize("queue", list(InformerQueue))
def test_initial_list_then_events_fan_out_in_order_to_every_handler(make, queue) -> None:
    inf, _ = make(start=False, queue=queue)
    a, b = Recorder(), Recorder()
    reg_a = inf.add_event_handler(a)
    reg_b = inf.add_event_handler(ResourceEventHandlerFuncs(
        on_add=lambda o, initial: b.on_add(o, initial),
        on_update=b.on_update,
        on_delete=b.on_delete,
    ))
    assert not inf.has_synced() and not reg_a.has_synced()
    r = Running(inf)
    try:
        r.fifo.replace([pod("p1", "10"), pod("p2", "11")], "11")
        r.fifo.update(pod("p1", "12"))
        r.fifo.add(pod("p3", "13"))
        r.fifo.delete(pod("p2", "14"))
        if queue is InformerQueue.DELTA_FIFO:
            # DeltaFIFO order: keys in first-queued order, each key's deltas together.
            expected = [
                ("add", "p1", "10", True),
                ("update", "p1", "10", "12"),
                ("add", "p2", "11", True),
                ("delete", "p2", "14"),
                ("add", "p3", "13", False),
            ]
        else:  # RealFIFO: the order the reflector reported
            expected = [
                ("add", "p1", "10", True),
                ("add", "p2", "11", True),
                ("update", "p1", "10", "12"),
                ("add", "p3", "13", False),
                ("delete", "p2", "14"),
            ]
        assert a.wait_for(5) == expected
        assert b.wait_for(5) == expected
        assert inf.has_synced() and reg_a.has_synced() and reg_b.has_synced()
        assert sorted(inf.get_store().list_keys()) == ["ns/p1", "ns/p3"]
        assert inf.get_indexer().get_by_key("ns/p1")["metadata"]["resourceVersion"] == "12"
    finally:
        r.stop()


def test_cache_is_written_before_the_handler_is_notified(make) -> None:
    inf, r = make()
    seen: list[object] = []
    cond = threading.Condition()

    def record(value: object) -> None:
        with cond:
            seen.append(value)
            cond.notify_all()

    def wait(n: int) -> None:
        with cond:
            assert cond.wait_for(lambda: len(seen) == n, WAIT)

    cached = inf.get_indexer().get_by_key
    inf.add_event_handler(ResourceEventHandlerFuncs(
        on_add=lambda o: record(cached("ns/x") == o),
        on_update=lambda old, new: record(cached("ns/x") == new),
        on_delete=lambda o: record(cached("ns/x")),
    ))
    # One event at a time: each handler call happens before the next event is queued.
    r.fifo.replace([pod("x", "1")], "1")
    wait(1)
    r.fifo.update(pod("x", "2"))
    wait(2)
    r.fifo.delete(pod("x", "3"))
    wait(3)
    assert seen == [True, True, None]


def test_slow_handler_blocks_neither_other_handlers_nor_the_process_loop(make) -> None:
    inf, r = make()
    slow, fast = Recorder(block_on="p0"), Recorder()
    inf.add_event_handler(slow)
    inf.add_event_handler(fast)
    r.fifo.replace([], "1")
    r.fifo.add(pod("p0", "2"))
    assert slow.entered.wait(WAIT)
    for i in range(1, 200):
        r.fifo.add(pod(f"p{i}", str(i + 2)))
    # The process loop keeps applying while the slow handler is stuck.
    r.drain()
    assert len(inf.get_store().list_keys()) == 200
    assert len(fast.wait_for(200)) == 200
    assert slow.events == []
    slow.release.set()
    assert [e[1] for e in slow.wait_for(200)] == [f"p{i}" for i in range(200)]


def test_raising_handler_is_logged_and_keeps_receiving(make, caplog) -> None:
    inf, r = make()
    got: list[str] = []

    def add(obj):
        got.append(_name(obj))
        if _name(obj) == "bad":
            raise RuntimeError("boom")

    reg = inf.add_event_handler(ResourceEventHandlerFuncs(on_add=add))
    with caplog.at_level(logging.ERROR, logger="informers.processor_listener"):
        r.fifo.replace([pod("bad", "1"), pod("good", "2")], "2")
        r.fifo.add(pod("later", "3"))
        r.drain()
        for _ in range(1000):
            if len(got) == 3:
                break
            threading.Event().wait(0.005)
    assert got == ["bad", "good", "later"]
    assert reg.has_synced()  # the failed initial add counts as delivered
    assert ["ns/bad" in rec.getMessage() for rec in caplog.records] == [True]


def test_is_in_initial_list_only_for_the_first_list(make) -> None:
    inf, r = make()
    rec = Recorder()
    inf.add_event_handler(rec)
    r.fifo.replace([pod("a", "1")], "1")
    r.drain()
    r.fifo.replace([pod("a", "1"), pod("b", "2")], "2")  # a relist: b is new, not initial
    assert rec.wait_for(3) == [
        ("add", "a", "1", True), ("update", "a", "1", "1"), ("add", "b", "2", False)]


# -- late handlers --------------------------------------------------------------------------------


def test_late_handler_gets_synthetic_adds_before_later_events(make) -> None:
    inf, r = make()
    r.fifo.replace([pod("a", "1"), pod("b", "2")], "2")
    r.drain()
    assert inf.has_synced()
    late = Recorder()
    reg = inf.add_event_handler(late)
    r.fifo.update(pod("a", "3"))
    events = late.wait_for(3)
    assert sorted(events[:2]) == [("add", "a", "1", True), ("add", "b", "2", True)]
    assert events[2] == ("update", "a", "1", "3")
    assert reg.has_synced()


def test_late_handler_under_concurrent_events_sees_a_consistent_history(make) -> None:
    inf, r = make()
    names = [f"p{i}" for i in range(20)]
    r.fifo.replace([pod(n, "0") for n in names], "0")
    r.drain()
    done = threading.Event()

    def writer() -> None:
        rv = 1
        while not done.is_set() and rv < 3000:
            r.fifo.update(pod(names[rv % 20], str(rv)))
            rv += 1

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    threading.Event().wait(0.02)
    late = Recorder()
    reg = inf.add_event_handler(late)
    threading.Event().wait(0.02)
    done.set()
    t.join(WAIT)
    r.drain()
    for _ in range(2000):
        if reg.has_synced() and late.events and len(late.events) >= 20:
            break
        threading.Event().wait(0.005)
    events = late.wait_for(20)
    # First one synthetic add per cached object, then, per key, a gap-free chain of updates
    # starting from the version the add carried, ending at the cached version.
    adds = events[:20]
    assert sorted(e[1] for e in adds) == sorted(names)
    assert all(e[0] == "add" and e[3] is True for e in adds)
    last = {e[1]: e[2] for e in adds}
    for e in events[20:]:
        assert e[0] == "update"
        assert e[2] == last[e[1]], (e, last[e[1]])
        last[e[1]] = e[3]
    assert last == {n: inf.get_indexer().get_by_key("ns/" + n)["metadata"]["resourceVersion"]
                    for n in names}


def test_late_handler_registration_synced_only_after_its_synthetic_adds(make) -> None:
    inf, r = make()
    r.fifo.replace([pod("a", "1"), pod("b", "2")], "2")
    r.drain()
    late = Recorder(block_on="b")
    reg = inf.add_event_handler(late)
    assert inf.has_synced()
    assert not reg.has_synced()
    late.release.set()
    late.wait_for(2)
    for _ in range(1000):
        if reg.has_synced():
            break
        threading.Event().wait(0.001)
    assert reg.has_synced()


def test_same_handler_twice_is_two_registrations(make) -> None:
    inf, r = make()
    rec = Recorder()
    reg1 = inf.add_event_handler(rec)
    reg2 = inf.add_event_handler(rec)
    assert reg1 is not reg2
    r.fifo.replace([pod("a", "1")], "1")
    assert rec.wait_for(2) == [("add", "a", "1", True)] * 2


# -- removal --------------------------------------------------------------------------------------


def test_remove_event_handler_idempotent_and_ignores_foreign(make) -> None:
    inf, r = make()
    other, _ = make(start=False)
    rec, kept = Recorder(), Recorder()
    reg = inf.add_event_handler(rec)
    inf.add_event_handler(kept)
    foreign = other.add_event_handler(Recorder())
    inf.remove_event_handler(foreign)  # ignored
    inf.remove_event_handler("not a registration")  # ignored
    r.fifo.replace([pod("a", "1")], "1")
    rec.wait_for(1)
    inf.shut_down_event_handler(reg)
    inf.remove_event_handler(reg)  # idempotent
    inf.shut_down_event_handler(reg)
    r.fifo.add(pod("b", "2"))
    assert kept.wait_for(2)[-1] == ("add", "b", "2", False)
    assert rec.events == [("add", "a", "1", True)]
    assert len(other._processor.listeners()) == 1


def test_blocking_removal_waits_for_the_call_in_progress(make) -> None:
    inf, r = make()
    rec = Recorder(block_on="a")
    reg = inf.add_event_handler(rec)
    r.fifo.replace([pod("a", "1")], "1")
    r.fifo.add(pod("b", "2"))
    assert rec.entered.wait(WAIT)
    done = threading.Event()

    def remove() -> None:
        inf.shut_down_event_handler(reg)
        done.set()

    t = threading.Thread(target=remove, daemon=True)
    t.start()
    assert not done.wait(0.05)  # still inside the handler
    rec.release.set()
    assert done.wait(WAIT)
    assert rec.events == [("add", "a", "1", True)]  # "b" was dropped


def test_shut_down_from_inside_the_handler_does_not_deadlock(make) -> None:
    inf, r = make()
    regs: list = []
    got: list[str] = []

    def add(obj):
        got.append(_name(obj))
        inf.shut_down_event_handler(regs[0])

    regs.append(inf.add_event_handler(ResourceEventHandlerFuncs(on_add=add)))
    r.fifo.replace([pod("a", "1"), pod("b", "2")], "2")
    r.drain()
    regs[0]._listener.join()
    assert got == ["a"]


def test_remove_works_on_a_stopped_informer(make) -> None:
    inf, r = make()
    reg = inf.add_event_handler(Recorder())
    r.stop()
    assert inf.is_stopped()
    inf.remove_event_handler(reg)
    inf.shut_down_event_handler(reg)


# -- resync and relist ----------------------------------------------------------------------------


def test_resync_delivers_only_to_handlers_whose_period_is_due(any_make) -> None:
    clock = FakeClock(start=1000.0)
    inf, _ = any_make(start=False, resync_period=10.0, clock=clock)
    every10, never, every30 = Recorder(), Recorder(), Recorder()
    inf.add_event_handler(every10)  # the informer's default: 10 s
    inf.add_event_handler(never, resync_period=0)
    inf.add_event_handler(every30, resync_period=30)
    r = run_informer(inf)
    try:
        obj = pod("a", "1")
        r.fifo.replace([obj], "1")
        for rec in (every10, never, every30):
            rec.wait_for(1)
        clock.step(10)
        assert r.informer.stub.should_resync() is True  # the reflector's tick
        r.fifo.resync()
        assert every10.wait_for(2)[1] == ("update", "a", "1", "1")
        clock.step(10)  # t+20: every10 again, every30 not yet
        assert r.informer.stub.should_resync() is True
        r.fifo.resync()
        assert every10.wait_for(3)[2] == ("update", "a", "1", "1")
        clock.step(10)  # t+30: both
        assert r.informer.stub.should_resync() is True
        r.fifo.resync()
        assert every10.wait_for(4)[3] == ("update", "a", "1", "1")
        assert every30.wait_for(2)[1] == ("update", "a", "1", "1")
        clock.step(5)  # t+35: nobody due; the tick says so and the store is not resynced
        assert r.informer.stub.should_resync() is False
        r.fifo.add(pod("b", "2"))  # a marker behind everything
        every10.wait_for(5)
        never.wait_for(2)
        every30.wait_for(3)
        assert never.events == [("add", "a", "1", True), ("add", "b", "2", False)]
        assert len(every10.events) == 5 and len(every30.events) == 3
        # the resync passed the cached object itself as old and new
    finally:
        r.stop()


def test_relist_of_unchanged_objects_reaches_a_listener_until_a_resync_tick_unmarks_it(
    any_make,
) -> None:
    """client-go sharedProcessor: a listener starts marked syncing (addListener sets it true),
    so sync updates reach it until the first resync tick (shouldResync) decides; with no
    resync period there is no tick (tests/test_clientgo_order_parity.py shows client-go
    v0.36.3 delivering them)."""
    clock = FakeClock()
    inf, _ = any_make(start=False, resync_period=30.0, clock=clock)
    no_resync, resyncing = Recorder(), Recorder()
    inf.add_event_handler(no_resync, resync_period=0)
    inf.add_event_handler(resyncing)
    r = run_informer(inf)
    try:
        r.fifo.replace([pod("a", "1"), pod("b", "2")], "2")
        no_resync.wait_for(2)
        # A relist: a unchanged, b changed. Both listeners are still marked syncing.
        r.fifo.replace([pod("a", "1"), pod("b", "3")], "3")
        for rec in (no_resync, resyncing):
            assert rec.wait_for(4)[2:] == [("update", "a", "1", "1"), ("update", "b", "2", "3")]
        # The resync tick marks "resyncing" due and unmarks "no_resync" (period 0).
        clock.step(30)
        assert r.informer.stub.should_resync() is True
        r.fifo.replace([pod("a", "1"), pod("b", "3")], "3")
        r.fifo.add(pod("marker", "4"))
        assert [e[:2] for e in resyncing.wait_for(7)[4:]] == [
            ("update", "a"),
            ("update", "b"),
            ("add", "marker"),
        ]
        assert no_resync.wait_for(5)[4] == ("add", "marker", "4", False)
        assert len(no_resync.events) == 5
    finally:
        r.stop()


def test_missed_delete_found_by_relist_is_a_deleted_final_state_unknown(make) -> None:
    inf, r = make()
    rec = Recorder()
    inf.add_event_handler(rec)
    r.fifo.replace([pod("a", "1"), pod("b", "2")], "2")
    r.drain()
    r.fifo.replace([pod("a", "1")], "5")
    assert rec.wait_for(3)[2] == ("delete-unknown", "ns/b", "2")
    assert inf.get_store().list_keys() == ["ns/a"]


def test_resync_period_arithmetic_before_and_after_start(any_make, caplog) -> None:
    inf, _ = any_make(start=False, resync_period=30.0)
    r30 = inf.add_event_handler(Recorder())
    r10 = inf.add_event_handler(Recorder(), resync_period=10)
    assert inf.resync_check_period == 10.0  # lowered before start
    assert (r30._listener.resync_period, r10._listener.resync_period) == (30.0, 10.0)
    with caplog.at_level(logging.WARNING, logger="informers.informer_rules"):
        tiny = inf.add_event_handler(Recorder(), resync_period=0.2)
    assert MINIMUM_RESYNC_PERIOD == 1.0
    assert tiny._listener.resync_period == 1.0
    assert inf.resync_check_period == 1.0
    assert "too small" in caplog.records[0].getMessage()
    r = run_informer(inf)
    try:
        after = inf.add_event_handler(Recorder(), resync_period=0.5)
        assert after._listener.resync_period == 1.0
        assert inf.resync_check_period == 1.0
    finally:
        r.stop()

    inf2, _ = any_make(start=False, resync_period=10.0)
    r2 = run_informer(inf2)
    try:
        late = inf2.add_event_handler(Recorder(), resync_period=5)
        assert late._listener.resync_period == 10.0  # raised to the check period after start
        assert inf2.resync_check_period == 10.0
    finally:
        r2.stop()

    never, _ = any_make(start=False, resync_period=0.0)
    h = never.add_event_handler(Recorder(), resync_period=5)
    assert h._listener.resync_period == 0.0  # an informer created with 0 never resyncs
    assert never.resync_check_period == 0.0


# -- transform ------------------------------------------------------------------------------------


def test_transform_applied_exactly_once_per_object(make) -> None:
    calls: list[str] = []

    def transform(obj):
        calls.append(_name(obj))
        obj["metadata"]["transformed"] = obj["metadata"].get("transformed", 0) + 1
        return obj

    clock = FakeClock()
    inf, _ = make(start=False, transform=transform, resync_period=1.0, clock=clock)
    rec = Recorder()
    inf.add_event_handler(rec)
    r = Running(inf)
    try:
        r.fifo.replace([pod("a", "1"), pod("b", "2")], "2")
        r.fifo.update(pod("a", "3"))
        r.fifo.delete(pod("b", "4"))
        r.drain()
        clock.step(1)
        assert inf.stub.should_resync()
        r.fifo.resync()  # Sync deltas: not transformed again
        r.fifo.replace([], "5")  # tombstone for a: not transformed
        rec.wait_for(6)
        assert calls == ["a", "b", "a", "b"]
        assert all(
            o["metadata"]["transformed"] == 1 for o in inf.get_store().list()
        )
    finally:
        r.stop()


def test_managed_fields_dropped_by_default_and_transform_none_keeps_them(make) -> None:
    mf = [{"manager": "kubectl", "operation": "Apply"}]
    inf, r = make()
    r.fifo.replace([pod("a", "1", managedFields=copy.deepcopy(mf))], "1")
    r.drain()
    assert "managedFields" not in inf.get_indexer().get_by_key("ns/a")["metadata"]

    keep, r2 = make(transform=None)
    r2.fifo.replace([pod("a", "1", managedFields=copy.deepcopy(mf))], "1")
    r2.drain()
    assert keep.get_indexer().get_by_key("ns/a")["metadata"]["managedFields"] == mf


def test_strip_managed_fields_tolerates_odd_objects() -> None:
    assert strip_managed_fields("x") == "x"
    assert strip_managed_fields({"metadata": None}) == {"metadata": None}
    assert strip_managed_fields({"metadata": {"managedFields": []}}) == {"metadata": {}}


def test_set_transform_only_before_start(make) -> None:
    inf, _ = make(start=False)
    seen: list[str] = []
    inf.set_transform(lambda o: seen.append(_name(o)) or o)
    r = Running(inf)
    try:
        with pytest.raises(InformerStartedError, match="informer has already started"):
            inf.set_transform(None)
        with pytest.raises(InformerStartedError):
            inf.set_watch_error_handler(lambda _r, _e: None)
        r.fifo.replace([pod("a", "1")], "1")
        r.drain()
        assert seen == ["a"]
    finally:
        r.stop()


# -- indexers, lifecycle --------------------------------------------------------------------------


def test_add_indexers_at_any_time_until_stopped(make) -> None:
    inf, r = make(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    r.fifo.replace([pod("a", "1", ns="x", labels={"app": "web"}), pod("b", "2", ns="y")], "2")
    r.drain()
    inf.add_indexers({"app": lambda o: [o["metadata"].get("labels", {}).get("app", "")]})
    assert [_name(o) for o in inf.get_indexer().by_index("app", "web")] == ["a"]
    assert [_name(o) for o in inf.get_indexer().by_index(NAMESPACE_INDEX, "y")] == ["b"]
    with pytest.raises(IndexConflictError):
        inf.add_indexers({"app": meta_namespace_index_func})
    r.stop()
    with pytest.raises(InformerStoppedError, match="stopped already"):
        inf.add_indexers({"other": meta_namespace_index_func})
    with pytest.raises(InformerStoppedError, match="was not added to shared informer"):
        inf.add_event_handler(Recorder())


def test_run_twice_warns_and_returns(make, caplog) -> None:
    inf, _ = make()
    with caplog.at_level(logging.WARNING, logger="informers.shared_informer"):
        inf.run(threading.Event())  # returns at once
    assert "more than once" in caplog.records[0].getMessage()
    assert inf.last_sync_resource_version() == ""
    inf.stub.rv = "42"
    assert inf.last_sync_resource_version() == "42"


def test_stop_drains_pending_notifications_and_joins_every_thread(make) -> None:
    before = {t.name for t in threading.enumerate()}
    inf, _ = make(start=False, name="drainme")
    slow = Recorder(block_on="p0")
    inf.add_event_handler(slow)
    inf.add_event_handler(Recorder())
    r = Running(inf)
    r.fifo.replace([pod(f"p{i}", str(i)) for i in range(50)], "50")
    assert slow.entered.wait(WAIT)
    r.drain()
    during = {t.name for t in threading.enumerate()} - before
    assert {
        "informer-drainme-handler-1",
        "informer-drainme-handler-2",
        "informer-drainme-process",
        "test-informer-run",
    } <= during
    stopper = threading.Thread(target=r.stop, daemon=True)
    stopper.start()
    threading.Event().wait(0.05)
    assert stopper.is_alive()  # run() waits for the stuck handler to drain its queue
    slow.release.set()
    stopper.join(WAIT)
    assert inf.is_stopped()
    assert len(slow.events) == 50  # everything queued was delivered before run returned
    assert {t.name for t in threading.enumerate()} - before == set()


def test_mutation_detector_catches_a_handler_editing_the_cache(any_make) -> None:
    failures: list[str] = []
    clock = FakeClock()
    inf, _ = any_make(
        start=False, detect_mutations=True, mutation_failure_func=failures.append, clock=clock
    )
    inf.add_event_handler(
        ResourceEventHandlerFuncs(on_add=lambda o: o["metadata"].setdefault("labels", {}))
    )
    r = run_informer(inf)
    r.fifo.replace([pod("a", "1")], "1")
    r.drain()
    r.stop()  # the detector compares one last time on stop
    assert failures == ["cache pods modified: ns/a"]


@pytest.mark.parametrize(("queue", "message"), [
    (InformerQueue.DELTA_FIFO, "failed to apply the deltas of ns/bad"),
    (InformerQueue.REAL_FIFO, "relist: leaving out ns/bad, whose index values cannot be"),
])
def test_handle_deltas_failure_is_logged_with_the_key(make, caplog, queue, message) -> None:
    def boom(obj):
        if obj["metadata"]["name"] == "bad":
            raise ValueError("no index for you")
        return [""]

    inf, r = make(indexers={"x": boom}, queue=queue)
    rec = Recorder()
    inf.add_event_handler(rec)
    with caplog.at_level(logging.ERROR):
        r.fifo.replace([pod("bad", "1"), pod("good", "2")], "2")
        r.drain()
    assert rec.wait_for(1) == [("add", "good", "2", True)]
    assert inf.has_synced()
    assert inf.get_indexer().list_keys() == ["ns/good"]
    assert message in caplog.records[0].getMessage()


# -- end to end through an API server and the official client -----------------------------------


@pytest.fixture
def server(any_api_server):
    return any_api_server


@pytest.fixture
def embedded_server():
    from informers.testing import ApiServer

    with ApiServer() as srv:
        yield srv


def _server_thread(name: str) -> bool:
    return name.startswith("informers-testing") or "process_request_thread" in name


def _api_pod(name: str, **labels_: str) -> dict:
    return {
        "metadata": {"name": name, "labels": dict(labels_)},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


class ServerInformer:
    """A real informer (reflector included) on the server's pods, run on a thread."""

    def __init__(self, server, namespace: str | None = None, **kw) -> None:
        self.api = server.api_client()
        kw.setdefault("name", "pods")
        self.informer = SharedIndexInformer(
            list_watch_from_client(self.api, "pods", namespace=namespace), **kw)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(
            target=self.informer.run, args=(self.stop_event,), name="test-informer-run",
            daemon=True,
        )

    def start(self) -> ServerInformer:
        self.thread.start()
        return self

    def wait_synced(self) -> None:
        from informers.wait import wait_for_cache_sync

        assert wait_for_cache_sync(self.stop_event, self.informer.has_synced, timeout=WAIT)

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()
        self.api.close()


def _informers_of(server, driver: str):
    """Makes informers of ``server``'s pods on ``driver``: ``"threads"`` (a ServerInformer),
    ``"asyncio"`` or ``"trio"`` (tests/runtime_drivers.py's AsyncServerInformer, the same
    interface over informers.aio); stops those still running after the test."""
    made: list = []

    def factory(**kw):
        ns = getattr(server, "namespace", None)
        if driver == "threads":
            si = ServerInformer(server, ns, **kw)
        else:
            si = AsyncServerInformer(server, driver, ns, **kw)
        made.append(si)
        return si

    yield factory
    for si in made:
        if isinstance(si, ServerInformer):
            if si.thread.is_alive():
                si.stop()
        else:
            si.stop()


@pytest.fixture(params=DRIVERS)
def server_informer(server, request):
    """Informers of ``server`` (embedded or real) on each driver: the behaviour the threaded
    and the async informers share."""
    yield from _informers_of(server, request.param)


@pytest.fixture
def threaded_server_informer(server):
    """Informers of ``server`` on threads only (thread names, the injectable clock)."""
    yield from _informers_of(server, "threads")


@pytest.fixture(params=DRIVERS)
def embedded_informer(embedded_server, request):
    """Informers of the embedded server (fault injection) on each driver."""
    yield from _informers_of(embedded_server, request.param)


def test_e2e_create_update_delete_sequence_and_cache(server, server_informer) -> None:
    from kubernetes import client

    ns = server.namespace
    seed = server.create(_api_pod("seed", app="web"), "pods", ns)
    si = server_informer()
    rec = Recorder()
    si.informer.add_event_handler(rec)
    si.start()
    si.wait_synced()
    v1 = client.CoreV1Api(si.api)
    created = v1.create_namespaced_pod(ns, _api_pod("web-1", app="web"))
    rv_created = created.metadata.resource_version
    patched = v1.patch_namespaced_pod("web-1", ns, {"metadata": {"labels": {"v": "2"}}})
    gone = v1.delete_namespaced_pod("seed", ns)
    events = rec.wait_for(5)
    seed_rv = seed["metadata"]["resourceVersion"]
    deleted_rv = gone.metadata.resource_version  # the delete answers the removed pod
    # A pod's delete marks it (deletionTimestamp, period 0: an update), then removes it.
    assert events == [
        ("add", "seed", seed_rv, True),
        ("add", "web-1", rv_created, False),
        ("update", "web-1", rv_created, patched.metadata.resource_version),
        ("update", "seed", seed_rv, str(int(deleted_rv) - 1)),
        ("delete", "seed", deleted_rv),
    ]
    assert gone.metadata.deletion_grace_period_seconds == 0
    store = si.informer.get_store()
    assert store.list_keys() == [f"{ns}/web-1"]
    cached = store.get_by_key(f"{ns}/web-1")
    assert cached["metadata"]["labels"] == {"app": "web", "v": "2"}
    assert "managedFields" not in cached["metadata"]
    # The version of the last event (a bookmark of the real server may move it further).
    assert int(si.informer.last_sync_resource_version()) >= int(events[4][2])
    if server.embedded is not None:
        assert si.informer.last_sync_resource_version() == server.resource_version
    si.stop()


def test_e2e_missed_delete_is_delivered_as_deleted_final_state_unknown(
        embedded_server, embedded_informer) -> None:
    server = embedded_server
    server.create(_api_pod("a"), "pods", "default")
    server.create(_api_pod("b"), "pods", "default")
    si = embedded_informer()
    rec = Recorder()
    si.informer.add_event_handler(rec)
    si.start()
    try:
        si.wait_synced()
        assert server.wait_for_watches(1, "pods")
        server.hang_watches()  # the informer stops hearing anything
        b = server.get("pods", "default", "b")
        server.delete("pods", "default", "b")
        server.compact()  # the delete falls out of the history: resuming the watch answers 410
        server.drop_watches("pods")  # reconnect -> 410 -> relist without b
        events = rec.wait_for(3)
        assert events[2] == ("delete-unknown", "default/b", b["metadata"]["resourceVersion"])
        assert si.informer.get_store().list_keys() == ["default/a"]
    finally:
        si.stop()


def test_e2e_late_handler_and_raising_handler(server, server_informer) -> None:
    from kubernetes import client

    ns = server.namespace
    for n in ("a", "b"):
        server.create(_api_pod(n), "pods", ns)
    si = server_informer().start()
    si.wait_synced()
    failing_calls: list[str] = []

    def failing(obj, is_in_initial_list):
        failing_calls.append(obj["metadata"]["name"])
        raise RuntimeError("handler bug")

    si.informer.add_event_handler(ResourceEventHandlerFuncs(on_add=failing))
    late = Recorder()
    reg = si.informer.add_event_handler(late)
    client.CoreV1Api(si.api).create_namespaced_pod(ns, _api_pod("c"))
    events = late.wait_for(3)
    rvs = {n: server.get("pods", ns, n)["metadata"]["resourceVersion"] for n in "ab"}
    assert sorted(events[:2]) == [("add", "a", rvs["a"], True), ("add", "b", rvs["b"], True)]
    assert events[2][:2] == ("add", "c") and events[2][3] is False
    assert reg.has_synced()
    for _ in range(1000):
        if len(failing_calls) == 3:
            break
        threading.Event().wait(0.005)
    assert sorted(failing_calls) == ["a", "b", "c"]
    si.stop()


def test_e2e_resync_replays_the_cache_without_api_calls(server, server_informer) -> None:
    clock = FakeClock()
    server.create(_api_pod("a"), "pods", server.namespace)
    si = server_informer(resync_period=30.0, clock=clock)
    resyncing, quiet = Recorder(), Recorder()
    si.informer.add_event_handler(resyncing)
    si.informer.add_event_handler(quiet, resync_period=0)
    si.start()
    si.wait_synced()
    resyncing.wait_for(1)
    if server.embedded is not None:
        assert server.embedded.wait_for_watches(1, "pods")  # the list and the watch are sent
        requests_before = len(server.embedded.requests)
    assert clock.wait_for_waiters(1, WAIT)  # the reflector's resync timer
    clock.step(30.0)
    rv = resyncing.events[0][2]
    assert resyncing.wait_for(2)[1] == ("update", "a", rv, rv)
    assert quiet.events == [("add", "a", rv, True)]
    if server.embedded is not None:
        assert len(server.embedded.requests) == requests_before
    si.stop()


def test_e2e_transform_once_per_object(server, server_informer) -> None:
    from kubernetes import client

    calls: list[str] = []

    def transform(obj):
        calls.append(obj["metadata"]["name"])
        obj["metadata"].pop("managedFields", None)
        return obj

    ns = server.namespace
    server.create(_api_pod("a"), "pods", ns)
    si = server_informer(transform=transform)
    rec = Recorder()
    si.informer.add_event_handler(rec)
    si.start()
    si.wait_synced()
    v1 = client.CoreV1Api(si.api)
    v1.create_namespaced_pod(ns, _api_pod("b"))
    v1.patch_namespaced_pod("b", ns, {"metadata": {"labels": {"x": "y"}}})
    v1.delete_namespaced_pod("a", ns)  # marked (an update), then removed
    rec.wait_for(5)
    assert calls == ["a", "b", "b", "a", "a"]
    si.stop()


def _replay(events: list[tuple]) -> dict[str, str]:
    """The cache a handler's events describe: name -> resourceVersion."""
    state: dict[str, str] = {}
    for ev in events:
        if ev[0] == "add":
            state[ev[1]] = ev[2]
        elif ev[0] == "update":
            state[ev[1]] = ev[3]
        elif ev[0] == "delete":
            state.pop(ev[1], None)
        else:  # delete-unknown: the key
            state.pop(ev[1].rpartition("/")[2], None)
    return state


def test_e2e_every_handler_gets_the_same_events_in_order(server, server_informer) -> None:
    from kubernetes import client

    ns = server.namespace
    for n in ("a", "b"):
        server.create(_api_pod(n), "pods", ns)
    si = server_informer()
    first, second, twice = Recorder(), Recorder(), Recorder()
    for handler in (first, second, twice, twice):  # the same handler twice: two registrations
        si.informer.add_event_handler(handler)
    si.start()
    si.wait_synced()
    v1 = client.CoreV1Api(si.api)
    v1.create_namespaced_pod(ns, _api_pod("c"))
    v1.patch_namespaced_pod("a", ns, {"metadata": {"labels": {"x": "1"}}})
    v1.delete_namespaced_pod("b", ns)
    events = first.wait_for(6)  # 2 initial adds, add c, update a, update b (marked), delete b
    assert [e[:2] for e in events[2:]] == [
        ("add", "c"), ("update", "a"), ("update", "b"), ("delete", "b")]
    assert sorted(events[:2]) == sorted(e for e in events if e[0] == "add" and e[3])
    assert second.wait_for(6) == events
    assert sorted(twice.wait_for(12)) == sorted(events * 2)
    store = si.informer.get_store()
    assert _replay(events) == {
        o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in store.list()}
    si.stop()


def test_e2e_cache_is_written_before_the_handler_is_notified(server, server_informer) -> None:
    from kubernetes import client

    ns = server.namespace
    server.create(_api_pod("a"), "pods", ns)
    si = server_informer()
    store = si.informer.get_store()
    wrong: list[tuple] = []

    def check(kind: str, obj) -> None:
        key = f"{ns}/{obj['metadata']['name']}"
        cached = store.get_by_key(key)
        if kind == "delete":
            if cached is not None:
                wrong.append((kind, key, "still cached"))
        elif cached is None and obj["metadata"].get("deletionTimestamp"):
            pass  # a marked pod's delete came right after, and may be applied already
        elif cached is None or int(cached["metadata"]["resourceVersion"]) < int(
                obj["metadata"]["resourceVersion"]):
            wrong.append((kind, key, cached and cached["metadata"]["resourceVersion"]))

    rec = Recorder()
    si.informer.add_event_handler(ResourceEventHandlerFuncs(
        on_add=lambda obj, initial: check("add", obj),
        on_update=lambda old, new: check("update", new),
        on_delete=lambda obj: check("delete", obj)))
    si.informer.add_event_handler(rec)
    si.start()
    si.wait_synced()
    v1 = client.CoreV1Api(si.api)
    v1.create_namespaced_pod(ns, _api_pod("b"))
    v1.patch_namespaced_pod("b", ns, {"metadata": {"labels": {"v": "2"}}})
    v1.delete_namespaced_pod("a", ns)
    rec.wait_for(5)
    si.stop()
    assert wrong == []


def test_e2e_a_relist_adds_new_objects_not_in_the_initial_list_and_updates_unchanged_ones(
        embedded_server, embedded_informer) -> None:
    server = embedded_server
    a = server.create(_api_pod("a"), "pods", "default")
    si = embedded_informer()
    rec = Recorder()
    si.informer.add_event_handler(rec)
    si.start()
    si.wait_synced()
    assert server.wait_for_watches(1, "pods")
    server.hang_watches()
    b = server.create(_api_pod("b"), "pods", "default")  # missed by the watch
    server.compact()  # resuming the watch answers 410: a relist finds b
    server.drop_watches("pods")
    rv_a, rv_b = a["metadata"]["resourceVersion"], b["metadata"]["resourceVersion"]
    events = rec.wait_for(3)
    assert events[0] == ("add", "a", rv_a, True)
    # client-go: a relist's new object is not "in the initial list"; an unchanged one is a
    # (sync) update with the same version as old and new
    assert sorted(events[1:]) == [("add", "b", rv_b, False), ("update", "a", rv_a, rv_a)]
    assert si.informer.last_sync_resource_version() == server.resource_version
    si.stop()


def test_e2e_late_handler_under_concurrent_events_sees_a_consistent_history(
        embedded_server, embedded_informer) -> None:
    server = embedded_server
    for i in range(10):
        server.create(_api_pod(f"seed-{i}"), "pods", "default")
    si = embedded_informer()
    early = Recorder()
    si.informer.add_event_handler(early)
    si.start()
    si.wait_synced()
    halfway = threading.Event()

    def writer() -> None:
        for i in range(40):
            if i == 20:
                halfway.set()
            server.create(_api_pod(f"w-{i}"), "pods", "default")
            if i % 3 == 0:
                server.patch("pods", "default", f"seed-{i % 10}",
                             {"metadata": {"labels": {"n": str(i)}}})

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    assert halfway.wait(WAIT)
    late = Recorder()
    reg = si.informer.add_event_handler(late)
    t.join(WAIT)
    final = {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
             for o in server.list("pods", "default")}
    for _ in range(2000):
        if _replay(early.events) == final and _replay(late.events) == final:
            break
        threading.Event().wait(0.005)
    assert _replay(early.events) == final
    assert _replay(late.events) == final  # synthetic adds, then every later event
    initial = [e for e in late.events if e[0] == "add" and e[3]]
    assert late.events[:len(initial)] == initial  # the synthetic adds come first
    assert len(initial) >= 10
    assert reg.has_synced()
    si.stop()


def test_e2e_stop_joins_every_thread(server, threaded_server_informer) -> None:
    before = {t.name for t in threading.enumerate()}
    server.create(_api_pod("a"), "pods", server.namespace)
    si = threaded_server_informer(name="joined")
    si.informer.add_event_handler(Recorder())
    si.start()
    si.wait_synced()
    during = {t.name for t in threading.enumerate()} - before
    assert {"informer-joined-handler-1", "informer-joined-process", "reflector-joined"} <= during
    si.stop()
    assert si.informer.is_stopped()
    left = {t.name for t in threading.enumerate()} - before
    # only the embedded server's own connection threads may remain
    assert {n for n in left if not _server_thread(n)} == set()


def _own_threads(name: str) -> list[str]:
    """The live threads an informer named ``name`` started (its reflector's included)."""
    return sorted(
        t.name
        for t in threading.enumerate()
        if t.name.startswith((f"informer-{name}-", f"reflector-{name}"))
    )


def _slow_list_server():
    """An embedded server whose pod lists wait (on its FakeClock) until the test ends."""
    from informers.testing import ApiServer

    clock = FakeClock()
    srv = ApiServer(clock=clock).start()
    srv.create(_api_pod("a"), "pods", "default")
    srv.delay(30.0, verb="list", resource="pods")
    return srv, clock


@pytest.mark.parametrize("driver", DRIVERS)
def test_e2e_stop_during_the_initial_list_joins_every_thread(driver) -> None:
    srv, server_clock = _slow_list_server()
    si = (ServerInformer(srv, name="slowsync") if driver == "threads"
          else AsyncServerInformer(srv, driver, name="slowsync"))
    try:
        si.informer.add_event_handler(Recorder())
        si.start()
        assert server_clock.wait_for_waiters(1)  # the list waits at the server
        if driver == "threads":
            assert _own_threads("slowsync") == [
                "informer-slowsync-handler-1", "informer-slowsync-process",
                "reflector-slowsync"]
        start = time.monotonic()
        si.stop()  # stops and waits for run() to return (asserting it did)
        assert time.monotonic() - start < 2.0
        assert _own_threads("slowsync") == []
        if driver == "threads":
            assert si.informer.is_stopped()
        assert not si.informer.has_synced()
        assert si.informer.get_indexer().list_keys() == []
    finally:
        srv.stop()


def test_e2e_keyboard_interrupt_during_the_initial_list_joins_every_thread(default_sigint) -> None:
    """run() on the main thread, interrupted by Ctrl-C: everything it started is joined
    before the KeyboardInterrupt propagates, though its stop event was never set."""
    srv, server_clock = _slow_list_server()
    si = ServerInformer(srv, name="ctrlc")
    seen: list[list[str]] = []

    def press_ctrl_c() -> None:
        if server_clock.wait_for_waiters(1, timeout=10):
            seen.append(_own_threads("ctrlc"))
            os.kill(os.getpid(), signal.SIGINT)
        else:
            si.stop_event.set()  # let run() return: the test then fails on pytest.raises

    try:
        si.informer.add_event_handler(Recorder())
        presser = threading.Thread(target=press_ctrl_c, daemon=True)
        presser.start()
        with pytest.raises(KeyboardInterrupt):
            si.informer.run(si.stop_event)
        presser.join(WAIT)
        assert seen == [["informer-ctrlc-handler-1", "informer-ctrlc-process", "reflector-ctrlc"]]
        assert not si.stop_event.is_set()
        assert _own_threads("ctrlc") == []
        assert si.informer.is_stopped()
    finally:
        si.api.close()
        srv.stop()


# -- garbage collector around the initial sync ------------------------------------------------


@pytest.fixture
def gc_thresholds():
    """CPython's default thresholds for the test; the previous ones restored afterwards."""
    import gc

    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_gc_paused_during_initial_processing_then_frozen(any_make, gc_thresholds) -> None:
    import gc

    from informers.memory import gc_pause_depth

    gc.unfreeze()
    enabled_while_indexing: list[bool] = []

    def index(obj):  # index functions run on the process loop, as each delta is applied
        enabled_while_indexing.append(gc.isenabled())
        return [""]

    try:
        inf, r = any_make(indexers={"spy": index}, memory_tuning=MemoryTuning())
        r.fifo.replace([pod("a", "1"), pod("b", "2"), pod("c", "3")], "3")
        r.drain()
        assert inf.has_synced()
        for _ in range(1000):
            if gc_pause_depth() == 0:
                break
            threading.Event().wait(0.001)
        assert gc_pause_depth() == 0 and gc.isenabled()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (700, 10, 100)  # full collections 10x rarer
        assert enabled_while_indexing == [False, False, False]
        r.fifo.add(pod("d", "4"))  # after the initial sync the collector runs as usual
        r.drain()
        assert enabled_while_indexing[-1] is True
    finally:
        gc.unfreeze()


def test_gc_threshold_is_only_raised(make, gc_thresholds) -> None:
    import gc

    from informers.memory import gc_pause_depth

    gc.set_threshold(500, 20, 300)
    try:
        inf, r = make(memory_tuning=MemoryTuning())
        r.fifo.replace([pod("a", "1")], "1")
        r.drain()
        for _ in range(1000):
            if gc_pause_depth() == 0:  # the pause ends after the freeze and the threshold
                break
            threading.Event().wait(0.001)
        assert inf.has_synced() and gc.get_freeze_count() > 0
        assert gc.get_threshold() == (500, 20, 300)
    finally:
        gc.unfreeze()


def test_gc_not_frozen_when_disabled_and_empty_list_resumes_at_once(
    make, gc_thresholds
) -> None:
    import gc

    from informers.memory import gc_pause_depth

    gc.unfreeze()
    inf, r = make(memory_tuning=MemoryTuning(freeze_after_initial_sync=False))
    r.fifo.replace([], "1")  # empty: the pause ends once the (empty) relist was applied
    r.drain()
    for _ in range(1000):
        if inf.has_synced():
            break
        threading.Event().wait(0.001)
    assert gc_pause_depth() == 0 and gc.isenabled()
    assert inf.has_synced()
    _, r2 = make(memory_tuning=MemoryTuning(freeze_after_initial_sync=False))
    r2.fifo.replace([pod("a", "1")], "1")
    r2.drain()
    for _ in range(1000):
        if gc_pause_depth() == 0:
            break
        threading.Event().wait(0.001)
    assert gc_pause_depth() == 0 and gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == (700, 10, 10)


def test_has_synced_only_once_the_initial_pause_ended_and_memory_was_released(
    any_make, gc_thresholds, monkeypatch
) -> None:
    import gc

    from informers import memory
    from informers.memory import gc_pause_depth

    gc.unfreeze()
    released: list[tuple[bool, int]] = []
    inf, r = any_make(memory_tuning=MemoryTuning())

    def release() -> bool:  # runs on the process loop, inside the last initial pop
        released.append((inf.has_synced(), gc_pause_depth()))
        return True

    monkeypatch.setattr(memory, "release_free_memory", release)
    try:
        r.fifo.replace([pod("a", "1"), pod("b", "2")], "2")
        r.drain()
        assert inf.has_synced()
        assert (gc_pause_depth(), gc.isenabled()) == (0, True)  # no waiting: already over
        assert released == [(False, 1)]
    finally:
        gc.unfreeze()


# -- one key string per cached object ---------------------------------------------------------


def test_the_cache_keeps_the_key_string_the_fifo_made(make) -> None:
    inf, r = make(queue=InformerQueue.DELTA_FIFO)
    made: list[str] = []
    key_of = r.fifo.key_of

    def recording_key_of(obj):
        key = key_of(obj)
        made.append(key)
        return key

    r.fifo.key_of = recording_key_of  # type: ignore[method-assign]
    r.fifo.replace([pod("a", "1")], "1")
    r.fifo.add(pod("b", "2"))
    r.drain()
    keys = sorted(inf.get_indexer().list_keys())
    assert keys == ["ns/a", "ns/b"] and made == ["ns/a", "ns/b"]
    assert keys[0] is made[0] and keys[1] is made[1]


def test_a_transform_that_changes_the_key_stores_under_the_objects_own_key(make) -> None:
    def rename(obj):
        obj["metadata"]["name"] += "-x"
        return obj

    inf, r = make(transform=rename)
    r.fifo.replace([pod("a", "1")], "1")
    r.drain()
    assert inf.get_indexer().list_keys() == ["ns/a-x"]


# -- managedFields dropped from the bytes with the default transform --------------------------


def test_reflector_list_watch_drops_managed_fields_only_for_the_default_transform() -> None:
    from kubernetes import client as k8s

    api = k8s.ApiClient(k8s.Configuration(host="http://127.0.0.1:1"))
    try:
        lw = list_watch_from_client(api, "pods")

        def dropping(inf: SharedIndexInformer) -> bool:
            return inf._reflector_list_watch().drop_managed_fields

        assert dropping(SharedIndexInformer(lw))
        assert dropping(SharedIndexInformer(lw, transform=strip_managed_fields))
        assert not dropping(SharedIndexInformer(lw, transform=None))
        assert not dropping(SharedIndexInformer(lw, transform=lambda o: o))
        late = SharedIndexInformer(lw)
        late.set_transform(lambda o: o)
        assert not dropping(late)
        assert not lw.drop_managed_fields  # the caller's ListWatch is never changed
        explicit = lw.with_drop_managed_fields()  # the caller's choice is kept
        assert SharedIndexInformer(explicit, transform=None)._reflector_list_watch() is explicit
        hand_made = _unused_list_watch()  # cannot drop them: used as it is
        assert SharedIndexInformer(hand_made)._reflector_list_watch() is hand_made
    finally:
        api.close()


def test_cache_is_the_same_with_managed_fields_never_decoded(embedded_server, caplog) -> None:
    import orjson

    from benchmarks.pods import make_pod

    server = embedded_server
    pods = [make_pod(i, f"ns{i % 3}") for i in range(60)]
    tricky = make_pod(60, "ns0")  # text that looks like the member, "]" inside strings
    tricky["metadata"]["annotations"] = {"note": '"managedFields":[{"manager":"x"}],"a":[',
                                         "brackets": "}],]", "quote": 'a"b\\',
                                         "odd": "x]"}  # (a label value may not end in "]")
    tricky["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"].update(
        {'v:"[::1]"': {}, 'k:{"a":"\\\\\\"]"}': {}})
    for ns in ("ns0", "ns1", "ns2"):
        server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for p in [*pods, tricky]:
        server.create(p)
    stripped = ServerInformer(server, name="stripped")  # the default transform
    exact = ServerInformer(server, name="exact", transform=lambda o: strip_managed_fields(o))
    with caplog.at_level(logging.DEBUG, logger="informers.client.decoder"):
        for si in (stripped, exact):
            si.start()
        try:
            for si in (stripped, exact):
                si.wait_synced()
            assert stripped.informer._reflector.list_watch.drop_managed_fields
            assert not exact.informer._reflector.list_watch.drop_managed_fields
            assert server.wait_for_watches(2, "pods")
            # Watch events: updates, a delete, and a pod whose template carries its own
            # managedFields (kept: only the object's own are dropped).
            for i in range(0, 60, 7):
                meta = pods[i]["metadata"]
                server.patch("pods", meta["namespace"], meta["name"],
                             {"metadata": {"labels": {"step": str(i)}}})
            server.patch("pods", "ns0", tricky["metadata"]["name"],
                         {"metadata": {"annotations": {"more": "]}"}}})
            server.delete("pods", "ns1", pods[1]["metadata"]["name"], grace_period_seconds=0)
            nested = make_pod(61, "ns2")
            nested["spec"]["template"] = {"metadata": {"managedFields": [{"manager": "t"}]}}
            server.create(nested)
            last = f"ns2/{nested['metadata']['name']}"  # queued last: applied last
            for _ in range(5000):
                if all(si.informer.get_store().get_by_key(last) is not None
                       for si in (stripped, exact)):
                    break
                time.sleep(0.002)
            caches = []
            for si in (stripped, exact):
                assert si.informer.last_sync_resource_version() == server.resource_version
                store = si.informer.get_store()
                caches.append({key: orjson.dumps(store.get_by_key(key),
                                                 option=orjson.OPT_SORT_KEYS)
                               for key in store.list_keys()})
        finally:
            for si in (stripped, exact):
                si.stop()
    assert caches[0] == caches[1]
    assert len(caches[0]) == 61
    assert all(b'"managedFields"' not in v for k, v in caches[0].items() if k != last)
    assert orjson.loads(caches[0][last])["spec"]["template"] == nested["spec"]["template"]
    assert [r.getMessage() for r in caplog.records if r.name == "informers.client.decoder"] == []


def test_SharedInformerWatchDisruption(any_make) -> None:
    """client-go v0.36 shared_informer_test.go TestSharedInformerWatchDisruption: after a
    resync tick unmarked the non-resyncing listener, a relist brings it only what changed
    (pod2 modified, pod3 added while the watch was down); the resyncing one gets pod1 too."""
    clock = FakeClock()
    inf, _ = any_make(start=False, resync_period=1.0, clock=clock)
    no_resync, resync = Recorder(), Recorder()
    inf.add_event_handler(no_resync, resync_period=0)
    inf.add_event_handler(resync, resync_period=1.0)
    r = run_informer(inf)
    try:
        r.fifo.replace([pod("pod1", "1"), pod("pod2", "2")], "2")
        for rec in (no_resync, resync):
            assert {e[1] for e in rec.wait_for(2)} == {"pod1", "pod2"}
            rec.events.clear()
        clock.step(1.0)
        assert r.informer.stub.should_resync() is True  # unmarks no_resync
        r.fifo.replace([pod("pod1", "1"), pod("pod2", "4"), pod("pod3", "3")], "4")
        r.fifo.add(pod("marker", "5"))
        assert {e[1] for e in no_resync.wait_for(3)} == {"pod2", "pod3", "marker"}
        assert {e[1] for e in resync.wait_for(4)} == {"pod1", "pod2", "pod3", "marker"}
        assert len(no_resync.events) == 3
    finally:
        r.stop()


def test_ResyncCheckPeriod(any_make) -> None:
    """client-go v0.36 shared_informer_test.go TestResyncCheckPeriod: an informer resyncing
    every 12 hours; each handler added before start with a smaller period lowers the check
    period to it; every handler keeps the period it asked for."""
    inf, _ = any_make(start=False, resync_period=12 * 3600.0, clock=FakeClock())
    handler1 = inf.add_event_handler(Recorder(), resync_period=0)  # never resync
    assert inf.resync_check_period == 12 * 3600.0
    assert handler1._listener.resync_period == 0.0
    handler2 = inf.add_event_handler(Recorder(), resync_period=60.0)
    assert inf.resync_check_period == 60.0
    assert (handler1._listener.resync_period, handler2._listener.resync_period) == (0.0, 60.0)
    handler3 = inf.add_event_handler(Recorder(), resync_period=55.0)
    assert inf.resync_check_period == 55.0
    assert [h._listener.resync_period for h in (handler1, handler2, handler3)] == [
        0.0, 60.0, 55.0]
    handler4 = inf.add_event_handler(Recorder(), resync_period=5.0)
    assert inf.resync_check_period == 5.0
    assert [h._listener.resync_period for h in (handler1, handler2, handler3, handler4)] == [
        0.0, 60.0, 55.0, 5.0]


def test_ListenerResyncPeriods(any_make) -> None:
    """client-go v0.36 shared_informer_test.go TestListenerResyncPeriods: an informer with a
    1 s resync and listeners that never resync, resync every 2 s and every 3 s. All get the
    initial pod1 and pod2; at 2 s only listener2 gets them again, at 3 s only listener3. (A
    marker added and deleted after each tick shows what the tick delivered: the notifications
    before it.)"""
    clock = FakeClock()
    inf, _ = any_make(start=False, resync_period=1.0, clock=clock)
    listener1, listener2, listener3 = Recorder(), Recorder(), Recorder()
    inf.add_event_handler(listener1, resync_period=0)
    inf.add_event_handler(listener2, resync_period=2.0)
    inf.add_event_handler(listener3, resync_period=3.0)
    listeners = (listener1, listener2, listener3)
    r = run_informer(inf)
    try:
        r.fifo.replace([pod("pod1", "1"), pod("pod2", "2")], "2")
        for listener in listeners:
            assert {e[1] for e in listener.wait_for(2)} == {"pod1", "pod2"}

        def tick(seconds: float, marker: str) -> list[set[str]]:
            """Step the clock, play the reflector's resync tick, add a marker; what each
            listener got before the marker."""
            for listener in listeners:
                listener.events.clear()
            clock.step(seconds)
            if r.informer.stub.should_resync():
                r.fifo.resync()
            r.fifo.add(pod(marker, marker))
            r.fifo.delete(pod(marker, marker))  # the cache holds pod1 and pod2 again
            got = []
            for listener in listeners:
                events = listener.wait_for(2)
                while events[-1][0] != "delete":
                    events = listener.wait_for(len(events) + 1)
                assert events[-2][:2] == ("add", marker)
                got.append({e[1] for e in events[:-2]})
            return got

        assert tick(1.0, "10") == [set(), set(), set()]  # t=1: no listener is due
        assert tick(1.0, "11") == [set(), {"pod1", "pod2"}, set()]  # t=2: listener2
        assert tick(1.0, "12") == [set(), set(), {"pod1", "pod2"}]  # t=3: listener3
    finally:
        r.stop()
