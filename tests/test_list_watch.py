"""Tests for informers.list_watch and its HTTP side (informers.client), over real HTTP.

Byte-level behaviour (chunk boundaries, malformed lines, status bodies, refused connections,
read timeouts) is tested against a tiny scripted HTTP server on a real socket, so every byte on
the wire is chosen by the test; the request sequences of whole scenarios are tested against the
embedded API server in tests/test_reflector.py.
"""

from __future__ import annotations

import json
import queue
import socket
import sys
import threading
import time
from collections.abc import Callable

import pytest
from kubernetes import client as k8s

from informers.client import list_watch_for_resource, list_watch_from_client
from informers.errors import ApiConnectionError, StatusError, is_expired, is_too_many_requests
from informers.list_watch import (
    CancelToken,
    ListOptions,
    ListPager,
    ListResult,
    ListWatch,
    WatchEvent,
)
from informers.resources import Resource, lookup

# -- a scripted HTTP server ---------------------------------------------------------------------

Handler = Callable[[socket.socket], None]


class RawServer:
    """Accepts connections; answers each request with the next scripted handler."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.handlers: queue.Queue[Handler] = queue.Queue()
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.release = threading.Event()  # lets "hold" handlers finish
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            lines = data.split(b"\r\n\r\n")[0].decode().split("\r\n")
            method, target, _ = lines[0].split(" ")
            headers = {}
            for line in lines[1:]:
                k, v = line.split(": ", 1)
                headers[k.lower()] = v
            self.requests.append((method, target, headers))
            handler = self.handlers.get(timeout=5)
            handler(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.release.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() of _serve: it ends
        except OSError:
            pass
        self.sock.close()
        self._thread.join(5)
        for c in self._conns:
            try:
                c.close()
            except OSError:
                pass

    # handlers

    def status(self, code: int, body: bytes, extra: str = "") -> None:
        def h(conn: socket.socket) -> None:
            head = (f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n")
            conn.sendall(head.encode() + body)
        self.handlers.put(h)

    def chunked(self, parts: list[bytes], hold: bool = False, end: bool = True) -> None:
        def h(conn: socket.socket) -> None:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            for p in parts:
                conn.sendall(b"%x\r\n%s\r\n" % (len(p), p))
            if hold:
                self.release.wait(10)
            if end:
                conn.sendall(b"0\r\n\r\n")
        self.handlers.put(h)

    def plain(self, body: bytes) -> None:
        """A close-delimited body (no chunking, no length)."""
        def h(conn: socket.socket) -> None:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Connection: close\r\n\r\n" + body)
        self.handlers.put(h)


@pytest.fixture
def server():
    s = RawServer()
    yield s
    s.close()


POD_SPEC = {"containers": [{"name": "c", "image": "registry.invalid/pause:1"}]}


def make_client(port: int, token: str | None = "sekret", retries: object = None) -> k8s.ApiClient:
    cfg = k8s.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    if token:
        cfg.api_key = {"authorization": token}
        cfg.api_key_prefix = {"authorization": "Bearer"}
    if retries is not None:
        cfg.retries = retries
    return k8s.ApiClient(cfg)


@pytest.fixture
def api(server):
    c = make_client(server.port)
    yield c
    c.close()


def ev(etype: str, name: str, rv: str) -> bytes:
    return json.dumps({"type": etype, "object": {
        "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}},
        separators=(",", ":")).encode() + b"\n"


# -- ListOptions ----------------------------------------------------------------------------------


def test_to_query_omits_unset_values():
    assert ListOptions().to_query() == []
    assert ListOptions(resource_version="", limit=0, timeout_seconds=None).to_query() == []
    assert ListOptions(resource_version="0", limit=500).to_query() == [
        ("resourceVersion", "0"), ("limit", "500")]


def test_to_query_all_fields_in_order():
    opts = ListOptions(
        resource_version="12", resource_version_match="NotOlderThan", limit=5, continue_="tok",
        label_selector="a=b", field_selector="spec.nodeName=n", timeout_seconds=301,
        allow_watch_bookmarks=True, send_initial_events=True, read_timeout=3.0,
    )
    assert opts.to_query(watch=True) == [
        ("watch", "true"), ("resourceVersion", "12"), ("resourceVersionMatch", "NotOlderThan"),
        ("limit", "5"), ("continue", "tok"), ("labelSelector", "a=b"),
        ("fieldSelector", "spec.nodeName=n"), ("timeoutSeconds", "301"),
        ("allowWatchBookmarks", "true"), ("sendInitialEvents", "true"),
    ]
    assert ListOptions(send_initial_events=False).to_query() == [("sendInitialEvents", "false")]


# -- ListPager ------------------------------------------------------------------------------------


class PagedLister:
    """A list function over N numbered items, recording every call's options."""

    def __init__(self, n: int, rv: str = "100", expire_on_call: int | None = None) -> None:
        self.items = [{"metadata": {"name": f"o{i}"}} for i in range(n)]
        self.rv = rv
        self.calls: list[tuple[str | None, int | None, str | None, str | None]] = []
        self.expire_on_call = expire_on_call

    def __call__(self, o: ListOptions) -> ListResult:
        self.calls.append((o.resource_version, o.limit, o.continue_, o.resource_version_match))
        if self.expire_on_call == len(self.calls):
            raise StatusError({"code": 410, "reason": "Expired", "message": "continue expired"})
        start = int(o.continue_ or 0)
        end = len(self.items) if not o.limit else min(start + o.limit, len(self.items))
        cont = str(end) if end < len(self.items) else None
        return ListResult(self.items[start:end], self.rv if start == 0 else "junk", cont)


