"""Tests for informers.synchronous_listener and ``add_event_handler(..., synchronous=True)``.

The listener alone first; then through a SharedIndexInformer whose FIFO the test writes (the
driven informer of test_shared_informer.py), and end to end through the embedded API server.
"""

from __future__ import annotations

import logging
import threading

import test_shared_informer as driven
from test_shared_informer import WAIT, Recorder, _name, pod

from informers.clock import FakeClock
from informers.handlers import ResourceEventHandlerFuncs
from informers.processor_listener import ADD, DELETE, UPDATE
from informers.synchronous_listener import SynchronousListener

make = driven.make  # the fixture: a driven informer whose FIFO the test writes


def _listener(handler, synced=lambda: True, **kw) -> SynchronousListener:
    kw.setdefault("name", "test-sync")
    return SynchronousListener(handler, 0.0, 0.0, 0.0, synced, **kw)


class ThreadRecorder:
    """Records (kind, name, thread name) per call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def _record(self, kind: str, obj) -> None:
        self.calls.append((kind, _name(obj), threading.current_thread().name))

    def on_add(self, obj, is_in_initial_list):
        self._record("add", obj)

    def on_update(self, old, new):
        self._record("update", new)

    def on_delete(self, obj):
        self._record("delete", obj)


# -- the listener alone ------------------------------------------------------------------------


def test_add_calls_the_handler_before_returning_on_the_callers_thread() -> None:
    rec = ThreadRecorder()
    listener = _listener(rec)
    listener.start()  # nothing to start
    a, b = pod("a", "1"), pod("a", "2")
    listener.add((ADD, a, False))
    assert rec.calls == [("add", "a", "MainThread")]
    listener.add((UPDATE, a, b))
    listener.add((DELETE, b, None))
    assert rec.calls[1:] == [("update", "a", "MainThread"), ("delete", "a", "MainThread")]
    assert listener.pending() == 0
    assert listener.is_alive()


def test_initial_adds_are_pending_during_their_call_only() -> None:
    seen: list[bool] = []
    listener: SynchronousListener

    def on_add(obj, initial):
        seen.append(listener.has_synced())

    listener = _listener(ResourceEventHandlerFuncs(on_add=on_add))
    listener.add((ADD, pod("a", "1"), True))
    listener.add((ADD, pod("b", "2"), False))
    assert seen == [False, True]  # the initial add is pending while it is being delivered
    assert listener.has_synced()
    unsynced = _listener(ResourceEventHandlerFuncs(on_add=on_add), synced=lambda: False)
    assert not unsynced.has_synced()  # never before the informer


def test_a_raising_handler_is_logged_and_keeps_receiving(caplog) -> None:
    got: list[str] = []

    def on_add(obj, initial):
        got.append(_name(obj))
        if _name(obj) == "bad":
            raise ValueError("boom")

    listener = _listener(ResourceEventHandlerFuncs(on_add=on_add))
    with caplog.at_level(logging.ERROR, logger="informers.synchronous_listener"):
        listener.add((ADD, pod("bad", "1"), True))
        listener.add((ADD, pod("good", "2"), False))
    assert got == ["bad", "good"]
    assert [r.getMessage().split(": handler ")[0] for r in caplog.records] == ["test-sync"]
    assert caplog.records[0].getMessage().endswith("failed on add of ns/bad; it keeps receiving")
    assert listener.has_synced()  # a failed initial add still counts as delivered


def test_a_slow_call_is_logged_with_the_key() -> None:
    clock = FakeClock()

    def on_update(old, new):
        clock.step(0.25)

    listener = _listener(ResourceEventHandlerFuncs(on_update=on_update), clock=clock)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("informers.synchronous_listener")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        listener.add((UPDATE, pod("a", "1"), pod("a", "2")))
        clock_fast = _listener(ResourceEventHandlerFuncs(on_update=lambda o, n: None), clock=clock)
        clock_fast.add((UPDATE, pod("b", "1"), pod("b", "2")))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert len(records) == 1
    message = records[0].getMessage()
    assert message.startswith("test-sync: synchronous handler ")
    assert message.endswith("took 0.250s on ns/a and held up the informer")


def test_nothing_is_called_after_stop_or_remove() -> None:
    rec = ThreadRecorder()
    stopped, removed = _listener(rec), _listener(rec)
    stopped.stop()
    removed.remove()
    stopped.add((ADD, pod("a", "1"), True))
    removed.add((ADD, pod("b", "1"), True))
    assert rec.calls == []
    assert not stopped.is_alive() and not removed.is_alive()
    assert removed.has_synced()  # a removed handler has nothing pending
    stopped.join()
    removed.join()


def test_join_waits_for_a_call_in_progress_on_another_thread() -> None:
    entered, release, joined = threading.Event(), threading.Event(), threading.Event()

    def on_add(obj, initial):
        entered.set()
        assert release.wait(WAIT)

    listener = _listener(ResourceEventHandlerFuncs(on_add=on_add))
    caller = threading.Thread(target=listener.add, args=((ADD, pod("a", "1"), False),))
    caller.start()
    assert entered.wait(WAIT)
    assert not listener.is_current_thread()

    def join() -> None:
        listener.remove()
        listener.join()
        joined.set()

    joiner = threading.Thread(target=join)
    joiner.start()
    assert not joined.wait(0.05)  # still inside the handler
    release.set()
    assert joined.wait(WAIT)
    caller.join(WAIT)
    joiner.join(WAIT)


def test_join_from_inside_the_handler_returns_at_once() -> None:
    inside: list[bool] = []
    listener: SynchronousListener

    def on_add(obj, initial):
        inside.append(listener.is_current_thread())
        listener.remove()
        listener.join()  # would deadlock if it waited for this very call

    listener = _listener(ResourceEventHandlerFuncs(on_add=on_add))
    listener.add((ADD, pod("a", "1"), False))
    listener.add((ADD, pod("b", "1"), False))
    assert inside == [True]


# -- through the informer ------------------------------------------------------------------------


def test_informer_calls_a_synchronous_handler_on_the_thread_that_writes_the_cache(make) -> None:
    inf, r = make()
    sync_rec, threaded = ThreadRecorder(), Recorder()
    reg = inf.add_event_handler(sync_rec, synchronous=True)
    inf.add_event_handler(threaded)
    r.fifo.replace([pod("a", "1")], "1")
    r.drain()
    assert sync_rec.calls == [("add", "a", "informer-pods-process")]
    assert reg.has_synced()
    # The process thread now waits on the empty FIFO: this thread's update is handed over
    # and applied here, synchronous handler included, before update() returns.
    for _ in range(10000):
        if r.fifo._waiting:
            break
        threading.Event().wait(0.001)
    r.fifo.update(pod("a", "2"))
    assert sync_rec.calls[1:] == [("update", "a", "MainThread")]
    assert inf.get_indexer().get_by_key("ns/a")["metadata"]["resourceVersion"] == "2"
    assert threaded.wait_for(2) == [("add", "a", "1", True), ("update", "a", "1", "2")]


def test_late_synchronous_registration_gets_initial_adds_on_the_registering_thread(make) -> None:
    inf, r = make()
    r.fifo.replace([pod("a", "1"), pod("b", "2")], "2")
    r.drain()
    rec = ThreadRecorder()
    reg = inf.add_event_handler(rec, synchronous=True)
    assert sorted(rec.calls) == [("add", "a", "MainThread"), ("add", "b", "MainThread")]
    assert reg.has_synced()


def test_a_synchronous_handler_may_register_another_handler(make) -> None:
    inf, r = make()
    later = ThreadRecorder()
    registered: list = []

    def on_add(obj, initial):
        if not registered:  # reentrant: the handler runs under the informer's delta lock
            registered.append(inf.add_event_handler(later, synchronous=True))

    inf.add_event_handler(ResourceEventHandlerFuncs(on_add=on_add), synchronous=True)
    r.fifo.replace([pod("a", "1")], "1")
    r.drain()
    assert [c[:2] for c in later.calls] == [("add", "a")]
    assert registered[0].has_synced()


def test_shut_down_of_a_synchronous_registration_stops_its_calls(make) -> None:
    inf, r = make()
    rec = ThreadRecorder()
    reg = inf.add_event_handler(rec, synchronous=True)
    r.fifo.replace([pod("a", "1")], "1")
    r.drain()
    inf.shut_down_event_handler(reg)
    r.fifo.update(pod("a", "2"))
    r.drain()
    assert [c[:2] for c in rec.calls] == [("add", "a")]


def test_end_to_end_a_synchronous_handler_sees_every_change_in_order(any_api_server) -> None:
    from informers.factory import SharedInformerFactory

    server = any_api_server
    factory = SharedInformerFactory(server.api_client(), namespace=server.namespace)
    informer = factory.core().v1().config_maps().informer()
    got: list[tuple[str, str]] = []
    cond = threading.Condition()

    def record(kind, obj):
        with cond:
            got.append((kind, _name(obj)))
            cond.notify_all()

    informer.add_event_handler(ResourceEventHandlerFuncs(
        on_add=lambda o, initial: record("add", o),
        on_update=lambda old, new: record("update", new),
        on_delete=lambda o: record("delete", o),
    ), synchronous=True)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert all(factory.wait_for_cache_sync(stop, timeout=WAIT).values())
        ns = server.namespace
        server.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "cm", "namespace": ns}, "data": {"k": "1"}})
        server.patch("configmaps", ns, "cm", {"data": {"k": "2"}})
        server.delete("configmaps", ns, "cm")
        with cond:
            assert cond.wait_for(lambda: len(got) >= 3, WAIT), got
        assert got == [("add", "cm"), ("update", "cm"), ("delete", "cm")]
    finally:
        stop.set()
        factory.shutdown()
