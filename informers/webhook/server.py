"""Serves admission and conversion webhooks over HTTPS, with health checks and metrics.

controller-runtime ``pkg/webhook/server.go`` (``DefaultServer``) on the standard library: a
threaded ``http.server`` behind TLS from :class:`CertificateWatcher`, one thread per
connection (the kube-apiserver keeps a few connections open and reuses them).

* **TLS**: 1.2 minimum; the certificate and key are read from ``cert_dir``/``tls.crt`` and
  ``tls.key`` (controller-runtime's defaults, the names of a ``kubernetes.io/tls`` Secret) and
  reloaded when they change (polled every ``cert_watch_interval``); each new connection
  handshakes with the newest certificate, open connections keep theirs, so a rotation fails no
  request. The handshake runs on the connection's thread, bounded by ``request_timeout``.
* **Paths**: each registered handler at its path (``POST``, ``Content-Type:
  application/json``); ``/healthz`` and ``/readyz`` (``ok`` once serving); ``/metrics`` when
  a ``metrics_registry`` is given; anything else is 404 ``404 page not found`` (Go's
  ``http.NotFound``).
* **Bounds**: a body over ``max_request_bytes`` (default 7 MiB, controller-runtime
  ``maxRequestSize``; kube-apiserver sends at most its 3 MiB request limit plus the review
  envelope) is answered 413 without being read. The request line, headers and body must
  arrive within ``request_timeout`` seconds of the first byte (answered 408 otherwise; a
  connection idle longer than ``idle_timeout`` between requests is closed). A handler's own
  time is bounded by the caller: kube-apiserver gives up after the webhook's
  ``timeoutSeconds`` and applies its ``failurePolicy``.
* **Errors**: a body that is not the review the path expects is answered with the HTTP code
  (400, 408, 411, 413) and a review whose response carries that code and the message, as
  controller-runtime's ``Errored`` does (it answers HTTP 200 with the code in the body; we
  put it in the HTTP status too, so the failure is visible in kube-apiserver's logs and to any
  HTTP client). A handler that raises is a denial with code 500 (see
  :mod:`informers.webhook.admission`); the server keeps serving.
* **Shutdown** (:meth:`WebhookServer.stop`): stop accepting, close idle connections, let the
  requests in flight finish within ``shutdown_timeout`` (controller-runtime: one minute), then
  close what is left and join every thread.

Lifecycle: ``with WebhookServer(...) as server:`` serves until the block ends; a
:class:`~informers.manager.Manager` runs it with :meth:`WebhookServer.run` (``add_webhook_server``).
Register handlers before :meth:`start`.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import ssl
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from informers.clock import REAL_CLOCK, Clock
from informers.webhook.admission import (
    AdmissionHandler,
    AdmissionReviewError,
    Defaulter,
    Mutating,
    Validating,
    Validator,
    decode_review,
    errored,
    internal_error,
)
from informers.webhook.certificate_watcher import DEFAULT_WATCH_INTERVAL, CertificateWatcher
from informers.webhook.configuration import AdmissionWebhook, Registration
from informers.webhook.conversion import (
    CONVERSION_API_VERSION,
    ConversionReviewError,
    HubAndSpoke,
    convert_review,
    decode_conversion_review,
)
from informers.webhook.metrics import WebhookMetrics

__all__ = [
    "DEFAULT_CERT_DIR",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_PORT",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "WebhookServer",
]

logger = logging.getLogger(__name__)

DEFAULT_PORT = 9443
"""controller-runtime ``webhook.DefaultPort``."""
DEFAULT_CERT_DIR = os.path.join(tempfile.gettempdir(), "k8s-webhook-server", "serving-certs")
"""controller-runtime's default ``CertDir``."""
DEFAULT_MAX_REQUEST_BYTES = 7 * 1024 * 1024
"""controller-runtime ``admission/http.go`` ``maxRequestSize``."""
DEFAULT_REQUEST_TIMEOUT = 30.0
"""Seconds to receive one request: kube-apiserver's longest webhook ``timeoutSeconds`` (30)."""
DEFAULT_IDLE_TIMEOUT = 90.0
"""Seconds an idle kept-alive connection stays open (Go ``http.Transport`` ``IdleConnTimeout``
of kube-apiserver's client, so the client closes first)."""
DEFAULT_SHUTDOWN_TIMEOUT = 60.0
"""Seconds in-flight requests get at shutdown (controller-runtime: ``1*time.Minute``)."""

