"""The HTTP side of the embedded API server: one handler per connection, HTTP/1.1 keep-alive.

Bounds how long a client may take to send a request's headers, reads and bounds request
bodies, authenticates and authorizes (:mod:`informers.testing.access`), hands the request to
:func:`~informers.testing.dispatch.dispatch` (injected delays and failures, then the
endpoint of its verb), writes JSON responses (one ``sendall`` per response) and chunked watch
streams, and records every answered request in the request log.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from informers.errors import StatusError
from informers.testing import access, status, table_endpoint, tables
from informers.testing.admission import RequestScope, request_scope
from informers.testing.conversion import (
    ConvertingWatchWriter,
    convert_body,
    needs_conversion,
)
from informers.testing.dispatch import StreamError, dispatch, request_record
from informers.testing.endpoints import Response, status_response
from informers.testing.field_validation import warning_header
from informers.testing.request_headers import Headers, parse_headers
from informers.testing.request_info import RequestInfo, resolve
from informers.testing.server_app import ServerApp
from informers.testing.watch import WatchHandle, WatchStream, error_line

__all__ = ["ApiHTTPServer", "Headers", "RequestHandler", "ServerApp"]

logger = logging.getLogger(__name__)

_HEALTH_PATHS = frozenset({"/healthz", "/livez", "/readyz"})  # answer "ok"
_MAX_LINE = 65536  # http.client._MAXLINE: the longest header line
_MAX_HEADERS = 100  # http.client._MAXHEADERS
_BLANK_LINES = (b"\r\n", b"\n", b"")
_REASONS = {
    200: "OK", 201: "Created", 202: "Accepted", 301: "Moved Permanently", 304: "Not Modified",
    400: "Bad Request", 401: "Unauthorized",
    403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
    409: "Conflict", 410: "Gone", 413: "Request Entity Too Large", 415: "Unsupported Media Type",
    422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
    503: "Service Unavailable", 504: "Gateway Timeout",
}


class ApiHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that knows its ``app``. Handler threads are daemons; the app
    tracks connections so stop and restart can cut them."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self, address: tuple[str, int], app: ServerApp, tls: ssl.SSLContext | None = None
    ) -> None:
        self.app = app
        self.tls = tls
        super().__init__(address, RequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """One daemon thread per connection, named after the component."""
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address),
            name="informers-testing-apiserver-connection", daemon=True,
        )
        thread.start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("embedded API server: connection from %s failed", client_address,
                     exc_info=True)

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = super().get_request()
        if self.tls is not None:
            # The handshake happens on the handler's thread (RequestHandler.setup), not here.
            connection = self.tls.wrap_socket(
                connection, server_side=True, do_handshake_on_connect=False
            )
        return connection, address


class _Chunks:
    """``ChunkWriter`` over the handler's socket."""

    def __init__(self, handler: RequestHandler, handle: WatchHandle | None = None) -> None:
        self._handler = handler
        self._handle = handle

    def write(self, data: bytes) -> None:
        self._handler.connection.sendall(b"%x\r\n%b\r\n" % (len(data), data))

    def finish(self) -> None:
        if self._handle is not None:
            self._handle.ending = True
        self._handler.connection.sendall(b"0\r\n\r\n")

    def abort(self) -> None:
        self._handler.close_connection = True
        try:
            self._handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class RequestHandler(BaseHTTPRequestHandler):
    """Serves the requests of one connection (HTTP/1.1, keep-alive).

    A connection is bounded as Go's ``net/http`` server bounds kube-apiserver's
    (``k8s.io/apiserver/pkg/server/secure_serving.go``: ``ReadHeaderTimeout`` 32 s,
    ``IdleTimeout`` 90 s; ``ApiServer``'s ``header_read_timeout`` and ``idle_timeout``): the
    TLS handshake and the first request's line and headers must arrive within the header
    timeout of the connection's start; on a kept-alive connection the next request's line
    within the idle timeout (Go waits that long for its first byte), then its headers within
    the header timeout. A
    connection that misses a deadline is closed without an answer. Request bodies and
    responses (watches included) have no deadline. The deadlines are real time (socket
    timeouts), not the server's clock.
    """

    protocol_version = "HTTP/1.1"
    server: ApiHTTPServer
    _timed = False  # header deadlines apply (set once the connection is set up)
    _header_deadline: float | None = None
    headers: Headers  # type: ignore[assignment]
    raw_requestline: bytes

    # -- connection lifecycle ------------------------------------------------------------------

    def setup(self) -> None:
        try:
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        app = self.server.app
        app.connection_opened(self.request)
        self._broken = False
        self._served = 0
        self._timed = True
        self._header_deadline = time.monotonic() + app.header_read_timeout
        if isinstance(self.request, ssl.SSLSocket):
            try:
                # Go: the handshake has the shortest of the server's read timeouts.
                self.request.settimeout(app.header_read_timeout)
                self.request.do_handshake()
                self.request.settimeout(None)
            except (OSError, ValueError) as err:  # a failed handshake ends this connection
                logger.debug("embedded API server: TLS handshake failed: %s", err)
                self._broken = True
        super().setup()

    def handle(self) -> None:
        if not self._broken:
            super().handle()

    def handle_one_request(self) -> None:
        """One request; see the class docstring for the deadlines of its line and headers."""
        try:
            if self._served:  # kept alive: the idle timeout for the request line
                self._header_deadline = None
                self.connection.settimeout(self.server.app.idle_timeout)
            else:
                self._header_timeout()
        except (TimeoutError, OSError):
            self.close_connection = True
            return
        super().handle_one_request()
        self._served += 1

    def _header_timeout(self) -> None:
        """Set the socket timeout to what is left of the header deadline (starting it now if
        it has not started). Raises ``TimeoutError`` when it has passed."""
        if self._header_deadline is None:
            self._header_deadline = time.monotonic() + self.server.app.header_read_timeout
        left = self._header_deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out reading the request headers")
        self.connection.settimeout(left)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        self.server.app.connection_closed(self.connection)

    def parse_request(self) -> bool:
        """``BaseHTTPRequestHandler.parse_request`` with the same rules and errors (request
        line and version checks, 431 for a header line over 64 KiB or over 100 headers,
        ``Connection``, ``Expect: 100-continue``), reading the headers into :class:`Headers`.
        """
        self.command = None  # type: ignore[assignment]  # set in case of an error below
        self.request_version = version = self.default_request_version
        self.close_connection = True
        requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        self.requestline = requestline
        words = requestline.split()
        if not words:
            return False
        if len(words) >= 3:  # enough to tell the protocol version
            version = words[-1]
            numbers = version[5:].split(".") if version.startswith("HTTP/") else []
            if (len(numbers) != 2 or not all(n.isdigit() and len(n) <= 10 for n in numbers)):
                self.send_error(400, f"Bad request version ({version!r})")
                return False
            major, minor = int(numbers[0]), int(numbers[1])
            if (major, minor) >= (1, 1) and self.protocol_version >= "HTTP/1.1":
                self.close_connection = False
            if major >= 2:
                self.send_error(505, f"Invalid HTTP version ({version[5:]})")
                return False
            self.request_version = version
        if not 2 <= len(words) <= 3:
            self.send_error(400, f"Bad request syntax ({requestline!r})")
            return False
        command, path = words[:2]
        if len(words) == 2:
            self.close_connection = True
            if command != "GET":
                self.send_error(400, f"Bad HTTP/0.9 request type ({command!r})")
                return False
        self.command, self.path = command, path
        if path.startswith("//"):
            self.path = "/" + path.lstrip("/")
        headers = self._read_headers()
        if headers is None:
            return False
        self.headers = headers
        connection = headers.get("connection", "").lower()
        if connection == "close":
            self.close_connection = True
        elif connection == "keep-alive" and self.protocol_version >= "HTTP/1.1":
            self.close_connection = False
        if (headers.get("expect", "").lower() == "100-continue"
                and self.protocol_version >= "HTTP/1.1"
                and self.request_version >= "HTTP/1.1"):
            return self.handle_expect_100()
        return True

    def _read_headers(self) -> Headers | None:
        """The header block as ``http.client.parse_headers`` reads and parses it, or ``None``
        after answering 431. Ordinary blocks are parsed here; anything unusual (a bare CR,
        a line that is neither ``name: value`` nor a continuation, a ``From`` line) goes to
        the ``email`` parser the standard library uses, so the result is the same."""
        lines: list[bytes] = []
        while True:  # http.client._read_headers: the blank line counts towards the limit
            if self._timed:
                self._header_timeout()
            line = self.rfile.readline(_MAX_LINE + 1)
            if len(line) > _MAX_LINE:
                self.send_error(431, "Line too long", "header line")
                return None
            lines.append(line)
            if len(lines) > _MAX_HEADERS:
                self.send_error(431, "Too many headers",
                                f"got more than {_MAX_HEADERS} headers")
                return None
            if line in _BLANK_LINES:
                break
        if self._timed:
            self.connection.settimeout(None)
        return parse_headers(lines)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    # -- responses -----------------------------------------------------------------------------

    def _send(self, response: Response, *, content_type: str = "application/json") -> None:
        reason = _REASONS.get(response.code, "Unknown")
        lines = [f"HTTP/1.1 {response.code} {reason}"]
        named = {name for name, _ in response.headers}  # a response's own headers win
        if "Content-Type" not in named:
            lines.append(f"Content-Type: {content_type}")
        if "Cache-Control" not in named:
            lines.append("Cache-Control: no-cache, private")
        lines.append(f"Content-Length: {len(response.body)}")
        lines.extend(f"{name}: {value}" for name, value in response.headers)
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if self.command == "HEAD":
            self.connection.sendall(head)
        elif len(response.body) < 65536:
            self.connection.sendall(head + response.body)
        else:
            self.connection.sendall(head)
            self.connection.sendall(response.body)

    # -- request body --------------------------------------------------------------------------

    def _read_body(self, limit: int) -> bytes:
        """The request body, at most ``limit`` bytes (413 beyond, and the connection closes)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            size = 0
            while True:
                line = self.rfile.readline(65537)
                try:
                    length = int(line.split(b";", 1)[0].strip() or b"0", 16)
                except ValueError:
                    self.close_connection = True
                    raise status.bad_request("malformed chunked request body") from None
                if length == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                size += length
                if size > limit:
                    self.close_connection = True
                    raise status.request_entity_too_large(limit)
                parts.append(self.rfile.read(length))
                self.rfile.readline(65537)
            return b"".join(parts)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            raise status.bad_request("invalid Content-Length") from None
        if length > limit:
            self.close_connection = True  # the unread body cannot be skipped safely
            raise status.request_entity_too_large(limit)
        return self.rfile.read(length) if length > 0 else b""

    # -- dispatch ------------------------------------------------------------------------------

    def _serve(self) -> None:
        app = self.server.app
        target = self.path
        if target.startswith("/") and "#" not in target:
            path, _, raw_query = target.partition("?")
        else:  # absolute-form or a fragment: the general parser
            split = urlsplit(target)
            path, raw_query = split.path or "/", split.query
        query: dict[str, str] = {}
        if raw_query:
            query = {k: v[-1] for k, v in parse_qs(raw_query, keep_blank_values=True).items()}
        info = resolve(self.command, path, query, app.registry)
        scope: RequestScope | None = None
        try:
            authenticated = access.authenticate(self.headers.get("Authorization"), app.token)
            if not authenticated and (authenticated is False
                                      or not access.anonymous_allowed(self.command, info)):
                self.close_connection = self.close_connection or bool(
                    self.headers.get("Content-Length") not in (None, "0")
                    or self.headers.get("Transfer-Encoding")
                )
                raise (status.unauthorized() if authenticated is False
                       else access.forbidden(self.command, info))
            if path in _HEALTH_PATHS:
                self._read_body(app.max_request_body_bytes)
                self._send(Response(200, b"ok"), content_type="text/plain; charset=utf-8")
                return
            raw = self._read_body(app.max_request_body_bytes)
            with request_scope(query) as scope:  # writes inside are admitted (admission.py)
                outcome = dispatch(app, self.command, self.headers, info, query, raw)
                if isinstance(outcome, WatchStream):
                    self._serve_watch(app, info, query, outcome)
                    response = None
                elif isinstance(outcome, StreamError):
                    self._serve_stream_error(app, info, query, outcome.error)
                    response = None
                else:
                    response = outcome
                if response is not None and response.code < 300 and needs_conversion(info.rt):
                    assert info.rt is not None  # a CRD version read from the storage version
                    response = Response(response.code, convert_body(
                        app.conversion, info.rt, response.body), response.headers)
        except StatusError as err:
            response = status_response(err)
        except Exception as err:  # a bug: answer 500 like the real server's panic handler
            logger.exception("embedded API server: %s %s failed", self.command, self.path)
            response = status_response(status.internal_error(f"{type(err).__name__}: {err}"))
        if response is None:
            return  # a watch, already answered and recorded
        # On success and failure alike: a deprecated CRD version's warning first (the CRD
        # handler records it before decoding), then the webhooks'.
        deprecation = [warning_header(w) for w in getattr(info.rt, "warnings", ())]
        if deprecation:
            first = next((i for i, (k, _) in enumerate(response.headers) if k == "Warning"),
                         len(response.headers))
            response.headers[first:first] = deprecation
        if scope is not None:
            response.headers.extend(map(warning_header, scope.warnings))
        self._record(app, info, query, response.code)
        try:
            self._send(response)
        except OSError:
            self.close_connection = True

    def _record(self, app: ServerApp, info: RequestInfo, query: dict[str, str], code: int) -> None:
        app.request_log_store.append(request_record(app, self.command, info, query, code))

    # -- watches -------------------------------------------------------------------------------

    def _start_stream(self, app: ServerApp, info: RequestInfo, query: dict[str, str]) -> None:
        self._record(app, info, query, 200)
        warnings = "".join(f"{k}: {v}\r\n" for k, v in map(
            warning_header, getattr(info.rt, "warnings", ())))  # a deprecated CRD version's
        self.connection.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Cache-Control: no-cache, private\r\nTransfer-Encoding: chunked\r\n"
            + warnings.encode() + b"\r\n"
        )

    def _serve_stream_error(
        self, app: ServerApp, info: RequestInfo, query: dict[str, str], err: StatusError
    ) -> None:
        try:
            self._start_stream(app, info, query)
            writer = _Chunks(self)
            writer.write(error_line(err))
            writer.finish()
        except OSError:
            self.close_connection = True

    def _serve_watch(
        self, app: ServerApp, info: RequestInfo, query: dict[str, str], stream: WatchStream
    ) -> None:
        assert info.rt is not None
        handle = WatchHandle(info.rt, info.namespace or "", self.connection)
        try:
            self._start_stream(app, info, query)
        except OSError:
            self.close_connection = True
            return
        app.watch_opened(handle)
        try:
            writer: Any = _Chunks(self, handle)
            if needs_conversion(info.rt):
                writer = ConvertingWatchWriter(writer, app.conversion, info.rt)
            if tables.wants_table(self.headers.get("Accept", "")):
                writer = tables.TableWatchWriter(writer, info.rt.group, info.rt.plural, query,
                                                 app.clock.wall,
                                                 table_endpoint.custom_columns(info.rt))
            stream.serve(writer, handle)
        finally:
            app.watch_closed(handle)
        if handle.dropped:
            self.close_connection = True