def test_pager_single_page():
    lister = PagedLister(3)
    result, paginated = ListPager(lister).list(ListOptions(resource_version="0"))
    assert (len(result.items), result.resource_version, result.continue_, paginated) == (
        3, "100", None, False)
    assert lister.calls == [("0", 500, None, None)]


def test_pager_pages_clear_rv_and_match():
    lister = PagedLister(1203)
    opts = ListOptions(resource_version="7", resource_version_match="NotOlderThan")
    result, paginated = ListPager(lister).list(opts)
    assert [o["metadata"]["name"] for o in result.items] == [f"o{i}" for i in range(1203)]
    assert result.resource_version == "100"  # the first page's version
    assert paginated is True
    assert lister.calls == [
        ("7", 500, None, "NotOlderThan"),
        (None, 500, "500", None),
        (None, 500, "1000", None),
    ]
    assert opts.limit is None  # the caller's options are not changed


def test_pager_unpaginated_and_explicit_limit():
    lister = PagedLister(7)
    assert ListPager(lister, page_size=0).list(ListOptions(resource_version="5"))[1] is False
    assert lister.calls == [("5", None, None, None)]
    lister = PagedLister(7)
    ListPager(lister, page_size=0).list(ListOptions(limit=3))
    assert lister.calls == [(None, 3, None, None), (None, 3, "3", None), (None, 3, "6", None)]


def test_pager_expired_continue_falls_back_to_one_full_list():
    lister = PagedLister(1200, expire_on_call=2)
    result, paginated = ListPager(lister).list(
        ListOptions(resource_version="0", resource_version_match="NotOlderThan"))
    assert len(result.items) == 1200
    assert paginated is True
    assert lister.calls == [
        ("0", 500, None, "NotOlderThan"),
        (None, 500, "500", None),
        ("0", None, None, "NotOlderThan"),  # full list: no limit, no continue, original rv
    ]


def test_pager_expired_first_page_is_raised():
    lister = PagedLister(10, expire_on_call=1)
    with pytest.raises(StatusError) as info:
        ListPager(lister).list(ListOptions(resource_version="3"))
    assert is_expired(info.value)
    assert lister.calls == [("3", 500, None, None)]


# -- ListWatch over HTTP ------------------------------------------------------------------------


def test_list_request_and_decode(server, api):
    body = json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {
        "resourceVersion": "42", "continue": "c1", "remainingItemCount": 3},
        "items": [{"metadata": {"name": "a", "namespace": "ns"}}]}).encode()
    server.status(200, body)
    lw = list_watch_from_client(api, "pods", namespace="ns", label_selector="app=web")
    assert lw.resource == lookup("pods")
    got = lw.list(ListOptions(resource_version="0", limit=500))
    assert got == ListResult([{"metadata": {"name": "a", "namespace": "ns"}}], "42", "c1", 3)
    method, target, headers = server.requests[0]
    assert (method, target) == (
        "GET", "/api/v1/namespaces/ns/pods?resourceVersion=0&limit=500&labelSelector=app%3Dweb")
    assert headers["authorization"] == "Bearer sekret"
    assert headers["accept"] == "application/json"
    assert headers["user-agent"].startswith("OpenAPI-Generator/")