_MAX_DISCARD = 256 << 10
"""Bytes of a refused body read before answering (Go net/http ``maxPostHandlerReadBytes``)."""

_SERVE_POLL = 0.1
"""Real seconds between the accept loop's checks for :meth:`WebhookServer.stop`."""


class _BodyError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # WebhookServer joins its own connection threads, with a timeout
    owner: WebhookServer

    def process_request(self, request: Any, client_address: Any) -> None:
        self.owner._spawn(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "kube-informers-webhook"
    # Headers and body go out in two writes: without TCP_NODELAY the second waits for the
    # client's delayed ACK (about 40 ms on Linux) on every request of a kept-alive connection.
    disable_nagle_algorithm = True
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("webhook server: %s - %s", self.address_string(), format % args)

    def handle_one_request(self) -> None:
        owner = self.server.owner
        owner._set_busy(self.connection, False)
        if owner._stopping.is_set():
            self.close_connection = True
            return
        self.connection.settimeout(owner.idle_timeout)
        self._started = 0.0
        try:
            super().handle_one_request()
        except (ssl.SSLError, OSError) as err:
            logger.debug("webhook server: connection from %s ended: %s",
                         self.client_address, err)
            self.close_connection = True
        if owner._stopping.is_set():
            self.close_connection = True

    def parse_request(self) -> bool:
        owner = self.server.owner
        owner._set_busy(self.connection, True)
        self._started = time.monotonic()
        self.connection.settimeout(owner.request_timeout)
        return super().parse_request()

    # -- answers -------------------------------------------------------------------------------

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, code: int, body: dict[str, Any]) -> None:
        self._send(code, json.dumps(body, separators=(",", ":")).encode() + b"\n",
                   "application/json")

    def _send_text(self, code: int, text: str) -> None:
        self._send(code, text.encode(), "text/plain; charset=utf-8")

    def _fail(self, registration: Registration | None, code: int, message: str) -> None:
        """Answer a request that is not a review of this path's type."""
        logger.warning("webhook server: %s %s from %s: %d %s", self.command, self.path,
                       self.client_address[0], code, message)
        if registration is not None and registration.type == "conversion":
            self._send_json(code, {
                "apiVersion": CONVERSION_API_VERSION, "kind": "ConversionReview",
                "response": {"uid": "", "result": {"metadata": {}, "status": "Failure",
                                                   "message": message}}})
        else:
            self._send_json(code, errored(code, message).review(""))

    # -- dispatch ------------------------------------------------------------------------------

    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0]
        if path in ("/healthz", "/readyz"):
            self._send_text(200, "ok") if owner.ready() else self._send_text(
                503, "[-]webhook-server failed: not serving\n")
            return
        if path == "/metrics" and owner.metrics_registry is not None:
            from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

            self._send(200, generate_latest(owner.metrics_registry), CONTENT_TYPE_LATEST)
            return
        self.do_POST()

    def do_POST(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0]
        registration = owner._paths.get(path)
        if registration is None:
            self._drain_small_body()
            self._send_text(404, "404 page not found\n")
            return
        owner._metrics.started(path)
        code = 500
        try:
            code = self._review(owner, registration)
        finally:
            owner._metrics.finished(path, code, time.monotonic() - self._started)

    do_PUT = do_POST
    do_DELETE = do_POST
    do_PATCH = do_POST

    def _drain_small_body(self) -> None:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit() or int(length) > 65536:
            self.close_connection = True
        elif int(length):
            self.rfile.read(int(length))

    def _read_body(self, owner: WebhookServer) -> bytes:
        """The body, read within the request's time bound.

        Raises:
            _BodyError: no usable Content-Length, too large, or too slow.
        """
        length_text = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise _BodyError(411, "a Content-Length is required (chunked bodies are not "
                                  "served)")
        if length_text is None:
            return b""
        if not length_text.strip().isdigit():
            self.close_connection = True
            raise _BodyError(400, f"invalid Content-Length {length_text!r}")
        length = int(length_text)
        if length > owner.max_request_bytes:
            self.close_connection = True
            self._discard(min(length, _MAX_DISCARD), self._started + owner.request_timeout)
            raise _BodyError(413, "request entity is too large; limit is "
                                  f"{owner.max_request_bytes} bytes")
        deadline = self._started + owner.request_timeout
        chunks: list[bytes] = []
        remaining = length
        try:
            while remaining:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self.connection.settimeout(left)
                chunk = self.rfile.read1(min(remaining, 65536))
                if not chunk:
                    raise ConnectionError("the client closed the connection mid-body")
                chunks.append(chunk)
                remaining -= len(chunk)
        except TimeoutError:
            self.close_connection = True
            raise _BodyError(408, "the request did not arrive within "
                                  f"{owner.request_timeout:g}s") from None
        return b"".join(chunks)

    def _discard(self, length: int, deadline: float) -> None:
        """Read and drop up to ``length`` bytes of a body we refuse, so the client, still
        sending, reads our answer instead of a connection reset (Go's server does the same
        for up to ``maxPostHandlerReadBytes``)."""
        try:
            while length > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.connection.settimeout(left)
                chunk = self.rfile.read1(min(length, 65536))
                if not chunk:
                    return
                length -= len(chunk)
        except OSError:
            return

    def _review(self, owner: WebhookServer, registration: Registration) -> int:
        try:
            body = self._read_body(owner)
        except _BodyError as err:
            self._fail(registration, err.code, str(err))
            return err.code
        if not body:
            self._fail(registration, 400, "request body is empty")
            return 400
        content_type = self.headers.get("Content-Type", "")
        if content_type.split(";", 1)[0].strip() != "application/json":
            self._fail(registration, 400,
                       f"contentType={content_type}, expected application/json")
            return 400
        if registration.type == "conversion":
            return self._convert(owner, registration, body)
        return self._admit(registration, body)

    def _admit(self, registration: Registration, body: bytes) -> int:
        try:
            request = decode_review(body)
        except AdmissionReviewError as err:
            self._fail(registration, err.code, str(err))
            return err.code
        handler: AdmissionHandler = registration.handler
        try:
            response = handler.handle(request)
        except Exception as err:
            logger.exception("webhook %s: handler failed on request %s", self.path,
                             request.uid)
            response = internal_error(err)
        self._send_json(200, response.review(request.uid))
        return 200

    def _convert(self, owner: WebhookServer, registration: Registration, body: bytes) -> int:
        try:
            request = decode_conversion_review(body)
        except ConversionReviewError as err:
            self._fail(registration, err.code, str(err))
            return err.code
        self._send_json(200, convert_review(request, owner._kinds))
        return 200


