"""Tests of informers.real_fifo.RealFIFO: ports of client-go v0.36 the_real_fifo_test.go (named
after their upstream functions, same expected sequences), plus options, hand-off and metrics."""

from __future__ import annotations

import threading
import time

import pytest

from informers.delta_fifo import Delta, DeltaType
from informers.errors import FIFOClosedError, KeyFuncError
from informers.fifo_metrics import InformerNameAndResource
from informers.keys import DeletedFinalStateUnknown
from informers.real_fifo import BookmarkInfo, RealFIFO, ReplacedAllInfo, SyncAllInfo

ADDED, UPDATED, DELETED = DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED
REPLACED, SYNC = DeltaType.REPLACED, DeltaType.SYNC
REPLACED_ALL, SYNC_ALL, BOOKMARK = DeltaType.REPLACED_ALL, DeltaType.SYNC_ALL, DeltaType.BOOKMARK
DFSU = DeletedFinalStateUnknown


def mk(name, val):
    """client-go mkFifoObj: keyed by its name (testFifoObjectKeyFunc), carrying a value."""
    return {"metadata": {"name": name}, "val": val}


def key(obj):
    return obj["metadata"]["name"]


class Known:
    """client-go literalListerGetter."""

    def __init__(self, objs=()):
        self._objs = list(objs)

    def list_keys(self):
        return [key(o) for o in self._objs]

    def get_by_key(self, k):
        for o in self._objs:
            if key(o) == k:
                return o
        return None


def new_fifo(known=(), transformer=None):
    """client-go NewRealFIFO(testFifoObjectKeyFunc, literalListerGetter(...), transformer)."""
    return RealFIFO(key, Known(known), transformer)


def atomic_fifo(bookmarks=False):
    return RealFIFO(key, atomic_events=True, emit_delta_type_bookmark=bookmarks)


def pop(f):
    return f.pop(lambda deltas, initial: deltas)


def pop2(f):
    return f.pop(lambda deltas, initial: (deltas, initial))


def pop_n(f, n):
    """client-go popN + collapseDeltas: the deltas of n pops, flattened."""
    out = []
    for _ in range(n):
        out.extend(pop(f))
    return out


def pop_val(f):
    """client-go testRealFIFOPop's value."""
    return pop(f)[-1].object["val"]


def test_RealFIFO_basic():
    f = new_fifo()
    amount = 500

    def producer(prefix):
        for i in range(amount):
            f.add(mk(f"{prefix}{i}", (prefix, i + 1)))

    threads = [threading.Thread(target=producer, args=(p,)) for p in "ab"]
    for t in threads:
        t.start()
    last = {"a": 0, "b": 0}
    for _ in range(amount * 2):
        prefix, value = pop_val(f)
        assert value > last[prefix], f"got {value} out of order after {last[prefix]}"
        last[prefix] = value
    for t in threads:
        t.join()
    assert last == {"a": amount, "b": amount}


def test_RealFIFO_replaceWithDeleteDeltaIn():
    old, new = mk("foo", 1), mk("foo", 2)
    f = new_fifo([old])
    f.delete(old)
    f.replace([new], "")
    assert f.items() == [Delta(DELETED, old), Delta(REPLACED, new)]


