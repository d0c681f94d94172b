"""Tests of informers.delta_fifo.DeltaFIFO's ``direct_handoff`` (the rest of the FIFO is in
test_delta_fifo.py): an item queued while the consumer waits on an empty queue is processed on
the producer's thread, with the FIFO's order, sync tracking and one-at-a-time guarantee."""

from __future__ import annotations

import logging
import threading
import time

from informers import DeltaFIFO
from informers.delta_fifo import DeltaType
from informers.errors import FIFOClosedError

ADDED, UPDATED, DELETED, REPLACED = (
    DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED, DeltaType.REPLACED)
WAIT = 5.0  # real seconds a test waits for another thread before failing


def mk(name, val):
    return {"metadata": {"name": name}, "val": val}


class Consumer:
    """A thread popping until the FIFO closes; records (thread, key, delta types, values,
    is_in_initial_list) per processed item. ``on_process`` runs inside process."""

    def __init__(self, fifo: DeltaFIFO, on_process=None) -> None:
        self.fifo = fifo
        self.on_process = on_process
        self.seen: list[tuple] = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="consumer", daemon=True)
        self.thread.start()

    def process(self, key, deltas, initial):
        if self.on_process is not None:
            self.on_process(key)
        with self.cond:
            self.seen.append((threading.current_thread().name, key,
                              [d.type for d in deltas], [d.object["val"] for d in deltas],
                              initial))
            self.cond.notify_all()

    def _run(self) -> None:
        while True:
            try:
                self.fifo.pop_keyed(self.process)
            except FIFOClosedError:
                return

    def wait_idle(self) -> None:
        """Until the consumer waits on the empty queue."""
        deadline = time.monotonic() + WAIT
        while self.fifo._waiting != 1 or len(self.fifo):
            assert time.monotonic() < deadline, "the consumer never waited"
            time.sleep(0.001)

    def wait_for(self, count: int) -> list[tuple]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.seen) >= count, WAIT), self.seen
            return list(self.seen)

    def close(self) -> None:
        self.fifo.close()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()


class Known:
    """known_objects: the names given, as a consumer's cache would hold them."""

    def __init__(self, *names: str) -> None:
        self.objects = {name: mk(name, 0) for name in names}

    def list_keys(self):
        return list(self.objects)

    def get_by_key(self, key):
        return self.objects.get(key)


def test_an_item_queued_for_a_waiting_consumer_is_processed_on_the_producers_thread():
    fifo = DeltaFIFO(direct_handoff=True, known_objects=Known("a"))
    consumer = Consumer(fifo)
    consumer.wait_idle()
    fifo.add(mk("a", 1))
    # Processed before add returned, on this thread; the consumer still waits.
    assert consumer.seen == [("MainThread", "a", [ADDED], [1], False)]
    consumer.wait_idle()
    fifo.update(mk("a", 2))
    fifo.delete(mk("a", 3))
    assert consumer.seen[1:] == [
        ("MainThread", "a", [UPDATED], [2], False),
        ("MainThread", "a", [DELETED], [3], False),
    ]
    assert len(fifo) == 0
    consumer.close()
    assert len(consumer.seen) == 3


def test_without_direct_handoff_the_consumer_processes_everything():
    fifo = DeltaFIFO()
    consumer = Consumer(fifo)
    consumer.wait_idle()
    fifo.add(mk("a", 1))
    assert consumer.wait_for(1) == [("consumer", "a", [ADDED], [1], False)]
    consumer.close()


def test_a_list_goes_to_the_consumer_and_later_events_are_handed_over():
    fifo = DeltaFIFO(direct_handoff=True, emit_delta_type_replaced=True)
    consumer = Consumer(fifo)
    consumer.wait_idle()
    fifo.replace([mk("a", 1), mk("b", 2)])  # a relist is never handed over
    assert consumer.wait_for(2) == [
        ("consumer", "a", [REPLACED], [1], True),
        ("consumer", "b", [REPLACED], [2], True),
    ]
    consumer.wait_idle()
    assert fifo.has_synced()
    fifo.update(mk("a", 3))
    assert consumer.seen[2] == ("MainThread", "a", [UPDATED], [3], False)
    consumer.close()


