"""Benchmarks the async informer (``informers.aio``) beside the threaded one, in the same run.

Run ``python -m benchmarks.bench_aio`` (10,000 pods and 10,000 events) or add ``--quick``
(2,000 pods and 5,000 events). As in :mod:`benchmarks.bench_informer`: the embedded API server
runs in its own process seeded with realistic pods (:mod:`benchmarks.server_process`), and every
informer in a fresh child process. Neither informer uses :class:`informers.MemoryTuning` here
(both take it; it is opt-in), so the threaded figures are bench_informer's "tuning off"
ones.

Figures (``--repeat`` children per driver, best taken), each async driver beside the threaded
one measured in the same run:

a. Initial sync, from starting the factory to the informer's ``has_synced()``. Goal: the async
   drivers within 1.2x of the threaded one.
b. Watch throughput: the server's watches are hung, N pods merge-patched, the watches resumed;
   events/s from the first update a handler sees to the last. Goal: at least 0.8x.
c. Memory: RSS growth per cached pod after ``gc.collect()``. Goal: within 10% (equal: the same
   Indexer holds the same dicts).
d. Reconcile throughput: 1,000 keys, each reconcile awaiting (sleeping, for threads) 10 ms of
   "I/O", 50 concurrent reconciles: ``AsyncController(workers=50)`` on asyncio and trio beside
   the threaded ``Controller(workers=50)``, seconds from the first enqueue to the last
   reconcile. Goal: at most 1.2x the threaded time.
e. Transport: one unpaginated list of every pod decoded by the same
   :class:`~informers.client.list_decoder.ListDecoder`, through the threaded ``ClientListWatch``
   (urllib3) and through ``AsyncListWatch`` (httpx streaming), best of ``--repeat``, in this
   process.
"""

from __future__ import annotations

import argparse
import gc
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.bench_informer import (
    CHILD_TIMEOUT,
    Row,
    _emit,
    _table,
    api_client,
    finish,
    read_json,
    rss_bytes,
    send,
    wait_for_watch,
)
from benchmarks.server_process import ServerProcess

DRIVERS = ("threads", "asyncio", "trio")


def child(driver: str, url: str, token: str) -> int:
    """Sync a pod informer on ``driver``; report time and RSS; then time ``go N`` updates."""
    if driver == "threads":
        return _child_threads(url, token)
    import anyio

    anyio.run(_child_async, url, token, backend=driver)
    return 0


def _child_threads(url: str, token: str) -> int:
    from informers import ResourceEventHandlerFuncs, SharedInformerFactory

    factory = SharedInformerFactory(api_client(url, token))
    informer = factory.core().v1().pods().informer()
    state = {"target": 0, "seen": 0, "first": 0.0, "last": 0.0}
    done = threading.Event()

    def on_update(old: Any, new: Any) -> None:
        state["seen"] += 1
        if state["seen"] == 1:
            state["first"] = time.perf_counter()
        if state["seen"] == state["target"]:
            state["last"] = time.perf_counter()
            done.set()

    informer.add_event_handler(ResourceEventHandlerFuncs(on_update=on_update))
    gc.collect()
    rss0 = rss_bytes()
    start = time.perf_counter()
    factory.start()
    while not informer.has_synced():
        time.sleep(0.002)
    synced = time.perf_counter() - start
    gc.collect()
    _emit({"synced": synced, "rss0": rss0, "rss1": rss_bytes(),
           "cached": len(informer.get_indexer().list_keys())})
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] != "go":
            break
        state.update(target=int(words[1]), seen=0)
        done.clear()
        _emit({"ready": True})
        if not done.wait(CHILD_TIMEOUT):
            _emit({"error": f"saw {state['seen']} of {state['target']} updates"})
            break
        _emit({"events": state["target"], "seconds": state["last"] - state["first"]})
    sys.stdout.flush()
    import os

    os._exit(0)