@pytest.mark.parametrize(
    "name",
    [
        "Added object should be deleted on Replace",
        "Deleted object should have only a single Delete",
        "Synced objects should have a single delete",
        "Added objects should have a single delete on multiple Replaces",
        "Added and deleted and added object should be deleted",
        "Bookmark object should not be added without atomic",
    ],
)
def test_RealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue(name):
    obj, obj_v2 = mk("foo", 2), mk("foo", 3)
    f = new_fifo()
    if name == "Added object should be deleted on Replace":
        f.add(obj)
        f.replace([], "0")
        expected = [Delta(ADDED, obj), Delta(DELETED, DFSU("foo", obj))]
    elif name == "Deleted object should have only a single Delete":
        f.add(obj)
        f.delete(obj)
        f.replace([], "0")
        expected = [Delta(ADDED, obj), Delta(DELETED, obj)]
    elif name == "Synced objects should have a single delete":
        f.add(obj)
        f.replace([obj], "0")
        f.replace([obj], "0")
        f.replace([], "0")
        expected = [Delta(ADDED, obj), Delta(REPLACED, obj), Delta(REPLACED, obj),
                    Delta(DELETED, DFSU("foo", obj))]
    elif name == "Added objects should have a single delete on multiple Replaces":
        f.add(obj)
        f.replace([], "0")
        f.replace([], "1")
        expected = [Delta(ADDED, obj), Delta(DELETED, DFSU("foo", obj))]
    elif name == "Added and deleted and added object should be deleted":
        f.add(obj)
        f.delete(obj)
        f.add(obj_v2)
        f.replace([], "0")
        expected = [Delta(ADDED, obj), Delta(DELETED, obj), Delta(ADDED, obj_v2),
                    Delta(DELETED, DFSU("foo", obj_v2))]
    else:
        f.bookmark("123")
        f.replace([], "0")
        f.replace([], "1")
        expected = []
    assert pop_n(f, len(f)) == expected
    assert len(f) == 0


def test_RealFIFO_addUpdate():
    f = new_fifo()
    f.add(mk("foo", 10))
    f.update(mk("foo", 12))
    f.delete(mk("foo", 15))
    assert f.items() == [
        Delta(ADDED, mk("foo", 10)), Delta(UPDATED, mk("foo", 12)), Delta(DELETED, mk("foo", 15))
    ]
    assert [pop_val(f) for _ in range(3)] == [10, 12, 15]
    assert len(f) == 0
    f.close()
    with pytest.raises(FIFOClosedError):
        pop(f)


def test_RealFIFO_transformer():
    def mk_x(name, rv):
        return {"metadata": {"name": name}, "rv": rv, "xfrm": 0}

    def xfrm(obj):
        if isinstance(obj, DFSU):
            if obj.obj["xfrm"] != 1:
                raise AssertionError(f"transformed wrong number of times: {obj}")
            return obj
        obj["xfrm"] += 1
        return obj

    f = new_fifo(transformer=xfrm)
    foo10, bar11, foo12, foo15 = mk_x("foo", 10), mk_x("bar", 11), mk_x("foo", 12), mk_x("foo", 15)
    bar16 = mk_x("bar", 16)
    f.add(foo10)
    f.add(bar11)
    f.update(foo12)
    f.delete(foo15)
    f.replace([], "")
    f.add(bar16)
    f.replace([], "")
    expected = [
        (ADDED, "foo", 10), (ADDED, "bar", 11), (UPDATED, "foo", 12), (DELETED, "foo", 15),
        (DELETED, "bar", 11), (ADDED, "bar", 16), (DELETED, "bar", 16),
    ]
    got = []
    for _ in range(len(expected)):
        (delta,) = pop(f)
        obj = delta.object.obj if isinstance(delta.object, DFSU) else delta.object
        assert obj["xfrm"] == 1
        got.append((delta.type, f.key_of(delta.object), obj["rv"]))
    assert got == expected
    assert isinstance(bar11, dict)


def test_RealFIFO_enqueueingNoLister():
    f = new_fifo()
    f.add(mk("foo", 10))
    f.update(mk("bar", 15))
    f.add(mk("qux", 17))
    f.delete(mk("qux", 18))
    f.delete(mk("baz", 20))  # RealFIFO queues everything
    assert [pop_val(f) for _ in range(5)] == [10, 15, 17, 18, 20]
    assert len(f) == 0


def test_RealFIFO_enqueueingWithLister():
    f = new_fifo([mk("foo", 5), mk("bar", 6), mk("baz", 7)])
    f.add(mk("foo", 10))
    f.update(mk("bar", 15))
    f.delete(mk("baz", 20))
    assert [pop_val(f) for _ in range(3)] == [10, 15, 20]
    assert len(f) == 0


def test_RealFIFO_addReplace():
    f = new_fifo()
    f.add(mk("foo", 10))
    f.replace([mk("foo", 15)], "0")
    assert [pop_val(f) for _ in range(2)] == [10, 15]
    assert len(f) == 0


