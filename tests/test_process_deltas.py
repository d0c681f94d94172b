"""informers.process_deltas with a RealFIFO: ports of client-go v0.36 controller_test.go
(TestReplaceEvents, TestResetWatch, TestStoreResourceVersion, TestProcessDeltasInBatch), named
after their upstream functions, with the same expected histories."""

from __future__ import annotations

import threading

import pytest

from informers.delta_fifo import Delta, DeltaType
from informers.errors import FIFOClosedError
from informers.indexer import Indexer
from informers.keys import DeletedFinalStateUnknown, deletion_handling_meta_namespace_key_func
from informers.process_deltas import (
    process_deltas,
    process_deltas_in_batch,
    process_replaced_all_info,
)
from informers.real_fifo import RealFIFO, ReplacedAllInfo

WAIT = 5.0
KEY = deletion_handling_meta_namespace_key_func


def pod(name, rv="", ns="default", **labels):
    meta = {"name": name, "namespace": ns, "resourceVersion": rv}
    if labels:
        meta["labels"] = labels
    return {"metadata": meta}


class EventRecorder:
    """client-go eventRecorder: (action, key, event RV, RV of the stored object, initial)."""

    def __init__(self, store):
        self.store = store
        self.cond = threading.Condition()
        self.history = []

    def _record(self, action, obj, initial):
        key = KEY(obj)
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        event_rv = obj["metadata"].get("resourceVersion", "") if obj else ""
        stored = self.store.get_by_key(key)
        store_rv = stored["metadata"].get("resourceVersion", "") if stored else ""
        with self.cond:
            self.history.append((action, key, event_rv, store_rv, initial))
            self.cond.notify_all()

    def on_add(self, obj, is_in_initial_list):
        self._record("add", obj, is_in_initial_list)

    def on_update(self, old, new):
        self._record("update", new, False)

    def on_delete(self, obj):
        self._record("delete", obj, False)

    def clear(self):
        with self.cond:
            self.history = []

    def wait_for_count(self, n):
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.history) >= n, WAIT), self.history
            return list(self.history)


class Controller:
    """client-go controller's processLoop over a RealFIFO (batch pops), on a thread."""

    def __init__(self, atomic):
        self.store = Indexer()
        self.fifo = RealFIFO(KEY, None if atomic else self.store, atomic_events=atomic)
        self.recorder = EventRecorder(self.store)
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _single(self, deltas, initial):
        process_deltas(self.recorder, self.store, deltas, initial, KEY)

    def _batch(self, deltas, initial):
        process_deltas_in_batch(self.recorder, self.store, deltas, initial, KEY)

    def _loop(self):
        while True:
            try:
                self.fifo.pop_batch(self._batch, self._single)
            except FIFOClosedError:
                return

    def stop(self):
        self.fifo.close()
        self.thread.join(WAIT)


@pytest.fixture(params=[False, True], ids=["atomic false", "atomic true"])
def controller(request):
    c = Controller(request.param)
    c.fifo.replace([], "")  # the (empty) initial list of the fake source
    assert c.fifo.wait_synced(WAIT)
    yield c
    c.stop()


def _sort_deletes(history):
    """client-go sortDeleteEventsByKey: synthetic deletes of a replace are unordered."""
    deletes = sorted((e for e in history if e[0] == "delete"), key=lambda e: e[1])
    it = iter(deletes)
    return [next(it) if e[0] == "delete" else e for e in history]


@pytest.mark.parametrize(
    ("name", "initial_objs", "replaced_items", "replace_rv", "expected_history"),
    [
        ("Create with no initial objects", [], [pod("pod-1", "1")], "1",
         [("add", "default/pod-1", "1", "1", False)]),
        ("Delete all objects", [pod("pod-1", "1"), pod("pod-3", "2")], [], "2",
         [("delete", "default/pod-1", "1", "", False),
          ("delete", "default/pod-3", "2", "", False)]),
        ("Create, update, delete",
         [pod("pod-1", "1"), pod("pod-2", "2", ver="1"), pod("pod-3", "3")],
         [pod("pod-1", "4"), pod("pod-2", "5", ver="2"), pod("pod-4", "6")], "6",
         [("delete", "default/pod-3", "3", "", False),
          ("update", "default/pod-1", "4", "4", False),
          ("update", "default/pod-2", "5", "5", False),
          ("add", "default/pod-4", "6", "6", False)]),
    ],
)
def test_ReplaceEvents(controller, name, initial_objs, replaced_items, replace_rv,
                       expected_history):
    rec = controller.recorder
    for obj in initial_objs:
        controller.fifo.add(obj)
    rec.wait_for_count(len(initial_objs))
    rec.clear()
    controller.fifo.replace(replaced_items, replace_rv)
    history = rec.wait_for_count(len(expected_history))
    items = sorted(controller.store.list(), key=KEY)
    assert items == replaced_items
    assert _sort_deletes(history) == expected_history


