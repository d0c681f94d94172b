"""Benchmarks the work queue against a bare deque and queue.Queue measured in the same run.

Run ``python -m benchmarks.bench_queue`` (200,000 items, about 15 s) or add ``--quick``
(20,000 items). Every figure is the best of ``--repeat`` runs, in items per second, beside the
baselines; the ratio columns divide by the baselines of the same section.

Sections:

1. One thread: add+get+done of distinct items, all added first then all taken (``batch``) and
   one item at a time (``interleaved``), also with a name (no-op metrics) and with Prometheus
   metrics when prometheus_client is installed; baselines ``deque`` append+popleft (bound C
   methods, no lock) and ``queue.Queue`` put+get(+task_done).
2. One producer thread and one consumer thread, distinct items; baselines ``queue.Queue``
   put/get(+task_done) and ``queue.SimpleQueue`` with the same threads. These figures swing
   by 2x or more from run to run: they depend on how the GIL hands over between the threads.
3. ``DelayingQueue.add_after`` with a fake clock, as client-go ``BenchmarkDelayingQueue_AddAfter``:
   N items with random delays in [0, 10 min), one step of 11 min, then get+done every item;
   baseline ``heapq`` push+pop of the same deadlines.
"""

from __future__ import annotations

import argparse
import heapq
import queue as stdlib_queue
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from informers.clock import FakeClock
from informers.workqueue import DelayingQueue, PrometheusMetricsProvider, Queue

Row = tuple[str, float]  # (label, items per second)


def best_rate(n: int, run: Callable[[], float], repeat: int) -> float:
    """Items per second of the fastest of ``repeat`` runs (``run`` returns its seconds)."""
    return n / min(run() for _ in range(repeat))


# -- 1. one thread --------------------------------------------------------------------------------


def single_thread(items: list[str], repeat: int) -> list[Row]:
    n = len(items)

    def deque_run() -> float:
        d: deque[str] = deque()
        append, popleft = d.append, d.popleft
        start = time.perf_counter()
        for item in items:
            append(item)
        for _ in items:
            popleft()
        return time.perf_counter() - start

    def stdlib_run(task_done: bool) -> Callable[[], float]:
        def run() -> float:
            q: stdlib_queue.Queue[str] = stdlib_queue.Queue()
            put, get, done = q.put, q.get, q.task_done
            start = time.perf_counter()
            for item in items:
                put(item)
            if task_done:
                for _ in items:
                    get()
                    done()
            else:
                for _ in items:
                    get()
            return time.perf_counter() - start

        return run

    def workqueue_batch(name: str, prometheus: bool = False) -> Callable[[], float]:
        def run() -> float:
            provider = None
            if prometheus:
                from prometheus_client import CollectorRegistry

                provider = PrometheusMetricsProvider(CollectorRegistry())
            q = Queue(name, metrics_provider=provider)
            add, get, done = q.add, q.get, q.done
            start = time.perf_counter()
            for item in items:
                add(item)
            for _ in items:
                item, _shutdown = get()
                done(item)
            elapsed = time.perf_counter() - start
            q.shut_down()
            return elapsed

        return run

    def workqueue_interleaved() -> float:
        q = Queue()
        add, get, done = q.add, q.get, q.done
        start = time.perf_counter()
        for item in items:
            add(item)
            got, _shutdown = get()
            done(got)
        return time.perf_counter() - start

    rows = [
        ("deque append+popleft (baseline)", best_rate(n, deque_run, repeat)),
        ("queue.Queue put+get (baseline)", best_rate(n, stdlib_run(False), repeat)),
        ("queue.Queue put+get+task_done", best_rate(n, stdlib_run(True), repeat)),
        ("Queue add+get+done, batch", best_rate(n, workqueue_batch(""), repeat)),
        ("Queue add+get+done, interleaved", best_rate(n, workqueue_interleaved, repeat)),
        ("Queue named (no-op metrics), batch", best_rate(n, workqueue_batch("bench"), repeat)),
    ]
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return rows
    rows.append(
        ("Queue, Prometheus metrics, batch", best_rate(n, workqueue_batch("bench", True), repeat))
    )
    return rows


# -- 2. one producer, one consumer ----------------------------------------------------------------


