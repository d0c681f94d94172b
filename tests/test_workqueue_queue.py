"""Tests for informers.workqueue.queue: client-go queue_test.go semantics, a model, threads."""

from __future__ import annotations

import random
import threading
import time

import pytest
from helpers import wait_until
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from informers.workqueue import Queue


def cond_waiters(q: Queue) -> int:
    """Threads blocked on the queue's condition variable (get or shut_down_with_drain)."""
    return len(q._cond._waiters)  # type: ignore[attr-defined]


def start(fn, *args) -> tuple[threading.Thread, list]:
    result: list = []
    thread = threading.Thread(target=lambda: result.append(fn(*args)), daemon=True)
    thread.start()
    return thread, result


# -- basic semantics ------------------------------------------------------------------------------


def test_fifo_order_and_len_counts_queued_only():
    q = Queue()
    for item in ("a", "b", "c"):
        q.add(item)
    assert len(q) == 3
    assert q.get() == ("a", False)
    assert len(q) == 2  # "a" is processing, not queued
    assert q.get() == ("b", False)
    q.done("a")
    q.done("b")
    assert q.get() == ("c", False)
    assert len(q) == 0
    q.done("c")
    assert len(q) == 0


def test_add_of_dirty_item_is_coalesced():
    q = Queue()
    q.add("a")
    q.add("b")
    q.add("a")
    assert len(q) == 2
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)


def test_readd_during_processing_is_deferred_until_done():
    q = Queue()
    q.add("a")
    assert q.get() == ("a", False)
    q.add("a")
    q.add("a")
    assert len(q) == 0  # never handed to a second worker while processing
    q.done("a")
    assert len(q) == 1
    assert q.get() == ("a", False)
    q.done("a")
    assert len(q) == 0


def test_done_of_item_not_processing_is_ignored():
    q = Queue()
    q.done("x")
    q.add("a")
    q.done("a")  # queued, not processing: must not queue it twice
    assert len(q) == 1
    assert q.get() == ("a", False)
    q.done("a")
    q.done("a")
    assert len(q) == 0


def test_unhashable_item_raises_type_error():
    q = Queue()
    with pytest.raises(TypeError):
        q.add(["not", "hashable"])


def test_get_blocks_until_add():
    q = Queue()
    thread, result = start(q.get)
    wait_until(lambda: cond_waiters(q) == 1)
    assert result == []
    q.add("a")
    thread.join(5)
    assert result == [("a", False)]


def test_each_add_wakes_one_blocked_getter():
    q = Queue()
    threads = [start(q.get) for _ in range(3)]
    wait_until(lambda: cond_waiters(q) == 3)
    for item in ("a", "b", "c"):
        q.add(item)
    for thread, _ in threads:
        thread.join(5)
    assert sorted(r[0] for _, r in threads) == [("a", False), ("b", False), ("c", False)]


def test_done_requeue_wakes_blocked_getter():
    q = Queue()
    q.add("a")
    q.get()
    q.add("a")
    thread, result = start(q.get)
    wait_until(lambda: cond_waiters(q) == 1)
    q.done("a")
    thread.join(5)
    assert result == [("a", False)]


# -- shutdown -------------------------------------------------------------------------------------


def test_shut_down_wakes_every_blocked_getter():
    q = Queue()
    threads = [start(q.get) for _ in range(3)]
    wait_until(lambda: cond_waiters(q) == 3)
    assert q.shutting_down() is False
    q.shut_down()
    assert q.shutting_down() is True
    for thread, result in threads:
        thread.join(5)
        assert result == [(None, True)]


def test_add_after_shut_down_is_ignored():
    q = Queue()
    q.shut_down()
    q.add("a")
    assert len(q) == 0
    assert q.get() == (None, True)


def test_get_drains_queue_after_shut_down():
    q = Queue()
    q.add("a")
    q.add("b")
    q.shut_down()
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    assert q.get() == (None, True)
    assert q.get() == (None, True)


def test_done_requeues_dirty_item_after_shut_down():
    q = Queue()
    q.add("a")
    assert q.get() == ("a", False)
    q.add("a")  # dirty while processing, before shutdown
    q.shut_down()
    q.done("a")
    assert len(q) == 1
    assert q.get() == ("a", False)
    q.done("a")
    assert q.get() == (None, True)


def test_add_during_processing_after_shut_down_is_lost_by_design():
    q = Queue()
    q.add("a")
    q.get()
    q.shut_down()
    q.add("a")  # ignored: shutting down
    q.done("a")
    assert len(q) == 0
    assert q.get() == (None, True)


def test_shut_down_with_drain_returns_at_once_when_nothing_is_processing():
    q = Queue()
    q.add("a")  # queued, not processing: does not hold the drain
    q.shut_down_with_drain()
    assert q.shutting_down() is True
    assert q.get() == ("a", False)


def test_shut_down_with_drain_waits_for_every_done():
    q = Queue()
    for item in ("a", "b", "c"):
        q.add(item)
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    drainer, result = start(q.shut_down_with_drain)
    wait_until(lambda: cond_waiters(q) == 1)
    q.add("d")  # ignored
    assert q.get() == ("c", False)  # the queue still drains
    q.done("a")
    q.done("b")
    assert drainer.is_alive()  # "c" is still processing
    assert cond_waiters(q) == 1
    q.done("c")
    drainer.join(5)
    assert not drainer.is_alive()
    assert result == [None]
    assert q.get() == (None, True)


