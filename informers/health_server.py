"""Serves a process's Prometheus metrics and its liveness and readiness checks over HTTP.

controller-runtime's probes and metrics servers (``pkg/healthz/healthz.go``,
``pkg/metrics/server``) in one stdlib ``http.server``:

* ``GET /metrics``: the Prometheus text exposition of a ``prometheus_client`` registry;
* ``GET /healthz`` and ``GET /readyz``: 200 ``ok`` when every named check passes, else 503
  with one line per check (``[+]ping ok`` / ``[-]informers-synced failed: reason withheld``,
  as Kubernetes components print them; the reason is logged, not served). ``?verbose`` lists
  the checks on success too, ``?exclude=name`` skips one, and ``/healthz/<name>`` runs one
  check (404 if there is none of that name).

Kubernetes components answer a failed check with 500; we answer 503 Service Unavailable, which
probes treat the same and which says "not (yet) able to serve".
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from informers.clock import REAL_CLOCK

__all__ = ["HealthCheck", "HealthServer", "parse_address", "run_check"]

logger = logging.getLogger(__name__)

HealthCheck = Callable[[], object]
"""A named check: healthy when it returns ``None`` or ``True``; unhealthy when it returns
``False`` or a string (the reason), or raises."""

_LINK_POLL = 0.1
"""Real seconds between checks of the caller's stop event by the link thread (only bounds how
fast a set stop event is noticed)."""

_SERVE_POLL = 0.1
"""Real seconds between the stdlib server loop's checks for :meth:`HealthServer.stop` (bounds
how long a stop waits for the loop; requests are served at once regardless)."""


def parse_address(address: str) -> tuple[str, int]:
    """``":8080"`` -> ``("", 8080)`` (every interface), ``"127.0.0.1:0"`` -> ``("127.0.0.1",
    0)`` (a free port), ``"[::1]:8080"`` -> ``("::1", 8080)``, ``"8080"`` -> ``("", 8080)``.

    Raises:
        ValueError: not ``[host]:port`` with a port in 0..65535.
    """
    text = address.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"invalid address {address!r}: put an IPv6 host in brackets")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"invalid address {address!r}: the port is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"invalid address {address!r}: port {port} out of range")
    return host, port


def run_check(name: str, check: HealthCheck) -> str | None:
    """Run one check: ``None`` when healthy, else the reason it failed."""
    try:
        outcome = check()
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    if outcome is None or outcome is True:
        return None
    if outcome is False:
        return "check returned false"
    if isinstance(outcome, str):
        return outcome or "check failed"
    return f"check returned {outcome!r}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = True
    owner: HealthServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("health server: %s - %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        owner = self.server.owner
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = parse_qs(url.query, keep_blank_values=True)
        if path == "/metrics":
            self._metrics(owner)
            return
        for endpoint in ("/healthz", "/readyz"):
            if path == endpoint:
                self._checks(owner, endpoint[1:], None, query)
                return
            if path.startswith(endpoint + "/"):
                self._checks(owner, endpoint[1:], path[len(endpoint) + 1 :], query)
                return
        self._send(404, "404 page not found\n")

    def _send(self, code: int, body: str | bytes, content_type: str = "text/plain") -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header("Content-Type", content_type + "; charset=utf-8"
                         if content_type == "text/plain" else content_type)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _metrics(self, owner: HealthServer) -> None:
        try:
            import prometheus_client
        except ImportError:  # pragma: no cover - depends on the environment
            self._send(
                501,
                "metrics need prometheus_client: pip install 'kube-informers[metrics]'\n",
            )
            return
        registry = owner.registry if owner.registry is not None else prometheus_client.REGISTRY
        try:
            data = prometheus_client.generate_latest(registry)
        except Exception:
            logger.exception("health server: collecting metrics failed")
            self._send(500, "collecting metrics failed\n")
            return
        self._send(200, data, prometheus_client.CONTENT_TYPE_LATEST)

    def _checks(
        self, owner: HealthServer, kind: str, only: str | None, query: dict[str, list[str]]
    ) -> None:
        checks = owner.checks(kind)
        if only is not None:
            if only not in checks:
                self._send(404, f"no {kind} check named {only!r}\n")
                return
            checks = {only: checks[only]}
        excluded = set(query.get("exclude", []))
        lines: list[str] = []
        failed = False
        for name, check in checks.items():
            if name in excluded:
                lines.append(f"[+]{name} excluded: ok")
                continue
            reason = run_check(name, check)
            if reason is None:
                lines.append(f"[+]{name} ok")
            else:
                failed = True
                lines.append(f"[-]{name} failed: reason withheld")
                logger.info("%s check %r failed: %s", kind, name, reason)
        if failed:
            lines.append(f"{kind} check failed")
            self._send(503, "\n".join(lines) + "\n")
        elif "verbose" in query:
            lines.append(f"{kind} check passed")
            self._send(200, "\n".join(lines) + "\n")
        else:
            self._send(200, "ok")


class HealthServer:
    """An HTTP server for ``/metrics``, ``/healthz`` and ``/readyz`` on one address.

    Checks may be added at any time from any thread; each request runs them in the request's
    thread, in the order they were added. ``/healthz`` starts with the check ``ping`` (always
    healthy, controller-runtime ``healthz.Ping``); ``/readyz`` starts empty (so ready).

    :meth:`start` binds the socket (so a bad or busy address fails there) and serves from a
    daemon thread named ``health-server``; :meth:`stop` stops serving, closes the socket and
    joins the threads. Not restartable.

    Args:
        address: ``"host:port"``, e.g. ``":8080"`` (every interface) or ``"127.0.0.1:0"``
            (loopback, a free port: read :attr:`port` after :meth:`start`).
        registry: the ``prometheus_client`` registry ``/metrics`` serves; ``None`` for the
            default ``prometheus_client.REGISTRY``.
    """

    def __init__(self, address: str, *, registry: Any = None) -> None:
        self.host, self._requested_port = parse_address(address)
        self.registry = registry
        self._lock = threading.Lock()
        self._checks: dict[str, dict[str, HealthCheck]] = {
            "healthz": {"ping": lambda: True},
            "readyz": {},
        }
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._link_thread: threading.Thread | None = None
        self._stopped = threading.Event()

    # -- checks --------------------------------------------------------------------------------

    def add_healthz_check(self, name: str, check: HealthCheck) -> None:
        """Add (or replace) the liveness check ``name``."""
        self._add("healthz", name, check)

    def add_readyz_check(self, name: str, check: HealthCheck) -> None:
        """Add (or replace) the readiness check ``name``."""
        self._add("readyz", name, check)

    def _add(self, kind: str, name: str, check: HealthCheck) -> None:
        if not name or "/" in name:
            raise ValueError(f"invalid {kind} check name {name!r}")
        with self._lock:
            self._checks[kind][name] = check

    def checks(self, kind: str) -> dict[str, HealthCheck]:
        """A copy of the ``"healthz"`` or ``"readyz"`` checks, in order."""
        with self._lock:
            return dict(self._checks[kind])

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`; the requested one before)."""
        server = self._server
        return int(server.server_address[1]) if server is not None else self._requested_port

    @property
    def url(self) -> str:
        """``http://host:port`` to reach the server (loopback when bound to every interface)."""
        host = self.host or "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    def start(self, stop_event: threading.Event | None = None) -> None:
        """Bind and start serving in a daemon thread; returns at once.

        Args:
            stop_event: when given, the server stops by itself once it is set.

        Raises:
            OSError: the address cannot be bound (in use, not local).
            RuntimeError: started twice.
        """
        with self._lock:
            if self._server is not None or self._stopped.is_set():
                raise RuntimeError("HealthServer.start called twice")
            family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            server_class = type("_BoundServer", (_Server,), {"address_family": family})
            server: _Server = server_class((self.host, self._requested_port), _Handler)
            server.owner = self
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever,
                args=(_SERVE_POLL,),
                name="health-server",
                daemon=True,
            )
            self._thread.start()
            if stop_event is not None:
                self._link_thread = threading.Thread(
                    target=self._link, args=(stop_event,), name="health-server-stop", daemon=True
                )
                self._link_thread.start()
        logger.info("serving /metrics, /healthz and /readyz on %s", self.url)

    def _link(self, stop_event: threading.Event) -> None:
        while not self._stopped.is_set():
            if REAL_CLOCK.wait_event(stop_event, _LINK_POLL):
                self.stop()
                return

    def stop(self) -> None:
        """Stop serving, close the socket and join the threads. Idempotent."""
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
            server, thread, link = self._server, self._thread, self._link_thread
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join()
        if link is not None and link is not threading.current_thread():
            link.join()
        logger.info("health server on %s stopped", self.url)

    def __enter__(self) -> HealthServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
