"""Runs a seeded embedded API server in its own process for benchmarks, driven over stdin.

Run as ``python -m benchmarks.server_process --pods N`` (normally through :class:`ServerProcess`).
The pods (:func:`benchmarks.pods.make_pod`, about 7 KB each with managedFields) are created
in-process with ``ApiServer.create`` before the server listens, which takes seconds where
10,000 creates over HTTP would take much longer; everything after that goes through HTTP.
Keeping the server in another process means it does not share the measured client's GIL.

Protocol: the process prints one JSON line ``{"url", "token", "resource_version"}`` once it
serves, then answers each command line on stdin with one JSON line:

* ``patch N``: merge-patch N pods (one fresh annotation each, cycling over the pods) in
  process; answers ``{"from": rv_before, "to": rv_after}``. Every patch is one MODIFIED event.
* ``hang`` / ``resume``: ``ApiServer.hang_watches`` / ``resume_watches`` (a hung watch sends
  nothing; on resume it continues from where it stopped, so the events written meanwhile
  arrive as one burst).
* ``watches``: ``{"watches": open watch count}``.
* ``quit`` (or end of input): stop.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from itertools import count
from typing import IO, Any

from benchmarks.pods import make_pod, pod_name
from informers.testing import ApiServer

__all__ = ["ServerProcess", "main", "namespace_of"]

NAMESPACES = 10


def namespace_of(i: int, namespaces: int = NAMESPACES) -> str:
    """The namespace of pod ``i``."""
    return f"bench-{i % namespaces}"


def seed(server: ApiServer, pods: int, namespaces: int) -> None:
    for n in range(namespaces):
        server.create({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": namespace_of(n, namespaces)}})
    for i in range(pods):
        server.create(make_pod(i, namespace=namespace_of(i, namespaces)))


def _reply(out: IO[str], payload: dict[str, Any]) -> None:
    out.write(json.dumps(payload) + "\n")
    out.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.server_process")
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=NAMESPACES)
    parser.add_argument("--history", type=int, default=100_000,
                        help="watch events kept (must cover seeding plus every patch burst)")
    args = parser.parse_args(argv)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # stacks on demand, for hangs
    server = ApiServer(history_limit=args.history)
    seed(server, args.pods, args.namespaces)
    rounds = count()
    with server:
        _reply(sys.stdout, {"url": server.url, "token": server.token,
                            "resource_version": server.resource_version})
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            if words[0] == "quit":
                break
            if words[0] == "patch":
                n, tag = int(words[1]), next(rounds)
                before = server.resource_version
                for i in range(n):
                    k = i % args.pods
                    server.patch("pods", namespace_of(k, args.namespaces), pod_name(k),
                                 {"metadata": {"annotations": {"bench/seq": f"{tag}-{i}"}}})
                _reply(sys.stdout, {"from": before, "to": server.resource_version})
            elif words[0] == "hang":
                server.hang_watches()
                _reply(sys.stdout, {"ok": True})
            elif words[0] == "resume":
                server.resume_watches()
                _reply(sys.stdout, {"ok": True})
            elif words[0] == "watches":
                _reply(sys.stdout, {"watches": server.watch_count()})
            else:
                _reply(sys.stdout, {"error": f"unknown command {words[0]!r}"})
    return 0


class ServerProcess:
    """Starts ``python -m benchmarks.server_process`` and talks to it (a context manager).

    Every answer is awaited at most ``timeout`` seconds; then the process prints its thread
    stacks (SIGUSR1) and is killed.
    """

    def __init__(self, pods: int, history: int = 100_000, timeout: float = 300.0) -> None:
        self.pods = pods
        self.timeout = timeout
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.server_process", "--pods", str(pods),
             "--history", str(history)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        hello = self._read()
        self.url: str = hello["url"]
        self.token: str = hello["token"]
        self.resource_version: str = hello["resource_version"]

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(self.timeout):
                self.process.send_signal(signal.SIGUSR1)  # its thread stacks, on stderr
                time.sleep(1.0)
                self.process.kill()
                raise RuntimeError(f"the benchmark API server did not answer in {self.timeout} s")
        line = self.process.stdout.readline()
        if not line:
            self.process.kill()
            raise RuntimeError("the benchmark API server process exited")
        result: dict[str, Any] = json.loads(line)
        return result

    def command(self, line: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write("quit\n")
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    raise SystemExit(main())
