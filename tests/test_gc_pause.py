"""Tests for informers.gc_pause: process-wide, reference-counted GC pausing."""

from __future__ import annotations

import gc
import threading

from informers.gc_pause import gc_pause_depth, gc_paused


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

    from informers import gc_pause

    expected = platform.libc_ver()[0] == "glibc"
    assert gc_pause.release_free_memory() is expected
    gc_pause._malloc_trim.cache_clear()
    monkeypatch.setattr(gc_pause.ctypes, "CDLL", lambda name: object())  # no malloc_trim
    try:
        assert gc_pause.release_free_memory() is False
    finally:
        gc_pause._malloc_trim.cache_clear()
