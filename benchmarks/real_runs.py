"""The parts of :mod:`benchmarks.bench_real` every figure uses: seeding and bursts of writes on
the real control plane, the client-go program and the Python children as processes, and the
watch figure's timing. No state: each function takes what it works on."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.bench_informer import finish, read_json
from benchmarks.pods import make_pod
from benchmarks.real_http import Http, parallel

ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = ROOT / "tools" / "control-plane" / "build.sh"
CLIENTGO_DIR = Path(__file__).resolve().parent / "clientgo"
CACHE_ROOT = Path(os.environ.get("KUBE_INFORMERS_CACHE",
                                 Path.home() / ".cache" / "kube-informers"))
POLL = 0.002  # seconds between has_synced() checks (the Go program polls as often)
CHILD_TIMEOUT = 600.0


# -- seeding ------------------------------------------------------------------------------------


def seed_pods(http: Http, count: int, first: int = 0, unique_names: bool = False) -> float:
    """Create pods ``first`` .. ``count - 1`` (realistic, :func:`make_pod`) and write their
    status; seconds taken. ``unique_names`` suffixes each name with its index: the generated
    names repeat now and then beyond about 10,000 pods (a 5-letter hash per app)."""
    start = time.perf_counter()

    def one(i: int) -> None:
        pod = make_pod(i)
        status = pod.pop("status")
        meta = pod["metadata"]
        if unique_names:
            meta["name"] = f"{meta['name']}-{i}"
        for key in ("uid", "resourceVersion", "creationTimestamp", "generateName"):
            meta.pop(key, None)
        namespace = meta["namespace"]
        http.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
        http.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{meta['name']}/status",
                     {"status": status}, "application/merge-patch+json")

    parallel(one, range(first, count))
    return time.perf_counter() - start


def patch_burst(http: Http, names: Sequence[tuple[str, str]], round_: int) -> float:
    """One merge patch (a fresh label value) of each pod: one MODIFIED event each."""
    start = time.perf_counter()
    body = {"metadata": {"labels": {"bench-round": str(round_)}}}
    parallel(lambda nn: http.request("PATCH", f"/api/v1/namespaces/{nn[0]}/pods/{nn[1]}", body,
                                     "application/merge-patch+json"), names)
    return time.perf_counter() - start


# -- the Go program -------------------------------------------------------------------------------


def build_clientgo(log: Callable[[str], None]) -> Path:
    """Build ``benchmarks/clientgo`` unless a binary of the same sources is cached."""
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update((CLIENTGO_DIR / name).read_bytes())
    out_dir = CACHE_ROOT / "clientgo" / digest.hexdigest()[:16]
    binary = out_dir / "bench-clientgo"
    if binary.exists():
        return binary
    if shutil.which("go") is None:
        raise RuntimeError("'go' is not on PATH: cannot build benchmarks/clientgo")
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOTOOLCHAIN="local", CGO_ENABLED="0",
               GOFLAGS=(os.environ.get("GOFLAGS", "") + " -buildvcs=false").strip())
    start = time.perf_counter()
    partial = out_dir / f"bench-clientgo.{os.getpid()}"
    subprocess.run(["go", "build", "-o", str(partial), "."], cwd=CLIENTGO_DIR, env=env,
                   check=True)
    partial.rename(binary)
    log(f"built {binary} in {time.perf_counter() - start:.0f} s")
    return binary


def go_version() -> str:
    done = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "go ?"


def spawn_go(binary: Path, kubeconfig: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(binary), f"-kubeconfig={kubeconfig}", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)


# -- the Python children (benchmarks.real_children, run through bench_real --child) ----------


def spawn_child(mode: str, kubeconfig: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "benchmarks.bench_real", "--child", mode,
                             "--kubeconfig", kubeconfig, *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)



def watch_seconds(result: dict[str, Any]) -> float:
    """A watch run's time for its burst: from the reflector's watch call (just before its
    request; ``"watch"``) to the last handler call, and never less than the first-to-last
    handler call. Timing only from the first to the last call would leave out every event
    decoded and queued before the first call (client-go decodes ahead of its handler); timing
    from the informer's start less the list's share would leave out the part of the watch
    that overlaps the processing of the list (each client's reflector starts its watch as
    soon as the list returns, while its informer is still handing the list out)."""
    seconds = float(result["watch"])
    # A small burst can be applied before the 2 ms poll sees the sync: then the handler's
    # first-to-last span is all that can be said (a lower bound of the time).
    return max(seconds, float(result["first_to_last"]), 1e-6)


def run_child(process: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        return read_json(process, CHILD_TIMEOUT)
    finally:
        finish(process)


# -- informer figures -----------------------------------------------------------------------------


def checked_watch(client: str, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` of a watch child, once its handler is known to have seen as many distinct
    resourceVersions as events."""
    if result["distinct"] != result["events"]:
        raise RuntimeError(f"{client}'s handler saw {result['distinct']} distinct "
                           f"resourceVersions in {result['events']} updates")
    return result


def raw_watch_seconds(http: Http, rv: str, events: int) -> float:
    """Seconds a bare watch from ``rv`` takes to read ``events`` lines, not decoded: the floor
    every client's watch figure stands on."""
    return http.read_lines_seconds(
        f"/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion={rv}", events)





# -- the table ------------------------------------------------------------------------------------


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [_row(rows[0], widths), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += [_row(r, widths) for r in rows[1:]]
    return "\n".join(lines)