def test_shut_down_with_drain_returns_when_last_done_requeues_a_dirty_item():
    q = Queue()
    q.add("a")
    q.get()
    q.add("a")
    drainer, _ = start(q.shut_down_with_drain)
    wait_until(lambda: cond_waiters(q) == 1)
    q.done("a")  # processing is empty now; "a" is queued again
    drainer.join(5)
    assert not drainer.is_alive()
    assert q.get() == ("a", False)


def test_shut_down_interrupts_shut_down_with_drain():
    q = Queue()
    q.add("a")
    q.get()
    drainer, _ = start(q.shut_down_with_drain)
    wait_until(lambda: cond_waiters(q) == 1)
    q.shut_down()
    drainer.join(5)
    assert not drainer.is_alive()
    q.done("a")  # still allowed after the interrupted drain
    assert q.get() == (None, True)


# -- model-based property test --------------------------------------------------------------------

ITEMS = st.sampled_from(["a", "b", "c", "d", "e"])


class QueueModel(RuleBasedStateMachine):
    """Single-threaded random add/get/done/shut_down against a plain reference model."""

    def __init__(self) -> None:
        super().__init__()
        self.q = Queue()
        self.queue: list[str] = []
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self.shut = False

    @rule(item=ITEMS)
    def add(self, item):
        self.q.add(item)
        if self.shut or item in self.dirty:
            return
        self.dirty.add(item)
        if item not in self.processing:
            self.queue.append(item)

    @precondition(lambda self: self.queue or self.shut)  # otherwise get() would block
    @rule()
    def get(self):
        item, shutdown = self.q.get()
        if not self.queue:
            assert (item, shutdown) == (None, True)
            return
        assert (item, shutdown) == (self.queue.pop(0), False)
        assert item not in self.processing  # never handed out twice at once
        self.processing.add(item)
        self.dirty.discard(item)

    @precondition(lambda self: self.processing)
    @rule(data=st.data())
    def done(self, data):
        item = data.draw(st.sampled_from(sorted(self.processing)))
        self.q.done(item)
        self.processing.discard(item)
        if item in self.dirty:
            self.queue.append(item)

    @rule(item=ITEMS)
    def done_not_processing(self, item):
        if item not in self.processing:
            self.q.done(item)  # ignored

    @rule()
    def shut_down(self):
        self.q.shut_down()
        self.shut = True

    @invariant()
    def same_state_as_model(self):
        assert list(self.q._queue) == self.queue
        assert self.q._dirty == self.dirty
        assert self.q._processing == self.processing
        assert len(self.q) == len(self.queue)
        assert self.q.shutting_down() is self.shut

    @invariant()
    def three_structure_invariant(self):
        queued = list(self.q._queue)
        assert len(set(queued)) == len(queued)
        assert set(queued) <= self.q._dirty
        assert not set(queued) & self.q._processing

    def teardown(self):
        # Nothing lost: every dirty item is handed out again, even across shutdown.
        owed = set(self.dirty)
        self.q.shut_down()
        handed: set[str] = set()
        while True:
            for item in list(self.q._processing):
                self.q.done(item)
            item, shutdown = self.q.get()
            if shutdown:
                break
            handed.add(item)
        assert handed == owed


TestQueueModel = QueueModel.TestCase
TestQueueModel.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


# -- concurrency ----------------------------------------------------------------------------------


def test_many_producers_and_workers_never_share_a_key_and_lose_no_add():
    q = Queue()
    keys = [f"ns/pod-{i}" for i in range(50)]
    lock = threading.Lock()
    seq = 0
    last_add: dict[str, int] = {}
    last_start: dict[str, int] = {}
    active: set[str] = set()
    violations: list[str] = []
    processed = [0]
    readds_while_processing = [0]

    go = threading.Barrier(16, timeout=10)

    def producer(seed: int) -> None:
        nonlocal seq
        rng = random.Random(seed)
        go.wait()
        for i in range(2000):
            key = rng.choice(keys)
            with lock:
                seq += 1
                last_add[key] = seq
                if key in active:
                    readds_while_processing[0] += 1
            q.add(key)
            if i % 8 == 0:
                time.sleep(0)  # let the GIL switch so adds interleave with processing

    def worker() -> None:
        nonlocal seq
        go.wait()
        while True:
            key, shutdown = q.get()
            if shutdown:
                return
            with lock:
                if key in active:
                    violations.append(key)
                active.add(key)
                seq += 1
                last_start[key] = seq
                processed[0] += 1
            # yield so that other workers and producers interleave with this one
            time.sleep(0)
            with lock:
                active.discard(key)
            q.done(key)

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(8)]
    producers = [threading.Thread(target=producer, args=(i,), daemon=True) for i in range(8)]
    for thread in workers + producers:
        thread.start()
    for thread in producers:
        thread.join(30)
    q.shut_down_with_drain()
    for thread in workers:
        thread.join(30)
    assert not any(t.is_alive() for t in workers)
    assert violations == []
    assert set(last_start) == set(last_add)
    late = [k for k in keys if last_start[k] < last_add[k]]
    assert late == []  # each key's final processing started after its last add
    assert 50 <= processed[0] <= 16000
    assert readds_while_processing[0] > 0  # the run did exercise re-adds during processing
    assert len(q) == 0
    assert q._processing == set()
