"""Tests for informers.memory: the opt-in tuning, its reference-counted GC pause, and the
informer's initial-sync part (with the DeltaFIFO hook it runs on)."""

from __future__ import annotations

import gc
import threading

import pytest

from informers import memory
from informers.delta_fifo import DeltaFIFO
from informers.errors import KeyFuncError
from informers.memory import (
    FULL_COLLECTION_THRESHOLD,
    InitialSyncGC,
    MemoryTuning,
    gc_pause_depth,
    gc_paused,
)


def test_disables_and_restores():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        assert gc_pause_depth() == 1
    assert gc.isenabled()
    assert gc_pause_depth() == 0


def test_nested_restores_only_at_the_last_exit():
    with gc_paused():
        with gc_paused():
            assert gc_pause_depth() == 2
        assert not gc.isenabled()
    assert gc.isenabled()


def test_restores_on_exception():
    try:
        with gc_paused():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert gc.isenabled()
    assert gc_pause_depth() == 0


def test_keeps_gc_disabled_if_it_was_disabled():
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_threads():
    entered = threading.Barrier(3)
    leave = threading.Event()
    left = []

    def worker():
        with gc_paused():
            entered.wait()
            leave.wait(5)
        left.append(1)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    entered.wait()
    assert gc_pause_depth() == 2
    assert not gc.isenabled()
    leave.set()
    for t in threads:
        t.join(5)
    assert left == [1, 1]
    assert gc.isenabled()
    assert gc_pause_depth() == 0


def test_release_free_memory_trims_on_glibc_and_is_a_no_op_elsewhere(monkeypatch) -> None:
    import platform


    expected = platform.libc_ver()[0] == "glibc"
    assert memory.release_free_memory() is expected
    memory._malloc_trim.cache_clear()
    monkeypatch.setattr(memory.ctypes, "CDLL", lambda name: object())  # no malloc_trim
    try:
        assert memory.release_free_memory() is False
    finally:
        memory._malloc_trim.cache_clear()


# -- InitialSyncGC and the DeltaFIFO's initial-population hook ------------------------------------


@pytest.fixture
def clean_gc():
    """CPython's default thresholds, nothing frozen; both restored afterwards."""
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*saved)


def test_started_pauses_and_processed_freezes_raises_the_threshold_and_resumes(clean_gc):
    pause = InitialSyncGC("pods", MemoryTuning())
    pause.started()
    pause.started()  # idempotent while paused
    assert (gc_pause_depth(), gc.isenabled()) == (1, False)
    pause.processed()
    assert (gc_pause_depth(), gc.isenabled()) == (0, True)
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (700, 10, FULL_COLLECTION_THRESHOLD)
    assert pause.finished
    pause.started()  # never again after processed
    assert gc_pause_depth() == 0


def test_each_part_of_the_tuning_can_be_switched_off(clean_gc, monkeypatch):
    trims: list[int] = []
    monkeypatch.setattr(memory, "release_free_memory", lambda: trims.append(1) or True)
    no_freeze = InitialSyncGC("pods", MemoryTuning(freeze_after_initial_sync=False))
    no_freeze.started()
    no_freeze.processed()
    assert (gc_pause_depth(), gc.get_freeze_count(), gc.get_threshold()) == (0, 0, (700, 10, 10))
    assert trims == [1]
    no_pause = InitialSyncGC("pods", MemoryTuning(pause_gc_while_listing=False,
                                                  trim_after_initial_sync=False,
                                                  full_collection_threshold=50))
    no_pause.started()
    assert (gc_pause_depth(), gc.isenabled()) == (0, True)
    no_pause.processed()
    assert gc.get_freeze_count() > 0 and gc.get_threshold() == (700, 10, 50)
    assert trims == [1]


def test_stopped_resumes_without_freezing(clean_gc):
    stopped = InitialSyncGC("pods", MemoryTuning())
    stopped.started()
    stopped.stopped()  # the informer stopped before its first sync
    assert (gc_pause_depth(), gc.get_freeze_count(), stopped.finished) == (0, 0, True)
    stopped.started()
    assert gc_pause_depth() == 0


def test_failed_resumes_and_the_next_start_pauses_again(clean_gc):
    pause = InitialSyncGC("pods", MemoryTuning())
    pause.started()
    pause.failed()
    assert (gc_pause_depth(), pause.finished) == (0, False)
    pause.started()
    assert gc_pause_depth() == 1
    pause.processed()
    assert gc_pause_depth() == 0


def test_the_fifo_ends_the_pause_at_once_for_an_empty_first_list(clean_gc):
    pause = InitialSyncGC("pods", MemoryTuning())
    fifo = DeltaFIFO(initial_population_hook=pause)
    fifo.replace([], "1")
    assert fifo.has_synced()
    assert (pause.finished, gc_pause_depth()) == (True, 0)


def test_the_fifo_ends_the_pause_with_the_last_item_of_the_first_list(clean_gc):
    pause = InitialSyncGC("pods", MemoryTuning())
    fifo = DeltaFIFO(initial_population_hook=pause)
    fifo.replace([{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}], "2")
    seen = []

    def process(key, deltas, initial):
        seen.append((key, initial, pause.finished, gc_pause_depth(), fifo.has_synced()))

    fifo.pop_keyed(process)
    fifo.pop_keyed(process)
    assert seen == [("a", True, False, 1, False), ("b", True, False, 1, False)]
    assert (pause.finished, gc_pause_depth(), fifo.has_synced()) == (True, 0, True)


def test_a_failed_first_replace_resumes_the_collector(clean_gc):
    pause = InitialSyncGC("pods", MemoryTuning())
    fifo = DeltaFIFO(initial_population_hook=pause)
    with pytest.raises(KeyFuncError):
        fifo.replace([{"metadata": {"name": "a"}}, {"no": "metadata"}], "2")
    assert (gc_pause_depth(), pause.finished, fifo.has_synced()) == (0, False, False)
