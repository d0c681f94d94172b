"""Tests for informers.initial_sync_gc on its own (the informer-level behaviour, a pause from
the first list until it was processed, is in test_shared_informer.py)."""

from __future__ import annotations

import gc

import pytest

from informers.gc_pause import gc_pause_depth
from informers.initial_sync_gc import FULL_COLLECTION_THRESHOLD, InformerFIFO, InitialSyncGC


@pytest.fixture
def clean_gc():
    """CPython's default thresholds, nothing frozen; both restored afterwards."""
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*saved)


def test_enter_pauses_and_done_freezes_raises_the_threshold_and_resumes(clean_gc):
    pause = InitialSyncGC("pods", freeze=True)
    pause.enter()
    pause.enter()  # idempotent while paused
    assert (gc_pause_depth(), gc.isenabled()) == (1, False)
    pause.done()
    assert (gc_pause_depth(), gc.isenabled()) == (0, True)
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (700, 10, FULL_COLLECTION_THRESHOLD)
    assert pause.finished
    pause.enter()  # never again after done
    assert gc_pause_depth() == 0


def test_done_without_freeze_only_resumes(clean_gc):
    pause = InitialSyncGC("pods", freeze=False)
    pause.enter()
    pause.done()
    assert (gc_pause_depth(), gc.get_freeze_count(), gc.get_threshold()) == (0, 0, (700, 10, 10))
    stopped = InitialSyncGC("pods", freeze=True)
    stopped.enter()
    stopped.done(freeze=False)  # the informer stopped before its first sync
    assert (gc_pause_depth(), gc.get_freeze_count()) == (0, 0)


def test_abort_resumes_and_the_next_enter_pauses_again(clean_gc):
    pause = InitialSyncGC("pods", freeze=True)
    pause.enter()
    pause.abort()
    assert (gc_pause_depth(), pause.finished) == (0, False)
    pause.enter()
    assert gc_pause_depth() == 1
    pause.done()
    assert gc_pause_depth() == 0


def test_the_fifo_ends_the_pause_at_once_for_an_empty_first_list(clean_gc):
    pause = InitialSyncGC("pods", freeze=True)
    fifo = InformerFIFO(pause)
    fifo.replace([], "1")
    assert fifo.has_synced()
    assert (pause.finished, gc_pause_depth()) == (True, 0)


def test_the_fifo_ends_the_pause_with_the_last_item_of_the_first_list(clean_gc):
    pause = InitialSyncGC("pods", freeze=True)
    fifo = InformerFIFO(pause)
    fifo.replace([{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}], "2")
    seen = []

    def process(key, deltas, initial):
        seen.append((key, initial, pause.finished, gc_pause_depth()))

    fifo.pop_keyed(process)
    fifo.pop_keyed(process)
    assert seen == [("a", True, False, 1), ("b", True, False, 1)]
    assert (pause.finished, gc_pause_depth(), fifo.has_synced()) == (True, 0, True)