def test_ResetWatch(controller):
    rec = controller.recorder
    # the fake source's initial list, as a relist holding pod-1
    controller.fifo.add(pod("pod-1"))
    rec.wait_for_count(1)
    rec.clear()
    # ModifyDropWatch(pod-1), AddDropWatch(pod-2), ResetWatch: the relist holds both
    controller.fifo.replace([pod("pod-1"), pod("pod-2")], "3")
    history = rec.wait_for_count(2)
    assert sorted((a, k, initial) for a, k, _, _, initial in history) == [
        ("add", "default/pod-2", False), ("update", "default/pod-1", False)]


def test_StoreResourceVersion():
    c = Controller(atomic=True)
    try:
        c.fifo.replace([pod("pod-1", "1")], "1")
        assert c.recorder.wait_for_count(1) == [("add", "default/pod-1", "1", "1", True)]
        c.recorder.clear()
        c.fifo.update(pod("pod-1", "2", foo="bar"))
        (event,) = c.recorder.wait_for_count(1)
        assert event[2] == c.store.last_store_sync_resource_version() == "2"
        c.recorder.clear()
        c.fifo.delete(pod("pod-1", "3"))
        (event,) = c.recorder.wait_for_count(1)
        assert event[2] == c.store.last_store_sync_resource_version() == "3"
    finally:
        c.stop()


CM1, CM2, CM3 = (pod(f"testname{i}", ns="testnamespace") for i in (1, 2, 3))


@pytest.mark.parametrize(
    ("name", "delta_list", "failing", "expected_received", "error"),
    [
        ("all transaction succeeding should works", [CM1], [], [CM1], None),
        ("all transaction failing should not trigger listener", [CM1], [CM1], [],
         "failed to apply (1/1) deltas"),
        ("partial transaction failing should only trigger successful events to listener #1",
         [CM1, CM2], [CM2], [CM1], "failed to apply (1/2) deltas"),
        ("partial transaction failing should only trigger successful events to listener #2",
         [CM1, CM2, CM3], [CM2], [CM1, CM3], "failed to apply (1/3) deltas"),
    ],
)
def test_ProcessDeltasInBatch(name, delta_list, failing, expected_received, error):
    """client-go's mock transaction store fails the failing objects; ours, an index function."""
    def index(obj):
        if obj in failing:
            raise RuntimeError("test error")
        return [""]

    store = Indexer(KEY, {"x": index})
    received = []

    class Listener:
        def on_add(self, obj, initial):
            received.append(obj)

        def on_update(self, old, new):
            received.append(new)

        def on_delete(self, obj):
            received.append(obj)

    deltas = [Delta(DeltaType.ADDED, obj) for obj in delta_list]
    if error is None:
        process_deltas_in_batch(Listener(), store, deltas, True, KEY)
    else:
        with pytest.raises(RuntimeError, match=error.replace("(", r"\(").replace(")", r"\)")):
            process_deltas_in_batch(Listener(), store, deltas, True, KEY)
    assert received == expected_received
    assert len(store) == len(expected_received)


def test_sync_all_updates_every_cached_object_and_bookmark_sets_the_store_rv():
    store = Indexer()
    rec = EventRecorder(store)
    store.add(pod("a", "1"))
    process_deltas(rec, store, [Delta(DeltaType.SYNC_ALL, None)], False, KEY)
    assert rec.history == [("update", "default/a", "1", "1", False)]
    from informers.real_fifo import BookmarkInfo

    process_deltas(rec, store, [Delta(DeltaType.BOOKMARK, BookmarkInfo("99"))], False, KEY)
    assert store.last_store_sync_resource_version() == "99"
    with pytest.raises(TypeError, match="BookmarkInfo"):
        process_deltas(rec, store, [Delta(DeltaType.BOOKMARK, "99")], False, KEY)
    with pytest.raises(TypeError, match="ReplacedAllInfo"):
        process_deltas(rec, store, [Delta(DeltaType.REPLACED_ALL, [])], False, KEY)


def test_replaced_all_leaves_out_unkeyable_objects_and_applies_the_rest(caplog):
    store = Indexer()
    rec = EventRecorder(store)
    process_replaced_all_info(rec, ReplacedAllInfo("5", [{"metadata": {}}, pod("a", "5")]),
                              store, True, KEY)
    assert store.list_keys() == ["default/a"]
    assert rec.history == [("add", "default/a", "5", "5", True)]
    assert "leaving out an object whose key cannot be computed" in caplog.text