async def _child_async(url: str, token: str) -> None:
    import anyio

    from informers.aio import AsyncSharedInformerFactory

    state = {"target": 0, "seen": 0, "first": 0.0, "last": 0.0}
    done = anyio.Event()

    async def on_update(old: Any, new: Any) -> None:
        state["seen"] += 1
        if state["seen"] == 1:
            state["first"] = time.perf_counter()
        if state["seen"] == state["target"]:
            state["last"] = time.perf_counter()
            done.set()

    # the factory, its informer and the handler made before the clock starts, as the threaded
    # child's are: timed from starting the informers (entering the block) to synced
    factory = AsyncSharedInformerFactory(api_client(url, token))
    informer = factory.informer_for("pods")
    informer.add_event_handler(on_update=on_update)
    # httpx imports h11 and httpcore's backend on its first request (~80 ms): a process's
    # one-time cost, paid before the clock as the threaded child's urllib3 import is
    import httpx

    async with httpx.AsyncClient() as warm:
        await warm.get(url + "/version")
    gc.collect()
    rss0 = rss_bytes()
    start = time.perf_counter()
    async with factory:
        await factory.wait_for_cache_sync()
        synced = time.perf_counter() - start
        gc.collect()
        _emit({"synced": synced, "rss0": rss0, "rss1": rss_bytes(),
               "cached": len(informer.indexer.list_keys())})
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            words = line.split()
            if not words or words[0] != "go":
                break
            state.update(target=int(words[1]), seen=0)
            done = anyio.Event()
            _emit({"ready": True})
            with anyio.move_on_after(CHILD_TIMEOUT):
                await done.wait()
            if not done.is_set():
                _emit({"error": f"saw {state['seen']} of {state['target']} updates"})
                break
            _emit({"events": state["target"], "seconds": state["last"] - state["first"]})
        sys.stdout.flush()
        import os

        os._exit(0)  # not measured: the shutdown


def _spawn(driver: str, server: ServerProcess) -> Any:
    import subprocess

    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_aio", "--child", driver, "--url", server.url,
         f"--token={server.token}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def transport_lists(server: ServerProcess, repeat: int) -> dict[str, float]:
    """Best seconds of one unpaginated list of every pod, per transport."""
    import anyio

    from informers.aio import AsyncListWatch, AsyncTransport
    from informers.client import list_watch_from_client
    from informers.list_watch import ListOptions

    client = api_client(server.url, server.token)
    threaded = list_watch_from_client(client, "pods")
    best = {"urllib3": float("inf"), "httpx": float("inf")}
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = threaded.list(ListOptions(resource_version="0"))
        best["urllib3"] = min(best["urllib3"], time.perf_counter() - start)
        assert len(result.items) == server.pods
        del result

        async def one() -> float:
            async with AsyncTransport(client) as transport:
                lw = AsyncListWatch(transport, "pods")
                gc.collect()
                begin = time.perf_counter()
                got = await lw.list(ListOptions(resource_version="0"))
                seconds = time.perf_counter() - begin
                assert len(got.items) == server.pods
                return seconds

        best["httpx"] = min(best["httpx"], anyio.run(one))
    return best


def reconcile_seconds(driver: str, keys: int = 1_000, workers: int = 50,
                      io: float = 0.01) -> float:
    """Seconds for ``workers`` concurrent reconciles to handle ``keys`` keys, each waiting
    ``io`` seconds."""
    if driver == "threads":
        from informers.controller import Controller

        done = threading.Event()
        count = [0]
        lock = threading.Lock()

        def reconcile(key: str) -> None:
            time.sleep(io)
            with lock:
                count[0] += 1
                if count[0] == keys:
                    done.set()

        controller = Controller("bench", reconcile, workers=workers, drain_timeout=5.0)
        stop = threading.Event()
        runner = threading.Thread(target=controller.run, args=(stop,), daemon=True)
        start = time.perf_counter()
        for i in range(keys):
            controller.enqueue(f"ns/k{i}")
        runner.start()
        done.wait(CHILD_TIMEOUT)
        seconds = time.perf_counter() - start
        stop.set()
        runner.join()
        return seconds
    import anyio

    from informers.aio import AsyncController

    async def main() -> float:
        finished = anyio.Event()
        count = [0]

        async def reconcile(request: Any) -> None:
            await anyio.sleep(io)
            count[0] += 1
            if count[0] == keys:
                finished.set()

        controller = AsyncController("bench", reconcile, workers=workers, drain_timeout=5.0)
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for i in range(keys):
                controller.enqueue(f"ns/k{i}")
            tg.start_soon(controller.run)
            await finished.wait()
            seconds = time.perf_counter() - start
            controller.stop()
        return seconds

    result: float = anyio.run(main, backend=driver)
    return result


