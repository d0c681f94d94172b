"""HTTP to the real control plane for the benchmarks: urllib3 over TLS with its CA and token."""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import urllib3

SEED_THREADS = 12  # parallel requests while seeding and patching


class Http:
    """urllib3 over TLS with the control plane's CA and token; thread-safe."""

    def __init__(self, url: str, token: str, ca_file: str, maxsize: int = SEED_THREADS) -> None:
        self.url = url
        self.pool = urllib3.PoolManager(maxsize=maxsize, cert_reqs=ssl.CERT_REQUIRED,
                                        ca_certs=ca_file)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json", ok: Iterable[int] = (200, 201)) -> Any:
        headers = dict(self.headers, **{"Content-Type": content_type})
        data = orjson.dumps(body) if body is not None else None
        response = self.pool.request(method, self.url + path, body=data, headers=headers)
        if response.status not in ok:
            raise RuntimeError(f"{method} {path}: {response.status} {response.data[:300]!r}")
        return orjson.loads(response.data) if response.data else None

    def stream(self, path: str) -> Any:
        return self.pool.request("GET", self.url + path, headers=self.headers,
                                 preload_content=False, timeout=urllib3.Timeout(connect=10))

    def read_seconds(self, path: str) -> tuple[float, int]:
        """Seconds to GET ``path`` and read the whole body without decoding it, and its size:
        the server's (and the wire's) share of a list, the floor of any client's sync."""
        start = time.perf_counter()
        response = self.stream(path)
        size = 0
        try:
            while chunk := response.read(1 << 20):
                size += len(chunk)
        finally:
            response.release_conn()
        return time.perf_counter() - start, size

    def read_lines_seconds(self, path: str, lines: int) -> float:
        """Seconds to GET ``path`` (a watch) and read ``lines`` newline-terminated events
        without decoding them: the server's (and the wire's) share of a watch burst, the
        floor of any client's watch."""
        start = time.perf_counter()
        response = self.stream(path)
        seen = 0
        try:
            while seen < lines:
                chunk = response.read1(1 << 16)
                if not chunk:
                    raise RuntimeError(f"GET {path}: ended after {seen} of {lines} events")
                seen += chunk.count(b"\n")
            return time.perf_counter() - start
        finally:
            # the watch is still open: its connection cannot serve another request
            response.close()
            response.release_conn()

    def resource_version(self, path: str) -> str:
        return str(self.request("GET", f"{path}?limit=1")["metadata"]["resourceVersion"])




def parallel(fn: Callable[[Any], Any], items: Iterable[Any], threads: int = SEED_THREADS) -> None:
    """``fn`` on every item, ``threads`` at a time; the first exception is raised."""
    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(fn, items):
            pass