def test_RealFIFO_ResyncNonExisting():
    f = new_fifo([mk("foo", 5)])
    f.delete(mk("foo", 10))
    f.resync()
    assert [d.type for d in f.items()] == [DELETED]


def test_RealFIFO_Resync():
    f = new_fifo([mk("foo", 5)])
    f.resync()
    assert f.items() == [Delta(SYNC, mk("foo", 5))]


def test_RealFIFO_DeleteExistingNonPropagated():
    f = new_fifo()
    f.add(mk("foo", 5))
    f.delete(mk("foo", 6))
    assert [d.type for d in f.items()] == [ADDED, DELETED]


def test_RealFIFO_ReplaceMakesDeletions():
    known = [mk("foo", 5), mk("bar", 6), mk("baz", 7)]
    f = new_fifo(known)
    f.delete(mk("baz", 10))
    f.replace([mk("foo", 5)], "0")
    assert [pop(f) for _ in range(3)] == [
        [Delta(DELETED, mk("baz", 10))],
        [Delta(DELETED, DFSU("bar", mk("bar", 6)))],
        [Delta(REPLACED, mk("foo", 5))],
    ]

    f = new_fifo(known)
    f.add(mk("baz", 10))
    f.replace([mk("foo", 5)], "0")
    assert [pop(f) for _ in range(4)] == [
        [Delta(ADDED, mk("baz", 10))],
        [Delta(DELETED, DFSU("baz", mk("baz", 10)))],
        [Delta(DELETED, DFSU("bar", mk("bar", 6)))],
        [Delta(REPLACED, mk("foo", 5))],
    ]

    f = new_fifo(known)
    f.delete(mk("bar", 6))
    f.add(mk("bar", 100))
    f.replace([mk("foo", 5)], "0")
    assert [pop(f) for _ in range(5)] == [
        [Delta(DELETED, mk("bar", 6))],
        [Delta(ADDED, mk("bar", 100))],
        [Delta(DELETED, DFSU("bar", mk("bar", 100)))],
        [Delta(DELETED, DFSU("baz", mk("baz", 7)))],
        [Delta(REPLACED, mk("foo", 5))],
    ]

    f = new_fifo(known)
    f.replace([mk("bar", 100), mk("foo", 5)], "0")
    f.replace([mk("foo", 5)], "0")
    assert [pop(f) for _ in range(5)] == [
        [Delta(DELETED, DFSU("baz", mk("baz", 7)))],
        [Delta(REPLACED, mk("bar", 100))],
        [Delta(REPLACED, mk("foo", 5))],
        [Delta(DELETED, DFSU("bar", mk("bar", 100)))],
        [Delta(REPLACED, mk("foo", 5))],
    ]

    f = new_fifo()
    f.add(mk("baz", 10))
    f.replace([mk("foo", 5)], "0")
    assert [pop(f) for _ in range(3)] == [
        [Delta(ADDED, mk("baz", 10))],
        [Delta(DELETED, DFSU("baz", mk("baz", 10)))],
        [Delta(REPLACED, mk("foo", 5))],
    ]


def test_RealFIFO_ReplaceMakesDeletionsReplaced():
    f = new_fifo([mk("foo", 5), mk("bar", 6), mk("baz", 7)])
    f.delete(mk("baz", 10))
    f.replace([mk("foo", 6)], "0")
    assert [pop(f) for _ in range(3)] == [
        [Delta(DELETED, mk("baz", 10))],
        [Delta(DELETED, DFSU("bar", mk("bar", 6)))],
        [Delta(REPLACED, mk("foo", 6))],
    ]


def test_RealFIFO_UpdateResyncRace():
    f = new_fifo([mk("foo", 5)])
    f.update(mk("foo", 6))
    f.resync()
    assert pop(f) == [Delta(UPDATED, mk("foo", 6))]
    assert len(f) == 0