def test_an_item_queued_by_process_itself_goes_to_the_consumer_not_recursively():
    fifo = DeltaFIFO(direct_handoff=True)

    def on_process(key):
        if key == "a":
            fifo.add(mk("b", 2))  # re-entrant: the lock is held by this thread

    consumer = Consumer(fifo, on_process)
    consumer.wait_idle()
    fifo.add(mk("a", 1))
    assert consumer.wait_for(2) == [
        ("MainThread", "a", [ADDED], [1], False),
        ("consumer", "b", [ADDED], [2], False),
    ]
    consumer.close()


def test_a_failing_hand_over_is_logged_the_producer_goes_on_and_the_item_is_dropped(caplog):
    fifo = DeltaFIFO(direct_handoff=True)

    def on_process(key):
        if key == "bad":
            raise RuntimeError("boom")

    consumer = Consumer(fifo, on_process)
    consumer.wait_idle()
    with caplog.at_level(logging.ERROR, logger="informers.delta_fifo"):
        fifo.add(mk("bad", 1))  # does not raise
    assert [(r.getMessage(), r.exc_info[1].args) for r in caplog.records] == [
        ("DeltaFIFO: processing a handed-over item failed; it is dropped", ("boom",))]
    assert len(fifo) == 0
    fifo.add(mk("good", 2))
    assert consumer.seen == [("MainThread", "good", [ADDED], [2], False)]
    consumer.close()


def test_a_delete_of_an_unknown_object_is_dropped_without_processing():
    fifo = DeltaFIFO(direct_handoff=True)
    consumer = Consumer(fifo)
    consumer.wait_idle()
    fifo.delete(mk("ghost", 1))
    assert consumer.seen == []
    assert len(fifo) == 0
    consumer.close()


def test_items_queued_while_nobody_waits_are_popped_by_the_consumer_in_order():
    fifo = DeltaFIFO(direct_handoff=True)
    fifo.add(mk("a", 1))
    fifo.add(mk("b", 2))
    fifo.update(mk("a", 3))
    consumer = Consumer(fifo)
    assert consumer.wait_for(2) == [
        ("consumer", "a", [ADDED, UPDATED], [1, 3], False),
        ("consumer", "b", [ADDED], [2], False),
    ]
    consumer.close()


def test_concurrent_producers_lose_nothing_and_keep_each_keys_order():
    """Two producers (a watch and a resync thread, say) race a consumer that is sometimes idle
    and sometimes busy: every value is processed exactly once, each key's values in the order
    they were queued, one call at a time, whichever thread runs it."""
    fifo = DeltaFIFO(direct_handoff=True, known_objects=Known(*[f"k{i}" for i in range(8)]))
    processed: dict[str, list[int]] = {}
    threads: set[str] = set()
    busy = threading.Lock()
    overlaps: list[str] = []

    def on_process(key):
        if not busy.acquire(blocking=False):
            overlaps.append(key)
            return
        try:
            time.sleep(0.0001 if key.endswith("3") else 0)  # sometimes the consumer is busy
        finally:
            busy.release()

    consumer = Consumer(fifo, on_process)

    def produce(offset: int) -> None:
        for n in range(400):
            fifo.update(mk(f"k{(n + offset) % 8}", offset * 1000 + n))

    producers = [threading.Thread(target=produce, args=(o,), name=f"producer-{o}")
                 for o in (1, 2)]
    consumer.wait_idle()  # so the first update at least is handed over
    for t in producers:
        t.start()
    for t in producers:
        t.join(WAIT)
    consumer.wait_idle()
    consumer.close()
    for thread_name, key, types, values, initial in consumer.seen:
        processed.setdefault(key, []).extend(values)
        threads.add(thread_name)
        assert set(types) == {UPDATED} and not initial
    assert overlaps == []
    for offset in (1, 2):
        for k in range(8):
            mine = [v for v in processed[f"k{k}"] if v // 1000 == offset]
            assert mine == sorted(mine)  # each producer's values for a key, in its order
    assert sorted(v for values in processed.values() for v in values) == sorted(
        o * 1000 + n for o in (1, 2) for n in range(400))
    assert threads <= {"consumer", "producer-1", "producer-2"}
    assert threads & {"producer-1", "producer-2"}
