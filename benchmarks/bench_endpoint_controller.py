"""Benchmarks the endpoint controller: readiness-change delay under churn, and sync from cold.

Run ``python -m benchmarks.bench_endpoint_controller`` (about 30 s) or add ``--quick`` (about
15 s). The embedded API server runs in its own process (``python -m informers.testing``), so
it does not share the controller's GIL; the controller (as ``endpoint-controller`` wires it,
5 workers, over HTTPS from the server's kubeconfig), the churn driver and the measuring watches
run in this process.

1. Setup: 100 Services, each selecting 10 of 1,000 realistic pods (:mod:`benchmarks.pods`,
   about 7 KB each), all Running and Ready, created through the API.
2. Cold sync: the time from starting the controller until a watch on Endpoints has seen all
   100 Endpoints with their 10 ready addresses; beside it, when the controller's caches synced
   and, as a same-run baseline, one plain list of pods, services and endpoints (best of 3).
3. Churn: readiness flips of random pods (never one whose previous flip is still unseen) at a
   steady rate. For each flip, the delay from just before the status PATCH is sent until a
   watch on Endpoints shows the pod's IP under ``addresses`` (ready) or ``notReadyAddresses``.
   Same-run baseline: the delay until a watch on Pods shows the new status (one watch hop;
   the controller needs a pod watch hop, a sync, a PUT and an Endpoints watch hop).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks.pods import make_pod
from controllers.endpoint.cli import EndpointControllerCommand, parse_args
from informers.client import list_watch_from_client
from informers.client.api_call import api_call
from informers.list_watch import ListOptions
from informers.resources import lookup

NAMESPACE = "default"
PORT = 8080


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(kubeconfig: str) -> subprocess.Popen[str]:
    """``python -m informers.testing`` in its own process; returns once it serves."""
    process = subprocess.Popen(
        [sys.executable, "-m", "informers.testing", "--port", str(free_port()),
         "--kubeconfig", kubeconfig],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("serving on"):
        process.kill()
        raise RuntimeError(f"the API server did not start: {line!r}")
    return process


def api_client_for(kubeconfig: str) -> Any:
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration,
                            persist_config=False)
    configuration.connection_pool_maxsize = 32
    return client.ApiClient(configuration)


# -- the workload ----------------------------------------------------------------------------------


def service_name(s: int) -> str:
    return f"svc-{s:03d}"


def pod_ip(i: int) -> str:
    return f"10.64.{i // 250}.{i % 250 + 1}"


class Workload:
    """1,000 pods across 100 services; flips readiness through the API."""

    def __init__(self, api_client: Any, pods: int, services: int) -> None:
        self.api_client = api_client
        self.services = services
        self.pods: list[dict[str, Any]] = []
        self.ready: list[bool] = [True] * pods
        for i in range(pods):
            pod = make_pod(i)
            meta = pod["metadata"]
            for field in ("uid", "resourceVersion", "creationTimestamp", "generateName"):
                meta.pop(field, None)
            meta["name"] = f"pod-{i:04d}"
            meta["namespace"] = NAMESPACE
            meta["labels"]["bench-service"] = service_name(i % services)
            pod["status"]["podIP"] = pod_ip(i)
            pod["status"]["podIPs"] = [{"ip": pod_ip(i)}]
            self.pods.append(pod)

    def service_of(self, i: int) -> str:
        return service_name(i % self.services)

    def _path(self, plural: str, name: str = "", sub: str = "") -> str:
        return f"/api/v1/namespaces/{NAMESPACE}/{plural}" + (f"/{name}" if name else "") + (
            f"/{sub}" if sub else "")

    def create(self, threads: int = 6) -> None:
        def service(s: int) -> None:
            api_call(self.api_client, "POST", self._path("services"), {
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": service_name(s)},
                "spec": {"clusterIP": f"10.96.{s // 250}.{s % 250 + 1}",
                         "selector": {"bench-service": service_name(s)},
                         "ports": [{"name": "http", "port": 80, "targetPort": PORT,
                                    "protocol": "TCP"}]},
            })

        def pod(i: int) -> None:
            body = self.pods[i]
            api_call(self.api_client, "POST", self._path("pods"), body)
            api_call(self.api_client, "PATCH", self._path("pods", body["metadata"]["name"],
                                                          "status"),
                     {"status": body["status"]}, content_type="application/merge-patch+json")

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(service, range(self.services)))
            list(pool.map(pod, range(len(self.pods))))

    def set_ready(self, i: int, ready: bool) -> None:
        conditions = [dict(c) for c in self.pods[i]["status"]["conditions"]]
        for condition in conditions:
            if condition["type"] in ("Ready", "ContainersReady"):
                condition["status"] = "True" if ready else "False"
        api_call(self.api_client, "PATCH",
                 self._path("pods", self.pods[i]["metadata"]["name"], "status"),
                 {"status": {"conditions": conditions}},
                 content_type="application/merge-patch+json")
        self.ready[i] = ready


# -- watching --------------------------------------------------------------------------------------


class Watcher:
    """Watches one resource from now on and calls ``on_event(now, type, obj)`` per event."""

    def __init__(self, api_client: Any, plural: str,
                 on_event: Callable[[float, str, dict[str, Any]], None]) -> None:
        self._lw = list_watch_from_client(api_client, lookup(plural), namespace=NAMESPACE)
        self._on_event = on_event
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name=f"bench-watch-{plural}",
                                        daemon=True)

    def start(self) -> list[dict[str, Any]]:
        listed = self._lw.list(ListOptions())
        self._stream = self._lw.watch(ListOptions(resource_version=listed.resource_version,
                                                  timeout_seconds=600))
        self._thread.start()
        return listed.items

    def _run(self) -> None:
        try:
            for event in self._stream:
                self._on_event(time.perf_counter(), event.type, event.object)
        except Exception:  # closed by stop()
            pass

    def stop(self) -> None:
        if self._stream is not None:
            self._stream.close()
        self._thread.join(5)


def addresses(endpoints: dict[str, Any]) -> tuple[set[str], set[str]]:
    ready: set[str] = set()
    not_ready: set[str] = set()
    for subset in endpoints.get("subsets") or []:
        ready.update(a["ip"] for a in subset.get("addresses") or [])
        not_ready.update(a["ip"] for a in subset.get("notReadyAddresses") or [])
    return ready, not_ready


class Tracker:
    """Pending readiness changes and the delays until each watch showed them."""

    def __init__(self, pods_per_service: int, services: int) -> None:
        self._lock = threading.Lock()
        self._cold_target = services
        self._pods_per_service = pods_per_service
        self._complete: set[str] = set()
        self.cold_done = threading.Event()
        self.cold_at = 0.0
        self.endpoints_pending: dict[str, dict[str, tuple[float, bool]]] = {}
        self.pods_pending: dict[str, tuple[float, bool]] = {}
        self.endpoint_delays: list[float] = []
        self.pod_delays: list[float] = []

    def changed(self, service: str, ip: str, ready: bool, sent: float) -> None:
        with self._lock:
            self.endpoints_pending.setdefault(service, {})[ip] = (sent, ready)
            self.pods_pending[ip] = (sent, ready)

    def is_pending(self, service: str, ip: str) -> bool:
        with self._lock:
            return ip in self.endpoints_pending.get(service, {}) or ip in self.pods_pending

    def pending(self) -> int:
        with self._lock:
            return sum(len(v) for v in self.endpoints_pending.values())

    def on_endpoints(self, now: float, etype: str, obj: dict[str, Any]) -> None:
        if etype not in ("ADDED", "MODIFIED"):
            return
        name = obj["metadata"]["name"]
        ready, not_ready = addresses(obj)
        with self._lock:
            if not self.cold_done.is_set() and len(ready) == self._pods_per_service:
                self._complete.add(name)
                if len(self._complete) == self._cold_target:
                    self.cold_at = now
                    self.cold_done.set()
            waiting = self.endpoints_pending.get(name)
            if not waiting:
                return
            for ip, (sent, want) in list(waiting.items()):
                if ip in (ready if want else not_ready):
                    self.endpoint_delays.append(now - sent)
                    del waiting[ip]

    def on_pod(self, now: float, etype: str, obj: dict[str, Any]) -> None:
        if etype != "MODIFIED":
            return
        status = obj.get("status") or {}
        ip = status.get("podIP")
        if not isinstance(ip, str):
            return
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in status.get("conditions") or [])
        with self._lock:
            waiting = self.pods_pending.get(ip)
            if waiting is not None and waiting[1] == ready:
                self.pod_delays.append(now - waiting[0])
                del self.pods_pending[ip]


# -- running ---------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def row(label: str, values: Sequence[float]) -> str:
    ms = [v * 1000 for v in values]
    return (f"  {label:<44}{len(ms):>6}{statistics.median(ms) if ms else float('nan'):>9.1f}"
            f"{percentile(ms, 0.9):>9.1f}{percentile(ms, 0.99):>9.1f}"
            f"{max(ms) if ms else float('nan'):>9.1f}")


def churn(workload: Workload, tracker: Tracker, rate: float, seconds: float,
          rng: random.Random) -> int:
    """Flip readiness of random pods at ``rate`` per second for ``seconds``; returns flips."""
    interval = 1.0 / rate
    start = time.perf_counter()
    next_at = start
    flips = 0
    count = len(workload.pods)
    while time.perf_counter() - start < seconds:
        i = rng.randrange(count)
        service, ip = workload.service_of(i), pod_ip(i)
        if tracker.is_pending(service, ip):
            continue
        want = not workload.ready[i]
        tracker.changed(service, ip, want, time.perf_counter())
        workload.set_ready(i, want)
        flips += 1
        next_at += interval
        pause = next_at - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
    return flips


def run(pods: int, services: int, workers: int, rate: float, seconds: float,
        seed: int) -> None:
    tmp = tempfile.mkdtemp(prefix="bench-endpoints-")
    kubeconfig = os.path.join(tmp, "kubeconfig")
    server = start_server(kubeconfig)
    client = api_client_for(kubeconfig)
    stop = threading.Event()
    command: EndpointControllerCommand | None = None
    thread: threading.Thread | None = None
    watchers: list[Watcher] = []
    try:
        print(f"endpoint controller: {pods} pods across {services} services, {workers} "
              f"workers; churn {rate:g} readiness changes/s for {seconds:g} s")
        print("API server: python -m informers.testing in its own process; controller, churn "
              "and watches in this one (HTTPS)")
        workload = Workload(client, pods, services)
        begin = time.perf_counter()
        workload.create()
        print(f"setup: {services} services and {pods} pods created in "
              f"{time.perf_counter() - begin:.1f} s\n")

        tracker = Tracker(pods // services, services)
        list_baseline = float("inf")
        for _ in range(3):  # the best of three
            begin = time.perf_counter()
            for plural in ("pods", "services", "endpoints"):
                list_watch_from_client(client, lookup(plural), namespace=NAMESPACE).list(
                    ListOptions())
            list_baseline = min(list_baseline, time.perf_counter() - begin)
        watchers = [Watcher(client, "endpoints", tracker.on_endpoints),
                    Watcher(client, "pods", tracker.on_pod)]
        for watcher in watchers:
            watcher.start()

        options = parse_args(["--kubeconfig", kubeconfig, "--no-demo", "--metrics-address",
                              "0", "--workers", str(workers), "--log-level", "warning"])
        command = EndpointControllerCommand(options, stop_event=stop, handle_signals=False)
        started = time.perf_counter()
        thread = threading.Thread(target=command.run, name="bench-controller", daemon=True)
        thread.start()
        command.built.wait(30)
        assert command.manager is not None
        while not command.manager.caches_synced() and time.perf_counter() - started < 60:
            time.sleep(0.005)
        synced = time.perf_counter() - started
        if not tracker.cold_done.wait(60):
            raise RuntimeError("the controller did not sync every service within 60 s")
        cold = tracker.cold_at - started
        print(f"{'cold start':<52}{'seconds':>8}")
        print(f"  {'one list of pods, services, endpoints (baseline)':<50}{list_baseline:>8.2f}")
        print(f"  {'controller: caches synced':<50}{synced:>8.2f}")
        print(f"  {f'controller: all {services} Endpoints seen by a watch':<50}{cold:>8.2f}\n")

        flips = churn(workload, tracker, rate, seconds, random.Random(seed))
        deadline = time.perf_counter() + 10
        while tracker.pending() and time.perf_counter() < deadline:
            time.sleep(0.05)
        print(f"{'readiness change -> seen by a watch (ms)':<46}{'n':>6}{'median':>9}"
              f"{'p90':>9}{'p99':>9}{'max':>9}")
        print(row("Pod status (baseline: one watch hop)", tracker.pod_delays))
        print(row("Endpoints (the controller)", tracker.endpoint_delays))
        print(f"  {flips} changes sent; {tracker.pending()} not seen in Endpoints 10 s later\n")

        assert command.controller is not None
        snap = command.controller.metrics.snapshot()
        print("controller syncs: " + ", ".join(f"{k} {v}" for k, v in snap.syncs.items())
              + f"; mean sync {snap.duration.sum / max(snap.duration.count, 1) * 1000:.1f} ms")
    finally:
        stop.set()
        if thread is not None:
            thread.join(30)
        for watcher in watchers:
            watcher.stop()
        client.close()
        server.terminate()
        server.wait(10)
        try:
            os.remove(kubeconfig)
            os.rmdir(tmp)
        except OSError:
            pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_endpoint_controller",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 s of churn at 50/s")
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument("--rate", type=float, default=None,
                        help="readiness changes per second (default 100; --quick 50)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="seconds of churn (default 12; --quick 4)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.pods % args.services:
        parser.error("--pods must be a multiple of --services")
    rate = args.rate if args.rate is not None else (50.0 if args.quick else 100.0)
    seconds = args.seconds if args.seconds is not None else (4.0 if args.quick else 12.0)
    logging.basicConfig(level=logging.ERROR)
    run(args.pods, args.services, args.workers, rate, seconds, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