def test_RealFIFO_HasSyncedCorrectOnDeletion():
    f = new_fifo([mk("foo", 5), mk("bar", 6), mk("baz", 7)])
    f.replace([mk("foo", 5)], "0")
    for expected in (
        [Delta(DELETED, DFSU("bar", mk("bar", 6)))],
        [Delta(DELETED, DFSU("baz", mk("baz", 7)))],
        [Delta(REPLACED, mk("foo", 5))],
    ):
        assert not f.has_synced()
        assert pop2(f) == (expected, True)
    assert f.has_synced()


def test_RealFIFO_detectLineJumpers():
    f = new_fifo()
    f.add(mk("foo", 10))
    f.add(mk("bar", 1))
    f.add(mk("foo", 11))
    f.add(mk("foo", 13))
    f.add(mk("zab", 30))
    assert pop_val(f) == 10
    f.add(mk("foo", 14))  # ensure foo doesn't jump back in line
    assert [pop_val(f) for _ in range(5)] == [1, 11, 13, 30, 14]


def test_RealFIFO_KeyOf():
    f = new_fifo()
    assert f.key_of({"metadata": {"name": "A"}}) == "A"
    assert f.key_of(DFSU("B", None)) == "B"
    assert f.key_of([Delta(ADDED, {"metadata": {"name": "C"}})]) == "C"
    assert f.key_of([Delta(DELETED, DFSU("D", None))]) == "D"
    with pytest.raises(KeyFuncError):
        f.key_of([])


@pytest.mark.parametrize(
    ("actions", "expected_synced"),
    [
        ([], False),
        ([lambda f: f.add(mk("a", 1))], True),
        ([lambda f: f.replace([], "0")], True),
        ([lambda f: f.replace([mk("a", 1), mk("b", 2)], "0")], False),
        ([lambda f: f.replace([mk("a", 1), mk("b", 2)], "0"), pop], False),
        ([lambda f: f.replace([mk("a", 1), mk("b", 2)], "0"), pop, pop], True),
        ([lambda f: f.replace([mk("a", 1), mk("a", 2)], "0"), pop, pop], True),
    ],
)
def test_RealFIFO_HasSynced(actions, expected_synced):
    f = new_fifo()
    for action in actions:
        action(f)
    assert f.has_synced() is expected_synced


def test_RealFIFO_PopShouldUnblockWhenClosed():
    f = new_fifo([mk("foo", 5)])
    errors = []

    def consumer():
        try:
            pop(f)
        except FIFOClosedError as err:
            errors.append(err)

    threads = [threading.Thread(target=consumer) for _ in range(10)]
    for t in threads:
        t.start()
    time.sleep(0.01)
    f.close()
    for t in threads:
        t.join(timeout=0.5)
        assert not t.is_alive(), "timed out waiting for pop to return after close"
    assert len(errors) == 10


def batches_of(f, attempts=10):
    """Pop batches until the queue is empty; each as a list of deltas (client-go's loop)."""
    received, initial = [], []
    for _ in range(attempts):
        if not len(f):
            break

        def batch(deltas, is_initial):
            received.append(list(deltas))
            if is_initial:
                initial.append(list(deltas))

        f.pop_batch(batch, batch)
    return received, initial


UNLIMITED = 999999
O1, O2, O3, O4 = mk("foo1", 5), mk("foo2", 5), mk("foo3", 5), mk("foo4", 5)


