"""The round trip of :class:`informers.client.Client` against the official ``kubernetes``
client's same call, in the same run: ``get`` of a ConfigMap, a JSON merge patch of it, and a
server-side apply of it.

    python -m benchmarks.bench_client              # embedded API server, 2,000 calls each
    python -m benchmarks.bench_client --quick      # 200 calls each
    python -m benchmarks.bench_client --kubeconfig ~/.kube/config   # on a cluster

Each pair alternates in rounds (ours, theirs, ours, ...) so drift of the machine hits both;
the figure is the median per-call time of the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["main"]

NAME, NAMESPACE, MANAGER = "bench-client", "default", "bench-client"


def _rounds(fn: Callable[[], Any], calls: int, rounds: int = 5) -> float:
    per_round = max(1, calls // rounds)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(per_round):
            fn()
        times.append((time.perf_counter() - start) / per_round)
    return statistics.median(times)


def bench(api_client: Any, calls: int) -> list[tuple[str, float, float]]:
    from kubernetes import client as k8s

    from informers.client import Client

    ours = Client(api_client, field_manager=MANAGER)
    core = k8s.CoreV1Api(api_client)
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": NAMESPACE}, "data": {"k": "v"}}
    try:
        ours.create(body)
    except Exception:  # left over from an earlier run
        pass
    rows = [("get", _rounds(lambda: ours.get("configmaps", NAME, NAMESPACE), calls),
             _rounds(lambda: core.read_namespaced_config_map(NAME, NAMESPACE), calls))]
    patch = {"data": {"k": "v"}}
    rows.append(("merge patch", _rounds(
        lambda: ours.patch("configmaps", NAME, patch, NAMESPACE), calls),
        _rounds(lambda: core.patch_namespaced_config_map(NAME, NAMESPACE, patch), calls)))
    rows.append(("apply", _rounds(lambda: ours.apply(body, force=True), calls),
                 _rounds(lambda: core.patch_namespaced_config_map(
                     NAME, NAMESPACE, body, field_manager=MANAGER, force=True,
                     _content_type="application/apply-patch+yaml"), calls)))
    ours.delete("configmaps", NAME, NAMESPACE)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 calls each instead of 2,000")
    parser.add_argument("--kubeconfig", help="a cluster (default: an embedded API server)")
    args = parser.parse_args(argv)
    calls = 200 if args.quick else 2000
    from informers.testing import connect

    with connect(args.kubeconfig) as (api_client, _server):
        rows = bench(api_client, calls)
    where = "embedded API server" if args.kubeconfig is None else args.kubeconfig
    print(f"client round trip, {calls} calls each, {where}")
    print(f"{'call':<12} {'informers.client':>18} {'kubernetes':>12} {'kubernetes/ours':>16}")
    for name, ours, theirs in rows:
        print(f"{name:<12} {ours * 1e6:>15.0f} us {theirs * 1e6:>9.0f} us {theirs / ours:>15.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
