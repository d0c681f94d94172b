"""Benchmarks the sharded endpoint controller: 1, 2 and 3 replicas on the real kube-apiserver.

Run ``python -m benchmarks.bench_shard_endpoints`` (about two minutes; ``--quick`` shortens the
churn). It starts etcd and kube-apiserver v1.36.3 with ``ShardedListAndWatch`` on (the
binaries of tools/control-plane/build.sh), creates Services across namespaces, each selecting
Ready pods, then for 1, 2 and 3 replicas of ``endpoint-controller --shard-ring`` (processes,
one ring per replica count) runs the same churn: readiness flips of random pods at a steady
rate, the same seed each time. For each replica count it reports:

* the resident memory of each replica after the churn (``VmRSS``);
* syncs per second over the churn, summed over the replicas (``endpoint_controller_syncs``
  from each replica's ``/metrics``);
* the delay from just before a pod's status PATCH until a watch on Endpoints shows the pod's
  IP on the right side (p50, p99), beside the same-run baseline of one watch hop (a watch on
  Pods seeing the new status).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from informers.client import list_watch_from_client
from informers.client.api_call import api_call
from informers.list_watch import ListOptions
from informers.resources import lookup
from informers.shard import assign
from informers.sharding import fnv1a_64

ROOT = Path(__file__).resolve().parents[1]
BUILD_SCRIPT = ROOT / "tools" / "control-plane" / "build.sh"
RING_NAMESPACE = "bench-ring"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pod_ip(i: int) -> str:
    return f"10.{64 + i // 65536}.{(i // 256) % 256}.{i % 256}"


def namespace_names(count: int, similar: bool) -> list[str]:
    """``bench-shard-N`` (``similar``: names that differ in their last characters, whose
    FNV-1a hashes share their top 16 bits, so contiguous ranges give nearly all of them to
    one replica), else 8 hex digits of a SHA-256 then ``-bench`` (their hashes spread: 6/6
    for two replicas, 4/5/3 for three with the default 12)."""
    if similar:
        return [f"bench-shard-{n}" for n in range(count)]
    return [hashlib.sha256(f"2-{n}".encode()).hexdigest()[:8] + "-bench" for n in range(count)]


class Workload:
    def __init__(self, api: Any, namespaces: list[str], services: int,
                 per_service: int) -> None:
        self.api = api
        self.namespaces = namespaces
        self.pods: list[tuple[str, str, str]] = []  # (namespace, service, name)
        for ns in self.namespaces:
            for s in range(services):
                for p in range(per_service):
                    self.pods.append((ns, f"svc-{s}", f"pod-{s}-{p}"))
        self.ready = [True] * len(self.pods)
        self.services = services

    def create(self) -> None:
        for ns in [*self.namespaces, RING_NAMESPACE]:
            api_call(self.api, "POST", "/api/v1/namespaces",
                     {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

        def service(ns_s: tuple[str, int]) -> None:
            ns, s = ns_s
            api_call(self.api, "POST", f"/api/v1/namespaces/{ns}/services", {
                "apiVersion": "v1", "kind": "Service", "metadata": {"name": f"svc-{s}"},
                "spec": {"selector": {"bench": f"svc-{s}"},
                         "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}})

        def pod(i: int) -> None:
            ns, svc, name = self.pods[i]
            api_call(self.api, "POST", f"/api/v1/namespaces/{ns}/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "labels": {"bench": svc}},
                "spec": {"nodeName": "node-1", "containers": [
                    {"name": "c", "image": "registry.k8s.io/pause:3.10",
                     "ports": [{"containerPort": 8080}]}]}})
            self.set_ready(i, True)

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(service, [(ns, s) for ns in self.namespaces
                                    for s in range(self.services)]))
            list(pool.map(pod, range(len(self.pods))))

    def set_ready(self, i: int, ready: bool) -> None:
        ns, _, name = self.pods[i]
        status = "True" if ready else "False"
        api_call(self.api, "PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status",
                 {"status": {"phase": "Running", "podIP": pod_ip(i), "podIPs": [{"ip": pod_ip(i)}],
                             "conditions": [{"type": "Ready", "status": status},
                                            {"type": "ContainersReady", "status": status}]}},
                 content_type="application/merge-patch+json")
        self.ready[i] = ready


class Tracker:
    """Delays from a readiness change to a watch on Endpoints (and on Pods) showing it."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.lock = threading.Lock()
        self.pending: dict[tuple[str, str, str], tuple[bool, float]] = {}
        self.pending_pods: dict[tuple[str, str], tuple[bool, float]] = {}
        self.endpoint_delays: list[float] = []
        self.pod_delays: list[float] = []

    def changed(self, i: int, ready: bool) -> None:
        ns, svc, name = self.workload.pods[i]
        now = time.perf_counter()
        with self.lock:
            self.pending[(ns, svc, pod_ip(i))] = (ready, now)
            self.pending_pods[(ns, name)] = (ready, now)

    def is_pending(self, i: int) -> bool:
        ns, svc, _ = self.workload.pods[i]
        with self.lock:
            return (ns, svc, pod_ip(i)) in self.pending

    def on_endpoints(self, obj: dict[str, Any]) -> None:
        now = time.perf_counter()
        meta = obj.get("metadata") or {}
        ns, svc = meta.get("namespace"), meta.get("name")
        ready_ips, not_ready = set(), set()
        for subset in obj.get("subsets") or []:
            ready_ips |= {a["ip"] for a in subset.get("addresses") or []}
            not_ready |= {a["ip"] for a in subset.get("notReadyAddresses") or []}
        with self.lock:
            for key, (want, t0) in list(self.pending.items()):
                if key[0] == ns and key[1] == svc and key[2] in (
                        ready_ips if want else not_ready):
                    del self.pending[key]
                    self.endpoint_delays.append(now - t0)

    def on_pod(self, obj: dict[str, Any]) -> None:
        now = time.perf_counter()
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace")), str(meta.get("name")))
        conditions = (obj.get("status") or {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        with self.lock:
            entry = self.pending_pods.get(key)
            if entry is not None and entry[0] == ready:
                del self.pending_pods[key]
                self.pod_delays.append(now - entry[1])


def watch(api: Any, plural: str, handle: Any, stop: threading.Event) -> threading.Thread:
    lw = list_watch_from_client(api, lookup(plural))
    rv = lw.list(ListOptions(limit=1)).resource_version
    stream = lw.watch(ListOptions(resource_version=rv, timeout_seconds=900))

    def run() -> None:
        try:
            for event in stream:
                if stop.is_set():
                    break
                if event.type in ("ADDED", "MODIFIED"):
                    handle(event.object)
        except Exception:
            pass

    def closer() -> None:
        stop.wait()
        stream.close()

    threading.Thread(target=closer, daemon=True).start()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def converged(api: Any, workload: Workload) -> bool:
    items = list_watch_from_client(api, lookup("endpoints")).list(ListOptions()).items
    seen: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
    for ep in items:
        meta = ep["metadata"]
        ready_ips, not_ready = set(), set()
        for subset in ep.get("subsets") or []:
            ready_ips |= {a["ip"] for a in subset.get("addresses") or []}
            not_ready |= {a["ip"] for a in subset.get("notReadyAddresses") or []}
        seen[(meta["namespace"], meta["name"])] = (ready_ips, not_ready)
    for i, (ns, svc, _) in enumerate(workload.pods):
        ready_ips, not_ready = seen.get((ns, svc), (set(), set()))
        if pod_ip(i) not in (ready_ips if workload.ready[i] else not_ready):
            return False
    return True


def syncs(port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(float(m) for m in re.findall(
        r"^endpoint_controller_syncs_total\{[^}]*\} ([0-9.e+]+)$", text, re.M))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def quantile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_replicas(plane: Any, api: Any, kubeconfig: str, workload: Workload, replicas: int,
                 rate: float, seconds: float, seed: int, work_dir: str) -> dict[str, Any]:
    ring = f"bench-r{replicas}"
    procs: list[tuple[subprocess.Popen[bytes], int]] = []
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["PYTHONPATH"] = str(ROOT)
    for r in range(replicas):
        port = free_port()
        with open(os.path.join(work_dir, f"{ring}-{r}.log"), "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "controllers.endpoint", "--kubeconfig", kubeconfig,
                 "--shard-ring", ring, "--leader-elect-namespace", RING_NAMESPACE,
                 "--leader-elect-identity", f"{ring}-{r}", "--leader-elect-lease-duration",
                 "5s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period",
                 "500ms", "--metrics-address", f"127.0.0.1:{port}", "--log-level", "warning"],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        procs.append((proc, port))
    try:
        deadline = time.perf_counter() + 60
        while True:
            try:
                if all(syncs(port) >= 0 for _, port in procs) and converged(api, workload):
                    break
            except OSError:
                pass
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{replicas} replicas did not converge within 60 s")
            time.sleep(0.25)
        time.sleep(3)  # the ring settles: every replica active on its ranges
        tracker = Tracker(workload)
        stop = threading.Event()
        watch(api, "endpoints", tracker.on_endpoints, stop)
        watch(api, "pods", tracker.on_pod, stop)
        before = sum(syncs(port) for _, port in procs)
        rng = random.Random(seed)
        start = time.perf_counter()
        next_at = start
        flips = 0
        while time.perf_counter() - start < seconds:
            i = rng.randrange(len(workload.pods))
            if tracker.is_pending(i):
                continue
            want = not workload.ready[i]
            tracker.changed(i, want)
            workload.set_ready(i, want)
            flips += 1
            next_at += 1.0 / rate
            pause = next_at - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
        elapsed = time.perf_counter() - start
        drain = time.perf_counter() + 10
        while tracker.pending and time.perf_counter() < drain:
            time.sleep(0.05)
        after = sum(syncs(port) for _, port in procs)
        stop.set()
        return {
            "replicas": replicas, "flips": flips, "unseen": len(tracker.pending),
            "rss": [rss_mib(p.pid) for p, _ in procs],
            "syncs_per_s": (after - before) / elapsed,
            "ep_p50": quantile(tracker.endpoint_delays, 0.5),
            "ep_p99": quantile(tracker.endpoint_delays, 0.99),
            "pod_p50": quantile(tracker.pod_delays, 0.5),
            "pod_p99": quantile(tracker.pod_delays, 0.99),
        }
    finally:
        for proc, _ in procs:
            proc.send_signal(signal.SIGTERM)
        for proc, _ in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_shard_endpoints",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 s of churn")
    parser.add_argument("--namespaces", type=int, default=12)
    parser.add_argument("--services", type=int, default=4, help="per namespace")
    parser.add_argument("--pods-per-service", type=int, default=10)
    parser.add_argument("--rate", type=float, default=20.0, help="readiness flips per second")
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--similar-names", action="store_true",
                        help="namespaces bench-shard-N (their hashes cluster: uneven shares)")
    args = parser.parse_args(argv)
    seconds = args.seconds or (8.0 if args.quick else 20.0)

    from informers.testing.control_plane import ControlPlane, GoMissingError, find_binaries

    try:
        binaries = find_binaries(BUILD_SCRIPT, log=sys.stderr)
    except GoMissingError as exc:
        print(f"bench_shard_endpoints: skipped: {exc}")
        return 0
    work_dir = tempfile.mkdtemp(prefix="kube-informers-bench-shard-")
    with ControlPlane(binaries, work_dir=work_dir,
                      feature_gates={"ShardedListAndWatch": True}) as plane:
        api = plane.api_client()
        kubeconfig = plane.write_kubeconfig(os.path.join(work_dir, "kubeconfig"))
        workload = Workload(api, namespace_names(args.namespaces, args.similar_names),
                            args.services, args.pods_per_service)
        begin = time.perf_counter()
        workload.create()
        print(f"Kubernetes {binaries.kubernetes_version} (ShardedListAndWatch on); "
              f"{len(workload.namespaces)} namespaces, {len(workload.namespaces) * args.services}"
              f" services, {len(workload.pods)} pods created in "
              f"{time.perf_counter() - begin:.1f} s; churn {args.rate:g} flips/s for "
              f"{seconds:g} s per replica count; logs in {work_dir}\n", flush=True)
        print(f"{'replicas':>8} {'namespaces each':>16} {'RSS per replica (MiB)':>22} "
              f"{'syncs/s':>8} "
              f"{'Endpoints p50/p99 (ms)':>23} {'Pod watch p50/p99 (ms)':>23} {'flips':>6}")
        for replicas in (1, 2, 3):
            r = run_replicas(plane, api, kubeconfig, workload, replicas, args.rate, seconds,
                             args.seed, work_dir)
            rss = " ".join(f"{v:.0f}" for v in r["rss"])
            ranges = assign([f"bench-r{replicas}-{i}" for i in range(replicas)])
            shares = " ".join(str(sum(fnv1a_64(ns.encode()) in rr for ns in workload.namespaces))
                              for rr in ranges.values())
            print(f"{replicas:>8} {shares:>16} {rss:>22} {r['syncs_per_s']:>8.1f} "
                  f"{r['ep_p50'] * 1000:>11.0f}/{r['ep_p99'] * 1000:<11.0f} "
                  f"{r['pod_p50'] * 1000:>11.0f}/{r['pod_p99'] * 1000:<11.0f} "
                  f"{r['flips']:>6}" + (f" ({r['unseen']} unseen)" if r["unseen"] else ""),
                  flush=True)
        api.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