@pytest.mark.parametrize(
    ("name", "initial_items", "actions", "batch_size", "expected_batches"),
    [
        ("non-split: pop unique items should work", [O1, O2, O3], [], UNLIMITED,
         [[Delta(REPLACED, O1), Delta(REPLACED, O2), Delta(REPLACED, O3)]]),
        ("split due to initial list: initial 2 items with 2 updates should have 2 batches",
         [O1, O2], [O3, O4], 2,
         [[Delta(REPLACED, O1), Delta(REPLACED, O2)], [Delta(UPDATED, O3), Delta(UPDATED, O4)]]),
        ("split due to non-unique#1: update single item for multiple items should have "
         "separate batch", [O1], [O1, O1], UNLIMITED,
         [[Delta(REPLACED, O1)], [Delta(UPDATED, O1)], [Delta(UPDATED, O1)]]),
        ("split due to non-unique#2: update 3 item for with non-unique item at the end should "
         "have separate batch", [O1, O2], [O2, O3], UNLIMITED,
         [[Delta(REPLACED, O1), Delta(REPLACED, O2)], [Delta(UPDATED, O2), Delta(UPDATED, O3)]]),
        ("split due to non-unique#3: update 3 item for with non-unique item in the mid should "
         "have separate batch", [O1, O2, O3], [O2], UNLIMITED,
         [[Delta(REPLACED, O1), Delta(REPLACED, O2), Delta(REPLACED, O3)],
          [Delta(UPDATED, O2)]]),
        ("split due to batch size#1: batching initial list should work", [O1, O2, O3], [], 2,
         [[Delta(REPLACED, O1), Delta(REPLACED, O2)], [Delta(REPLACED, O3)]]),
        ("split due to batch size#2: batching incoming non-initial deltas should work", [],
         [O1, O2, O3], 2,
         [[Delta(UPDATED, O1), Delta(UPDATED, O2)], [Delta(UPDATED, O3)]]),
        ("split due to batch size#3: pop 4 mixed initial & non-initial items with 2 batch size "
         "should have 3 batch", [O1, O2, O3], [O4], 2,
         [[Delta(REPLACED, O1), Delta(REPLACED, O2)], [Delta(REPLACED, O3)],
          [Delta(UPDATED, O4)]]),
    ],
)
def test_RealFIFO_PopMultipleDeltaInBatch(name, initial_items, actions, batch_size,
                                          expected_batches):
    f = RealFIFO(key, Known(initial_items), batch_size=batch_size)
    f.replace(list(initial_items), "123")
    for obj in actions:
        f.update(obj)
    received, initial = batches_of(f)
    assert received == expected_batches
    assert [d.object for batch in initial for d in batch] == initial_items


@pytest.mark.parametrize(
    ("name", "incoming", "expected_batches"),
    [
        ("1st item is broken", ["foo3"], [["foo3"]]),
        ("nth item is broken", ["foo1", "foo2", "foo3"], [["foo1", "foo2", "foo3"]]),
        ("multiple nth items are broken", ["foo1", "foo2", "foo3", "foo4"],
         [["foo1", "foo2", "foo3"], ["foo4"]]),
        ("mixed 1st and nth items are broken", ["foo3", "foo1", "foo4"],
         [["foo3"], ["foo1", "foo4"]]),
    ],
)
def test_RealFIFO_PopBrokenItemsInBatch(name, incoming, expected_batches):
    def broken_key(obj):
        if key(obj) in ("foo3", "foo4"):
            raise ValueError("test key func error")
        return key(obj)

    objs = {n: mk(n, 5) for n in ("foo1", "foo2", "foo3", "foo4")}
    f = RealFIFO(broken_key, Known(), batch_size=UNLIMITED)
    f._items.extend(Delta(ADDED, objs[n]) for n in incoming)  # as upstream fills f.items
    received, _ = batches_of(f)
    assert [[d.object["metadata"]["name"] for d in b] for b in received] == expected_batches


@pytest.mark.parametrize(
    ("name", "operations", "expected"),
    [
        ("Base replace", lambda f, o: f.replace([], "123"),
         lambda o: [Delta(REPLACED_ALL, ReplacedAllInfo("123", []))]),
        ("Added object exists in deltas on Atomic Replace",
         lambda f, o: (f.add(o), f.replace([], "123")),
         lambda o: [Delta(ADDED, o), Delta(REPLACED_ALL, ReplacedAllInfo("123", []))]),
        ("Multiple replaces run in order",
         lambda f, o: (f.add(o), f.replace([o], "10"), f.replace([o], "20"),
                       f.replace([], "56")),
         lambda o: [Delta(ADDED, o), Delta(REPLACED_ALL, ReplacedAllInfo("10", [o])),
                    Delta(REPLACED_ALL, ReplacedAllInfo("20", [o])),
                    Delta(REPLACED_ALL, ReplacedAllInfo("56", []))]),
        ("Bookmark object should not be included in Replace",
         lambda f, o: (f.bookmark("123"), f.replace([], "1234")),
         lambda o: [Delta(BOOKMARK, BookmarkInfo("123")),
                    Delta(REPLACED_ALL, ReplacedAllInfo("1234", []))]),
    ],
)
def test_RealFIFO_ReplaceAtomic(name, operations, expected):
    obj = mk("foo", 2)
    f = atomic_fifo(bookmarks=True)
    operations(f, obj)
    assert pop_n(f, len(f)) == expected(obj)
    assert len(f) == 0


