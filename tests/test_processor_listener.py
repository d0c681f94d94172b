"""Tests for informers.processor_listener and informers.shared_processor: per-handler delivery."""

from __future__ import annotations

import logging
import threading

import pytest

from informers.clock import FakeClock
from informers.processor_listener import (
    ADD,
    BACKLOG_TRACE_THRESHOLD,
    DELETE,
    UPDATE,
    ProcessorListener,
    determine_resync_period,
)
from informers.shared_processor import SharedProcessor

WAIT = 5.0  # real seconds a test waits for another thread before failing


class Recorder:
    """Records calls; optionally blocks inside a call until released."""

    def __init__(self, block_on: object = None) -> None:
        self.events: list[tuple] = []
        self.cond = threading.Condition()
        self.block_on = block_on
        self.entered = threading.Event()
        self.release = threading.Event()

    def _record(self, event: tuple, obj: object) -> None:
        if self.block_on is not None and obj is self.block_on:
            self.entered.set()
            assert self.release.wait(WAIT)
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def on_add(self, obj, is_in_initial_list):
        self._record(("add", obj, is_in_initial_list), obj)

    def on_update(self, old, new):
        self._record(("update", old, new), new)

    def on_delete(self, obj):
        self._record(("delete", obj), obj)

    def wait_for(self, count: int) -> list[tuple]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.events) >= count, WAIT), self.events
            return list(self.events)


def _pod(name: str) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"}}


def _listener(handler, synced=lambda: True, **kw) -> ProcessorListener:
    kw.setdefault("name", "test-listener")
    return ProcessorListener(handler, 0.0, 0.0, 0.0, synced, **kw)


def test_determine_resync_period() -> None:
    assert determine_resync_period(0, 10) == 0
    assert determine_resync_period(5, 0) == 0  # informer never resyncs
    assert determine_resync_period(5, 10) == 10  # raised to the check period
    assert determine_resync_period(30, 10) == 30


def test_delivers_in_fifo_order_one_at_a_time() -> None:
    rec = Recorder()
    listener = _listener(rec)
    a, b, c = _pod("a"), _pod("b"), _pod("c")
    # Queued before start: buffered, nothing lost.
    listener.add((ADD, a, True))
    listener.add((UPDATE, a, b))
    listener.start()
    listener.add((DELETE, c, None))
    listener.add((ADD, b, False))
    assert rec.wait_for(4) == [
        ("add", a, True),
        ("update", a, b),
        ("delete", c),
        ("add", b, False),
    ]
    listener.stop()
    listener.join()
    assert not listener.is_alive()


def test_slow_handler_blocks_neither_producer_nor_other_handlers() -> None:
    blocker = _pod("block")
    slow = Recorder(block_on=blocker)
    fast = Recorder()
    processor = SharedProcessor()
    processor.add_listener(_listener(slow, name="slow"))
    processor.add_listener(_listener(fast, name="fast"))
    processor.run()
    processor.distribute((ADD, blocker, False), False)
    assert slow.entered.wait(WAIT)
    others = [_pod(f"p{i}") for i in range(2000)]
    for p in others:  # the producer never waits for the stuck handler
        processor.distribute((ADD, p, False), False)
    assert fast.wait_for(2001)[-1] == ("add", others[-1], False)
    assert slow.events == []
    slow.release.set()
    assert len(slow.wait_for(2001)) == 2001
    processor.stop()


def test_raising_handler_is_logged_and_keeps_receiving(caplog) -> None:
    calls: list[str] = []
    synced = threading.Event()

    class Failing:
        def on_add(self, obj, is_in_initial_list):
            calls.append(obj["metadata"]["name"])
            if obj["metadata"]["name"] == "bad":
                raise RuntimeError("boom")

        def on_update(self, old, new):
            calls.append("update")
            raise ValueError("update boom")

        def on_delete(self, obj):
            calls.append("delete")

    listener = _listener(Failing(), synced=lambda: True)
    listener.add((ADD, _pod("bad"), True))
    listener.add((UPDATE, _pod("x"), _pod("y")))
    listener.add((ADD, _pod("good"), True))
    listener.add((DELETE, _pod("z"), None))
    assert not listener.has_synced()  # two initial adds pending
    with caplog.at_level(logging.ERROR, logger="informers.processor_listener"):
        listener.start()
        listener.stop()
        listener.join()
        synced.set()
    assert calls == ["bad", "update", "good", "delete"]
    # The failed initial add counts as delivered.
    assert listener.has_synced()
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "failed on add of ns/bad" in messages[0]
    assert "failed on update of ns/y" in messages[1]