def test_tweak_runs_after_selectors_on_a_copy(server, api):
    server.status(200, b'{"metadata":{"resourceVersion":"1"},"items":[]}')
    seen = []

    def tweak(o: ListOptions) -> None:
        seen.append(o.field_selector)
        o.label_selector = "tier=db"

    lw = list_watch_from_client(api, "deployments", field_selector="metadata.name=x", tweak=tweak)
    opts = ListOptions()
    assert lw.list(opts) == ListResult([], "1", None, None)
    assert seen == ["metadata.name=x"]
    assert opts.label_selector is None
    assert server.requests[0][1] == (
        "/apis/apps/v1/deployments?labelSelector=tier%3Ddb&fieldSelector=metadata.name%3Dx")


def test_http_error_becomes_status_error(server, api):
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
              "reason": "Expired", "message": "too old resource version: 5 (10)"}
    server.status(410, json.dumps(status).encode())
    lw = list_watch_from_client(api, "pods")
    with pytest.raises(StatusError) as info:
        lw.list(ListOptions(resource_version="5"))
    err = info.value
    assert (err.code, err.reason, err.message, err.retry_after) == (
        410, "Expired", "too old resource version: 5 (10)", None)
    assert err.status == status
    assert is_expired(err)


def test_429_retry_after_header_is_honoured(server, api):
    status = {"kind": "Status", "code": 429, "reason": "TooManyRequests", "message": "slow down",
              "details": {"retryAfterSeconds": 2}}
    server.status(429, json.dumps(status).encode(), "Retry-After: 7\r\n")
    lw = list_watch_from_client(api, "pods")
    with pytest.raises(StatusError) as info:
        lw.watch(ListOptions(resource_version="3"))
    assert is_too_many_requests(info.value)
    assert info.value.retry_after == 7.0  # the header wins over details.retryAfterSeconds


def test_non_status_error_body(server, api):
    server.status(500, b"<html>proxy exploded</html>")
    with pytest.raises(StatusError) as info:
        list_watch_from_client(api, "pods").list(ListOptions())
    assert (info.value.code, info.value.reason, info.value.message) == (
        500, "InternalError", "<html>proxy exploded</html>")


def test_connection_refused_is_not_hidden_by_client_retries():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    api = make_client(port, retries=5)
    try:
        lw = list_watch_from_client(api, "pods")
        for call in (lambda: lw.list(ListOptions()), lambda: lw.watch(ListOptions())):
            start = time.monotonic()
            with pytest.raises(ApiConnectionError) as info:
                call()
            assert info.value.refused is True
            assert isinstance(info.value, ConnectionError)
            assert time.monotonic() - start < 2.0  # no urllib3 retry loop with backoff
    finally:
        api.close()


def test_watch_request_and_events_across_chunk_boundaries(server, api):
    a, b, c = ev("ADDED", "a", "11"), ev("MODIFIED", "b", "12"), ev("DELETED", "c", "13")
    parts = [
        a[:10], a[10:30], a[30:] + b[:5],  # a split in three chunks, b starts in the third
        b[5:] + c,                          # b ends and c is complete in one chunk
        b"\n",                              # a blank line is ignored
        ev("BOOKMARK", "", "14")[:-1],      # the last line without its newline
    ]
    server.chunked(parts)
    lw = list_watch_from_client(api, "pods", namespace="ns")
    stream = lw.watch(ListOptions(resource_version="10", timeout_seconds=301,
                                  allow_watch_bookmarks=True))
    events = [(e.type, e.object["metadata"]["name"], e.object["metadata"]["resourceVersion"])
              for e in stream]
    assert events == [("ADDED", "a", "11"), ("MODIFIED", "b", "12"), ("DELETED", "c", "13"),
                      ("BOOKMARK", "", "14")]
    assert server.requests[0][1] == ("/api/v1/namespaces/ns/pods?watch=true&resourceVersion=10"
                                     "&timeoutSeconds=301&allowWatchBookmarks=true")
    assert stream.error is None
    assert stream.closed
    stream.close()  # idempotent