def test_RealFIFO_ReplaceAtomicPop():
    f = atomic_fifo()
    f.add(mk("foo", 10))
    f.replace([mk("foo", 15)], "20")
    assert pop(f) == [Delta(ADDED, mk("foo", 10))]
    assert pop(f) == [Delta(REPLACED_ALL, ReplacedAllInfo("20", [mk("foo", 15)]))]
    assert len(f) == 0


@pytest.mark.parametrize(
    ("name", "operations", "expected"),
    [
        ("Base resync", lambda f, o: f.resync(), lambda o: [Delta(SYNC_ALL, SyncAllInfo())]),
        ("Added object exists in deltas on Atomic Resync",
         lambda f, o: (f.add(o), f.resync()),
         lambda o: [Delta(ADDED, o), Delta(SYNC_ALL, SyncAllInfo())]),
    ],
)
def test_RealFIFO_ResyncAtomic(name, operations, expected):
    obj = mk("foo", 2)
    f = atomic_fifo()
    operations(f, obj)
    assert pop_n(f, len(f)) == expected(obj)
    assert len(f) == 0


# -- options (client-go NewRealFIFOWithOptions panics; we raise) ----------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"known_objects": Known(), "atomic_events": True}, "known_objects must not"),
        ({}, "known_objects must be provided"),
        ({"known_objects": Known(), "unlock_while_processing": True}, "requires atomic_events"),
        ({"known_objects": Known(), "emit_delta_type_bookmark": True}, "requires atomic_events"),
        ({"atomic_events": True, "batch_size": 0}, "batch_size"),
    ],
)
def test_invalid_option_combinations_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RealFIFO(key, **kwargs)


def test_atomic_replace_transforms_every_listed_object_once():
    calls = []

    def xfrm(obj):
        calls.append(key(obj))
        return {**obj, "t": True}

    f = RealFIFO(key, transformer=xfrm, atomic_events=True)
    f.replace([mk("a", 1), mk("b", 2)], "7")
    f.resync()
    (delta,) = pop(f)
    assert delta.object == ReplacedAllInfo("7", [{**mk("a", 1), "t": True},
                                                  {**mk("b", 2), "t": True}])
    assert calls == ["a", "b"]


def test_failing_transform_queues_nothing_and_raises_to_the_producer():
    def xfrm(obj):
        raise RuntimeError("boom")

    f = RealFIFO(key, transformer=xfrm, atomic_events=True)
    with pytest.raises(RuntimeError):
        f.replace([mk("a", 1)], "1")
    with pytest.raises(RuntimeError):
        f.add(mk("a", 1))
    assert len(f) == 0


def test_unlock_while_processing_lets_producers_queue_during_process():
    f = RealFIFO(key, atomic_events=True, unlock_while_processing=True)
    f.add(mk("a", 1))
    queued_meanwhile = []

    def process(deltas, initial):
        t = threading.Thread(target=f.add, args=(mk("b", 2),))
        t.start()
        t.join(timeout=2)
        queued_meanwhile.append(not t.is_alive())

    f.pop(process)
    assert queued_meanwhile == [True]
    assert pop(f) == [Delta(ADDED, mk("b", 2))]


def test_locked_processing_blocks_producers_until_process_returns():
    f = RealFIFO(key, atomic_events=True)
    f.add(mk("a", 1))
    blocked = []

    def process(deltas, initial):
        t = threading.Thread(target=f.add, args=(mk("b", 2),), daemon=True)
        t.start()
        t.join(timeout=0.05)
        blocked.append(t.is_alive())

    f.pop(process)
    assert blocked == [True]


