"""Benchmarks Indexer updates against a bare dict assignment measured in the same run.

Run ``python -m benchmarks.bench_indexer`` (200,000 updates per figure, about 15 s) or add
``--quick`` (50,000). Every figure is the best of ``--repeat`` runs, in operations per second,
beside the baseline (rows run round-robin, so load changes hit all rows alike); ``ratio``
is the baseline's rate divided by the figure's (how many times slower than the bare dict).

The setup mirrors client-go ``BenchmarkIndexer`` (``tools/cache/thread_safe_store_test.go``):
5,000 distinct objects ("imitates indexing nodes in 5000-node cluster"), here realistic pods
from :mod:`benchmarks.pods` spread over 10 namespaces, updated round-robin, so every update
takes the fast path (index values unchanged). The indexer has the namespace index and one
identity-like index (the object's name), as informers' caches do.

Rows:

1. ``dict[key_func(obj)] = obj`` (baseline): the key computation plus a bare dict store.
2. ``Indexer.update``, no indices: the store's own overhead (lock, key-function guard).
3. ``Indexer.update``, namespace + name indices, values unchanged (client-go BenchmarkIndexer).
4. ``Indexer.update``, namespace + name + a label index whose value flips on every update
   (the slow path: the key moves between value sets).
5. ``Indexer.replace`` of all 5,000 objects (objects per second), indices rebuilt.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.pods import make_pod
from informers.indexer import Indexer
from informers.keys import (
    NAMESPACE_INDEX,
    Indexers,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_index_func,
)

OBJECTS = 5000  # client-go BenchmarkIndexer: objectCount := 5000
NAMESPACES = 10

Row = tuple[str, float]  # (label, operations per second)


def by_name(obj: Any) -> list[str]:
    """An identity-like index: every object has its own value."""
    return [obj["metadata"]["name"]]


def by_flip(obj: Any) -> list[str]:
    return [obj["metadata"]["labels"]["flip"]]


def best_rates(rows: Sequence[tuple[str, int, Callable[[], float]]], repeat: int) -> list[Row]:
    """Operations per second of each row's fastest of ``repeat`` runs.

    Each row is ``(label, operations, run)`` where ``run`` returns its seconds. The rows run
    round-robin (every row once per round) so that a change in machine load during the run
    hits the baseline and the figures alike, keeping the ratios meaningful.
    """
    best = [float("inf")] * len(rows)
    for _ in range(repeat):
        for i, (_label, _n, run) in enumerate(rows):
            best[i] = min(best[i], run())
    return [(label, n / seconds) for (label, n, _run), seconds in zip(rows, best, strict=True)]


def make_objects() -> list[dict[str, Any]]:
    return [
        make_pod(i, namespace=f"ns-{i % NAMESPACES}", with_managed_fields=False)
        for i in range(OBJECTS)
    ]


def updates(objects: list[dict[str, Any]], n: int, repeat: int) -> list[Row]:
    count = len(objects)
    # The same round-robin sequence for every row: objects[i % count] for i in range(n).
    sequence = [objects[i % count] for i in range(n)]
    key_func = deletion_handling_meta_namespace_key_func

    def baseline() -> float:
        d: dict[str, Any] = {}
        start = time.perf_counter()
        for obj in sequence:
            d[key_func(obj)] = obj
        return time.perf_counter() - start

    def indexer_run(indexers: Indexers,
                    seq: list[dict[str, Any]],
                    initial: list[dict[str, Any]]) -> Callable[[], float]:
        def run() -> float:
            idx = Indexer(key_func, dict(indexers))
            idx.replace(initial, "1")
            update = idx.update
            start = time.perf_counter()
            for obj in seq:
                update(obj)
            elapsed = time.perf_counter() - start
            assert len(idx) == count
            return elapsed

        return run

    standard: Indexers = {NAMESPACE_INDEX: meta_namespace_index_func, "name": by_name}
    # Two copies of every object differing in one label, alternated so that every update
    # moves the key from one value set to the other.
    flipping = []
    for parity in ("a", "b"):
        batch = []
        for obj in objects:
            copy = {**obj, "metadata": {**obj["metadata"]}}
            copy["metadata"]["labels"] = {**obj["metadata"].get("labels", {}), "flip": parity}
            batch.append(copy)
        flipping.append(batch)
    flip_sequence = [flipping[(i // count) % 2][i % count] for i in range(n)]

    flip_indexers: Indexers = {**standard, "flip": by_flip}
    return best_rates([
        ("dict[key_func(obj)] = obj (baseline)", n, baseline),
        ("Indexer.update, no indices", n, indexer_run({}, sequence, objects)),
        ("Indexer.update, namespace+name, unchanged", n,
         indexer_run(standard, sequence, objects)),
        ("Indexer.update, +label index moving", n,
         indexer_run(flip_indexers, flip_sequence, flipping[1])),
    ], repeat)


def replaces(objects: list[dict[str, Any]], rounds: int, repeat: int) -> list[Row]:
    key_func = deletion_handling_meta_namespace_key_func

    def baseline() -> float:
        start = time.perf_counter()
        for _ in range(rounds):
            d = {}
            for obj in objects:
                d[key_func(obj)] = obj
        return time.perf_counter() - start

    def run() -> float:
        idx = Indexer(key_func, {NAMESPACE_INDEX: meta_namespace_index_func, "name": by_name})
        start = time.perf_counter()
        for _ in range(rounds):
            idx.replace(objects, "1")
        return time.perf_counter() - start

    n = rounds * len(objects)
    return best_rates([
        ("dict of key_func(obj) (baseline)", n, baseline),
        ("Indexer.replace, namespace+name", n, run),
    ], repeat)


def print_table(title: str, rows: Sequence[Row], out: Callable[[str], None] = print) -> None:
    """Print ``rows`` with the first row as baseline: ops/s and baseline-rate / rate."""
    out(f"\n{title}")
    out(f"  {'':44} {'ops/s':>11} {'ratio':>8}")
    base = rows[0][1]
    for label, rate in rows:
        out(f"  {label:44} {rate:11,.0f} {base / rate:7.2f}x")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_indexer",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="50,000 updates per figure instead of 200,000")
    parser.add_argument("--updates", type=int, default=None, help="updates per figure")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best is kept)")
    args = parser.parse_args(argv)
    n = args.updates or (50_000 if args.quick else 200_000)
    objects = make_objects()
    print(f"indexer benchmark: {OBJECTS:,} pods in {NAMESPACES} namespaces, "
          f"{n:,} updates per figure, best of {args.repeat}")
    print_table("1. updates (client-go BenchmarkIndexer)", updates(objects, n, args.repeat))
    rounds = max(1, n // OBJECTS // 5)
    print_table(f"2. replace of {OBJECTS:,} objects x {rounds}",
                replaces(objects, rounds, args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