def test_a_malformed_line_ends_the_stream_with_an_error_event(server, api, caplog):
    # apimachinery StreamWatcher: one ERROR event for the decode failure, then the end.
    parts = [ev("ADDED", "a", "2") + b'{"type":"ADDED","obj',  # truncated JSON ...
             b'ect": oops}\n' + ev("MODIFIED", "a", "3")]
    server.chunked(parts)
    stream = list_watch_from_client(api, "pods").watch(ListOptions(resource_version="1"))
    with caplog.at_level("WARNING", logger="informers.client.watch_stream"):
        got = [(e.type, e.object.get("code")) for e in stream]
    assert got == [("ADDED", None), ("ERROR", 500)]
    assert (stream.events, stream.decode_errors, stream.unknown_events) == (1, 1, 0)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1
    assert "watch v1/pods at rv=1: undecodable watch line" in messages[0]
    assert "b'{\"type\":\"ADDED\",\"object\": oops}'" in messages[0]
    assert messages[0].endswith("; ending the watch")


def test_an_unknown_type_ends_the_stream_with_an_error_event(server, api, caplog):
    # client-go rest/watch Decoder: "got invalid watch event type: %v" is a decode failure.
    server.chunked([b'{"type":"WEIRD","object":{}}\n' + ev("MODIFIED", "a", "3")])
    stream = list_watch_from_client(api, "pods").watch(ListOptions(resource_version="1"))
    with caplog.at_level("WARNING", logger="informers.client.watch_stream"):
        events = list(stream)
    assert [e.type for e in events] == ["ERROR"]
    assert events[0].object["details"]["causes"][1] == {
        "reason": "ClientWatchDecoding",
        "message": "unable to decode an event from the watch stream: "
                   "got invalid watch event type: WEIRD"}
    assert (stream.events, stream.decode_errors, stream.unknown_events) == (0, 0, 1)
    assert "watch event of unknown type 'WEIRD'" in caplog.records[0].getMessage()


def test_close_unblocks_a_blocked_reader(server, api):
    server.chunked([ev("ADDED", "a", "2")], hold=True)
    stream = list_watch_from_client(api, "pods").watch(ListOptions(resource_version="1"))
    got: list[WatchEvent] = []
    reader = threading.Thread(target=lambda: got.extend(stream))
    reader.start()
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        time.sleep(0.005)
    assert len(got) == 1  # the reader now blocks waiting for more
    stream.close()
    reader.join(2)
    assert not reader.is_alive()
    assert stream.error is None  # closing is not an error


def test_close_before_iteration(server, api):
    server.chunked([ev("ADDED", "a", "2")])
    stream = list_watch_from_client(api, "pods").watch(ListOptions())
    stream.close()
    assert list(stream) == []


def test_read_timeout_ends_a_silent_stream(server, api):
    server.chunked([ev("ADDED", "a", "2")], hold=True)
    stream = list_watch_from_client(api, "pods").watch(ListOptions(read_timeout=0.3))
    start = time.monotonic()
    got = [e.type for e in stream]
    assert got == ["ADDED"]
    assert 0.25 < time.monotonic() - start < 3
    assert isinstance(stream.error, ApiConnectionError)
    assert stream.error.timeout is True and stream.error.refused is False


def test_close_delimited_watch_body(server, api):
    server.plain(ev("ADDED", "a", "2") + ev("ADDED", "b", "3"))
    stream = list_watch_from_client(api, "pods").watch(ListOptions())
    assert [e.object["metadata"]["name"] for e in stream] == ["a", "b"]


def test_read_timeout_on_list_headers(server, api):
    def hang(conn: socket.socket) -> None:
        server.release.wait(10)
    server.handlers.put(hang)
    lw = list_watch_from_client(api, "pods")
    with pytest.raises(ApiConnectionError) as info:
        lw.list(ListOptions(read_timeout=0.2))
    assert info.value.timeout is True