def run(pods: int, events: int, repeat: int) -> list[Row]:
    rows: list[Row] = []
    with ServerProcess(pods, history=pods + 2 * events * len(DRIVERS) + 1000) as server:
        syncs: dict[str, float] = {}
        memory: dict[str, float] = {}
        rates: dict[str, float] = {}
        for driver in DRIVERS:
            for i in range(repeat):
                proc = _spawn(driver, server)
                try:
                    result = read_json(proc)
                    assert result["cached"] == pods, result
                    syncs[driver] = min(syncs.get(driver, float("inf")), result["synced"])
                    per_pod = (result["rss1"] - result["rss0"]) / pods
                    memory[driver] = min(memory.get(driver, float("inf")), per_pod)
                    print(f"{driver} child {i + 1}: synced in {result['synced']:.3f} s, "
                          f"{per_pod / 1e3:.1f} KB/pod")
                    if events:
                        wait_for_watch(server)
                        server.command("hang")
                        server.command(f"patch {events}")
                        send(proc, f"go {events}")
                        read_json(proc)
                        server.command("resume")
                        seconds = read_json(proc)["seconds"]
                        rates[driver] = max(rates.get(driver, 0.0), events / seconds)
                        print(f"{driver} child {i + 1}: {events:,} MODIFIED in {seconds:.3f} s")
                finally:
                    finish(proc)
        lists = transport_lists(server, repeat)
    reconciles = {d: min(reconcile_seconds(d) for _ in range(repeat)) for d in DRIVERS}
    base = "threads"
    for driver in DRIVERS[1:]:
        ratio = syncs[driver] / syncs[base]
        rows.append(Row(f"initial sync, {pods:,} pods, {driver}", f"{syncs[driver]:.3f} s",
                        f"{syncs[base]:.3f} s threads", ratio, f"{ratio:.2f}x",
                        "<= 1.2x threads", ratio <= 1.2))
        if events:
            r = rates[driver] / rates[base]
            rows.append(Row(f"watch, {events:,} MODIFIED, {driver}",
                            f"{rates[driver]:,.0f} ev/s", f"{rates[base]:,.0f} ev/s threads",
                            r, f"{r:.2f}x", ">= 0.8x threads", r >= 0.8))
        m = memory[driver] / memory[base]
        rows.append(Row(f"memory per cached pod, {driver}", f"{memory[driver] / 1e3:.1f} KB",
                        f"{memory[base] / 1e3:.1f} KB threads", m, f"{m:.2f}x",
                        "within 10%", abs(m - 1) <= 0.1))
        c = reconciles[driver] / reconciles[base]
        rows.append(Row(f"1,000 reconciles of 10 ms, 50 at once, {driver}",
                        f"{reconciles[driver]:.3f} s", f"{reconciles[base]:.3f} s threads", c,
                        f"{c:.2f}x", "<= 1.2x threads", c <= 1.2))
    r = lists["httpx"] / lists["urllib3"]
    rows.append(Row(f"one list of {pods:,} pods, httpx + ListDecoder",
                    f"{lists['httpx']:.3f} s", f"{lists['urllib3']:.3f} s urllib3", r,
                    f"{r:.2f}x", "(informational)", True))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_aio",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="2,000 pods and 5,000 events")
    parser.add_argument("--pods", type=int, default=None)
    parser.add_argument("--events", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--child", choices=DRIVERS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, args.url, args.token)
    pods = args.pods or (2_000 if args.quick else 10_000)
    events = args.events if args.events is not None else (5_000 if args.quick else pods)
    repeat = args.repeat or (2 if args.quick else 3)
    print(f"bench_aio: {pods:,} pods, {events:,} watch events, python {sys.version.split()[0]}")
    rows = run(pods, events, repeat)
    print()
    print(_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
