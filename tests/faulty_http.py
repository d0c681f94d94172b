"""Servers that speak HTTP badly, for black-box tests of the client: a scripted API server on a
raw socket (every byte on the wire chosen by the test) and a TCP proxy that can black-hole its
connections (stop forwarding without closing them, as a dead path does).

Both run on loopback, on threads of their own, and are closed by their ``close()`` (or as
context managers); every thread they start is joined there.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
from collections.abc import Callable
from typing import Any

Handler = Callable[[socket.socket], None]

_WAIT = 10.0  # longest a handler or pump waits for anything


def pod(name: str, rv: str, namespace: str = "ns") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}}


def event_line(etype: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": etype, "object": obj}, separators=(",", ":")).encode() + b"\n"


def pod_list(rv: str, *items: dict[str, Any]) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "PodList",
                       "metadata": {"resourceVersion": rv}, "items": list(items)}).encode()


def status_body(status: str, code: int | None, reason: str, message: str) -> bytes:
    doc: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": status, "message": message, "reason": reason}
    if code is not None:
        doc["code"] = code
    return json.dumps(doc).encode()


class ScriptedApiServer:
    """Answers list requests (no ``watch=true``) and watch requests from two scripts.

    Each request takes the next handler of its script; once a script is empty, a list gets the
    last list answer again and a watch gets a chunked 200 that sends nothing until
    :meth:`close`. Every answer carries ``Connection: close``.

    Attributes:
        requests: ``(verb, target)`` of every request, ``verb`` "list" or "watch", in order.
    """

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._lists: queue.Queue[Handler] = queue.Queue()
        self._watches: queue.Queue[Handler] = queue.Queue()
        self._last_list: Handler | None = None
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self.requests: list[tuple[str, str]] = []
        self._acceptor = threading.Thread(target=self._accept, name="scripted-api", daemon=True)
        self._acceptor.start()

    def __enter__(self) -> ScriptedApiServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scripts -------------------------------------------------------------------------------

    def list_answer(self, body: bytes, code: int = 200) -> None:
        self._lists.put(_whole(code, body))

    def watch_answer(self, lines: list[bytes], hold: bool = True) -> None:
        """A chunked 200 sending ``lines`` (one chunk each); then it holds the connection open
        until :meth:`close` (``hold``) or ends the body."""
        self._watches.put(self._chunked(lines, hold))

    # -- serving -------------------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                if self._closed.is_set():
                    conn.close()
                    return
                self._conns.append(conn)
                thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
                self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            target = data.split(b"\r\n", 1)[0].decode().split(" ")[1]
            watch = "watch=true" in target
            with self._lock:
                self.requests.append(("watch" if watch else "list", target))
            handler: Handler | None
            if watch:
                try:
                    handler = self._watches.get_nowait()
                except queue.Empty:
                    handler = self._chunked([], hold=True)
            else:
                try:
                    handler = self._last_list = self._lists.get_nowait()
                except queue.Empty:
                    handler = self._last_list
            if handler is None:
                conn.sendall(b"HTTP/1.1 500 X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            handler(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def _chunked(self, lines: list[bytes], hold: bool) -> Handler:
        def handle(conn: socket.socket) -> None:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            for line in lines:
                conn.sendall(b"%x\r\n%s\r\n" % (len(line), line))
            if hold:
                self._closed.wait(_WAIT)
            conn.sendall(b"0\r\n\r\n")
        return handle

    def close(self) -> None:
        with self._lock:
            self._closed.set()
            conns, threads = list(self._conns), list(self._threads)
        _shut(self._sock)  # wakes the blocked accept()
        for conn in conns:
            _shut(conn)
        self._acceptor.join(_WAIT)
        for thread in threads:
            thread.join(_WAIT)


def _whole(code: int, body: bytes) -> Handler:
    def handle(conn: socket.socket) -> None:
        conn.sendall(f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                     + body)
    return handle


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


class BlackHoleProxy:
    """A TCP proxy to ``upstream`` (host, port) on a loopback port of its own.

    :meth:`black_hole` makes every connection open at that moment stop forwarding in both
    directions without closing it: bytes are still read from either side (so no sender ever
    blocks) and dropped, as on a path whose packets vanish. Connections opened later are
    forwarded normally.

    Attributes:
        connections: how many client connections were accepted.
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self._lock = threading.Lock()
        self._closed = False
        self._pairs: list[_Pair] = []
        self._threads: list[threading.Thread] = []
        self.connections = 0
        self._acceptor = threading.Thread(target=self._accept, name="blackhole-proxy",
                                          daemon=True)
        self._acceptor.start()

    def __enter__(self) -> BlackHoleProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def black_hole(self) -> int:
        """Stop forwarding on every open connection; return how many there were."""
        with self._lock:
            pairs = [p for p in self._pairs if not p.done]
        for pair in pairs:
            pair.holed.set()
        return len(pairs)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=_WAIT)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            pair = _Pair(client, server)
            with self._lock:
                if self._closed:
                    pair.close()
                    return
                self.connections += 1
                self._pairs.append(pair)
                threads = [threading.Thread(target=pair.pump, args=(a, b), daemon=True)
                           for a, b in ((client, server), (server, client))]
                self._threads.extend(threads)
            for thread in threads:
                thread.start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pairs, threads = list(self._pairs), list(self._threads)
        _shut(self._sock)  # wakes the blocked accept()
        for pair in pairs:
            pair.close()
        self._acceptor.join(_WAIT)
        for thread in threads:
            thread.join(_WAIT)


class _Pair:
    """One proxied connection: two sockets, two pumps."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client, self.server = client, server
        self.holed = threading.Event()
        self.done = False

    def pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if not self.holed.is_set():
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            if not self.holed.is_set():
                self.close()  # a normal end on one side ends both
            self.done = True

    def close(self) -> None:
        self.done = True
        _shut(self.client)
        _shut(self.server)