def test_for_resource_builtin_custom_and_discovery(server, api):
    lw = list_watch_for_resource(api, "apps", "v1", "deployments")
    assert lw.resource is lookup("deployments")
    assert server.requests == []  # built in: no discovery
    lw = list_watch_for_resource(api, "example.com", "v1", "widgets", kind="Widget",
                                namespaced=False)
    assert lw.resource == Resource("example.com", "v1", "widgets", "Widget", False)
    assert server.requests == []
    server.status(200, json.dumps({"kind": "APIResourceList", "groupVersion": "example.com/v1",
                                   "resources": [{"name": "gadgets", "kind": "Gadget",
                                                  "namespaced": True},
                                                 {"name": "widgets", "kind": "Widget",
                                                  "namespaced": False}]}).encode())
    lw = list_watch_for_resource(api, "example.com", "v1", "widgets", namespace="ns")
    assert lw.resource == Resource("example.com", "v1", "widgets", "Widget", False)
    assert server.requests[0][1] == "/apis/example.com/v1"
    server.status(200, b'{"metadata":{"resourceVersion":"9"},"items":[]}')
    assert lw.list(ListOptions()).resource_version == "9"
    assert server.requests[1][1] == "/apis/example.com/v1/widgets"  # cluster-scoped path


def test_for_resource_discovery_failure_falls_back(server, api, caplog):
    server.status(404, b'{"kind":"Status","code":404,"reason":"NotFound","message":"nope"}')
    with caplog.at_level("WARNING", logger="informers.client.list_watch_client"):
        lw = list_watch_for_resource(api, "example.com", "v1", "things", namespace="ns")
    assert lw.resource == Resource("example.com", "v1", "things", "", True)
    assert "discovery of things.example.com/v1 failed" in caplog.records[0].getMessage()


def test_hand_made_list_watch():
    calls = []

    class Events:
        def __iter__(self):
            return iter([WatchEvent("ADDED", {"metadata": {"name": "x"}})])

        def close(self):
            calls.append("close")

    lw = ListWatch(lambda o: ListResult([], o.resource_version or "", None),
                   lambda o: Events())
    assert lw.resource is None
    assert lw.list(ListOptions(resource_version="4")).resource_version == "4"
    w = lw.watch(ListOptions())
    assert [e.type for e in w] == ["ADDED"]
    w.close()
    assert calls == ["close"]
    assert repr(lw) == "ListWatch(custom)"


MANAGED = [{"manager": "kubelet", "operation": "Update", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {'k:{"type":"Ready"}': {}}}}]


def _pod_with_managed_fields(name: str, rv: str) -> dict:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv,
                                        "managedFields": MANAGED}, "spec": {"nodeName": "n"}}


def test_drop_managed_fields_on_lists_and_watch_lines(server, api):
    items = [_pod_with_managed_fields("a", "1"), _pod_with_managed_fields("b", "2")]
    body = json.dumps({"kind": "PodList", "metadata": {"resourceVersion": "2"}, "items": items},
                      separators=(",", ":")).encode()
    line = json.dumps({"type": "MODIFIED", "object": _pod_with_managed_fields("a", "3")},
                      separators=(",", ":")).encode() + b"\n"
    server.status(200, body)
    server.chunked([line[:50], line[50:]])
    server.status(200, body)
    server.chunked([line])
    stripped = [{"kind": "Pod", "metadata": {"name": n, "namespace": "ns", "resourceVersion": rv},
                 "spec": {"nodeName": "n"}} for n, rv in (("a", "1"), ("b", "2"), ("a", "3"))]
    lw = list_watch_from_client(api, "pods", drop_managed_fields=True)
    assert lw.drop_managed_fields and lw.supports_drop_managed_fields
    assert lw.list(ListOptions()).items == stripped[:2]
    assert [e.object for e in lw.watch(ListOptions(resource_version="2"))] == stripped[2:]
    # The default keeps them, byte for byte.
    plain = list_watch_from_client(api, "pods")
    assert not plain.drop_managed_fields
    assert plain.list(ListOptions()).items == items
    assert [e.object for e in plain.watch(ListOptions(resource_version="2"))] == [
        _pod_with_managed_fields("a", "3")]


