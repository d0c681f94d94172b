"""Tests for informers.workqueue.parallelizer (client-go parallelizer_test.go)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from informers.workqueue import parallelize_until


@pytest.mark.parametrize(
    ("pieces", "workers", "chunk_size"),
    [(1000, 10, 1), (1000, 10, 10), (1000, 10, 100), (999, 10, 13), (5, 1, 0)],
)
def test_every_piece_runs_exactly_once(pieces, workers, chunk_size):
    seen: Counter[int] = Counter()
    lock = threading.Lock()

    def work(piece: int) -> None:
        with lock:
            seen[piece] += 1

    parallelize_until(workers, pieces, work, chunk_size=chunk_size)
    assert seen == Counter(range(pieces))


def test_no_pieces_calls_nothing():
    calls: list[int] = []
    parallelize_until(4, 0, calls.append)
    assert calls == []


def test_workers_are_capped_by_the_number_of_chunks():
    names: set[str] = set()
    gate = threading.Barrier(3, timeout=5)

    def work(piece: int) -> None:
        names.add(threading.current_thread().name)
        gate.wait()  # all three pieces run at once, so three threads exist

    parallelize_until(10, 30, work, chunk_size=10)
    assert names == {"parallelize-until-0", "parallelize-until-1", "parallelize-until-2"}


def test_stop_skips_the_remaining_pieces():
    stop = threading.Event()
    calls: list[int] = []

    def work(piece: int) -> None:
        calls.append(piece)
        if piece == 3:
            stop.set()

    parallelize_until(1, 100, work, stop=stop)
    assert calls == [0, 1, 2, 3]

    stop_first = threading.Event()
    stop_first.set()
    parallelize_until(4, 100, calls.append, stop=stop_first)
    assert calls == [0, 1, 2, 3]


def test_an_exception_stops_the_work_and_is_reraised():
    calls: list[int] = []

    def work(piece: int) -> None:
        calls.append(piece)
        if piece == 5:
            raise RuntimeError("piece 5 broke")

    with pytest.raises(RuntimeError, match="piece 5 broke"):
        parallelize_until(1, 100, work)
    assert calls == [0, 1, 2, 3, 4, 5]
