"""Tests for informers.workqueue.delaying_queue on a FakeClock (client-go delaying_queue_test)."""

from __future__ import annotations

import random
import threading

import pytest
from helpers import settle, wait_until

from informers.clock import FakeClock
from informers.workqueue import DelayingQueue
from informers.workqueue.delaying_queue import MAX_WAIT


def queued(q: DelayingQueue) -> list:
    return list(q._queue)


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def q(clock):
    queue = DelayingQueue(clock=clock)
    yield queue
    queue.shut_down()


def test_idle_waiting_thread_sleeps_for_the_heartbeat(q, clock):
    settle(clock, MAX_WAIT)
    assert MAX_WAIT == 10.0
    clock.step(10)
    settle(clock, 20.0)
    assert len(q) == 0


def test_add_after_adds_once_the_delay_passed(q, clock):
    settle(clock, 10.0)
    q.add_after("a", 5)
    settle(clock, 5.0)
    assert len(q) == 0
    clock.step(4)
    assert len(q) == 0
    clock.step(1)
    settle(clock, 15.0)  # a was added, the thread sleeps for the heartbeat again
    assert queued(q) == ["a"]
    assert q.get() == ("a", False)


def test_add_after_zero_or_negative_adds_now(q, clock):
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert queued(q) == ["a", "b"]
    settle(clock, 10.0)  # nothing went through the heap


def test_items_become_ready_in_deadline_order_then_call_order(q, clock):
    q.add_after("a", 3)
    q.add_after("b", 1)
    q.add_after("c", 2)
    q.add_after("d", 2)
    settle(clock, 1.0)
    clock.step(1)
    settle(clock, 2.0)
    assert queued(q) == ["b"]
    clock.step(2)
    settle(clock, 13.0)
    assert queued(q) == ["b", "c", "d", "a"]


def test_add_after_of_waiting_item_keeps_earliest_deadline_without_duplicate(q, clock):
    q.add_after("a", 10)
    settle(clock, 10.0)
    q.add_after("a", 5)  # earlier: moves the deadline
    settle(clock, 5.0)
    q.add_after("a", 8)  # later: ignored
    q.add_after("a", 5)  # same: ignored
    settle(clock, 5.0)
    clock.step(5)
    settle(clock, 15.0)  # the stale 10 s entry was dropped, only the heartbeat is left
    assert queued(q) == ["a"]
    assert q.get() == ("a", False)
    clock.step(5)  # t=10: the replaced deadline must not add "a" again
    settle(clock, 15.0)
    q.done("a")
    assert len(q) == 0


def test_add_after_of_queued_item_is_deduplicated_when_ready(q, clock):
    q.add("a")
    q.add_after("a", 1)
    settle(clock, 1.0)
    clock.step(1)
    settle(clock, 11.0)
    assert queued(q) == ["a"]


def test_add_after_of_processing_item_requeues_on_done(q, clock):
    q.add("a")
    assert q.get() == ("a", False)
    q.add_after("a", 1)
    settle(clock, 1.0)
    clock.step(1)
    settle(clock, 11.0)
    assert len(q) == 0  # dirty, not handed to a second worker
    q.done("a")
    assert queued(q) == ["a"]


def test_item_can_wait_again_after_it_was_added(q, clock):
    q.add_after("a", 1)
    settle(clock, 1.0)
    clock.step(1)
    settle(clock, 11.0)
    assert q.get() == ("a", False)
    q.done("a")
    q.add_after("a", 2)
    settle(clock, 3.0)
    clock.step(2)
    settle(clock, 13.0)
    assert queued(q) == ["a"]


def test_blocked_get_wakes_when_delayed_item_is_ready(q, clock):
    result: list = []
    getter = threading.Thread(target=lambda: result.append(q.get()), daemon=True)
    getter.start()
    q.add_after("a", 2)
    settle(clock, 2.0)
    clock.step(2)
    getter.join(5)
    assert result == [("a", False)]


def test_shut_down_stops_and_joins_the_named_waiting_thread(clock):
    q = DelayingQueue(name="delayed", clock=clock)
    thread = q._waiting_thread
    assert thread.name == "workqueue-delaying-delayed"
    assert thread.daemon is True
    q.add_after("a", 1)
    settle(clock, 1.0)
    q.shut_down()
    assert not thread.is_alive()
    assert clock.waiter_count() == 0
    q.add_after("b", 0)  # ignored after shutdown
    q.add_after("c", 1)  # ignored after shutdown
    assert q.get() == (None, True)  # "a" was dropped


def test_shut_down_with_drain_stops_the_waiting_thread(clock):
    q = DelayingQueue(clock=clock)
    q.add("x")
    assert q.get() == ("x", False)
    drainer = threading.Thread(target=q.shut_down_with_drain, daemon=True)
    drainer.start()
    wait_until(lambda: not q._waiting_thread.is_alive())
    wait_until(q.shutting_down)
    assert drainer.is_alive()
    q.done("x")
    drainer.join(5)
    assert not drainer.is_alive()


def test_concurrent_add_after_keeps_each_key_once_at_its_earliest_deadline(q, clock):
    keys = [f"k{i}" for i in range(40)]
    earliest: dict[str, int] = {}
    lock = threading.Lock()

    def producer(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(300):
            key = rng.choice(keys)
            delay = rng.randint(1, 20)
            with lock:
                earliest[key] = min(earliest.get(key, delay), delay)
            q.add_after(key, delay)

    producers = [threading.Thread(target=producer, args=(i,)) for i in range(8)]
    for thread in producers:
        thread.start()
    for thread in producers:
        thread.join(10)
    settle(clock, float(min(earliest.values())))
    seen: list[str] = []
    for now in range(1, 21):
        clock.step(1)
        due = sorted((d, k) for k, d in earliest.items() if d <= now)
        wait_until(lambda due=due: len(q) == len(due))
        later = [d for d in earliest.values() if d > now]
        if later:  # the thread sleeps until the next deadline before the next step
            settle(clock, float(min(later)))
        seen = queued(q)
        assert sorted(seen) == sorted(k for _, k in due)
    assert len(seen) == len(set(seen)) == len(earliest)
    # ready in deadline order
    assert [earliest[k] for k in seen] == sorted(earliest[k] for k in seen)


def test_waiting_len_counts_items_until_their_deadline(q, clock):
    settle(clock, 10.0)
    assert q.waiting_len() == 0
    q.add_after("a", 5)
    q.add_after("b", 7)
    q.add_after("a", 3)  # earlier deadline: still one entry for a
    assert q.waiting_len() == 2
    settle(clock, 3.0)
    clock.step(3)
    settle(clock, 7.0)
    assert q.waiting_len() == 1
    assert queued(q) == ["a"]
