"""``bench_real --scale``: how the sync time, the memory, the watch rate and a selector list grow
with the number of pods, for client-go and ours, beside the raw floor at each size."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.pods import make_pod
from benchmarks.real_http import Http
from benchmarks.real_runs import (
    checked_watch,
    patch_burst,
    raw_watch_seconds,
    run_child,
    seed_pods,
    spawn_child,
    spawn_go,
    table,
    watch_seconds,
)

SCALE_CLIENTS = ("client-go", "client-go-json", "ours", "ours-compact")
"""The clients of ``--scale``: client-go (protobuf, its default for built-in kinds), client-go
asking for JSON (as the Python clients do, and as the raw floor reads), ours with the library's
defaults (memory tuning off) and ours with the compact cache (tuning off too)."""


@dataclass
class ScaleRow:
    pods: int
    client: str  # or "raw": one GET of every pod and one watch burst, read, not decoded (floor)
    synced: float
    rss: int
    per_pod: float
    events_per_second: float
    list_selector: float


def measure_scale(plane: Any, http: Http, binary: Path, sizes: Sequence[int], events: int,
                  log: Callable[[str], None]) -> list[ScaleRow]:
    """For each size (ascending): seed up to it, then per client one sync (time, RSS, bytes
    per pod, the lister's selector list) and one watch burst of ``min(events, size)``
    MODIFIED events, timed as in :func:`measure_informers` (:func:`watch_seconds`); and the raw
    floor: the list and one burst read without decoding."""
    kubeconfig = plane.kubeconfig_path
    rows: list[ScaleRow] = []
    seeded = 0
    for size in sorted(sizes):
        seconds = seed_pods(http, size, first=seeded, unique_names=True)
        log(f"seeded pods {seeded:,}..{size - 1:,} in {seconds:.1f} s")
        seeded = size
        burst = min(events, size)
        names = [(p["metadata"]["namespace"], f"{p['metadata']['name']}-{i}")
                 for i, p in ((i, make_pod(i)) for i in range(burst))]
        raw = min(http.read_seconds("/api/v1/pods?resourceVersion=0")[0] for _ in range(2))
        rv = ""
        raw_rate = 0.0
        if burst:
            # one burst per size, replayed by every client in turn (as in measure_informers)
            rv = http.resource_version("/api/v1/pods")
            patch_burst(http, names, size)
            raw_rate = burst / raw_watch_seconds(http, rv, burst)
        rows.append(ScaleRow(size, "raw", raw, 0, 0.0, raw_rate, 0.0))
        log(f"{size:,} pods, raw list (GET at resourceVersion 0, read, not decoded): "
            f"{raw:.2f} s; raw watch {raw_rate:,.0f} ev/s")
        for client in SCALE_CLIENTS:
            extra = ("--compact",) if client == "ours-compact" else ()
            go_args = ("-json",) if client == "client-go-json" else ()
            if client.startswith("client-go"):
                result = run_child(spawn_go(binary, kubeconfig, *go_args, "-mode=sync"))
            else:
                result = run_child(spawn_child("ours", kubeconfig, "--pods", str(size),
                                               "--memory-tuning=off", *extra))
            if result["cached"] != size:
                raise RuntimeError(f"{client} cached {result['cached']} of {size} pods")
            growth = result["rss1"] - result["rss0"]
            rate = 0.0
            if burst:
                if client.startswith("client-go"):
                    watched = run_child(spawn_go(binary, kubeconfig, *go_args, "-mode=watch",
                                                 f"-rv={rv}", f"-events={burst}"))
                else:
                    watched = run_child(spawn_child(
                        "ours", kubeconfig, "--pods", str(size), "--memory-tuning=off",
                        *extra, "--rv", rv, "--events", str(burst)))
                rate = burst / watch_seconds(checked_watch(client, watched))
            row = ScaleRow(size, client, result["synced"], result["rss1"], growth / size, rate,
                           result.get("list_selector", 0.0))
            rows.append(row)
            log(f"{size:,} pods, {client}: synced in {row.synced:.2f} s, RSS "
                f"{row.rss / 1e6:.0f} MB ({row.per_pod / 1e3:.1f} KB/pod), watch "
                f"{row.events_per_second:,.0f} ev/s, selector list "
                f"{row.list_selector * 1e3:.1f} ms")
    return rows


def scale_report(rows: list[ScaleRow]) -> str:
    header = ["pods", "client", "time to synced", "sync us/pod", "RSS once synced",
              "bytes/pod", "watch ev/s", "lister list(selector)"]
    out = [header]
    for r in rows:
        if r.client == "raw":
            out.append([f"{r.pods:,}", "raw (read, no decode)", f"{r.synced:.2f} s",
                        f"{r.synced / r.pods * 1e6:.0f}", "-", "-",
                        f"{r.events_per_second:,.0f}", "-"])
            continue
        out.append([f"{r.pods:,}", r.client, f"{r.synced:.2f} s",
                    f"{r.synced / r.pods * 1e6:.0f}", f"{r.rss / 1e6:.0f} MB",
                    f"{r.per_pod / 1e3:.1f} KB", f"{r.events_per_second:,.0f}",
                    f"{r.list_selector * 1e3:.1f} ms"])
    text = table(out)
    sizes = sorted({r.pods for r in rows})
    if 10_000 in sizes and sizes[-1] > 10_000:
        lines = ["", f"growth, {sizes[-1]:,} pods against 10,000 (per pod; target <= 1.2x):"]
        raw = {r.pods: r.synced for r in rows if r.client == "raw"}
        lines.append(f"  raw list: time per pod "
                     f"{(raw[sizes[-1]] / sizes[-1]) / (raw[10_000] / 10_000):.2f}x")
        for client in SCALE_CLIENTS:
            at = {r.pods: r for r in rows if r.client == client}
            small, big = at[10_000], at[sizes[-1]]
            t = (big.synced / big.pods) / (small.synced / small.pods)
            beyond = ((big.synced - raw[big.pods]) / big.pods) / (
                (small.synced - raw[small.pods]) / small.pods)
            m = big.per_pod / small.per_pod
            lines.append(f"  {client}: sync time per pod {t:.2f}x ({beyond:.2f}x beyond the raw "
                         f"list's), memory per pod {m:.2f}x")
        text += "\n".join(lines)
    return text