def _timed_threads(producer: Callable[[], None], consumer: Callable[[], None]) -> float:
    threads = [threading.Thread(target=consumer), threading.Thread(target=producer)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def producer_consumer(items: list[str], repeat: int) -> list[Row]:
    n = len(items)

    def stdlib_run(task_done: bool) -> float:
        q: stdlib_queue.Queue[str | None] = stdlib_queue.Queue()

        def produce() -> None:
            for item in items:
                q.put(item)
            q.put(None)

        def consume() -> None:
            get, done = q.get, q.task_done
            while get() is not None:
                if task_done:
                    done()

        return _timed_threads(produce, consume)

    def simple_run() -> float:
        q: stdlib_queue.SimpleQueue[str | None] = stdlib_queue.SimpleQueue()

        def produce() -> None:
            for item in items:
                q.put(item)
            q.put(None)

        def consume() -> None:
            get = q.get
            while get() is not None:
                pass

        return _timed_threads(produce, consume)

    def workqueue_run() -> float:
        q = Queue()
        handled = 0

        def produce() -> None:
            add = q.add
            for item in items:
                add(item)
            q.shut_down()

        def consume() -> None:
            nonlocal handled
            get, done = q.get, q.done
            while True:
                item, shutdown = get()
                if shutdown:
                    return
                handled += 1
                done(item)

        elapsed = _timed_threads(produce, consume)
        assert handled == n, (handled, n)
        return elapsed

    return [
        ("queue.Queue put/get (baseline)", best_rate(n, lambda: stdlib_run(False), repeat)),
        ("queue.Queue put/get+task_done", best_rate(n, lambda: stdlib_run(True), repeat)),
        ("queue.SimpleQueue put/get (C)", best_rate(n, simple_run, repeat)),
        ("Queue add / get+done", best_rate(n, workqueue_run, repeat)),
    ]


# -- 3. delaying queue ----------------------------------------------------------------------------


def delaying(items: list[str], repeat: int) -> list[Row]:
    n = len(items)
    rng = random.Random(42)
    delays = [rng.uniform(0.0, 600.0) for _ in items]

    def heap_run() -> float:
        heap: list[tuple[float, int, str]] = []
        start = time.perf_counter()
        for seq, (item, delay) in enumerate(zip(items, delays, strict=True)):
            heapq.heappush(heap, (delay, seq, item))
        while heap:
            heapq.heappop(heap)
        return time.perf_counter() - start

    def delaying_run() -> float:
        clock = FakeClock()
        q = DelayingQueue(clock=clock)
        add_after, get, done = q.add_after, q.get, q.done
        clock.wait_for_waiters(1)
        start = time.perf_counter()
        for item, delay in zip(items, delays, strict=True):
            add_after(item, delay)
        clock.step(660.0)
        for _ in items:
            item, _shutdown = get()
            done(item)
        elapsed = time.perf_counter() - start
        q.shut_down()
        return elapsed

    return [
        ("heapq push+pop (baseline)", best_rate(n, heap_run, repeat)),
        ("DelayingQueue add_after+step+get+done", best_rate(n, delaying_run, repeat)),
    ]


# -- output ---------------------------------------------------------------------------------------


def print_table(
    title: str,
    rows: Sequence[Row],
    baselines: Sequence[tuple[str, int]],
    out: Callable[[str], None] = print,
) -> None:
    """Print ``rows`` with one ratio column per ``(header, row index)`` baseline."""
    out(f"\n{title}")
    header = "".join(f" {name:>12}" for name, _ in baselines)
    out(f"  {'':42} {'items/s':>11}{header}")
    for label, rate in rows:
        ratios = "".join(f" {rate / rows[index][1]:12.3f}" for _, index in baselines)
        out(f"  {label:42} {rate:11,.0f}{ratios}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_queue", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="20,000 items instead of 200,000")
    parser.add_argument("--items", type=int, default=None, help="number of distinct items")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best is kept)")
    args = parser.parse_args(argv)
    n = args.items or (20_000 if args.quick else 200_000)
    items = [f"default/pod-{i:07d}" for i in range(n)]
    print(f"work-queue benchmark: {n:,} distinct items, best of {args.repeat}")
    print_table(
        "1. one thread",
        single_thread(items, args.repeat),
        [("/deque", 0), ("/queue.Queue", 1)],
    )
    print_table(
        "2. one producer + one consumer thread",
        producer_consumer(items, args.repeat),
        [("/queue.Queue", 0)],
    )
    print_table("3. delaying queue, fake clock", delaying(items, args.repeat), [("/heapq", 0)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
