"""Tests of informers.delta_fifo.DeltaFIFO (ports of client-go v0.32 delta_fifo_test.go, plus
model-based, concurrency and bad-input tests)."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from informers import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    DeltaFIFO,
    Indexer,
    meta_namespace_index_func,
)
from informers.delta_fifo import Delta, DeltaType
from informers.errors import FIFOClosedError, KeyFuncError
from informers.keys import ExplicitKey

ADDED, UPDATED, DELETED = DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED
REPLACED, SYNC = DeltaType.REPLACED, DeltaType.SYNC
DFSU = DeletedFinalStateUnknown


def mk(name, val):
    """client-go mkFifoObj: a cluster-scoped object keyed by its name, carrying a value."""
    return {"metadata": {"name": name}, "val": val}


def val_of(deltas):
    return deltas[-1].object["val"]


def pop(f):
    return f.pop(lambda deltas, initial: deltas)


def pop2(f):
    return f.pop(lambda deltas, initial: (deltas, initial))


class Known:
    """client-go literalListerGetter: known objects backed by a function returning a list."""

    def __init__(self, objs):
        self._objs = list(objs)

    def list_keys(self):
        return [o["metadata"]["name"] for o in self._objs]

    def get_by_key(self, key):
        for o in self._objs:
            if o["metadata"]["name"] == key:
                return o
        return None


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.001)


# -- delta types ------------------------------------------------------------------------------


def test_delta_types_equal_client_go_strings():
    assert [t.value for t in DeltaType] == [
        "Added", "Updated", "Deleted", "Replaced", "Sync", "ReplacedAll", "SyncAll", "Bookmark"]
    assert DeltaType.ADDED == "Added"
    assert str(DeltaType.SYNC) == "Sync"
    assert f"{DeltaType.REPLACED}" == "Replaced"
    d = Delta(ADDED, mk("a", 1))
    assert (d.type, d.object) == (ADDED, mk("a", 1))


# -- ordering and coalescing ------------------------------------------------------------------


def test_basic_two_producers_keep_their_order():
    f = DeltaFIFO()
    amount = 300

    def produce(prefix):
        for i in range(amount):
            f.add(mk(f"{prefix}{i}", i + 1))

    threads = [threading.Thread(target=produce, args=(p,)) for p in ("a", "b")]
    for t in threads:
        t.start()
    last = {"a": 0, "b": 0}
    for _ in range(2 * amount):
        deltas = pop(f)
        name = deltas[-1].object["metadata"]["name"]
        assert val_of(deltas) > last[name[0]]
        last[name[0]] = val_of(deltas)
    for t in threads:
        t.join(timeout=10)
    assert last == {"a": amount, "b": amount}


def test_add_update_delete_accumulate_under_one_key():
    f = DeltaFIFO()
    f.add(mk("foo", 10))
    f.update(mk("foo", 12))
    f.delete(mk("foo", 15))
    assert f.list() == [mk("foo", 15)]
    assert f.list_keys() == ["foo"]
    assert len(f) == 1
    assert pop(f) == [
        Delta(ADDED, mk("foo", 10)),
        Delta(UPDATED, mk("foo", 12)),
        Delta(DELETED, mk("foo", 15)),
    ]
    assert f.get(mk("foo", "")) is None
    assert f.list_keys() == []
    assert len(f) == 0


def test_no_line_jumping():
    f = DeltaFIFO()
    f.add(mk("foo", 10))
    f.add(mk("bar", 1))
    f.add(mk("foo", 11))
    f.add(mk("foo", 13))
    f.add(mk("zab", 30))
    assert val_of(pop(f)) == 13
    f.add(mk("foo", 14))  # foo must not jump back in line
    assert val_of(pop(f)) == 1
    assert val_of(pop(f)) == 30
    assert val_of(pop(f)) == 14


def test_consecutive_deletes_are_deduplicated_keeping_the_older():
    f = DeltaFIFO()
    f.add(mk("a", 1))
    f.delete(mk("a", 2))
    f.delete(mk("a", 3))
    assert pop(f) == [Delta(ADDED, mk("a", 1)), Delta(DELETED, mk("a", 2))]


def test_consecutive_deletes_prefer_a_real_object_over_a_tombstone():
    f = DeltaFIFO()
    f.add(mk("a", 1))
    f.replace([], "1")  # queues Deleted(DFSU("a", a1))
    f.delete(mk("a", 2))  # newer delete carries more information: replaces the tombstone
    assert pop(f) == [Delta(ADDED, mk("a", 1)), Delta(DELETED, mk("a", 2))]


def test_non_consecutive_deletes_are_kept():
    f = DeltaFIFO()
    f.add(mk("a", 1))
    f.delete(mk("a", 2))
    f.add(mk("a", 3))
    f.delete(mk("a", 4))
    assert [d.type for d in pop(f)] == [ADDED, DELETED, ADDED, DELETED]


def test_added_and_updated_are_never_collapsed():
    f = DeltaFIFO()
    for i in range(3):
        f.add(mk("a", i))
        f.update(mk("a", i))
    assert [d.type for d in pop(f)] == [ADDED, UPDATED] * 3


# -- deletes of unknown objects ---------------------------------------------------------------


def test_enqueueing_no_lister_drops_delete_of_unknown_key():
    f = DeltaFIFO()
    f.add(mk("foo", 10))
    f.update(mk("bar", 15))
    f.add(mk("qux", 17))
    f.delete(mk("qux", 18))
    f.delete(mk("baz", 20))  # unknown: dropped
    assert [val_of(pop(f)) for _ in range(3)] == [10, 15, 18]
    assert f.list_keys() == []


def test_enqueueing_with_lister_queues_delete_of_known_key():
    f = DeltaFIFO(known_objects=Known([mk("foo", 5), mk("bar", 6), mk("baz", 7)]))
    f.add(mk("foo", 10))
    f.update(mk("bar", 15))
    f.delete(mk("baz", 20))  # known: queued
    f.delete(mk("nope", 21))  # neither known nor queued: dropped
    assert [val_of(pop(f)) for _ in range(3)] == [10, 15, 20]
    assert f.list_keys() == []


def test_delete_existing_non_propagated():
    f = DeltaFIFO(known_objects=Known([]))
    f.add(mk("foo", 5))
    f.delete(mk("foo", 6))
    assert f.get_by_key("foo") == [Delta(ADDED, mk("foo", 5)), Delta(DELETED, mk("foo", 6))]


def test_delete_of_a_tombstone_uses_its_key():
    f = DeltaFIFO(known_objects=Known([mk("foo", 5)]))
    f.delete(DFSU("foo", None))
    assert f.get_by_key("foo") == [Delta(DELETED, DFSU("foo", None))]


# -- replace ----------------------------------------------------------------------------------


def test_replace_with_delete_delta_in_issue_83810():
    old, new = mk("foo", 1), mk("foo", 2)
    f = DeltaFIFO(known_objects=Known([old]))
    f.delete(old)
    f.replace([new], "")
    assert pop(f) == [Delta(DELETED, old), Delta(SYNC, new)]


obj2, obj3 = mk("foo", 2), mk("foo", 3)


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        pytest.param(
            lambda f: (f.add(obj2), f.replace([], "0")),
            [Delta(ADDED, obj2), Delta(DELETED, DFSU("foo", obj2))],
            id="added object deleted on replace",
        ),
        pytest.param(
            lambda f: (f.add(obj2), f.replace([obj2], "0"), f.replace([], "0")),
            [Delta(ADDED, obj2), Delta(SYNC, obj2), Delta(DELETED, DFSU("foo", obj2))],
            id="replaced object has a single delete",
        ),
        pytest.param(
            lambda f: (f.add(obj2), f.delete(obj2), f.replace([], "0")),
            [Delta(ADDED, obj2), Delta(DELETED, obj2)],
            id="deleted object has a single delete",
        ),
        pytest.param(
            lambda f: (f.add(obj2), f.replace([obj2], "0"), f.replace([obj2], "0"),
                       f.replace([], "0")),
            [Delta(ADDED, obj2), Delta(SYNC, obj2), Delta(SYNC, obj2),
             Delta(DELETED, DFSU("foo", obj2))],
            id="synced object has a single delete",
        ),
        pytest.param(
            lambda f: (f.add(obj2), f.replace([], "0"), f.replace([], "1")),
            [Delta(ADDED, obj2), Delta(DELETED, DFSU("foo", obj2))],
            id="single delete on multiple replaces, inner tombstone unwrapped",
        ),
        pytest.param(
            lambda f: (f.add(obj2), f.delete(obj2), f.add(obj3), f.replace([], "0")),
            [Delta(ADDED, obj2), Delta(DELETED, obj2), Delta(ADDED, obj3),
             Delta(DELETED, DFSU("foo", obj3))],
            id="added deleted added object deleted",
        ),
    ],
)
@pytest.mark.parametrize("known", [True, False], ids=["with-known", "without-known"])
def test_replace_makes_deletions_for_objects_only_in_queue(ops, expected, known):
    f = DeltaFIFO(known_objects=Known([]) if known else None)
    ops(f)
    assert pop(f) == expected
    assert f.list_keys() == []


def test_replace_makes_deletions_after_a_pending_delete():
    f = DeltaFIFO(known_objects=Known([mk("foo", 5), mk("bar", 6), mk("baz", 7)]))
    f.delete(mk("baz", 10))
    f.replace([mk("foo", 5)], "0")
    assert [pop(f) for _ in range(3)] == [
        [Delta(DELETED, mk("baz", 10))],
        [Delta(SYNC, mk("foo", 5))],
        # Not listed and nothing queued: a tombstone holding the known copy.
        [Delta(DELETED, DFSU("bar", mk("bar", 6)))],
    ]


def test_replace_makes_deletions_after_a_pending_add():
    f = DeltaFIFO(known_objects=Known([mk("foo", 5), mk("bar", 6), mk("baz", 7)]))
    f.add(mk("baz", 10))
    f.replace([mk("foo", 5)], "0")
    assert [pop(f) for _ in range(3)] == [
        # Queued: the tombstone holds the newest queued object, not the known copy (baz 7).
        [Delta(ADDED, mk("baz", 10)), Delta(DELETED, DFSU("baz", mk("baz", 10)))],
        [Delta(SYNC, mk("foo", 5))],
        [Delta(DELETED, DFSU("bar", mk("bar", 6)))],
    ]


def test_replace_tombstone_uses_latest_queued_object_after_recreate():
    f = DeltaFIFO(known_objects=Known([mk("foo", 5), mk("bar", 6), mk("baz", 7)]))
    f.delete(mk("bar", 6))
    f.add(mk("bar", 100))
    f.replace([mk("foo", 5)], "0")
    assert [pop(f) for _ in range(3)] == [
        [Delta(DELETED, mk("bar", 6)), Delta(ADDED, mk("bar", 100)),
         Delta(DELETED, DFSU("bar", mk("bar", 100)))],
        [Delta(SYNC, mk("foo", 5))],
        [Delta(DELETED, DFSU("baz", mk("baz", 7)))],
    ]


def test_replace_twice_tombstone_uses_latest_synced_version():
    f = DeltaFIFO(known_objects=Known([mk("foo", 5), mk("bar", 6), mk("baz", 7)]))
    f.replace([mk("bar", 100), mk("foo", 5)], "0")
    f.replace([mk("foo", 5)], "0")
    assert [pop(f) for _ in range(3)] == [
        [Delta(SYNC, mk("bar", 100)), Delta(DELETED, DFSU("bar", mk("bar", 100)))],
        [Delta(SYNC, mk("foo", 5)), Delta(SYNC, mk("foo", 5))],
        [Delta(DELETED, DFSU("baz", mk("baz", 7)))],
    ]


def test_replace_without_known_objects_only_tombstones_queued_keys():
    f = DeltaFIFO()
    f.add(mk("baz", 10))
    f.replace([mk("foo", 5)], "0")
    assert [pop(f) for _ in range(2)] == [
        [Delta(ADDED, mk("baz", 10)), Delta(DELETED, DFSU("baz", mk("baz", 10)))],
        [Delta(SYNC, mk("foo", 5))],
    ]
    assert f.list_keys() == []


def test_replace_emits_replaced_when_asked():
    f = DeltaFIFO(
        known_objects=Known([mk("foo", 5), mk("bar", 6), mk("baz", 7)]),
        emit_delta_type_replaced=True,
    )
    f.delete(mk("baz", 10))
    f.replace([mk("foo", 6)], "0")
    assert [pop(f) for _ in range(3)] == [
        [Delta(DELETED, mk("baz", 10))],
        [Delta(REPLACED, mk("foo", 6))],
        [Delta(DELETED, DFSU("bar", mk("bar", 6)))],
    ]


def test_replace_tombstone_for_known_key_whose_object_vanished():
    class Flaky(Known):
        def get_by_key(self, key):
            if key == "gone":
                return None
            if key == "err":
                raise RuntimeError("lookup failed")
            return super().get_by_key(key)

    f = DeltaFIFO(known_objects=Flaky([mk("gone", 1), mk("err", 2)]))
    f.replace([], "0")
    assert [pop(f) for _ in range(2)] == [
        [Delta(DELETED, DFSU("gone", None))],
        [Delta(DELETED, DFSU("err", None))],
    ]


def test_replace_of_a_duplicate_key_queues_both():
    f = DeltaFIFO()
    f.replace([mk("a", 1), mk("a", 2)], "0")
    assert f.list_keys() == ["a"]
    assert pop(f) == [Delta(SYNC, mk("a", 1)), Delta(SYNC, mk("a", 2))]


def test_first_replace_with_known_objects_counts_unique_keys_and_tombstones():
    f = DeltaFIFO(known_objects=Known([mk("a", 1), mk("gone", 2)]))
    f.replace([mk("a", 3), mk("b", 4), mk("b", 5)], "0")
    assert [pop2(f) for _ in range(3)] == [
        ([Delta(SYNC, mk("a", 3))], True),
        ([Delta(SYNC, mk("b", 4)), Delta(SYNC, mk("b", 5))], True),
        ([Delta(DELETED, DFSU("gone", mk("gone", 2)))], True),
    ]
    assert f.has_synced() is True


# -- how a relist is held ---------------------------------------------------------------------


def test_a_relisted_dict_alone_is_queued_without_a_delta_or_list():
    a = mk("a", 1)
    f = DeltaFIFO(emit_delta_type_replaced=True)
    f.replace([a], "1")
    assert f._items == {"a": a} and f._items["a"] is a
    assert f.get_by_key("a") == [Delta(REPLACED, a)]
    assert f.list() == [a]
    f.update(mk("a", 2))  # a second delta: a list from here on
    f.add(mk("b", 3))  # only the replace action's delta is held bare
    assert f._items == {"a": [Delta(REPLACED, a), Delta(UPDATED, mk("a", 2))],
                        "b": [Delta(ADDED, mk("b", 3))]}
    assert pop(f) == [Delta(REPLACED, a), Delta(UPDATED, mk("a", 2))]


def test_a_relisted_dict_then_deleted_keeps_both_deltas():
    f = DeltaFIFO(known_objects=Known([mk("a", 1)]))
    f.replace([mk("a", 2)], "1")
    f.delete(mk("a", 3))
    assert pop(f) == [Delta(SYNC, mk("a", 2)), Delta(DELETED, mk("a", 3))]


def test_relisted_non_dicts_and_other_deltas_are_held_in_lists():
    f = DeltaFIFO(key_func=lambda o: o[0])
    f.replace([("t", 1)], "1")
    f.add(("b", 2))
    assert f._items == {"t": [Delta(SYNC, ("t", 1))], "b": [Delta(ADDED, ("b", 2))]}
    assert pop(f) == [Delta(SYNC, ("t", 1))]


def test_pop_keyed_hands_over_the_key_string_made_when_it_was_queued():
    made = []

    def key_func(obj):
        key = "-".join(["key", obj["metadata"]["name"]])
        made.append(key)
        return key

    f = DeltaFIFO(key_func=key_func, emit_delta_type_replaced=True)
    f.replace([mk("a", 1)], "1")
    got = f.pop_keyed(lambda key, deltas, initial: (key, deltas, initial))
    assert got == ("key-a", [Delta(REPLACED, mk("a", 1))], True)
    assert got[0] is made[0]


def test_the_key_map_is_freed_once_the_queue_is_empty():
    import sys

    f = DeltaFIFO()
    f.replace([mk(str(i), i) for i in range(1000)], "1")
    for _ in range(999):
        pop(f)
    assert sys.getsizeof(f._items) > 20_000  # a dict does not shrink as keys are deleted
    pop(f)
    assert sys.getsizeof(f._items) == sys.getsizeof({})


# -- resync -----------------------------------------------------------------------------------


def test_resync_queues_sync_for_known_objects():
    f = DeltaFIFO(known_objects=Known([mk("foo", 5)]))
    f.resync()
    assert f.get_by_key("foo") == [Delta(SYNC, mk("foo", 5))]


def test_resync_skips_a_key_with_a_pending_delete():
    f = DeltaFIFO(known_objects=Known([mk("foo", 5)]))
    f.delete(mk("foo", 10))
    f.resync()
    assert f.get_by_key("foo") == [Delta(DELETED, mk("foo", 10))]


def test_update_resync_race_resync_does_not_overtake_pending_update():
    f = DeltaFIFO(known_objects=Known([mk("foo", 5)]))
    f.update(mk("foo", 6))
    f.resync()
    assert pop(f) == [Delta(UPDATED, mk("foo", 6))]
    assert f.list_keys() == []


def test_resync_without_known_objects_is_a_noop():
    f = DeltaFIFO()
    f.resync()
    assert f.list_keys() == []


def test_resync_skips_known_keys_without_object():
    class Vanishing(Known):
        def get_by_key(self, key):
            return None

    f = DeltaFIFO(known_objects=Vanishing([mk("a", 1)]))
    f.resync()
    assert f.list_keys() == []


# -- has_synced and is_in_initial_list --------------------------------------------------------


@pytest.mark.parametrize(
    ("actions", "synced"),
    [
        ([], False),
        ([lambda f: f.add(mk("a", 1))], True),
        ([lambda f: f.update(mk("a", 1))], True),
        ([lambda f: f.delete(mk("a", 1))], True),  # even a dropped delete counts
        ([lambda f: f.replace([], "0")], True),
        ([lambda f: f.replace([mk("a", 1), mk("b", 2)], "0")], False),
        ([lambda f: f.replace([mk("a", 1), mk("b", 2)], "0"), pop], False),
        ([lambda f: f.replace([mk("a", 1), mk("b", 2)], "0"), pop, pop], True),
        # Duplicate keys in the list count once.
        ([lambda f: f.replace([mk("a", 1), mk("a", 2)], "0"), pop], True),
        # Only the first replace counts.
        ([lambda f: f.replace([], "0"), lambda f: f.replace([mk("a", 1)], "1")], True),
        # An add before any replace makes the FIFO synced at once.
        ([lambda f: f.add(mk("x", 1)), lambda f: f.replace([mk("a", 1)], "1")], True),
    ],
)
def test_has_synced(actions, synced):
    f = DeltaFIFO()
    for action in actions:
        action(f)
    assert f.has_synced() is synced


def test_has_synced_counts_queued_deletions():
    f = DeltaFIFO(known_objects=Known([mk("foo", 5), mk("bar", 6), mk("baz", 7)]))
    f.replace([mk("foo", 5)], "0")
    expected = [
        [Delta(SYNC, mk("foo", 5))],
        [Delta(DELETED, DFSU("bar", mk("bar", 6)))],
        [Delta(DELETED, DFSU("baz", mk("baz", 7)))],
    ]
    for want in expected:
        assert f.has_synced() is False
        deltas, initial = pop2(f)
        assert deltas == want
        assert initial is True
    assert f.has_synced() is True


def test_has_synced_turns_true_only_after_the_last_initial_item_is_processed():
    f = DeltaFIFO()
    f.replace([mk("a", 1)], "0")
    f.add(mk("b", 2))  # queued after the initial list
    seen = []
    f.pop(lambda deltas, initial: seen.append((initial, f.has_synced())))
    assert seen == [(True, False)]  # re-entrant call from process: not synced yet
    assert f.has_synced() is True
    f.pop(lambda deltas, initial: seen.append((initial, f.has_synced())))
    assert seen[1] == (False, True)


def test_has_synced_blocks_other_threads_while_processing():
    f = DeltaFIFO()
    f.replace([mk("a", 1)], "0")
    in_process, release = threading.Event(), threading.Event()
    observed = []

    def process(deltas, initial):
        in_process.set()
        assert release.wait(5)

    popper = threading.Thread(target=f.pop, args=(process,))
    popper.start()
    assert in_process.wait(5)
    checker = threading.Thread(target=lambda: observed.append(f.has_synced()))
    checker.start()
    checker.join(0.05)
    assert observed == []  # waits for the FIFO lock held during process
    release.set()
    popper.join(5)
    checker.join(5)
    assert observed == [True]


def test_is_in_initial_list_false_when_add_came_first():
    f = DeltaFIFO()
    f.add(mk("a", 1))
    f.replace([mk("b", 2)], "0")
    assert pop2(f)[1] is False
    assert pop2(f)[1] is False


def test_process_exception_propagates_and_item_counts_as_popped():
    f = DeltaFIFO()
    f.replace([mk("a", 1)], "0")

    def boom(deltas, initial):
        raise ValueError("handler failed")

    with pytest.raises(ValueError, match="handler failed"):
        f.pop(boom)
    assert f.list_keys() == []  # not requeued
    assert f.has_synced() is True


def test_pop_returns_what_process_returns():
    f = DeltaFIFO()
    f.add(mk("a", 1))
    assert f.pop(lambda deltas, initial: ("done", len(deltas))) == ("done", 1)


# -- transformer ------------------------------------------------------------------------------


def test_transformer_runs_exactly_once_client_go():
    def xfrm(o):
        assert not isinstance(o, DFSU)
        o["xfrm"] = o.get("xfrm", 0) + 1
        return o

    f = DeltaFIFO(transformer=xfrm)
    f.add(mk("foo", 10))
    f.add(mk("bar", 11))
    f.update(mk("foo", 12))
    f.delete(mk("foo", 15))
    f.replace([], "")
    f.add(mk("bar", 16))
    f.replace([], "")
    assert f.list_keys() == ["foo", "bar"]

    foo = pop(f)
    assert foo[-1] == Delta(DELETED, {"metadata": {"name": "foo"}, "val": 15, "xfrm": 1})
    assert all(d.object["xfrm"] == 1 for d in foo)
    bar = pop(f)
    tomb = bar[-1].object
    assert isinstance(tomb, DFSU)
    assert tomb.key == "bar"
    assert tomb.obj == {"metadata": {"name": "bar"}, "val": 16, "xfrm": 1}


def test_transformer_skips_resync_but_not_relist():
    calls = []

    def xfrm(o):
        calls.append(o["val"])
        return {**o, "t": True}

    known = Indexer()
    f = DeltaFIFO(known_objects=known, transformer=xfrm)
    f.replace([mk("a", 1)], "0")
    assert calls == [1]  # a relist's Sync delta is transformed
    known.add(pop(f)[-1].object)
    f.resync()
    assert calls == [1]  # resync Sync deltas are already-transformed cached objects
    assert pop(f) == [Delta(SYNC, {"metadata": {"name": "a"}, "val": 1, "t": True})]
    f.replace([], "1")
    assert calls == [1]  # tombstones are not transformed
    assert pop(f) == [Delta(DELETED, DFSU("a", {"metadata": {"name": "a"}, "val": 1, "t": True}))]


def test_transformer_exception_queues_nothing():
    def xfrm(o):
        raise RuntimeError("bad transform")

    f = DeltaFIFO(transformer=xfrm)
    with pytest.raises(RuntimeError, match="bad transform"):
        f.add(mk("a", 1))
    assert f.list_keys() == []


# -- close ------------------------------------------------------------------------------------


def test_close_wakes_every_blocked_pop():
    f = DeltaFIFO(known_objects=Known([mk("foo", 5)]))
    results = []
    lock = threading.Lock()

    def consumer():
        try:
            f.pop(lambda d, i: None)
        except FIFOClosedError as err:
            with lock:
                results.append(str(err))

    threads = [threading.Thread(target=consumer) for _ in range(10)]
    for t in threads:
        t.start()
    wait_until(lambda: f._waiting == 10)  # all ten are blocked in pop
    assert f.is_closed() is False
    f.close()
    for t in threads:
        t.join(5)
        assert not t.is_alive()
    assert results == ["DeltaFIFO: manipulating with closed queue"] * 10
    assert f.is_closed() is True


def test_close_lets_remaining_items_drain_first():
    f = DeltaFIFO()
    f.add(mk("a", 1))
    f.close()
    assert val_of(pop(f)) == 1
    with pytest.raises(FIFOClosedError):
        pop(f)


def test_pop_blocks_until_an_item_arrives():
    f = DeltaFIFO()
    got = []
    t = threading.Thread(target=lambda: got.append(pop(f)))
    t.start()
    wait_until(lambda: f._waiting == 1)
    assert got == []
    f.add(mk("a", 1))
    t.join(5)
    assert got == [[Delta(ADDED, mk("a", 1))]]


# -- reads, keys and bad input ----------------------------------------------------------------


def test_get_returns_copies():
    f = DeltaFIFO()
    f.add(mk("a", 1))
    got = f.get(mk("a", None))
    got.append(Delta(UPDATED, mk("a", 2)))
    assert f.get_by_key("a") == [Delta(ADDED, mk("a", 1))]
    assert f.get_by_key("zzz") is None


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        (mk("A", 1), "A"),
        ({"metadata": {"name": "n", "namespace": "ns"}}, "ns/n"),
        (DFSU("B", None), "B"),
        ([Delta(ADDED, mk("C", 1))], "C"),
        ([Delta(ADDED, mk("x", 1)), Delta(DELETED, DFSU("D", None))], "D"),
        (ExplicitKey("E/e"), "E/e"),
    ],
)
def test_key_of(obj, key):
    assert DeltaFIFO().key_of(obj) == key


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({}, "'metadata' is missing"),
        ("ns/name", "expected a dict, got str"),
        (None, "expected a dict, got NoneType"),
        ({"metadata": {"name": "a/b", "namespace": "ns"}}, "contains '/'"),
        ({"metadata": {"namespace": "ns"}}, "'metadata.name' is missing or empty"),
        ([], "0 length Deltas object; can't get key"),
        ([1, 2], "expected a dict, got list"),
    ],
)
def test_bad_objects_raise_and_change_nothing(bad, fragment):
    f = DeltaFIFO(known_objects=Known([mk("k", 1)]))
    f.add(mk("a", 1))
    for call in (f.add, f.update, f.delete, f.get, lambda o: f.replace([mk("b", 2), o], "1")):
        with pytest.raises(KeyFuncError) as info:
            call(bad)
        assert fragment in str(info.value)
    assert f.list_keys() == ["a"]
    assert f.get_by_key("a") == [Delta(ADDED, mk("a", 1))]
    assert f.has_synced() is True  # add came first


def test_custom_key_func_errors_are_wrapped():
    def key_func(o):
        return o["id"]

    f = DeltaFIFO(key_func=key_func)
    f.add({"id": "x"})
    with pytest.raises(KeyFuncError, match="couldn't create key for object: 'id'"):
        f.add({})
    assert f.list_keys() == ["x"]


def test_with_indexer_as_known_objects():
    idx = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    a = {"metadata": {"name": "a", "namespace": "ns"}}
    b = {"metadata": {"name": "b", "namespace": "ns"}}
    idx.add(a)
    idx.add(b)
    f = DeltaFIFO(known_objects=idx, emit_delta_type_replaced=True)
    f.replace([a], "5")
    assert f.list_keys() == ["ns/a", "ns/b"]
    assert f.get_by_key("ns/b") == [Delta(DELETED, DFSU("ns/b", b))]


# -- concurrency ------------------------------------------------------------------------------


def test_many_producers_one_consumer_nothing_lost():
    f = DeltaFIFO()
    producers, per_producer = 8, 250
    expected = producers * per_producer * 2
    received = {}
    count = [0]

    def produce(p):
        for i in range(per_producer):
            f.add(mk(f"p{p}-{i}", 1))
            f.update(mk(f"p{p}-{i}", 2))

    def consume():
        while count[0] < expected:
            deltas = pop(f)
            key = deltas[-1].object["metadata"]["name"]
            received.setdefault(key, []).extend((d.type, d.object["val"]) for d in deltas)
            count[0] += len(deltas)

    consumer = threading.Thread(target=consume)
    consumer.start()
    threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    consumer.join(20)
    assert not consumer.is_alive()
    assert len(received) == producers * per_producer
    assert all(v == [(ADDED, 1), (UPDATED, 2)] for v in received.values())
    assert f.list_keys() == []


# -- model-based property test ----------------------------------------------------------------


def _collapse(raw):
    """The deltas a key shows: raw appends with consecutive Deleted pairs folded left."""
    out = []
    for t, o in raw:
        if out and t is DELETED and out[-1][0] is DELETED:
            if isinstance(out[-1][1], DFSU):
                out[-1] = (t, o)
            continue
        out.append((t, o))
    return out


class FifoModel:
    """Reference semantics: raw appended deltas per key, a key order list, a known-objects dict
    the consumer updates, and the first-replace counter."""

    def __init__(self, emit_replaced):
        self.emit_replaced = emit_replaced
        self.raw = {}
        self.order = []
        self.known = {}
        self.populated = False
        self.count = 0

    def deltas(self, key):
        return _collapse(self.raw[key])

    def _append(self, key, t, o):
        if key not in self.raw:
            self.raw[key] = []
            self.order.append(key)
        self.raw[key].append((t, o))

    def add(self, o, t=ADDED):
        self.populated = True
        self._append(o["metadata"]["name"], t, o)

    def delete(self, o):
        self.populated = True
        key = o["metadata"]["name"]
        if key in self.raw or key in self.known:
            self._append(key, DELETED, o)

    def replace(self, objs):
        listed = {o["metadata"]["name"] for o in objs}
        for o in objs:
            self._append(o["metadata"]["name"], REPLACED if self.emit_replaced else SYNC, o)
        deletions = 0
        for key in list(self.order):
            if key not in listed:
                newest = self.deltas(key)[-1][1]
                if isinstance(newest, DFSU):
                    newest = newest.obj
                self._append(key, DELETED, DFSU(key, newest))
                deletions += 1
        for key, o in self.known.items():
            if key not in listed and key not in self.raw:
                self._append(key, DELETED, DFSU(key, o))
                deletions += 1
        if not self.populated:
            self.populated = True
            self.count = len(listed) + deletions

    def resync(self):
        for key, o in self.known.items():
            if key not in self.raw:
                self._append(key, SYNC, o)

    def pop(self):
        initial = not self.has_synced()
        key = self.order.pop(0)
        deltas = self.deltas(key)
        del self.raw[key]
        for t, o in deltas:  # what an informer does with its cache
            if t is DELETED:
                self.known.pop(key, None)
            else:
                self.known[key] = o
        if self.count:
            self.count -= 1
        return deltas, initial

    def has_synced(self):
        return self.populated and self.count == 0


_FIFO_NAMES = st.sampled_from(["a", "b", "c", "d"])


class DeltaFIFOMachine(RuleBasedStateMachine):
    emit_replaced = True

    def __init__(self):
        super().__init__()
        self.version = 0
        self.known = Indexer()
        self.fifo = DeltaFIFO(known_objects=self.known,
                              emit_delta_type_replaced=self.emit_replaced)
        self.model = FifoModel(self.emit_replaced)

    def _obj(self, name):
        self.version += 1
        return mk(name, self.version)

    @rule(name=_FIFO_NAMES)
    def add(self, name):
        o = self._obj(name)
        self.fifo.add(o)
        self.model.add(o)

    @rule(name=_FIFO_NAMES)
    def update(self, name):
        o = self._obj(name)
        self.fifo.update(o)
        self.model.add(o, UPDATED)

    @rule(name=_FIFO_NAMES)
    def delete(self, name):
        o = self._obj(name)
        self.fifo.delete(o)
        self.model.delete(o)

    @rule(names=st.lists(_FIFO_NAMES, max_size=5))
    def replace(self, names):
        objs = [self._obj(n) for n in names]
        self.fifo.replace(objs, str(self.version))
        self.model.replace(objs)

    @rule()
    def resync(self):
        self.fifo.resync()
        self.model.resync()

    @precondition(lambda self: self.model.order)
    @rule()
    def pop(self):
        def process(deltas, initial):
            for d in deltas:
                if d.type is DELETED:
                    self.known.delete(d.object)
                else:
                    self.known.update(d.object)
            return [(d.type, d.object) for d in deltas], initial

        assert self.fifo.pop(process) == self.model.pop()

    @invariant()
    def matches_model(self):
        assert self.fifo.list_keys() == self.model.order
        for key in self.model.order:
            assert [tuple(d) for d in self.fifo.get_by_key(key)] == self.model.deltas(key)
        assert self.fifo.has_synced() is self.model.has_synced()
        assert {k: self.known.get_by_key(k) for k in self.known.list_keys()} == self.model.known


class DeltaFIFOSyncMachine(DeltaFIFOMachine):
    emit_replaced = False


_MODEL_SETTINGS = settings(max_examples=80, stateful_step_count=30, deadline=None)
TestDeltaFIFOModel = DeltaFIFOMachine.TestCase
TestDeltaFIFOModel.settings = _MODEL_SETTINGS
TestDeltaFIFOSyncModel = DeltaFIFOSyncMachine.TestCase
TestDeltaFIFOSyncModel.settings = _MODEL_SETTINGS
