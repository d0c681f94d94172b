"""endpoint-controller --shard-ring: replicas split Services by namespace (options, and two
processes on the embedded server)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from controllers.endpoint.cli import parse_args
from informers.errors import NotFound
from informers.shard.membership import RING_LABEL
from informers.shard.ranges import assign
from informers.sharding import fnv1a_64
from informers.testing import ApiServer

ROOT = Path(__file__).resolve().parents[1]
NAMESPACES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


def test_shard_ring_option() -> None:
    assert parse_args([]).shard_ring is None
    assert parse_args(["--shard-ring", "endpoints"]).shard_ring == "endpoints"


@pytest.mark.parametrize(("argv", "message"), [
    (["--shard-ring", ""], "--shard-ring must not be empty"),
    (["--shard-ring", "r", "--leader-elect"], "--shard-ring and --leader-elect exclude"),
])
def test_bad_shard_ring_options_exit_2(argv: list[str], message: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def service(ns: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10",
                     "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}}


def pod(ns: str, ip: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": ns, "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                       "conditions": [{"type": "Ready", "status": "True"}]}}


@pytest.mark.slow
def test_two_replicas_split_services_by_namespace(tmp_path: Path) -> None:
    with ApiServer() as srv:
        for i, ns in enumerate(NAMESPACES):
            srv.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            srv.create(service(ns))
            srv.create(pod(ns, f"10.1.0.{i + 1}"))
        kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
        members = ["ep-a", "ep-b"]
        env = {k: v for k, v in os.environ.items()
               if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
        logs = {m: tmp_path / f"{m}.log" for m in [*members, "ep-c"]}
        procs = []

        def start(m: str) -> None:
            with open(logs[m], "wb") as out:
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "controllers.endpoint", "--kubeconfig", kubeconfig,
                     "--shard-ring", "ep", "--leader-elect-identity", m,
                     "--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline",
                     "2s", "--leader-elect-retry-period", "250ms", "--metrics-address", "0",
                     "--log-level", "debug"], cwd=ROOT, env=env, stdout=out,
                    stderr=subprocess.STDOUT))

        for m in members:
            start(m)
        try:
            deadline = time.monotonic() + 20
            pending = set(NAMESPACES)
            while pending:
                assert time.monotonic() < deadline, (
                    f"no Endpoints in {sorted(pending)}:\n" + "\n".join(
                        p.read_text()[-2000:] for p in logs.values()))
                for ns in list(pending):
                    try:
                        ep = srv.get("endpoints", ns, "web")
                    except NotFound:
                        continue
                    if ep is None:
                        continue
                    ip = f"10.1.0.{NAMESPACES.index(ns) + 1}"
                    if ep.get("subsets") and ep["subsets"][0]["addresses"][0]["ip"] == ip:
                        pending.discard(ns)
                time.sleep(0.05)
            leases = {lease["metadata"]["name"] for lease in
                      srv.list("leases", "kube-system")
                      if (lease["metadata"].get("labels") or {}).get(RING_LABEL) == "ep"}
            assert leases == set(members)
            # A third replica joins: the Endpoints its ranges bring already exist; it syncs
            # them only once its caches hold them (no create of an existing Endpoints).
            start("ep-c")
            joined = assign([*members, "ep-c"])["ep-c"]
            theirs = [ns for ns in NAMESPACES if fnv1a_64(ns.encode()) in joined]
            assert theirs  # the join moves some namespaces to ep-c
            deadline = time.monotonic() + 20
            while "ep-c reconciles RangeSet([" not in logs["ep-c"].read_text():
                assert time.monotonic() < deadline, logs["ep-c"].read_text()[-3000:]
                time.sleep(0.05)
            pod_name = "q"
            for ns in theirs:
                srv.create({**pod(ns, "10.2.0.1"), "metadata": {
                    "name": pod_name, "namespace": ns, "labels": {"app": "web"}}})
            deadline = time.monotonic() + 20
            while not all(
                    any(a["ip"] == "10.2.0.1" for sub in (srv.get("endpoints", ns, "web") or {}
                                                         ).get("subsets") or []
                        for a in sub.get("addresses") or []) for ns in theirs):
                assert time.monotonic() < deadline, logs["ep-c"].read_text()[-3000:]
                time.sleep(0.05)
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                p.wait(15)
        ranges = assign(members)
        for m in members:  # before the join: each created exactly its own namespaces
            created = set(re.findall(r"Creating endpoints (\w+)/web", logs[m].read_text()))
            mine = {ns for ns in NAMESPACES if fnv1a_64(ns.encode()) in ranges[m]}
            assert created == mine, (m, created, mine)
        assert {p.returncode for p in procs} == {0}
        for m, path in logs.items():
            assert "AlreadyExists" not in path.read_text(), (m, path.read_text()[-3000:])
        assert set(re.findall(r"Updating endpoints (\w+)/web", logs["ep-c"].read_text())) == set(
            theirs)