def test_with_drop_managed_fields_is_a_copy(server, api):
    lw = list_watch_from_client(api, "pods", namespace="ns", label_selector="app=web")
    on = lw.with_drop_managed_fields()
    assert (on.drop_managed_fields, lw.drop_managed_fields) == (True, False)
    assert on is not lw and on.resource == lw.resource
    assert not on.with_drop_managed_fields(False).drop_managed_fields
    assert on.drop_managed_fields  # unchanged by its own copy
    server.status(200, b'{"metadata":{"resourceVersion":"1"},"items":[]}')
    assert on.list(ListOptions()) == ListResult([], "1", None, None)
    assert server.requests[0][1] == "/api/v1/namespaces/ns/pods?labelSelector=app%3Dweb"
    custom = list_watch_for_resource(api, "example.com", "v1", "things", kind="Thing",
                                    namespaced=True, drop_managed_fields=True)
    assert custom.drop_managed_fields
    hand_made = ListWatch(lambda o: ListResult([], ""), lambda o: iter(()))
    assert not hand_made.supports_drop_managed_fields and not hand_made.drop_managed_fields
    assert hand_made.with_drop_managed_fields(False) is hand_made
    with pytest.raises(ValueError, match="cannot drop managedFields"):
        hand_made.with_drop_managed_fields()


