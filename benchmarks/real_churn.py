"""The EndpointController figure of benchmarks/bench_real.py: readiness-to-Endpoints delay
under churn, for kube-controller-manager's endpoints controller and ours, one at a time.

A namespace of Services with a fixed number of ready pods each; a seeded script flips pods'
Ready condition at a steady rate; an :class:`Observer` watching the namespace's pods and
Endpoints times each change from the pod's MODIFIED event to the first Endpoints event that
shows the pod on the matching side. The same flips are replayed for each controller.
"""

from __future__ import annotations

import functools
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from benchmarks.real_http import Http, parallel

ROOT = Path(__file__).resolve().parent.parent
EP_NAMESPACE = "bench-endpoints"
CHURN_SEED = 1
KCM_ARGS = ("--kube-api-qps=1000", "--kube-api-burst=1000", "--concurrent-endpoint-syncs=5")
"""No client-side throttling (ours has none; kube-controller-manager's default 20 qps would
cap its writes) and its default 5 workers, as ours gets."""


def _ready_status(ready: bool) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def seed_endpoints_workload(http: Http, services: int, per_service: int) -> list[str]:
    ns = EP_NAMESPACE
    http.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    for s in range(services):
        http.request("POST", f"/api/v1/namespaces/{ns}/services", {
            "metadata": {"name": f"svc-{s}"},
            "spec": {"selector": {"app": f"svc-{s}"},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
    names = [f"svc-{s}-pod-{p}" for s in range(services) for p in range(per_service)]

    def one(index: int) -> None:
        name = names[index]
        http.request("POST", f"/api/v1/namespaces/{ns}/pods", {
            "metadata": {"name": name, "labels": {"app": name.rsplit("-pod-", 1)[0]}},
            "spec": {"nodeName": "node-1", "containers": [
                {"name": "c", "image": "registry.invalid/pause:1",
                 "ports": [{"name": "http", "containerPort": 8080}]}]}})
        ip = f"10.{100 + index // 65536}.{index // 256 % 256}.{index % 256}"
        status = _ready_status(True)["status"]
        status.update(phase="Running", podIP=ip, podIPs=[{"ip": ip}])
        http.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status",
                     {"status": status}, "application/merge-patch+json")

    parallel(one, range(len(names)))
    return names


class Observer:
    """Watches the churn namespace's pods and Endpoints; times each readiness change from the
    pod's MODIFIED event to the first Endpoints event that reflects it."""

    def __init__(self, http: Http) -> None:
        self.http = http
        self.lock = threading.Lock()
        self.pending: dict[str, tuple[float, bool]] = {}  # pod -> (seen at, ready)
        self.ready: dict[str, bool] = {}
        self.delays: list[float] = []
        self.measuring = False
        self._responses: list[Any] = []
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for kind in ("pods", "endpoints"):
            path = f"/api/v1/namespaces/{EP_NAMESPACE}/{kind}"
            rv = self.http.resource_version(path)
            response = self.http.stream(f"{path}?watch=true&resourceVersion={rv}")
            self._responses.append(response)
            thread = threading.Thread(target=self._read, args=(kind, response), daemon=True,
                                      name=f"observer-{kind}")
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        for response in self._responses:
            response.shutdown()  # unblocks the reading thread
            response.close()
        for thread in self._threads:
            thread.join(5)

    def _read(self, kind: str, response: Any) -> None:
        pending = b""
        try:
            for chunk in response.stream(65536):
                data = pending + chunk
                *lines, pending = data.split(b"\n")
                now = time.perf_counter()
                for line in lines:
                    if line:
                        event = orjson.loads(line)
                        (self._on_pod if kind == "pods" else self._on_endpoints)(event, now)
        except Exception:  # the stream closed on stop
            return

    def _on_pod(self, event: dict[str, Any], now: float) -> None:
        pod = event["object"]
        name = pod["metadata"]["name"]
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in pod.get("status", {}).get("conditions", ()))
        with self.lock:
            if self.ready.get(name) != ready:
                self.ready[name] = ready
                if self.measuring:
                    self.pending[name] = (now, ready)

    def _on_endpoints(self, event: dict[str, Any], now: float) -> None:
        shown: dict[str, bool] = {}
        for subset in event["object"].get("subsets") or ():
            for key, ready in (("addresses", True), ("notReadyAddresses", False)):
                for address in subset.get(key) or ():
                    shown[address.get("targetRef", {}).get("name", "")] = ready
        with self.lock:
            for name, ready in shown.items():
                waiting = self.pending.get(name)
                if waiting is not None and waiting[1] == ready:
                    self.delays.append(now - waiting[0])
                    del self.pending[name]


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _endpoints_show(http: Http, service: str, pod: str, ready: bool) -> bool:
    endpoints = http.request("GET", f"/api/v1/namespaces/{EP_NAMESPACE}/endpoints/{service}")
    field = "addresses" if ready else "notReadyAddresses"
    return any(address.get("targetRef", {}).get("name") == pod
               for subset in endpoints.get("subsets") or ()
               for address in subset.get(field) or ())


def wait_until_live(http: Http, names: list[str], what: str, timeout: float = 120) -> None:
    """Flip one pod to not ready and back, each time until its Endpoints show it: the
    controller under test is then running. A converged namespace alone proves nothing once an
    earlier controller left it converged; churning before the new one has synced its caches
    charged its start-up (a second or two) to the first flips' delays."""
    pod = names[0]
    service = pod.rsplit("-pod-", 1)[0]
    for ready in (False, True):
        http.request("PATCH", f"/api/v1/namespaces/{EP_NAMESPACE}/pods/{pod}/status",
                     _ready_status(ready), "application/merge-patch+json")
        _wait(functools.partial(_endpoints_show, http, service, pod, ready), timeout,
              f"{what} to show {pod} {'ready' if ready else 'not ready'}")


def endpoints_converged(http: Http, services: int, per_service: int) -> bool:
    items = http.request("GET", f"/api/v1/namespaces/{EP_NAMESPACE}/endpoints")["items"]
    full = 0
    for item in items:
        subsets = item.get("subsets") or []
        if (len(subsets) == 1 and len(subsets[0].get("addresses") or ()) == per_service
                and not subsets[0].get("notReadyAddresses")):
            full += 1
    return full == services


@dataclass
class Churn:
    delays: list[float]
    flips: int
    missed: int

    def quantile(self, q: float) -> float:
        ordered = sorted(self.delays)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def churn(http: Http, names: list[str], services: int, per_service: int, rate: float,
          seconds: float, log: Callable[[str], None], seed: int = CHURN_SEED) -> Churn:
    """Flip pods' readiness at ``rate`` per second for ``seconds`` (seeded: the same flips for
    every controller given the same ``seed``), then restore them all to ready."""
    observer = Observer(http)
    observer.start()
    time.sleep(0.5)
    rng = random.Random(seed)
    state = dict.fromkeys(names, True)
    pool = ThreadPoolExecutor(8)
    futures = []
    flips = int(rate * seconds)
    observer.measuring = True
    start = time.perf_counter()
    for k in range(flips):
        delay = start + k / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        name = rng.choice(names)
        state[name] = not state[name]
        futures.append(pool.submit(
            http.request, "PATCH", f"/api/v1/namespaces/{EP_NAMESPACE}/pods/{name}/status",
            _ready_status(state[name]), "application/merge-patch+json"))
    for future in futures:
        future.result()
    sent = time.perf_counter() - start
    pool.shutdown()
    deadline = time.monotonic() + 15
    while observer.pending and time.monotonic() < deadline:
        time.sleep(0.1)
    observer.measuring = False
    result = Churn(list(observer.delays), flips, len(observer.pending))
    observer.stop()
    down = [n for n, ready in state.items() if not ready]
    parallel(lambda n: http.request(
        "PATCH", f"/api/v1/namespaces/{EP_NAMESPACE}/pods/{n}/status", _ready_status(True),
        "application/merge-patch+json"), down)
    _wait(lambda: endpoints_converged(http, services, per_service), 120, "restored Endpoints")
    log(f"  {flips} flips sent in {sent:.1f} s, {len(result.delays)} changes timed, "
        f"{result.missed} never shown (waited up to 15 s for them), "
        f"{time.perf_counter() - start:.1f} s with the restore")
    return result


def _pooled(parts: list[Churn]) -> Churn:
    return Churn([d for part in parts for d in part.delays], sum(p.flips for p in parts),
                 sum(p.missed for p in parts))


def measure_endpoint_controllers(plane: Any, http: Http, services: int, per_service: int,
                                 rate: float, seconds: float, work_dir: str,
                                 log: Callable[[str], None], rounds: int = 2) -> dict[str, Churn]:
    """Churn under kube-controller-manager, then under ours, ``rounds`` times (each round
    ``seconds / rounds`` long, with its own seeded flips, the same for both), and pool each
    controller's delays: alternating keeps a drift of the machine or the cluster over the run
    from favouring whichever controller goes first."""
    names = seed_endpoints_workload(http, services, per_service)
    parts: dict[str, list[Churn]] = {"kube-controller-manager": [], "ours": []}
    for round_ in range(rounds):
        seed = CHURN_SEED + round_
        plane.start_controller_manager(extra_args=KCM_ARGS)
        try:
            _wait(lambda: endpoints_converged(http, services, per_service), 120,
                  "kube-controller-manager's Endpoints")
            wait_until_live(http, names, "kube-controller-manager")
            log(f"round {round_ + 1}/{rounds}: kube-controller-manager converged and live; "
                "churning")
            parts["kube-controller-manager"].append(
                churn(http, names, services, per_service, rate, seconds / rounds, log, seed))
        finally:
            plane.stop_controller_manager()
        log_path = os.path.join(work_dir, f"endpoint-controller-{round_ + 1}.log")
        with open(log_path, "w") as log_file:
            ours = subprocess.Popen(
                [sys.executable, "-m", "controllers.endpoint", "--kubeconfig",
                 plane.kubeconfig_path, "--workers", "5", "--metrics-address", "0",
                 "--log-level", "warning"],
                cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT)
            try:
                _wait(lambda: endpoints_converged(http, services, per_service), 120,
                      "our Endpoints")
                wait_until_live(http, names, "our controller")
                log(f"round {round_ + 1}/{rounds}: ours converged and live; churning")
                parts["ours"].append(
                    churn(http, names, services, per_service, rate, seconds / rounds, log, seed))
            finally:
                ours.terminate()
                ours.wait(30)
    return {name: _pooled(churns) for name, churns in parts.items()}