def test_has_synced_needs_upstream_and_every_initial_add_delivered() -> None:
    blocker = _pod("b")
    rec = Recorder(block_on=blocker)
    upstream = {"synced": False}
    listener = _listener(rec, synced=lambda: upstream["synced"])
    assert not listener.has_synced()  # upstream not synced
    upstream["synced"] = True
    assert listener.has_synced()  # nothing initial pending
    listener.add((ADD, _pod("a"), True))
    listener.add((ADD, blocker, True))
    listener.add((ADD, _pod("c"), False))  # not initial: not tracked
    assert not listener.has_synced()
    listener.start()
    assert rec.entered.wait(WAIT)
    assert not listener.has_synced()  # the blocked initial add has not returned
    rec.release.set()
    rec.wait_for(3)
    listener.stop()
    listener.join()
    assert listener.has_synced()


def test_stop_drains_queued_notifications() -> None:
    blocker = _pod("first")
    rec = Recorder(block_on=blocker)
    listener = _listener(rec)
    listener.start()
    listener.add((ADD, blocker, False))
    assert rec.entered.wait(WAIT)
    for i in range(10):
        listener.add((ADD, _pod(f"p{i}"), False))
    listener.stop()
    rec.release.set()
    listener.join()
    assert len(rec.events) == 11


def test_remove_drops_queued_and_later_notifications() -> None:
    blocker = _pod("first")
    rec = Recorder(block_on=blocker)
    listener = _listener(rec)
    listener.start()
    listener.add((ADD, blocker, True))
    assert rec.entered.wait(WAIT)
    listener.add((ADD, _pod("queued"), True))
    listener.remove()
    listener.add((ADD, _pod("later"), False))
    listener.remove()  # idempotent
    rec.release.set()
    listener.join()
    assert rec.events == [("add", blocker, True)]  # the call in progress finished, no more
    assert listener.pending() == 0


def test_slow_call_with_large_backlog_is_traced(caplog) -> None:
    clock = FakeClock()
    gate = threading.Event()
    seen: list[str] = []

    class Slow:
        def on_add(self, obj, is_in_initial_list):
            name = obj["metadata"]["name"]
            seen.append(name)
            if name == "p0":
                assert gate.wait(WAIT)
                clock.step(0.25)  # this call "takes" 250 ms
            elif name == "p1":
                clock.step(0.05)  # 50 ms: below the threshold

        def on_update(self, old, new):
            pass

        def on_delete(self, obj):
            pass

    listener = _listener(Slow(), clock=clock)
    total = BACKLOG_TRACE_THRESHOLD + 10
    for i in range(total):
        listener.add((ADD, _pod(f"p{i}"), False))
    with caplog.at_level(logging.INFO, logger="informers.processor_listener"):
        listener.start()
        gate.set()
        listener.stop()
        listener.join()
    assert len(seen) == total
    traces = [r.getMessage() for r in caplog.records if "took" in r.getMessage()]
    assert len(traces) == 1
    assert "took 0.250s on ns/p0 with 1033 notifications pending" in traces[0]


def test_slow_call_without_backlog_is_not_traced(caplog) -> None:
    clock = FakeClock()

    class Slow:
        def on_add(self, obj, is_in_initial_list):
            clock.step(5.0)

        def on_update(self, old, new):
            pass

        def on_delete(self, obj):
            pass

    listener = _listener(Slow(), clock=clock)
    for i in range(10):
        listener.add((ADD, _pod(f"p{i}"), False))
    with caplog.at_level(logging.INFO, logger="informers.processor_listener"):
        listener.start()
        listener.stop()
        listener.join()
    assert [r for r in caplog.records if "took" in r.getMessage()] == []


