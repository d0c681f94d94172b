"""Benchmarks our informer and EndpointController against client-go and kube-controller-manager
on a real kube-apiserver.

Run ``python -m benchmarks.bench_real`` (10,000 pods; several minutes) or add ``--quick``
(2,000 pods, 1,000 events, a short churn; about two minutes). It starts the real control
plane (``tools/control-plane/build.sh``, building it if needed), seeds the pods
(:func:`benchmarks.pods.make_pod`: created, then their status written, by parallel requests),
and builds ``benchmarks/clientgo`` (a Go program on client-go v0.36.3; the binary is cached in
``~/.cache/kube-informers/clientgo/<hash of its sources>/``). Every measured client runs in a
process of its own against the same server.

Figures, for three pod informers: client-go's ``SharedInformerFactory`` (Go), ours
(``informers.SharedInformerFactory``) and the official Python client's
``kubernetes.informer.SharedInformer`` (kubernetes 37 ships it):

a. Initial sync of N pods: start to synced (best of ``--repeat`` for client-go and ours, one
   run of the official one, whose first-list ADDED handler count stands in for the
   ``has_synced`` it lacks). client-go uses its defaults (protobuf, which its generated
   typed clients ask for built-in kinds, ``gentype.PrefersProtobuf``; watch-list streaming,
   on by default since v0.35), and once more asking for JSON (``-json``), as the Python
   clients do: the like-for-like baseline, reported in a table of its own; ours its defaults
   (paginated list).
b. Watch events per second: a fresh informer whose first list is pinned to a resourceVersion
   taken just before ``--events`` pods were merge-patched (``resourceVersionMatch=Exact``), so
   its watch replays the MODIFIED events as fast as the client reads them; timed from the
   reflector's watch call to the last update handler call (each event applied to the indexer
   and delivered to one handler), and the handler's count of distinct resourceVersions
   checked (:func:`watch_seconds`). Each of ``--repeat`` rounds writes one burst that every
   client replays in turn from the same resourceVersion (kube-apiserver keeps an event's
   serialization only while dispatching it live, so each replay encodes afresh); the best
   round counts. Beside the rate, the client process's CPU time per event over the same span
   (user and system, every thread), which moves less with the machine's other load; and the
   raw floor, the same burst read by a bare HTTP/1.1 request that counts lines and decodes
   nothing (:meth:`Http.read_lines_seconds`).
c. Resident memory: the RSS growth of the synced process (after a GC) per cached pod, and the
   RSS itself. Ours three ways: with ``MemoryTuning``, with the library's defaults (no
   tuning), and with the compact cache (``compact=True``, no tuning). client-go and ours
   strip managedFields on the way in (ours by default, the Go program by ``SetTransform``);
   the official informer keeps whole model objects.
d. The lister's ``list`` with a label selector matching one app in 14 (best of 5).

``--scale [SIZES]`` instead measures how these grow with the number of pods (client-go, ours
and ours compact, tuning off): time to synced, RSS, bytes per pod, watch events/s and the
selector list at each size, and the growth per pod from 10,000 to the largest size.

And for the EndpointController, the readiness-to-Endpoints delay under churn: ``--services``
Services of ``--pods-per-service`` pods each; one controller at a time (kube-controller-manager
with only its endpoints controller, then ours as ``python -m controllers.endpoint``, both with 5
workers and no client-side rate limit: kube-controller-manager gets ``--kube-api-qps=1000``,
its default 20 qps would throttle it) while the same seeded script flips pods' Ready condition
at ``--churn-rate`` per second, for ``--churn-seconds`` per controller in two alternating rounds
(kube-controller-manager, ours, kube-controller-manager, ours; each round's flips seeded alike
for both) whose delays are pooled. A round starts once its controller is live: one pod is
flipped and back, and each flip awaited in the Endpoints (``real_churn.wait_until_live``).
An observer watching pods and Endpoints
records, per flip, the time from the pod's MODIFIED event to the first Endpoints event that
shows the pod on the matching side.

The table gives ratios ours/client-go, ours/official and ours/kube-controller-manager, and the
targets: initial sync within 1.5x of client-go, EndpointController delay (median and p99) no
worse than kube-controller-manager's. ``--profile`` also runs one sync of ours under the
sampling profiler of :mod:`benchmarks.bench_informer` and prints where the time goes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.pods import make_pod
from benchmarks.real_churn import Churn, measure_endpoint_controllers
from benchmarks.real_http import Http
from benchmarks.real_runs import (
    BUILD_SCRIPT,
    build_clientgo,
    checked_watch,
    go_version,
    patch_burst,
    raw_watch_seconds,
    run_child,
    seed_pods,
    spawn_child,
    spawn_go,
    table,
    watch_seconds,
)
from benchmarks.real_scale import measure_scale, scale_report


@dataclass
class ClientFigures:
    syncs: list[float] = field(default_factory=list)
    rss_growth: list[int] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)
    events_per_second: float = 0.0  # the best of the watch rounds
    watch_cpu: list[float] = field(default_factory=list)  # CPU seconds per event, per round
    list_selector: list[float] = field(default_factory=list)

    @property
    def sync(self) -> float:
        return min(self.syncs)

    @property
    def per_pod(self) -> float:
        return float(min(self.rss_growth))


def measure_informers(plane: Any, http: Http, binary: Path, pods: int, events: int,
                      repeat: int, official: bool, profile: bool,
                      log: Callable[[str], None]) -> dict[str, ClientFigures]:
    kubeconfig = plane.kubeconfig_path
    # "ours" runs with informers.MemoryTuning on (as the bundled commands do), "ours-untuned"
    # with the library's default (no GC or C-heap tuning).
    # "client-go" asks for protobuf, its typed clients' default for built-in kinds;
    # "client-go-json" for JSON, as every Python client does: the like-for-like baseline
    figures = {"client-go": ClientFigures(), "client-go-json": ClientFigures(),
               "ours": ClientFigures(), "ours-untuned": ClientFigures(),
               "ours-compact": ClientFigures()}
    if official:
        figures["official"] = ClientFigures()

    def spawn(client: str, *args: str) -> subprocess.Popen[str]:
        if client == "client-go":
            return spawn_go(binary, kubeconfig, *args)
        if client == "client-go-json":
            return spawn_go(binary, kubeconfig, "-json", *args)
        if client == "ours-untuned":
            return spawn_child("ours", kubeconfig, "--pods", str(pods), "--memory-tuning=off",
                               *args)
        if client == "ours-compact":
            return spawn_child("ours", kubeconfig, "--pods", str(pods), "--memory-tuning=off",
                               "--compact", *args)
        return spawn_child(client, kubeconfig, "--pods", str(pods), *args)

    for client, fig in list(figures.items()):
        for i in range(1 if client == "official" else repeat):
            args = ("-mode=sync",) if client.startswith("client-go") else ()
            result = run_child(spawn(client, *args))
            if result["cached"] != pods:
                raise RuntimeError(f"{client} cached {result['cached']} of {pods} pods")
            fig.syncs.append(result["synced"])
            fig.rss_growth.append((result["rss1"] - result["rss0"]) // pods)
            fig.rss.append(result["rss1"])
            if "list_selector" in result:
                fig.list_selector.append(result["list_selector"])
            log(f"{client} sync {i + 1}: {result['synced']:.3f} s, RSS {result['rss1'] / 1e6:.0f}"
                f" MB (+{(result['rss1'] - result['rss0']) / 1e6:.0f} MB)")
    # client-go once more with a plain paginated list, as ours does (watch-list streaming off)
    listing = ClientFigures()
    for _ in range(repeat):
        process = subprocess.Popen(
            [str(binary), f"-kubeconfig={kubeconfig}", "-mode=sync"], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, KUBE_FEATURE_WatchListClient="false"))
        result = run_child(process)
        listing.syncs.append(result["synced"])
        listing.rss_growth.append((result["rss1"] - result["rss0"]) // pods)
        listing.rss.append(result["rss1"])
    log(f"client-go without watch-list: best sync {listing.sync:.3f} s")
    figures["client-go-list"] = listing
    if profile:
        finish_profile = spawn_child("ours", kubeconfig, "--pods", str(pods), "--profile")
        run_child(finish_profile)

    def watch_child(client: str, rv: str, count: int, profile: bool) -> dict[str, Any]:
        if client.startswith("client-go"):
            watch_args: tuple[str, ...] = ("-mode=watch", f"-rv={rv}", f"-events={count}")
        else:
            watch_args = ("--rv", rv, "--events", str(count)) + (
                ("--profile",) if profile else ())
        return checked_watch(client, run_child(spawn(client, *watch_args)))

    if events:
        names = [(p["metadata"]["namespace"], p["metadata"]["name"])
                 for p in (make_pod(i) for i in range(min(events, pods)))]
        clients = [c for c in figures if c != "client-go-list"]
        figures["raw-watch"] = raw = ClientFigures()
        # ``repeat`` rounds, each one burst that every client (and the raw floor) replays from
        # the same resourceVersion in turn, the best kept: a burst's figure moves with whatever
        # else the machine does meanwhile. Replays are alike for every client: kube-apiserver
        # keeps an event's serialization only while dispatching it live (cacher.go
        # dispatchEvent), so each replay encodes the events afresh.
        for round_ in range(1, repeat + 1):
            rv = http.resource_version("/api/v1/pods")
            seconds = patch_burst(http, names, round_)
            log(f"round {round_}: {len(names):,} pods patched in {seconds:.1f} s (from "
                f"resourceVersion {rv})")
            for client in clients:
                if client == "official" and round_ > 1:
                    continue  # one round of the official informer: minutes for 10,000 events
                fig = figures[client]
                result = watch_child(client, rv, len(names),
                                     profile and client == "ours" and round_ == 1)
                rate = result["events"] / watch_seconds(result)
                fig.events_per_second = max(fig.events_per_second, rate)
                if "watch_cpu" in result:
                    fig.watch_cpu.append(result["watch_cpu"] / result["events"])
                log(f"{client} watch: {result['events']:,} MODIFIED events "
                    f"({result['distinct']:,} distinct resourceVersions) in "
                    f"{watch_seconds(result):.3f} s from its watch call ({rate:,.0f}/s; "
                    f"first to last call {result['first_to_last']:.3f} s; CPU "
                    f"{result.get('watch_cpu', 0.0) / result['events'] * 1e6:.0f} us/event)")
            rate = len(names) / raw_watch_seconds(http, rv, len(names))
            raw.events_per_second = max(raw.events_per_second, rate)
            log(f"raw watch (HTTP/1.1, lines counted, nothing decoded): {rate:,.0f}/s")
    return figures



def like_for_like(figures: dict[str, ClientFigures]) -> str:
    """Ours against client-go asking for JSON, as the Python clients do: the same bytes on the
    wire and the same work for the server (its JSON encoding caps the watch: the raw floor)."""
    gj = figures["client-go-json"]
    rows = [["client-go asking for JSON (like for like)", "ours", "client-go JSON",
             "ours/client-go JSON", "target", "result"]]
    for label, key in (("ours (tuning on)", "ours"), ("ours, tuning off", "ours-untuned"),
                       ("ours, compact cache, tuning off", "ours-compact")):
        fig = figures.get(key)
        if fig is None or not fig.syncs:
            continue
        rows.append([f"initial sync, {label}", f"{fig.sync:.2f} s", f"{gj.sync:.2f} s",
                     f"{fig.sync / gj.sync:.2f}x", "-", "-"])
        if fig.events_per_second and gj.events_per_second:
            ratio = fig.events_per_second / gj.events_per_second
            target = "-" if key == "ours" else ">= 1.0x"
            rows.append([f"watch events/s, {label}", f"{fig.events_per_second:,.0f}",
                         f"{gj.events_per_second:,.0f}", f"{ratio:.2f}x", target,
                         "-" if target == "-" else ("PASS" if ratio >= 1.0 else "FAIL")])
        if fig.watch_cpu and gj.watch_cpu:
            a, b = min(fig.watch_cpu), min(gj.watch_cpu)
            rows.append([f"watch CPU per event, {label}", f"{a * 1e6:.0f} us",
                         f"{b * 1e6:.0f} us", f"{a / b:.2f}x", "-", "-"])
        rows.append([f"memory per cached pod, {label}", f"{fig.per_pod / 1e3:.1f} KB",
                     f"{gj.per_pod / 1e3:.1f} KB", f"{fig.per_pod / gj.per_pod:.2f}x", "-", "-"])
    raw = figures.get("raw-watch")
    if raw is not None and raw.events_per_second and gj.events_per_second:
        rows.append(["watch events/s, raw floor (HTTP/1.1 JSON read, no decode)",
                     f"{raw.events_per_second:,.0f}", f"{gj.events_per_second:,.0f}",
                     f"{raw.events_per_second / gj.events_per_second:.2f}x", "-", "-"])
    return table(rows)


def report(pods: int, figures: dict[str, ClientFigures], churns: dict[str, Churn]) -> str:
    ours, go = figures["ours"], figures["client-go"]
    official = figures.get("official")
    header = ["figure", "ours", "client-go", "official", "ours/client-go", "ours/official",
              "target", "result"]
    rows = [header]
    sync_ratio = ours.sync / go.sync
    rows.append([f"initial sync, {pods:,} pods", f"{ours.sync:.2f} s", f"{go.sync:.2f} s",
                 f"{official.sync:.2f} s" if official else "-", f"{sync_ratio:.2f}x",
                 f"{ours.sync / official.sync:.2f}x" if official else "-", "<= 1.5x client-go",
                 "PASS" if sync_ratio <= 1.5 else "FAIL"])
    listing = figures.get("client-go-list")
    if listing is not None:
        ratio = ours.sync / listing.sync
        rows.append(["initial sync, client-go listing (watch-list off)", f"{ours.sync:.2f} s",
                     f"{listing.sync:.2f} s", "-", f"{ratio:.2f}x", "-", "-", "-"])
    if ours.events_per_second:
        rows.append(["watch, MODIFIED events/s", f"{ours.events_per_second:,.0f}",
                     f"{go.events_per_second:,.0f}",
                     f"{official.events_per_second:,.0f}" if official else "-",
                     f"{ours.events_per_second / go.events_per_second:.2f}x",
                     f"{ours.events_per_second / official.events_per_second:.1f}x"
                     if official else "-", "-", "-"])
        raw = figures.get("raw-watch")
        if raw is not None and raw.events_per_second:
            rows.append(["watch events/s, raw floor (HTTP/1.1 read, no decode)",
                         f"{raw.events_per_second:,.0f}", f"{go.events_per_second:,.0f}", "-",
                         f"{raw.events_per_second / go.events_per_second:.2f}x", "-", "-", "-"])
    if go.watch_cpu:
        for label, key in (("ours", "ours"), ("ours, tuning off", "ours-untuned"),
                           ("ours, compact cache, tuning off", "ours-compact")):
            fig = figures.get(key)
            if fig is not None and fig.watch_cpu:
                a, b = min(fig.watch_cpu), min(go.watch_cpu)
                rows.append([f"watch CPU per event (client process), {label}",
                             f"{a * 1e6:.0f} us", f"{b * 1e6:.0f} us", "-", f"{a / b:.2f}x", "-",
                             "-", "-"])
    rows.append(["memory per cached pod (RSS growth)", f"{ours.per_pod / 1e3:.1f} KB",
                 f"{go.per_pod / 1e3:.1f} KB",
                 f"{official.per_pod / 1e3:.1f} KB" if official else "-",
                 f"{ours.per_pod / go.per_pod:.2f}x",
                 f"{ours.per_pod / official.per_pod:.2f}x" if official else "-", "-", "-"])
    rows.append(["RSS once synced", f"{min(ours.rss) / 1e6:.0f} MB", f"{min(go.rss) / 1e6:.0f} MB",
                 f"{min(official.rss) / 1e6:.0f} MB" if official else "-",
                 f"{min(ours.rss) / min(go.rss):.2f}x",
                 f"{min(ours.rss) / min(official.rss):.2f}x" if official else "-", "-", "-"])
    untuned = figures.get("ours-untuned")
    if untuned is not None and untuned.syncs:
        rows.append(["initial sync, ours with memory tuning off", f"{untuned.sync:.2f} s",
                     f"{go.sync:.2f} s", "-", f"{untuned.sync / go.sync:.2f}x", "-", "-", "-"])
        if untuned.events_per_second:
            rows.append(["watch events/s, ours with memory tuning off",
                         f"{untuned.events_per_second:,.0f}", f"{go.events_per_second:,.0f}",
                         "-", f"{untuned.events_per_second / go.events_per_second:.2f}x", "-",
                         "-", "-"])
        rows.append(["memory per cached pod, ours with memory tuning off",
                     f"{untuned.per_pod / 1e3:.1f} KB", f"{go.per_pod / 1e3:.1f} KB", "-",
                     f"{untuned.per_pod / go.per_pod:.2f}x", "-", "-", "-"])
    compact = figures.get("ours-compact")
    if compact is not None and compact.syncs:
        rows.append(["initial sync, ours with the compact cache (tuning off)",
                     f"{compact.sync:.2f} s", f"{go.sync:.2f} s", "-",
                     f"{compact.sync / go.sync:.2f}x", "-", "-", "-"])
        if compact.events_per_second:
            rows.append(["watch events/s, ours with the compact cache (tuning off)",
                         f"{compact.events_per_second:,.0f}", f"{go.events_per_second:,.0f}",
                         "-", f"{compact.events_per_second / go.events_per_second:.2f}x", "-",
                         "-", "-"])
        rows.append(["memory per cached pod, ours with the compact cache (tuning off)",
                     f"{compact.per_pod / 1e3:.1f} KB", f"{go.per_pod / 1e3:.1f} KB", "-",
                     f"{compact.per_pod / go.per_pod:.2f}x", "-", "<= 1.0x",
                     "PASS" if compact.per_pod <= go.per_pod else "FAIL"])
    for label, fig in (("ours", ours), ("ours with the compact cache", compact)):
        if fig is not None and fig.list_selector and go.list_selector:
            a, b = min(fig.list_selector), min(go.list_selector)
            rows.append([f"lister list(selector), {label}", f"{a * 1e3:.2f} ms",
                         f"{b * 1e3:.2f} ms", "-", f"{a / b:.2f}x", "-", "-", "-"])
    text = table(rows)
    if "client-go-json" in figures and figures["client-go-json"].syncs:
        text += "\n\n" + like_for_like(figures)
    if churns:
        kcm, mine = churns["kube-controller-manager"], churns["ours"]
        header = ["EndpointController readiness-to-Endpoints delay", "ours",
                  "kube-controller-manager", "ours/kcm", "target", "result"]
        rows = [header]
        for label, q in (("median", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0)):
            a, b = mine.quantile(q), kcm.quantile(q)
            target = "<= 1.0x" if q in (0.5, 0.99) else "-"
            result = ("PASS" if a <= b else "FAIL") if target != "-" else "-"
            rows.append([label, f"{a * 1e3:.1f} ms", f"{b * 1e3:.1f} ms", f"{a / b:.2f}x",
                         target, result])
        rows.append(["changes timed / never shown", f"{len(mine.delays)} / {mine.missed}",
                     f"{len(kcm.delays)} / {kcm.missed}", "-", "-", "-"])
        text += "\n\n" + table(rows)
    return text


# -- main -----------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_real",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true",
                        help="2,000 pods, 1,000 events, 10x10 pods churned for 10 s")
    parser.add_argument("--pods", type=int, default=None, help="pods (default 10,000)")
    parser.add_argument("--events", type=int, default=None,
                        help="MODIFIED events of the watch figure (default: as many as pods, "
                             "at most 10,000; 1,000 with --quick; 0 skips it)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="syncs of client-go and ours, best taken (default 3; 2 with --quick)")
    parser.add_argument("--no-official", action="store_true",
                        help="skip the official client's informer (the slowest part)")
    parser.add_argument("--services", type=int, default=None,
                        help="Services of the churn (default 40; 10 with --quick)")
    parser.add_argument("--pods-per-service", type=int, default=None,
                        help="pods per churned Service (default 25; 10 with --quick)")
    parser.add_argument("--churn-rate", type=float, default=50.0,
                        help="readiness flips per second (default 50)")
    parser.add_argument("--churn-seconds", type=float, default=None,
                        help="how long to churn (default 30; 10 with --quick)")
    parser.add_argument("--no-endpoints", action="store_true",
                        help="skip the EndpointController figures")
    parser.add_argument("--profile", action="store_true",
                        help="profile one sync of ours (sampling, every thread)")
    parser.add_argument("--scale", nargs="?", const="1000,10000,30000,100000", default=None,
                        metavar="SIZES",
                        help="instead of the figures above: how sync time, memory, watch rate "
                             "and a selector list grow, for client-go and ours, at each size "
                             "(default 1000,10000,30000,100000 pods; etcd given an 8 GB quota)")
    parser.add_argument("--child", choices=("ours", "official"), help=argparse.SUPPRESS)
    parser.add_argument("--memory-tuning", choices=("on", "off"), default="on",
                        help=argparse.SUPPRESS)
    parser.add_argument("--compact", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--rv", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    pods = args.pods or (2_000 if args.quick else 10_000)
    if args.child == "ours":
        from benchmarks.real_children import child_ours

        return child_ours(args.kubeconfig, pods, args.rv, args.events or 0, args.profile,
                          args.memory_tuning == "on", args.compact)
    if args.child == "official":
        from benchmarks.real_children import child_official

        return child_official(args.kubeconfig, pods, args.rv, args.events or 0)

    from informers.testing.control_plane import ControlPlane, GoMissingError, find_binaries

    events = args.events if args.events is not None else (
        1_000 if args.quick else min(pods, 10_000))
    repeat = args.repeat or (2 if args.quick else 3)
    services = args.services or (10 if args.quick else 40)
    per_service = args.pods_per_service or (10 if args.quick else 25)
    churn_seconds = args.churn_seconds or (10.0 if args.quick else 30.0)
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {message}", flush=True)

    try:
        binaries = find_binaries(BUILD_SCRIPT, log=sys.stderr)
    except GoMissingError as exc:
        print(f"bench_real: skipped: {exc}")
        return 0
    binary = build_clientgo(log)
    work_dir = tempfile.mkdtemp(prefix="kube-informers-bench-real-")
    print(f"bench_real: {pods:,} pods, {events:,} watch events, Kubernetes "
          f"{binaries.kubernetes_version}, etcd {binaries.etcd_version}, Python "
          f"{sys.version.split()[0]}, {go_version()}; load average "
          f"{os.getloadavg()[0]:.2f}; logs in {work_dir}", flush=True)
    if args.scale:
        sizes = [int(size) for size in args.scale.split(",")]
        with ControlPlane(binaries, work_dir=work_dir,
                          etcd_args=["--quota-backend-bytes=8589934592"]) as plane:
            http = Http(plane.url, plane.token, plane.ca_file)
            rows = measure_scale(plane, http, binary, sizes,
                                 args.events if args.events is not None else 10_000, log)
        print()
        print(scale_report(rows))
        print(f"\ntotal {time.perf_counter() - started:.0f} s")
        return 0
    with ControlPlane(binaries, work_dir=work_dir) as plane:
        http = Http(plane.url, plane.token, plane.ca_file)
        log(f"control plane up; seeding {pods:,} pods")
        seconds = seed_pods(http, pods)
        log(f"{pods:,} pods created and their status written in {seconds:.1f} s")
        figures = measure_informers(plane, http, binary, pods, events, repeat,
                                    not args.no_official, args.profile, log)
        churns: dict[str, Churn] = {}
        if not args.no_endpoints:
            log(f"EndpointController churn: {services} Services x {per_service} pods, "
                f"{args.churn_rate:g} flips/s for {churn_seconds:g} s")
            churns = measure_endpoint_controllers(plane, http, services, per_service,
                                                  args.churn_rate, churn_seconds, work_dir, log)
    print()
    print(report(pods, figures, churns))
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
