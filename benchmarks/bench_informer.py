"""Benchmarks the pod informer (initial sync, watch throughput, memory) against same-run baselines.

Run ``python -m benchmarks.bench_informer`` (10,000 pods and 10,000 events, about 30 s, most of
it the official client's informer) or add ``--quick`` (2,000 pods and 5,000 events, about 10 s).
The embedded API server runs in its own process (:mod:`benchmarks.server_process`), seeded
with realistic pods (:func:`benchmarks.pods.make_pod`, about 7 KB of JSON each with two
managedFields entries) in 10 namespaces, and is reached over plain HTTP on loopback. Every
informer runs in a fresh child process, so neither the GIL, the heap nor the GC state (with
:class:`informers.MemoryTuning`, our informer calls ``gc.freeze()`` after its first list) leaks
from one measurement into another. Our informer is measured twice, with the memory tuning on
(the figures the goals apply to, as the bundled commands run) and off (the library's default).

Figures, each beside a baseline measured in the same run:

a. Initial sync: ``factory.start()`` to ``informer.has_synced()`` of a
   ``SharedInformerFactory`` pod informer (best of ``--repeat`` children). Baselines: the raw
   cost, i.e. one ``urllib3`` GET of the same list (``resourceVersion=0&limit=500``, as the
   reflector asks) plus ``orjson.loads`` of its bytes with the GC paused (best of
   ``--repeat``, in this process); and ``kubernetes.informer.SharedInformer`` of the official
   client on ``CoreV1Api.list_pod_for_all_namespaces``, from ``start()`` until its ADDED
   handler saw every pod (it has no ``has_synced``). Goals: at most 1.5x the raw cost, at
   least 10x faster than the official informer.
b. Watch throughput: the server's watches are hung, N pods are merge-patched in the server
   process (N MODIFIED events of full pods), and the watches resumed, so the events arrive as
   fast as the client reads them; events/s from the handler's first ``on_update`` to its
   last (every event applied to the indexer and delivered to one handler). Baseline: a raw
   ``urllib3`` watch of the same events from the same version, lines split and decoded with
   ``orjson``, first to last event. Goal: at least 10,000 events/s. Beside it, the CPU per
   event: the child's ``getrusage`` user + system seconds (every thread) from just before the
   watch is resumed to the last handler call, over N; the raw watch's likewise, from its
   request to its last event. CPU per event moves much less with the machine's other load
   than the rate does.
c. Memory: the RSS growth of the synced child (measured after ``gc.collect()``), per cached
   pod, beside the pod's JSON size in the list response. Goal: at most 3x.

``--profile`` runs one more child under a sampling profiler (every thread) and prints the top
lines and functions of the sync and of the watch burst.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import json
import os
import resource
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import urllib3

from benchmarks.server_process import ServerProcess

LIST_QUERY = "resourceVersion=0&limit=500"  # what the reflector's first list sends
POLL = 0.002  # seconds between has_synced() checks in the child
CHILD_TIMEOUT = 120.0  # seconds a child waits for a sync or a burst before giving up


def rss_bytes() -> int:
    """Resident set size of this process (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cpu_seconds() -> float:
    """User plus system CPU seconds of this process so far (every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def api_client(url: str, token: str) -> Any:
    from kubernetes import client

    configuration = client.Configuration(
        host=url, api_key={"BearerToken": token}, api_key_prefix={"BearerToken": "Bearer"})
    return client.ApiClient(configuration)


def _emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


# -- profiling every thread of a child ------------------------------------------------------------


class Sampler:
    """A sampling profiler for every thread (cProfile hooks one thread only, and only threads
    started after it): every ``interval`` it records each other thread's Python stack, then
    reports the lines where samples fell (self) and the functions on the stacks (cumulative).
    Time in C code (``orjson.loads``, socket reads, lock waits) shows on the calling line."""

    def __init__(self, interval: float = 0.0005) -> None:
        self.interval = interval
        self.samples = 0
        self.self_lines: dict[tuple[str, str], int] = {}
        self.cumulative: dict[tuple[str, str], int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)
        self._switch = sys.getswitchinterval()

    def start(self) -> None:
        sys.setswitchinterval(self.interval / 2)  # let the sampler in while others run
        self._thread.start()

    def _run(self) -> None:
        me = threading.get_ident()
        names: dict[int | None, str] = {}
        while not self._stop.wait(self.interval):
            for t in threading.enumerate():
                names[t.ident] = t.name
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                thread = names.get(ident, "?")
                self.samples += 1
                code = frame.f_code
                where = f"{os.path.basename(code.co_filename)}:{frame.f_lineno} {code.co_name}"
                key = (thread, where)
                self.self_lines[key] = self.self_lines.get(key, 0) + 1
                seen = set()
                f: Any = frame
                while f is not None:
                    c = f.f_code
                    name = f"{os.path.basename(c.co_filename)}:{c.co_firstlineno} {c.co_name}"
                    if name not in seen:
                        seen.add(name)
                        k = (thread, name)
                        self.cumulative[k] = self.cumulative.get(k, 0) + 1
                    f = f.f_back

    def report(self, title: str, limit: int = 30) -> str:
        self._stop.set()
        self._thread.join()
        sys.setswitchinterval(self._switch)
        per_thread: dict[str, int] = {}
        for (thread, _), n in self.self_lines.items():
            per_thread[thread] = per_thread.get(thread, 0) + n
        out = [f"== {title}: {self.samples} samples every {self.interval * 1e3:.1f} ms =="]
        for label, table in (("self (line)", self.self_lines),
                             ("cumulative (function)", self.cumulative)):
            out.append(f"-- {label}: % of the thread's samples")
            top = sorted(table.items(), key=lambda kv: -kv[1])[:limit]
            for (thread, where), n in top:
                out.append(f"{100 * n / per_thread[thread]:6.1f}%  {thread[:34]:34}  {where}")
        return "\n".join(out) + "\n"


# -- children -------------------------------------------------------------------------------------


def child_informer(url: str, token: str, pods: int, profile: bool, tuned: bool,
                   compact: bool = False) -> int:
    """Sync a pod informer (with or without :class:`informers.MemoryTuning`, with or without
    the compact cache); report time and RSS; then, on ``go N``, time N updates."""
    from informers import MemoryTuning, ResourceEventHandlerFuncs, SharedInformerFactory

    client = api_client(url, token)
    factory = SharedInformerFactory(client, memory_tuning=MemoryTuning() if tuned else None,
                                    compact=compact)
    informer = factory.core().v1().pods().informer()
    state = {"target": 0, "seen": 0, "first": 0.0, "last": 0.0, "cpu": 0.0}
    done = threading.Event()
    clock = time.perf_counter

    def on_update(old: Any, new: Any) -> None:
        seen = state["seen"] + 1
        state["seen"] = seen
        if seen == 1:
            state["first"] = clock()
        if seen == state["target"]:
            state["last"] = clock()
            state["cpu"] = cpu_seconds()
            done.set()

    informer.add_event_handler(ResourceEventHandlerFuncs(on_update=on_update))
    profiles = Sampler() if profile else None
    gc.collect()
    rss0 = rss_bytes()
    if profiles is not None:
        profiles.start()
    start = clock()
    factory.start()
    while not informer.has_synced():
        if clock() - start > CHILD_TIMEOUT:
            faulthandler.dump_traceback(sys.stderr)
            _emit({"error": f"not synced after {CHILD_TIMEOUT} s: {informer.reflector_metrics()}"})
            os._exit(1)
        time.sleep(POLL)
    synced = clock() - start
    if profiles is not None:
        sys.stderr.write(profiles.report(f"initial sync of {pods} pods ({synced:.2f} s)"))
    gc.collect()
    rss1 = rss_bytes()
    _emit({"synced": synced, "rss0": rss0, "rss1": rss1,
           "cached": len(informer.get_indexer().list_keys())})
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] != "go":
            break
        state.update(target=int(words[1]), seen=0)
        done.clear()
        profiles = Sampler() if profile else None
        if profiles is not None:
            profiles.start()
        cpu0 = cpu_seconds()  # the watch is hung: nothing of the burst has arrived yet
        _emit({"ready": True})
        if not done.wait(CHILD_TIMEOUT):
            faulthandler.dump_traceback(sys.stderr)
            _emit({"error": f"saw {state['seen']} of {state['target']} updates"})
            break
        seconds = state["last"] - state["first"]
        if profiles is not None:
            sys.stderr.write(profiles.report(f"watch burst of {state['target']} events"))
        _emit({"events": state["target"], "seconds": seconds, "cpu": state["cpu"] - cpu0})
    sys.stdout.flush()
    os._exit(0)  # skip joining daemon threads and freeing the cache: not measured


def child_official(url: str, token: str, pods: int) -> int:
    """``kubernetes.informer.SharedInformer``: time from start() to the last initial ADDED."""
    from kubernetes import client
    from kubernetes.informer import ADDED, SharedInformer

    api = client.CoreV1Api(api_client(url, token))
    informer = SharedInformer(api.list_pod_for_all_namespaces)
    done = threading.Event()
    count = [0]

    def on_added(obj: Any) -> None:
        count[0] += 1
        if count[0] == pods:
            done.set()

    informer.add_event_handler(ADDED, on_added)
    start = time.perf_counter()
    informer.start()
    ok = done.wait(CHILD_TIMEOUT * 5)
    seconds = time.perf_counter() - start
    _emit({"synced": seconds, "ok": ok, "cached": len(informer.cache.list_keys())})
    os._exit(0)  # its watch thread blocks in a read; nothing to clean up for a benchmark


def spawn(mode: str, server: ServerProcess, profile: bool = False,
          tuned: bool = True, compact: bool = False) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "benchmarks.bench_informer", "--child", mode,
            "--url", server.url, f"--token={server.token}", "--pods", str(server.pods),
            f"--memory-tuning={'on' if tuned else 'off'}"]
    if compact:
        args.append("--compact")
    if profile:
        args.append("--profile")
    return subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def read_json(process: subprocess.Popen[str], timeout: float = CHILD_TIMEOUT * 6) -> dict[str, Any]:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            process.kill()
            raise RuntimeError(f"benchmark child silent for {timeout} s; killed")
    line = process.stdout.readline()
    if not line:
        process.wait()
        raise RuntimeError(f"benchmark child exited with {process.returncode}")
    result: dict[str, Any] = json.loads(line)
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


def send(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()


def finish(process: subprocess.Popen[str]) -> None:
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# -- baselines in this process --------------------------------------------------------------------


def _headers(server: ServerProcess) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}"}


def raw_list(server: ServerProcess, repeat: int) -> tuple[float, int]:
    """Best seconds of GET + orjson.loads (GC paused) of the pod list, and its size in bytes."""
    http = urllib3.PoolManager()
    best, size = float("inf"), 0
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        body = http.request("GET", f"{server.url}/api/v1/pods?{LIST_QUERY}",
                            headers=_headers(server)).data
        gc.disable()
        try:
            doc = orjson.loads(body)
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
        assert len(doc["items"]) == server.pods, len(doc["items"])
        size = len(body)
        del doc, body
    http.clear()
    return best, size


def raw_watch(server: ServerProcess, from_rv: str, events: int) -> tuple[float, float]:
    """Seconds from the first to the last of ``events`` decoded events of a raw watch, and
    this process's CPU seconds from the watch request to the last event."""
    http = urllib3.PoolManager()
    cpu0 = cpu_seconds()
    resp = http.request(
        "GET", f"{server.url}/api/v1/pods?watch=true&resourceVersion={from_rv}",
        headers=_headers(server), preload_content=False)
    loads = orjson.loads
    seen, first, pending = 0, 0.0, b""
    chunks = resp.read_chunked(None, decode_content=True) if resp.chunked else resp.stream(65536)
    for chunk in chunks:
        if not first:
            first = time.perf_counter()
        data = pending + chunk if pending else chunk
        pos = 0
        while True:
            nl = data.find(b"\n", pos)
            if nl < 0:
                break
            if loads(data[pos:nl])["type"] == "MODIFIED":
                seen += 1
            pos = nl + 1
        pending = data[pos:]
        if seen >= events:
            break
    last = time.perf_counter()
    cpu = cpu_seconds() - cpu0
    resp.close()
    if seen < events:
        raise RuntimeError(f"raw watch saw {seen} of {events} events")
    return last - first, cpu


# -- the run --------------------------------------------------------------------------------------


@dataclass
class Row:
    figure: str
    ours: str
    baseline: str
    ratio: float
    ratio_text: str
    goal: str
    passed: bool


def _table(rows: list[Row]) -> str:
    header = ("figure", "ours", "baseline", "ratio", "goal", "result")
    cells = [header] + [(r.figure, r.ours, r.baseline, r.ratio_text, r.goal,
                         "PASS" if r.passed else "FAIL") for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(len(header))) for c in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def wait_for_watch(server: ServerProcess, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while server.command("watches")["watches"] < 1:
        if time.monotonic() > deadline:
            raise RuntimeError("the informer never opened its watch")
        time.sleep(0.01)


def run(pods: int, events: int, repeat: int, official: bool, profile: bool) -> list[Row]:
    rows: list[Row] = []
    started = time.perf_counter()
    with ServerProcess(pods, history=pods + 2 * events + 1000) as server:
        print(f"server process: {pods:,} pods seeded in "
              f"{time.perf_counter() - started:.1f} s ({server.url})")
        raw_seconds, size = raw_list(server, repeat)
        json_per_pod = size / pods
        print(f"raw GET + orjson.loads (GC paused) of {size / 1e6:.1f} MB: "
              f"{raw_seconds:.3f} s (best of {repeat})")

        tuned = _measure(server, repeat, events, tuned=True)
        untuned = _measure(server, repeat, events, tuned=False)
        compact_tuned = _measure(server, repeat, events, tuned=True, compact=True)
        compact = _measure(server, repeat, events, tuned=False, compact=True)
        if events:
            # from the latest burst, which the server's history still holds
            raw_watch_seconds, raw_watch_cpu = raw_watch(server, compact.burst_from, events)
            print(f"raw watch + orjson.loads: {events:,} events in {raw_watch_seconds:.3f} s, "
                  f"{raw_watch_cpu:.3f} s CPU")

        official_seconds = 0.0
        if official:
            child = spawn("official", server)
            try:
                result = read_json(child)
            finally:
                finish(child)
            if not result["ok"]:
                raise RuntimeError(f"the official informer did not sync: {result}")
            official_seconds = result["synced"]
            print(f"official kubernetes.informer.SharedInformer: synced in "
                  f"{official_seconds:.2f} s")

        if profile:
            for tuned_, compact_ in ((True, False), (False, False), (False, True)):
                label = (f"{'compact' if compact_ else 'plain'} cache, tuning "
                         f"{'on' if tuned_ else 'off'}")
                print(f"profile: {label}", file=sys.stderr)
                child = spawn("informer", server, profile=True, tuned=tuned_, compact=compact_)
                try:
                    read_json(child)
                    if events:
                        wait_for_watch(server)
                        server.command("hang")
                        server.command(f"patch {events}")
                        send(child, f"go {events}")
                        read_json(child)
                        server.command("resume")
                        read_json(child)
                finally:
                    finish(child)

    for label, m in (("", tuned), (" (tuning off)", untuned),
                     (" (compact cache)", compact_tuned),
                     (" (compact cache, tuning off)", compact)):
        sync = min(m.syncs)
        ratio = sync / raw_seconds
        rows.append(Row(f"initial sync, {pods:,} pods{label}", f"{sync:.3f} s",
                        f"{raw_seconds:.3f} s raw", ratio, f"{ratio:.2f}x", "<= 1.5x raw",
                        ratio <= 1.5))
        if official and m is tuned:
            speedup = official_seconds / sync
            rows.append(Row(f"initial sync, {pods:,} pods", f"{sync:.3f} s",
                            f"{official_seconds:.2f} s official", speedup,
                            f"{speedup:.1f}x faster", ">= 10x faster", speedup >= 10))
        if events:
            rate = events / m.watch_seconds
            raw_rate = events / raw_watch_seconds
            rows.append(Row(f"watch, {events:,} MODIFIED{label}", f"{rate:,.0f} ev/s",
                            f"{raw_rate:,.0f} ev/s raw", rate / raw_rate,
                            f"{rate / raw_rate:.2f}x", ">= 10,000 ev/s", rate >= 10_000))
            per_event = 1e6 * m.watch_cpu / events
            raw_per_event = 1e6 * raw_watch_cpu / events
            rows.append(Row(f"watch CPU per event{label}", f"{per_event:.1f} us",
                            f"{raw_per_event:.1f} us raw", per_event / raw_per_event,
                            f"{per_event / raw_per_event:.2f}x", "(informative)", True))
        per_pod = min(m.memory)
        rows.append(Row(f"memory per cached pod{label}", f"{per_pod / 1e3:.1f} KB",
                        f"{json_per_pod / 1e3:.1f} KB JSON", per_pod / json_per_pod,
                        f"{per_pod / json_per_pod:.2f}x", "<= 3x JSON",
                        per_pod <= 3 * json_per_pod))
    return rows


@dataclass
class Measured:
    """One configuration's informer children: sync times, RSS per pod, one watch burst."""

    syncs: list[float]
    memory: list[float]
    watch_seconds: float
    burst_from: str
    watch_cpu: float = 0.0


def _measure(server: ServerProcess, repeat: int, events: int, tuned: bool,
             compact: bool = False) -> Measured:
    """``repeat`` informer children, with or without memory tuning and the compact cache;
    the first one also times a burst of ``events`` MODIFIED events."""
    m = Measured([], [], 0.0, "")
    label = ("tuned" if tuned else "untuned") + (", compact" if compact else "")
    for i in range(repeat):
        child = spawn("informer", server, tuned=tuned, compact=compact)
        try:
            result = read_json(child)
            assert result["cached"] == server.pods, result
            m.syncs.append(result["synced"])
            m.memory.append((result["rss1"] - result["rss0"]) / server.pods)
            print(f"informer child {i + 1} ({label}): synced in {result['synced']:.3f} s, "
                  f"RSS +{(result['rss1'] - result['rss0']) / 1e6:.0f} MB")
            if i == 0 and events:
                wait_for_watch(server)
                server.command("hang")
                burst = server.command(f"patch {events}")
                m.burst_from = burst["from"]
                send(child, f"go {events}")
                read_json(child)  # ready
                server.command("resume")
                burst_result = read_json(child)
                m.watch_seconds = burst_result["seconds"]
                m.watch_cpu = burst_result["cpu"]
                print(f"informer child {i + 1} ({label}): {events:,} MODIFIED events in "
                      f"{m.watch_seconds:.3f} s, {m.watch_cpu:.3f} s CPU "
                      f"({1e6 * m.watch_cpu / events:.1f} us per event)")
        finally:
            finish(child)
    return m


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_informer",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="2,000 pods and 5,000 events")
    parser.add_argument("--pods", type=int, default=None, help="pods (default 10,000)")
    parser.add_argument("--events", type=int, default=None,
                        help="MODIFIED events of the watch figure (default: as many as pods; "
                             "5,000 with --quick; 0 skips it)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="syncs measured, best taken (default 3; 2 with --quick)")
    parser.add_argument("--no-official", action="store_true",
                        help="skip the official client's informer (the slowest part)")
    parser.add_argument("--profile", action="store_true",
                        help="also profile two informer children, a plain cache with tuning "
                             "on and a compact one with tuning off (sampling, every thread)")
    parser.add_argument("--child", choices=("informer", "official"), help=argparse.SUPPRESS)
    parser.add_argument("--memory-tuning", choices=("on", "off"), default="on",
                        help=argparse.SUPPRESS)
    parser.add_argument("--compact", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    pods = args.pods or (2_000 if args.quick else 10_000)
    if args.child == "informer":
        return child_informer(args.url, args.token, pods, args.profile,
                              args.memory_tuning == "on", args.compact)
    if args.child == "official":
        return child_official(args.url, args.token, pods)
    events = args.events if args.events is not None else (5_000 if args.quick else pods)
    repeat = args.repeat or (2 if args.quick else 3)
    print(f"bench_informer: {pods:,} pods, {events:,} watch events, python "
          f"{sys.version.split()[0]}, orjson {orjson.__version__}, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    rows = run(pods, events, repeat, not args.no_official, args.profile)
    print()
    print(_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