def test_processor_resync_marks_only_due_listeners() -> None:
    clock = FakeClock(start=100.0)
    processor = SharedProcessor(clock=clock)
    never = ProcessorListener(Recorder(), 0.0, 0.0, clock.now(), lambda: True, clock=clock)
    every10 = ProcessorListener(Recorder(), 10.0, 10.0, clock.now(), lambda: True, clock=clock)
    every30 = ProcessorListener(Recorder(), 30.0, 30.0, clock.now(), lambda: True, clock=clock)
    for listener in (never, every10, every30):
        processor.add_listener(listener)
    assert every10.next_resync == 110.0 and every30.next_resync == 130.0

    clock.step(9.0)
    assert processor.should_resync() is False
    assert [x.syncing for x in (never, every10, every30)] == [False, False, False]

    clock.step(1.0)  # 110: every10 due
    assert processor.should_resync() is True
    assert [x.syncing for x in (never, every10, every30)] == [False, True, False]
    assert every10.next_resync == 120.0

    clock.step(5.0)  # 115: nothing due; the mark of the last tick is cleared
    assert processor.should_resync() is False
    assert every10.syncing is False

    clock.step(15.0)  # 130: both due
    assert processor.should_resync() is True
    assert [x.syncing for x in (never, every10, every30)] == [False, True, True]
    assert (every10.next_resync, every30.next_resync) == (140.0, 160.0)


def test_processor_distributes_sync_only_to_syncing_listeners() -> None:
    a, b = Recorder(), Recorder()
    processor = SharedProcessor()
    la, lb = _listener(a), _listener(b)
    processor.add_listener(la)
    processor.add_listener(lb)
    assert la.syncing and lb.syncing  # client-go addListener: marked syncing at first
    lb.syncing = False
    pod = _pod("x")
    processor.run()
    processor.distribute((UPDATE, pod, pod), True)
    processor.distribute((DELETE, pod, None), False)
    processor.stop()
    assert a.events == [("update", pod, pod), ("delete", pod)]
    assert b.events == [("delete", pod)]


def test_processor_remove_listener_is_idempotent_and_ignores_foreign() -> None:
    processor = SharedProcessor()
    listener = _listener(Recorder())
    processor.add_listener(listener)
    assert processor.remove_listener(_listener(Recorder())) is False
    assert processor.remove_listener(listener) is True
    assert processor.remove_listener(listener) is False
    assert processor.listeners() == ()


def test_processor_check_period_change_recomputes_listener_periods() -> None:
    processor = SharedProcessor()
    l5 = ProcessorListener(Recorder(), 5.0, 10.0, 0.0, lambda: True)
    l0 = ProcessorListener(Recorder(), 0.0, 0.0, 0.0, lambda: True)
    processor.add_listener(l5)
    processor.add_listener(l0)
    processor.resync_check_period_changed(2.0)
    assert (l5.resync_period, l0.resync_period) == (5.0, 0.0)
    processor.resync_check_period_changed(0.0)
    assert l5.resync_period == 0.0


def test_listener_started_once_and_listener_added_to_running_processor_starts() -> None:
    rec = Recorder()
    processor = SharedProcessor()
    processor.run()
    listener = _listener(rec, name="late-listener")
    processor.add_listener(listener)
    assert listener.is_alive()
    listener.start()  # no second thread
    assert [t.name for t in threading.enumerate()].count("late-listener") == 1
    processor.distribute((ADD, _pod("a"), False), False)
    rec.wait_for(1)
    processor.stop()
    processor.stop()  # idempotent
    assert not listener.is_alive()


@pytest.mark.parametrize("kind", [ADD, UPDATE, DELETE])
def test_unkeyable_object_in_failure_log(kind, caplog) -> None:
    class Boom:
        def on_add(self, obj, flag):
            raise RuntimeError

        def on_update(self, old, new):
            raise RuntimeError

        def on_delete(self, obj):
            raise RuntimeError

    listener = _listener(Boom())
    listener.add((kind, "not-an-object", "not-an-object" if kind == UPDATE else None))
    with caplog.at_level(logging.ERROR, logger="informers.processor_listener"):
        listener.start()
        listener.stop()
        listener.join()
    assert len(caplog.records) == 1
    assert "<unknown key>" in caplog.records[0].getMessage()


