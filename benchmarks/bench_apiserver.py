"""Benchmarks the embedded API server against in-process encoding baselines.

Run ``python -m benchmarks.bench_apiserver`` (10,000 pods, 10,000 watch events, about 25 s)
or add ``--quick`` (2,000 pods, 3,000 events). Pods come from :func:`benchmarks.pods.make_pod`
(about 7 KB each). Clients are raw ``urllib3`` readers that only count bytes and lines, so the
figures are the server's; everything runs in this process, as the embedded server does in tests.

Sections:

1. LIST of every pod (``GET /api/v1/pods``, best of ``--repeat``) and the same list in pages of
   500; baseline: ``orjson.dumps`` of the same PodList in process, i.e. what a server that
   encodes per request would pay before sending a byte.
2. WATCH events per second delivered to 1 and 4 watchers: ``replay`` (all events already in
   the history, watchers start from the first version) and ``live`` (a writer thread patches
   pods while the watchers read; bounded by the writer). Baseline: ``orjson.dumps`` of the same
   number of ``{"type": "MODIFIED", "object": pod}`` events in process.
3. WRITE round trips per second on one deployment: a plain ``PUT`` (update) beside a
   server-side apply (``PATCH`` ``application/apply-patch+yaml`` with a field manager, which
   merges by the schema and records ``managedFields``), a strategic merge patch and a
   ``PATCH`` of ``deployments/scale`` (what ``kubectl scale`` sends; "not served" on a server
   without the subresource).
4. CRD create to served: ``POST`` of a CustomResourceDefinition (a small structural schema,
   printer columns, the status and scale subresources) until the first ``200`` of a list of
   its plural (polled without sleeping), best and median of ``--crds`` CRDs.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import threading
import time
from collections.abc import Sequence
from typing import Any

import orjson
import urllib3

from benchmarks.pods import make_pod
from informers.testing import ApiServer

_CONTINUE = re.compile(rb'"continue":"([^"]+)"')


def _headers(server: ApiServer) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}"}


def seed(server: ApiServer, count: int) -> list[dict[str, Any]]:
    pods = [make_pod(i) for i in range(count)]
    for pod in pods:
        server.create(pod)
    return pods


# -- 1. list --------------------------------------------------------------------------------------


def bench_list(server: ApiServer, pods: list[dict[str, Any]], repeat: int) -> None:
    http = urllib3.PoolManager()
    headers = _headers(server)
    url = f"{server.url}/api/v1/pods"
    best, size = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        data = http.request("GET", url, headers=headers).data
        best = min(best, time.perf_counter() - start)
        size = len(data)
    pages_best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        token, pages = "", 0
        while True:
            query = "?limit=500" + (f"&continue={token}" if token else "")
            body = http.request("GET", url + query, headers=headers).data
            pages += 1
            found = _CONTINUE.search(body, 0, 4096)  # bytes only: no decode of the page
            token = found.group(1).decode() if found else ""
            if not token:
                break
        pages_best = min(pages_best, time.perf_counter() - start)
    items = []
    for pod in pods:
        item = dict(pod)
        del item["kind"], item["apiVersion"]
        items.append(item)
    doc = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
           "items": items}
    baseline = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        orjson.dumps(doc)
        baseline = min(baseline, time.perf_counter() - start)
    mb = size / 1e6
    print(f"LIST {len(pods):,} pods ({mb:.1f} MB)")
    print(f"  server GET, one response       {best * 1e3:8.1f} ms  {mb / best:7.1f} MB/s")
    print(f"  server GET, {pages} pages of 500     {pages_best * 1e3:8.1f} ms  "
          f"{mb / pages_best:7.1f} MB/s")
    print(f"  baseline orjson.dumps in process {baseline * 1e3:6.1f} ms  "
          f"{mb / baseline:7.1f} MB/s   (server GET / baseline = {best / baseline:.2f}x)")


# -- 2. watch -------------------------------------------------------------------------------------


def _watcher(url: str, headers: dict[str, str], expected: int, done: list[float],
             ready: threading.Barrier) -> None:
    http = urllib3.PoolManager()
    resp = http.request("GET", url, headers=headers, preload_content=False)
    ready.wait()
    seen = 0
    for chunk in resp.stream(1 << 16):
        seen += chunk.count(b"\n")
        if seen >= expected:
            break
    done.append(time.perf_counter())
    resp.close()


def _run_watchers(server: ApiServer, from_rv: str, count: int, watchers: int,
                  writer: Any = None) -> float:
    url = f"{server.url}/api/v1/pods?watch=1&resourceVersion={from_rv}"
    done: list[float] = []
    ready = threading.Barrier(watchers + 1)
    threads = [threading.Thread(target=_watcher, args=(url, _headers(server), count, done, ready))
               for _ in range(watchers)]
    for thread in threads:
        thread.start()
    ready.wait()
    start = time.perf_counter()
    if writer is not None:
        writer()
    for thread in threads:
        thread.join()
    return max(done) - start


def bench_watch(server: ApiServer, pods: list[dict[str, Any]], events: int) -> None:
    names = [p["metadata"]["name"] for p in pods]

    rounds = iter(range(1_000_000))

    def write(count: int) -> None:
        # A fresh value every time: a patch that changes nothing writes no event.
        tag = next(rounds)
        for i in range(count):
            server.patch("pods", "default", names[i % len(names)],
                         {"metadata": {"annotations": {"bench/seq": f"{tag}-{i}"}}})

    baseline_events = [{"type": "MODIFIED", "object": pods[i % len(pods)]} for i in range(events)]
    start = time.perf_counter()
    for event in baseline_events:
        orjson.dumps(event)
    baseline = events / (time.perf_counter() - start)
    print(f"WATCH {events:,} MODIFIED events of ~7 KB pods (events/s per watcher; total)")
    start_rv = server.resource_version
    write(events)
    for watchers in (1, 4):
        seconds = _run_watchers(server, start_rv, events, watchers)
        rate = events / seconds
        print(f"  replay, {watchers} watcher(s)           {rate:9,.0f}/s;  "
              f"{rate * watchers:9,.0f}/s")
    for watchers in (1, 4):
        live_rv = server.resource_version
        seconds = _run_watchers(server, live_rv, events // 2, watchers,
                                writer=lambda: write(events // 2))
        rate = events // 2 / seconds
        print(f"  live (writer bound), {watchers} watcher(s) {rate:9,.0f}/s;  "
              f"{rate * watchers:9,.0f}/s")
    print(f"  baseline orjson.dumps per event in process {baseline:9,.0f}/s")


# -- 3. writes ------------------------------------------------------------------------------------


def bench_writes(server: ApiServer, rounds: int) -> None:
    http = urllib3.PoolManager()
    headers = _headers(server)
    path = f"{server.url}/apis/apps/v1/namespaces/default/deployments/bench"
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bench"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "bench"}}, "template": {
            "metadata": {"labels": {"app": "bench"}}, "spec": {"containers": [
                {"name": f"c{i}", "image": "registry.invalid/c:1",
                 "ports": [{"containerPort": 8000 + i}],
                 "env": [{"name": "N", "value": str(i)}]} for i in range(3)]}}}}
    server.create(deployment)

    def timed(label: str, send: Any) -> None:
        start = time.perf_counter()
        for i in range(rounds):
            response = send(i)
            assert response.status in (200, 201), response.data[:300]
        rate = rounds / (time.perf_counter() - start)
        print(f"  {label:<44} {rate:9,.0f}/s")

    def update(i: int) -> Any:
        current = json.loads(http.request("GET", path, headers=headers).data)
        current["spec"]["replicas"] = i % 5 + 1
        return http.request("PUT", path, body=json.dumps(current).encode(), headers={
            **headers, "Content-Type": "application/json"})

    def apply(i: int) -> Any:
        deployment["spec"]["replicas"] = i % 5 + 1
        return http.request("PATCH", path + "?fieldManager=bench&force=true",
                            body=json.dumps(deployment).encode(), headers={
                                **headers, "Content-Type": "application/apply-patch+yaml"})

    def strategic(i: int) -> Any:
        body = {"spec": {"replicas": i % 5 + 1, "template": {"spec": {"containers": [
            {"name": "c1", "image": f"registry.invalid/c:{i % 3}"}]}}}}
        return http.request("PATCH", path, body=json.dumps(body).encode(), headers={
            **headers, "Content-Type": "application/strategic-merge-patch+json"})

    def scale(i: int) -> Any:
        body = {"spec": {"replicas": i % 5 + 1}}
        return http.request("PATCH", path + "/scale", body=json.dumps(body).encode(), headers={
            **headers, "Content-Type": "application/merge-patch+json"})

    print(f"writes ({rounds:,} round trips each, one deployment of 3 containers)")
    timed("update (GET + PUT)", update)
    timed("server-side apply (PATCH apply-patch+yaml)", apply)
    timed("strategic merge patch", strategic)
    if scale(0).status == 200:
        timed("scale (PATCH deployments/scale)", scale)
    else:
        print(f"  {'scale (PATCH deployments/scale)':<44}   not served")


# -- 4. CRD create to served ----------------------------------------------------------------------


def bench_crds(server: ApiServer, count: int) -> None:
    http = urllib3.PoolManager()
    headers = {**_headers(server), "Content-Type": "application/json"}
    crds = f"{server.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    times = []
    for i in range(count):
        group = f"b{i}.bench.example.com"
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": f"widgets.{group}"},
               "spec": {"group": group, "scope": "Namespaced",
                        "names": {"plural": "widgets", "kind": "Widget"},
                        "versions": [{
                            "name": "v1", "served": True, "storage": True,
                            "subresources": {"status": {}, "scale": {
                                "specReplicasPath": ".spec.replicas",
                                "statusReplicasPath": ".status.replicas"}},
                            "additionalPrinterColumns": [
                                {"name": "Replicas", "type": "integer",
                                 "jsonPath": ".spec.replicas"}],
                            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                "spec": {"type": "object", "properties": {
                                    "replicas": {"type": "integer", "minimum": 0},
                                    "color": {"type": "string", "default": "red"}}},
                                "status": {"type": "object", "properties": {
                                    "replicas": {"type": "integer"}}}}}}}]}}
        plural = f"{server.url}/apis/{group}/v1/namespaces/default/widgets"
        start = time.perf_counter()
        created = http.request("POST", crds, body=json.dumps(crd).encode(), headers=headers)
        assert created.status == 201, created.data[:300]
        while http.request("GET", plural, headers=headers).status != 200:
            pass
        times.append(time.perf_counter() - start)
    print(f"CRD create to served ({count} CRDs: POST, then GET of the plural until 200)")
    print(f"  best {min(times) * 1e3:8.2f} ms   median {statistics.median(times) * 1e3:8.2f} ms")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_apiserver",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="2,000 pods and 3,000 events")
    parser.add_argument("--pods", type=int, default=None)
    parser.add_argument("--events", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--crds", type=int, default=None, help="CRDs to create (default 50)")
    args = parser.parse_args(argv)
    count = args.pods or (2_000 if args.quick else 10_000)
    events = args.events or (3_000 if args.quick else 10_000)
    with ApiServer(history_limit=events * 2 + count) as server:
        started = time.perf_counter()
        pods = seed(server, count)
        print(f"seeded {count:,} pods through ApiServer.create in "
              f"{time.perf_counter() - started:.1f} s")
        bench_list(server, pods, args.repeat)
        bench_watch(server, pods, events)
        bench_writes(server, 300 if args.quick else 1_000)
        bench_crds(server, args.crds or (20 if args.quick else 50))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