class WebhookServer:
    """An HTTPS server for admission and conversion webhooks.

    Args:
        host: the address to listen on (``""``: every interface, controller-runtime's
            default; ``127.0.0.1`` for tests).
        port: the port (:data:`DEFAULT_PORT`; ``0`` picks a free one, see :attr:`port`).
        cert_dir: where ``cert_name`` and ``key_name`` are (:data:`DEFAULT_CERT_DIR`).
        cert_name: the certificate's file name (``tls.crt``).
        key_name: the key's file name (``tls.key``).
        max_request_bytes: the largest body served (:data:`DEFAULT_MAX_REQUEST_BYTES`).
        request_timeout: seconds to receive a request (:data:`DEFAULT_REQUEST_TIMEOUT`).
        idle_timeout: seconds a kept-alive connection may idle (:data:`DEFAULT_IDLE_TIMEOUT`).
        shutdown_timeout: seconds in-flight requests get at :meth:`stop`
            (:data:`DEFAULT_SHUTDOWN_TIMEOUT`).
        cert_watch_interval: seconds between polls of the certificate files.
        metrics_registry: a ``prometheus_client`` registry to export
            :mod:`~informers.webhook.metrics` to and serve at ``/metrics``; ``None``: none.
        clock: time source of the certificate polls.

    Thread safety: register handlers before :meth:`start`; the handlers then run
    concurrently on the connection threads.
    """

    def __init__(self, *, host: str = "", port: int = DEFAULT_PORT,
                 cert_dir: str = DEFAULT_CERT_DIR, cert_name: str = "tls.crt",
                 key_name: str = "tls.key",
                 max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
                 idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
                 shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
                 cert_watch_interval: float = DEFAULT_WATCH_INTERVAL,
                 metrics_registry: Any = None, clock: Clock = REAL_CLOCK) -> None:
        self.host = host
        self._requested_port = port
        self.cert_path = os.path.join(cert_dir, cert_name)
        self.key_path = os.path.join(cert_dir, key_name)
        self.max_request_bytes = max_request_bytes
        self.request_timeout = request_timeout
        self.idle_timeout = idle_timeout
        self.shutdown_timeout = shutdown_timeout
        self.cert_watch_interval = cert_watch_interval
        self.metrics_registry = metrics_registry
        self._metrics = WebhookMetrics(metrics_registry)
        self._clock = clock
        self._paths: dict[str, Registration] = {}
        self._kinds: dict[tuple[str, str], HubAndSpoke] = {}
        self.watcher: CertificateWatcher | None = None
        self._httpd: _HTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._connections: dict[Any, bool] = {}  # TLS socket -> busy
        self._conn_threads: set[threading.Thread] = set()
        self._stopping = threading.Event()
        self._stop = threading.Event()
        self._serving = threading.Event()

    # -- registration --------------------------------------------------------------------------

    @property
    def registrations(self) -> list[Registration]:
        """The registered handlers, in registration order."""
        return list(self._paths.values())

    def register(self, path: str, handler: AdmissionHandler, *, type: str = "validating",
                 webhook: AdmissionWebhook | None = None) -> Registration:
        """Serve an admission ``handler`` (``handle(request) -> AdmissionResponse``) at
        ``path``; ``type`` (``mutating``/``validating``) and ``webhook`` say how the
        configuration renders it.

        Raises:
            ValueError: ``path`` is taken, reserved, or does not start with ``/``.
        """
        return self._add(Registration(path, type, handler, webhook))

    def mutating(self, path: str, defaulter: Defaulter,
                 webhook: AdmissionWebhook | None = None) -> Registration:
        """Serve a defaulter at ``path`` (see :class:`~informers.webhook.admission.Mutating`)."""
        name = webhook.name if webhook is not None else path
        return self._add(Registration(path, "mutating", Mutating(defaulter, name), webhook))

    def validating(self, path: str, validator: Validator,
                   webhook: AdmissionWebhook | None = None) -> Registration:
        """Serve a validator at ``path`` (see
        :class:`~informers.webhook.admission.Validating`)."""
        name = webhook.name if webhook is not None else path
        return self._add(Registration(path, "validating", Validating(validator, name), webhook))

    def conversion(self, kind: HubAndSpoke, path: str = "/convert",
                   crd: str | None = None) -> Registration:
        """Convert ``kind`` at ``path`` (controller-runtime serves every kind at
        ``/convert``; several kinds may share the path). ``crd`` names the CRD whose
        ``spec.conversion`` points here, for managed mode.

        Raises:
            ValueError: ``path`` is taken by an admission handler, or the kind is already
                registered.
        """
        if (kind.group, kind.kind) in self._kinds:
            raise ValueError(f"a conversion for {kind.group}/{kind.kind} is already registered")
        existing = self._paths.get(path)
        if existing is not None and existing.type != "conversion":
            raise ValueError(f"path {path} is taken by a {existing.type} handler")
        crds = (existing.crds if existing is not None else ()) + ((crd,) if crd else ())
        self._kinds[(kind.group, kind.kind)] = kind
        self._paths[path] = Registration(path, "conversion", None, None, crds)
        return self._paths[path]

    def _add(self, registration: Registration) -> Registration:
        path = registration.path
        if not path.startswith("/"):
            raise ValueError(f"path {path!r} must start with /")
        if path in self._paths or path in ("/healthz", "/readyz", "/metrics"):
            raise ValueError(f"path {path} is already registered")
        self._paths[path] = registration
        return registration

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`), else the configured one."""
        if self._httpd is not None:
            return int(self._httpd.server_address[1])
        return self._requested_port

    @property
    def url(self) -> str:
        """``https://<host>:<port>`` (``127.0.0.1`` when listening on every interface)."""
        return f"https://{self.host or '127.0.0.1'}:{self.port}"

    def ready(self) -> bool:
        """Serving (controller-runtime ``StartedChecker``)."""
        return self._serving.is_set() and not self._stopping.is_set()

    def start(self) -> WebhookServer:
        """Load the certificate, bind and serve on background threads.

        Raises:
            OSError: the certificate files cannot be read or the address cannot be bound.
            ssl.SSLError: the certificate and key do not load.
            RuntimeError: already running (a stopped server may be started again).
        """
        if self._httpd is not None:
            raise RuntimeError("the webhook server was already started")
        self.watcher = CertificateWatcher(self.cert_path, self.key_path,
                                          interval=self.cert_watch_interval, clock=self._clock)
        httpd = _HTTPServer((self.host, self._requested_port), _Handler,
                            bind_and_activate=False)
        if ":" in self.host:
            httpd.address_family = socket.AF_INET6
            httpd.socket = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        httpd.owner = self
        try:
            httpd.server_bind()
            httpd.server_activate()
        except OSError:
            httpd.server_close()
            raise
        self._httpd = httpd
        for name, target, args in (
                ("webhook-server", httpd.serve_forever, (_SERVE_POLL,)),
                ("webhook-cert-watcher", self.watcher.run, (self._stop,))):
            thread = threading.Thread(target=target, args=args, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        self._serving.set()
        logger.info("webhook server: serving %d paths on %s", len(self._paths), self.url)
        return self

    def _spawn(self, raw: socket.socket, address: Any) -> None:
        thread = threading.Thread(target=self._serve_connection, args=(raw, address),
                                  name=f"webhook-conn-{address[1]}", daemon=True)
        with self._lock:
            if self._stopping.is_set():
                raw.close()
                return
            self._conn_threads.add(thread)
        thread.start()

    def _serve_connection(self, raw: socket.socket, address: Any) -> None:
        assert self._httpd is not None and self.watcher is not None
        tls: ssl.SSLSocket | None = None
        try:
            raw.settimeout(self.request_timeout)
            tls = self.watcher.context.wrap_socket(raw, server_side=True)
            with self._lock:
                self._connections[tls] = False
            _Handler(tls, address, self._httpd)
        except (ssl.SSLError, OSError) as err:
            logger.debug("webhook server: connection from %s failed: %s", address, err)
        finally:
            with self._lock:
                if tls is not None:
                    self._connections.pop(tls, None)
                self._conn_threads.discard(threading.current_thread())
            for sock in (tls, raw):
                if sock is not None:
                    try:
                        sock.close()
                    except OSError:
                        pass

    def _set_busy(self, connection: Any, busy: bool) -> None:
        with self._lock:
            if connection in self._connections:
                self._connections[connection] = busy

    def _close_connections(self, only_idle: bool) -> None:
        with self._lock:
            targets = [c for c, busy in self._connections.items() if not (only_idle and busy)]
        for connection in targets:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self) -> None:
        """Stop accepting, close idle connections, give the requests in flight
        ``shutdown_timeout`` seconds, close the rest, and join every thread. Idempotent; the
        server can then be started again (on the same requested port)."""
        httpd = self._httpd
        if httpd is None or self._stop.is_set():
            return
        with self._lock:
            self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        self._stop.set()
        self._close_connections(only_idle=True)
        deadline = time.monotonic() + self.shutdown_timeout
        for thread in self._snapshot_connection_threads():
            thread.join(max(0.0, deadline - time.monotonic()))
        left = self._snapshot_connection_threads()
        if left:
            logger.error("webhook server: %d requests still running after %ss; closing their "
                         "connections", len(left), self.shutdown_timeout)
            self._close_connections(only_idle=False)
            for thread in left:
                thread.join(1.0)
        for thread in self._threads:
            thread.join()
        self._serving.clear()
        # Ready for another start() (a Manager that is started again restarts its servers).
        with self._lock:
            self._threads = []
            self._httpd = None
            self._stop = threading.Event()
            self._stopping = threading.Event()
        logger.info("webhook server: stopped")

    def _snapshot_connection_threads(self) -> list[threading.Thread]:
        with self._lock:
            return [t for t in self._conn_threads if t.is_alive()]

    def run(self, stop: threading.Event) -> None:
        """Serve until ``stop`` is set, then :meth:`stop` (a Manager runnable)."""
        if self._httpd is None:
            self.start()
        stop.wait()
        self.stop()

    def __enter__(self) -> WebhookServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