def test_add_yields_the_gil_every_yield_backlog_notifications_holding_an_old_dict(
        monkeypatch) -> None:
    """Not started, the listener takes nothing: the backlog is the number added. The
    producer yields at every 8 queued up to 64, only for notifications that keep an old
    decoded object alive (an update's old, a deleted object): not adds, resyncs, encoded
    objects; not with the collector disabled or its full collections made rare."""
    from informers import processor_listener
    from informers.object_codec import Encoded

    assert (processor_listener.YIELD_BACKLOG, processor_listener.YIELD_MAX_BACKLOG) == (8, 64)
    # the collector as a process without memory tuning has it (whatever earlier tests did)
    monkeypatch.setattr(processor_listener.gc, "get_threshold", lambda: (700, 10, 10))
    monkeypatch.setattr(processor_listener.gc, "isenabled", lambda: True)
    yields: list[int] = []

    def fill(notifications: list[tuple]) -> list[int]:
        listener = _listener(Recorder())
        monkeypatch.setattr(processor_listener, "_yield_gil",
                            lambda seconds: yields.append(listener.pending() + 1000 * seconds))
        yields.clear()
        for n in notifications:
            listener.add(n)
        listener.remove()
        listener.add(notifications[-1])  # ignored, no yield
        assert listener.pending() == 0
        return list(yields)

    updates = [(UPDATE, _pod(f"old{i}"), _pod(f"new{i}")) for i in range(100)]
    assert fill(updates) == [8, 16, 24, 32, 40, 48, 56, 64]
    assert fill([(DELETE, _pod("d"), None)] * 20) == [8, 16]
    encoded = Encoded("ns/p", b'{"metadata":{"name":"p"}}')
    assert fill([(UPDATE, encoded, encoded)] * 20) == []  # a compact cache's
    assert fill([(ADD, _pod("a"), False)] * 20) == []  # the cache keeps the added object
    same = _pod("s")
    assert fill([(UPDATE, same, same)] * 20) == []  # a resync's old is its new
    assert fill([(ADD, _pod("a"), False)] * 7 + updates[:9]) == [8, 16]
    monkeypatch.setattr(processor_listener.gc, "get_threshold", lambda: (700, 10, 100))
    assert fill(updates[:20]) == []  # full collections made rare (MemoryTuning)
    monkeypatch.setattr(processor_listener.gc, "get_threshold", lambda: (700, 10, 10))
    monkeypatch.setattr(processor_listener.gc, "isenabled", lambda: False)
    assert fill(updates[:20]) == []  # no collections at all


class Gated(Recorder):
    """A Recorder that blocks in the call for each object given a gate, until it opens."""

    def __init__(self) -> None:
        super().__init__()
        self.gates: dict[int, tuple[threading.Event, threading.Event]] = {}

    def gate(self, obj: object) -> tuple[threading.Event, threading.Event]:
        self.gates[id(obj)] = entered, release = threading.Event(), threading.Event()
        return entered, release

    def _record(self, event: tuple, obj: object) -> None:
        gate = self.gates.get(id(obj))
        if gate is not None:
            gate[0].set()
            assert gate[1].wait(WAIT)
        super()._record(event, obj)


def test_no_yield_while_the_handler_is_behind(monkeypatch) -> None:
    """What the thread took and has not delivered counts in the backlog: with 59 taken
    behind a stuck call, 8 more queued make 67 waiting, and no yield."""
    from informers import processor_listener

    monkeypatch.setattr(processor_listener.gc, "get_threshold", lambda: (700, 10, 10))
    monkeypatch.setattr(processor_listener.gc, "isenabled", lambda: True)
    yields: list[int] = []
    rec = Gated()
    listener = _listener(rec)
    monkeypatch.setattr(processor_listener, "_yield_gil",
                        lambda seconds: yields.append(listener.pending()))
    first = _pod("first")
    updates = [(UPDATE, _pod(f"old{i}"), _pod(f"new{i}")) for i in range(76)]
    first_in, first_out = rec.gate(first)
    u0_in, u0_out = rec.gate(updates[0][2])
    listener.start()
    try:
        listener.add((ADD, first, False))
        assert first_in.wait(WAIT)  # the thread took [first] and is stuck in it
        for u in updates[:60]:
            listener.add(u)
        assert yields == [8, 16, 24, 32, 40, 48, 56]  # 60 waiting
        yields.clear()
        first_out.set()
        assert u0_in.wait(WAIT)  # took the 60, stuck in the first: 59 behind it
        for u in updates[60:76]:
            listener.add(u)
        assert yields == []  # 8 + 59 and 16 + 59 waiting
    finally:
        first_out.set()
        u0_out.set()
    assert len(rec.wait_for(77)) == 77
    listener.stop()
    listener.join()
