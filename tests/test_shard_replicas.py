"""Replicas of a sharded controller as processes (tests/shard_replica.py) on the embedded
server and on the real kube-apiserver v1.36.3 (ShardedListAndWatch on): they partition the
keys exactly, a joining replica takes its ranges without any key reconciled by two replicas at
once, a clean shutdown hands over at once, a SIGKILLed replica's ranges are taken over within
the lease duration plus the handover.

Exclusivity is checked on a log every replica appends reconcile start/end lines to, with the
system-wide monotonic clock: for each key no two replicas' reconciles overlap in time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from informers.shard.ranges import assign
from informers.sharding import fnv1a_64

REPLICA = Path(__file__).with_name("shard_replica.py")
ROOT = Path(__file__).resolve().parents[1]
NAMESPACE_COUNT = 12
LEASE_DURATION = 3.0  # tests/shard_replica.py's timings
TIMEOUT = 15.0

pytestmark = pytest.mark.slow


class Ring:
    def __init__(self, server: Any, name: str, log: Path) -> None:
        self.server = server
        self.kubeconfig = server.write_kubeconfig(log.parent / "kubeconfig")
        self.name = name
        self.log = log
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.killed: dict[str, float] = {}
        self.namespaces = [server.new_namespace("ring") for _ in range(NAMESPACE_COUNT)]
        for ns in self.namespaces:
            server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": name, "namespace": ns, "labels": {"shard-test": name}}})

    def start(self, member: str) -> float:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        out = open(self.log.with_suffix(f".{member}.out"), "wb")  # noqa: SIM115
        self.procs[member] = subprocess.Popen(
            [sys.executable, str(REPLICA), self.kubeconfig, self.name, member, str(self.log),
             self.server.namespace],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        out.close()
        return time.monotonic()

    def stop(self, member: str, sig: int) -> float:
        proc = self.procs.pop(member)
        at = time.monotonic()
        proc.send_signal(sig)
        if sig == signal.SIGKILL:
            self.killed[member] = at
        return at

    def close(self) -> None:
        for member in list(self.procs):
            self.stop(member, signal.SIGTERM)
        for proc in list(self.procs.values()):
            proc.wait(10)

    def events(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def owners(self) -> dict[str, str]:
        ranges = assign(self.procs)
        return {f"{ns}/{self.name}": next(m for m, r in ranges.items()
                                          if fnv1a_64(ns.encode()) in r)
                for ns in self.namespaces}

    def converged_at(self, since: float) -> float | None:
        """When every key had been reconciled by its expected owner after ``since``; None
        before that."""
        owners = self.owners()
        first: dict[str, float] = {}
        for e in self.events():
            if e["e"] == "start" and e["t"] >= since and owners.get(e["k"]) == e["m"]:
                first.setdefault(e["k"], e["t"])
        return max(first.values()) if len(first) == len(owners) else None

    def wait_converged(self, since: float) -> float:
        deadline = time.monotonic() + TIMEOUT
        while (at := self.converged_at(since)) is None:
            assert time.monotonic() < deadline, (
                f"not converged on {self.owners()}; logs: " + self.tails())
            for member, proc in self.procs.items():
                assert proc.poll() is None, f"{member} exited: " + self.tails()
            time.sleep(0.05)
        return at - since

    def tails(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}"
                          for p in sorted(self.log.parent.glob(self.log.stem + ".*.out")))

    def assert_exclusive(self) -> None:
        """No key reconciled by two replicas at once (a killed replica's open reconcile ends
        when it was killed)."""
        open_: dict[tuple[str, str], float] = {}
        spans: dict[str, list[tuple[float, float, str]]] = {}
        for e in self.events():
            if e["e"] == "start":
                open_[(e["k"], e["m"])] = e["t"]
            elif e["e"] == "end":
                start = open_.pop((e["k"], e["m"]))
                spans.setdefault(e["k"], []).append((start, e["t"], e["m"]))
        for (key, member), start in open_.items():
            end = self.killed.get(member, time.monotonic())
            spans.setdefault(key, []).append((start, end, member))
        for key, items in spans.items():
            items.sort()
            for i, (s1, e1, m1) in enumerate(items):
                for s2, e2, m2 in items[i + 1:]:
                    if s2 >= e1:
                        break
                    assert m1 == m2, f"{key} reconciled by {m1} [{s1}, {e1}] and {m2} [{s2}, {e2}]"


@pytest.fixture
def ring(any_api_server: Any, tmp_path: Path) -> Iterator[Ring]:
    r = Ring(any_api_server, f"ring-{any_api_server.namespace}", tmp_path / "log")
    try:
        yield r
    finally:
        r.close()


@pytest.mark.parametrize("replicas", [1, 2, 3])
def test_replicas_partition_the_keys_and_hand_over(ring: Ring, replicas: int) -> None:
    figures: dict[str, float] = {}
    for i in range(replicas):
        joined = ring.start(f"{ring.name}-m{i}")
        figures[f"join m{i}"] = ring.wait_converged(joined)
        ring.assert_exclusive()
    if replicas >= 2:
        stopped = ring.stop(f"{ring.name}-m{replicas - 1}", signal.SIGTERM)
        figures["clean shutdown"] = took = ring.wait_converged(stopped)
        ring.assert_exclusive()
        assert took < LEASE_DURATION, f"clean shutdown took {took:.2f}s: {figures}"
    if replicas >= 3:
        killed = ring.stop(f"{ring.name}-m0", signal.SIGKILL)
        figures["SIGKILL"] = took = ring.wait_converged(killed)
        ring.assert_exclusive()
        assert took < LEASE_DURATION + 2.5, f"takeover took {took:.2f}s: {figures}"
    print(f"\n{replicas} replicas: " + ", ".join(f"{k} {v:.2f}s" for k, v in figures.items()))