def test_direct_handoff_runs_process_on_the_producer_thread_in_order():
    f = RealFIFO(key, atomic_events=True, unlock_while_processing=True, direct_handoff=True)
    seen = []
    f.replace([], "1")
    done = threading.Event()

    def process(deltas, initial):
        seen.append((threading.current_thread().name, key(deltas[0].object)))

    def consumer():
        try:
            while True:
                f.pop(process)
        except FIFOClosedError:
            done.set()

    pop(f)  # the ReplacedAll
    t = threading.Thread(target=consumer, name="consumer")
    t.start()
    deadline = time.monotonic() + 5
    while not f._idle and time.monotonic() < deadline:
        time.sleep(0.001)
    for i in range(5):
        f.add(mk(f"k{i}", i))
    f.close()
    t.join(timeout=5)
    assert [k for _, k in seen] == ["k0", "k1", "k2", "k3", "k4"]
    assert seen[0][0] == threading.current_thread().name


def test_metrics_for_a_named_fifo():
    class Gauge:
        def __init__(self):
            self.values = []

        def set(self, v):
            self.values.append(v)

    class Histogram:
        def __init__(self):
            self.values = []

        def observe(self, v):
            self.values.append(v)

    class Provider:
        def __init__(self):
            self.ids, self.gauge, self.hist = [], Gauge(), Histogram()

        def new_queued_item_metric(self, id):
            self.ids.append(id)
            return self.gauge

        def new_processing_latency_metric(self, id):
            return self.hist

        def new_store_resource_version_metric(self, id):
            return Gauge()

    provider = Provider()
    ident = InformerNameAndResource("pods-informer", "", "v1", "pods")
    f = RealFIFO(key, atomic_events=True, identifier=ident, metrics_provider=provider)
    f.add(mk("a", 1))
    f.add(mk("b", 2))
    pop(f)
    assert provider.ids == [ident]
    assert provider.gauge.values == [1, 2, 1]
    assert len(provider.hist.values) == 1 and provider.hist.values[0] >= 0
    unnamed = Provider()
    g = RealFIFO(key, atomic_events=True, identifier=InformerNameAndResource(""),
                 metrics_provider=unnamed)
    g.add(mk("a", 1))
    assert unnamed.ids == [] and unnamed.gauge.values == []


def test_concurrent_producers_with_handoff_lose_nothing_and_keep_order_one_at_a_time():
    """Two producers race a sometimes-idle consumer with hand-off and unlocked processing:
    every delta is processed once, each producer's in its order, never two at once."""
    f = RealFIFO(key, atomic_events=True, unlock_while_processing=True, direct_handoff=True)
    f.replace([], "0")
    busy = threading.Lock()
    seen = []
    overlaps = []

    def process(deltas, initial):
        if not busy.acquire(blocking=False):
            overlaps.append(deltas)
            return
        try:
            for d in deltas:
                if d.type is ADDED:
                    seen.append((threading.current_thread().name, d.object["val"]))
            if len(seen) % 7 == 0:
                time.sleep(0.0005)  # sometimes slow, so items queue up behind it
        finally:
            busy.release()

    def consume():
        try:
            while True:
                f.pop_batch(process, process)
        except FIFOClosedError:
            pass

    consumer = threading.Thread(target=consume, name="consumer")
    consumer.start()
    n = 2000

    def produce(p):
        for i in range(n):
            f.add(mk(f"k{p}-{i % 50}", (p, i)))
            if i % 100 == 0:
                time.sleep(0.002)  # let the queue run empty now and then

    producers = [threading.Thread(target=produce, args=(p,), name=f"producer-{p}")
                 for p in (1, 2)]
    for t in producers:
        t.start()
    for t in producers:
        t.join()
    f.close()
    consumer.join(5)
    assert overlaps == []
    for p in (1, 2):
        assert [v[1] for _, v in seen if v[0] == p] == list(range(n))
    threads = {t for t, _ in seen}
    assert threads & {"producer-1", "producer-2"}  # some were handed over