def test_custom_resource_on_the_embedded_server():
    from informers.testing import ApiServer

    with ApiServer() as srv:
        srv.register_resource("example.com", "v1", "widgets", "Widget", namespaced=True)
        srv.create({"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "w", "namespace": "default"}})
        api = srv.api_client()
        try:
            lw = list_watch_for_resource(api, "example.com", "v1", "widgets", namespace="default")
            assert lw.resource == Resource("example.com", "v1", "widgets", "Widget", True)
            listed = lw.list(ListOptions())
            assert [(o["kind"], o["metadata"]["name"]) for o in listed.items] == [("Widget", "w")]
            stream = lw.watch(ListOptions(resource_version=listed.resource_version))
            srv.wait_for_watches(1)
            srv.delete("widgets", "default", "w")
            event = next(iter(stream))
            stream.close()
            assert (event.type, event.object["metadata"]["name"]) == ("DELETED", "w")
            assert [(r.verb, r.path) for r in srv.requests] == [
                ("", "/apis/example.com/v1"),
                ("list", "/apis/example.com/v1/namespaces/default/widgets"),
                ("watch", "/apis/example.com/v1/namespaces/default/widgets"),
            ]
        finally:
            api.close()


# -- CancelToken and aborting requests ----------------------------------------------------------


def test_cancel_token_calls_each_registered_callback_once():
    token = CancelToken()
    calls: list[str] = []
    remove_a = token.on_cancel(lambda: calls.append("a"))
    remove_b = token.on_cancel(lambda: calls.append("b"))
    assert remove_b() is True  # removed before cancel: never called
    assert remove_b() is False
    assert not token.is_cancelled() and calls == []
    token.cancel()
    token.cancel()  # idempotent
    assert token.is_cancelled() and calls == ["a"]
    assert remove_a() is False  # it was called: whatever it aborted must not be reused
    remove_c = token.on_cancel(lambda: calls.append("c"))  # after cancel: called at once
    assert calls == ["a", "c"]
    assert remove_c() is False


def test_cancel_token_logs_a_failing_callback_and_calls_the_others(caplog):
    token = CancelToken()
    calls: list[str] = []

    def fail() -> None:
        raise RuntimeError("boom")

    token.on_cancel(fail)
    token.on_cancel(lambda: calls.append("after"))
    with caplog.at_level("ERROR", logger="informers.list_watch"):
        token.cancel()
    assert calls == ["after"]
    assert [r.getMessage().startswith("cancel callback") for r in caplog.records] == [True]


def _call_in_thread(fn):
    box: dict = {}

    def target() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box


def _wait_requests(server: RawServer, n: int) -> None:
    deadline = time.monotonic() + 5
    while len(server.requests) < n:
        assert time.monotonic() < deadline, server.requests
        time.sleep(0.005)


def _wait_in_body_read(thread: threading.Thread) -> None:
    """Wait until ``thread`` is reading a response body (urllib3 ``HTTPResponse._fp_read``)."""
    deadline = time.monotonic() + 5
    while True:
        frame = sys._current_frames().get(thread.ident)
        while frame is not None:
            code = frame.f_code
            if code.co_name == "_fp_read" and code.co_filename.endswith("response.py"):
                return
            frame = frame.f_back
        assert time.monotonic() < deadline, "the call never started reading the body"
        time.sleep(0.005)


def test_cancel_aborts_a_list_waiting_for_its_headers(server, api):
    server.handlers.put(lambda conn: server.release.wait(10))  # never answers in time
    token = CancelToken()
    lw = list_watch_from_client(api, "pods")
    t, box = _call_in_thread(lambda: lw.list(ListOptions(cancel=token)))
    _wait_requests(server, 1)
    start = time.monotonic()
    token.cancel()
    t.join(5)
    assert not t.is_alive()
    assert time.monotonic() - start < 1.0
    err = box["error"]
    assert isinstance(err, ApiConnectionError)
    assert (str(err), err.refused, err.timeout) == ("list v1/pods: cancelled", False, False)


def test_cancel_aborts_a_list_reading_its_body(server, api):
    def half(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100000\r\n\r\n{\"items\":[")
        server.release.wait(10)
    server.handlers.put(half)
    token = CancelToken()
    lw = list_watch_from_client(api, "pods")
    t, box = _call_in_thread(lambda: lw.list(ListOptions(cancel=token)))
    _wait_in_body_read(t)
    start = time.monotonic()
    token.cancel()
    t.join(5)
    assert not t.is_alive()
    assert time.monotonic() - start < 1.0
    assert str(box["error"]) == "list v1/pods: cancelled"


def test_cancel_aborts_a_watch_waiting_for_its_headers(server, api):
    server.handlers.put(lambda conn: server.release.wait(10))
    token = CancelToken()
    lw = list_watch_from_client(api, "pods")
    t, box = _call_in_thread(lambda: lw.watch(ListOptions(resource_version="3", cancel=token)))
    _wait_requests(server, 1)
    token.cancel()
    t.join(5)
    assert not t.is_alive()
    assert str(box["error"]) == "watch v1/pods at rv=3: cancelled"


def test_a_cancelled_token_sends_nothing(server, api):
    token = CancelToken()
    token.cancel()
    lw = list_watch_from_client(api, "pods")
    with pytest.raises(ApiConnectionError, match=r"^list v1/pods: cancelled$"):
        lw.list(ListOptions(cancel=token))
    with pytest.raises(ApiConnectionError, match=r"^watch v1/pods at rv=\(latest\): cancelled$"):
        lw.watch(ListOptions(cancel=token))
    assert server.requests == []


class RecordingToken(CancelToken):
    """A CancelToken recording what each registration's removal returned."""

    def __init__(self) -> None:
        super().__init__()
        self.registered = 0
        self.removed: list[bool] = []

    def on_cancel(self, callback):
        self.registered += 1
        remove = super().on_cancel(callback)

        def recording_remove() -> bool:
            result = remove()
            self.removed.append(result)
            return result

        return recording_remove


def test_requests_with_tokens_unregister_and_keep_using_the_pooled_connection():
    from informers.testing import ApiServer

    with ApiServer() as srv:
        srv.create({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "a", "namespace": "default"}, "spec": POD_SPEC})
        api = srv.api_client()
        try:
            lw = list_watch_from_client(api, "pods")
            pool = api.rest_client.pool_manager.connection_from_url(srv.url)
            tokens = [RecordingToken() for _ in range(3)]
            assert len(lw.list(ListOptions(cancel=tokens[0])).items) == 1
            listed = lw.list(ListOptions(cancel=tokens[1]))
            assert len(listed.items) == 1
            stream = lw.watch(ListOptions(resource_version=listed.resource_version,
                                          cancel=tokens[2]))
            # each request unregistered before its connection could go back to the pool
            assert [(t.registered, t.removed) for t in tokens] == [(1, [True])] * 3
            assert (pool.num_connections, pool.num_requests) == (1, 3)  # one connection, reused
            tokens[2].cancel()  # the watch's token no longer reaches its connection...
            srv.create({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": "b", "namespace": "default"}, "spec": POD_SPEC})
            event = next(iter(stream))  # ...which still streams
            assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "b")
            stream.close()
        finally:
            api.close()
