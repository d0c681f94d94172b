"""Tests for controllers.kubelet.url_source against a local http.server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import queue
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from helpers import drain, eventually

from controllers.kubelet.errors import ManifestError, ManifestFetchError
from controllers.kubelet.pod_update import HTTP_SOURCE, SET, PodUpdate
from controllers.kubelet.url_source import URLSource, parse_headers
from informers.clock import FakeClock

NODE = "Node-1"
POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: c
    image: nginx:1.27
"""


def pod_list(*names: str, bad: bool = False) -> str:
    items: list[dict[str, Any]] = [
        {"metadata": {"name": n}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
        for n in names
    ]
    if bad:
        items.append({"metadata": {"name": "bad"}, "spec": {"containers": []}})
    return json.dumps({"apiVersion": "v1", "kind": "PodList", "items": items})


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/yaml"


@dataclass
class ManifestServer:
    """What the handler serves: ``replies`` in turn (the last one repeats)."""

    replies: list[Reply] = field(default_factory=lambda: [Reply(body=POD_YAML.encode())])
    requests: list[dict[str, str]] = field(default_factory=list)
    hang: threading.Event | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def serve(self, *replies: Reply | str) -> None:
        with self.lock:
            self.replies = [Reply(body=r.encode()) if isinstance(r, str) else r for r in replies]

    def next_reply(self, headers: dict[str, str]) -> Reply:
        with self.lock:
            self.requests.append(headers)
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


@pytest.fixture
def server() -> Iterator[ManifestServer]:
    state = ManifestServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            reply = state.next_reply(dict(self.headers.items()))
            if state.hang is not None:
                state.hang.wait(10)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/pods"
    try:
        yield state
    finally:
        if state.hang is not None:
            state.hang.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def q() -> queue.Queue[PodUpdate]:
    return queue.Queue()


def make_source(server: ManifestServer, q: queue.Queue[PodUpdate], **kwargs: Any) -> URLSource:
    kwargs.setdefault("retry_attempts", 1)
    return URLSource(server.url, kwargs.pop("headers", None), NODE, 20.0, q, **kwargs)


def names(update: PodUpdate) -> list[str]:
    assert (update.op, update.source) == (SET, HTTP_SOURCE)
    return sorted(p["metadata"]["name"] for p in update.pods)


# -- content -------------------------------------------------------------------------------


def test_single_pod(server, q):
    src = make_source(server, q)
    src.extract_from_url()
    (update,) = drain(q)
    assert names(update) == ["web-node-1"]
    pod = update.pods[0]
    assert pod["spec"]["nodeName"] == NODE
    assert "tolerations" not in pod["spec"]  # URL pods get no NoExecute toleration


def test_pod_list(server, q):
    server.serve(pod_list("a", "b"))
    make_source(server, q).extract_from_url()
    assert [names(u) for u in drain(q)] == [["a-node-1", "b-node-1"]]


def test_empty_pod_list_sends_an_empty_set(server, q):
    server.serve(pod_list())
    make_source(server, q).extract_from_url()
    assert [names(u) for u in drain(q)] == [[]]


def test_headers_are_sent(server, q):
    headers = parse_headers(["X-Token:abc", "X-Multi: one", "X-Multi:two"])
    assert headers == {"X-Token": "abc", "X-Multi": "one, two"}
    make_source(server, q, headers=headers).extract_from_url()
    sent = server.requests[0]
    assert (sent["X-Token"], sent["X-Multi"]) == ("abc", "one, two")


@pytest.mark.parametrize("bad", ["novalue", ":value", ""])
def test_bad_header_flags_are_refused(bad):
    with pytest.raises(ValueError, match="not in the form key:value"):
        parse_headers([bad])


def test_unchanged_body_is_short_circuited(server, q):
    src = make_source(server, q)
    src.extract_from_url()
    src.extract_from_url()
    assert len(server.requests) == 2
    assert [names(u) for u in drain(q)] == [["web-node-1"]]
    server.serve(pod_list("a"))
    src.extract_from_url()
    assert [names(u) for u in drain(q)] == [["a-node-1"]]


def test_empty_body_sends_an_empty_set_and_an_error(server, q):
    src = make_source(server, q)
    src.extract_from_url()
    server.serve("")
    with pytest.raises(ManifestError) as info:
        src.extract_from_url()
    assert str(info.value) == f"{server.url}: zero-length data received"
    server.serve(POD_YAML)  # the same body as before the empty one is sent again
    src.extract_from_url()
    assert [names(u) for u in drain(q)] == [["web-node-1"], [], ["web-node-1"]]


# -- failures keep the previous state ----------------------------------------------------------


def test_server_error_sends_nothing(server, q):
    src = make_source(server, q)
    src.extract_from_url()
    drain(q)
    server.serve(Reply(status=500, body=b"boom"))
    with pytest.raises(ManifestFetchError) as info:
        src.extract_from_url()
    assert info.value.status_code == 500
    assert info.value.url == server.url
    assert str(info.value) == f"{server.url}: 500 Internal Server Error"
    assert drain(q) == []


def test_not_found_is_not_retried(server, q):
    server.serve(Reply(status=404, body=b"no"))
    src = make_source(server, q, retry_attempts=3)
    with pytest.raises(ManifestFetchError, match="404 Not Found"):
        src.extract_from_url()
    assert len(server.requests) == 1


def test_server_errors_are_retried_with_backoff_on_the_clock(server, q):
    clock = FakeClock()
    server.serve(Reply(status=503), Reply(status=500), Reply(body=POD_YAML.encode()))
    src = make_source(server, q, retry_attempts=3, clock=clock)
    errors: list[BaseException] = []

    def poll() -> None:
        try:
            src.extract_from_url()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=poll)
    t.start()
    assert eventually(lambda: clock.next_deadline() == 0.5)  # first retry after 0.5 s
    assert len(server.requests) == 1
    clock.step(0.5)
    assert eventually(lambda: clock.next_deadline() == 1.5)  # then 1 s more
    assert len(server.requests) == 2
    clock.step(1.0)
    t.join(5)
    assert errors == []
    assert [names(u) for u in drain(q)] == [["web-node-1"]]
    assert len(server.requests) == 3


def test_timeout(server, q):
    server.hang = threading.Event()
    src = make_source(server, q, timeout=0.2)
    with pytest.raises(ManifestFetchError, match=r"timed out after 0\.2s") as info:
        src.extract_from_url()
    assert info.value.status_code is None
    assert drain(q) == []


def test_connection_refused(q):
    src = URLSource("http://127.0.0.1:9/pods", None, NODE, 20.0, q, retry_attempts=1)
    with pytest.raises(ManifestFetchError) as info:
        src.extract_from_url()
    assert str(info.value).startswith("http://127.0.0.1:9/pods: ")


def test_invalid_pod_sends_nothing_and_names_the_url(server, q):
    src = make_source(server, q)
    src.extract_from_url()
    drain(q)
    server.serve(POD_YAML.replace("  name: web\n", ""))
    with pytest.raises(ManifestError) as info:
        src.extract_from_url()
    assert str(info.value) == f"{server.url}: invalid pod: name is needed for the pod"
    assert drain(q) == []


def test_pod_list_with_one_invalid_item_is_rejected(server, q):
    server.serve(pod_list("a", bad=True))
    with pytest.raises(ManifestError) as info:
        make_source(server, q).extract_from_url()
    assert info.value.source == server.url
    assert info.value.reason == "items[1]: invalid pod: [spec.containers: Required value]"
    assert drain(q) == []


def test_html_page_is_a_clear_error_and_is_not_repeated(server, q):
    src = make_source(server, q)
    src.extract_from_url()
    drain(q)
    page = "<!DOCTYPE html><html><body>Login required</body></html>"
    server.serve(Reply(body=page.encode(), content_type="text/html"))
    with pytest.raises(ManifestError) as info:
        src.extract_from_url()
    assert str(info.value) == (
        f"{server.url}: received an HTML page, not a Pod or PodList manifest; check the "
        "manifest URL")
    src.extract_from_url()  # same body again: silently ignored, as the kubelet does
    assert drain(q) == []


def test_yaml_served_as_html_still_works(server, q):
    server.serve(Reply(body=POD_YAML.encode(), content_type="text/html"))
    make_source(server, q).extract_from_url()
    assert [names(u) for u in drain(q)] == [["web-node-1"]]


def test_poll_throttles_failure_warnings(server, q, caplog):
    server.serve(Reply(status=500))
    src = make_source(server, q)
    with caplog.at_level(logging.DEBUG, logger="controllers.kubelet.url_source"):
        results = [src.poll() for _ in range(5)]
    assert results == [False] * 5
    failures = [r for r in caplog.records if "failed to read pods" in r.getMessage()]
    assert [r.levelname for r in failures] == ["WARNING"] * 4 + ["DEBUG"]
    assert "further failures are logged at debug level" in failures[3].getMessage()
    assert isinstance(src.last_error, ManifestFetchError)
    server.serve(POD_YAML)
    with caplog.at_level(logging.INFO, logger="controllers.kubelet.url_source"):
        assert src.poll() is True
    assert "successfully read pods from URL" in caplog.text
    assert src.last_error is None


# -- thread ----------------------------------------------------------------------------------


def test_run_polls_at_once_then_every_period(server, q):
    clock = FakeClock()
    src = make_source(server, q, clock=clock)
    stop = threading.Event()
    src.start(stop)
    try:
        assert names(q.get(timeout=5)) == ["web-node-1"]
        server.serve(pod_list("a"))
        assert eventually(lambda: clock.next_deadline() == 20.0)
        clock.step(20.0)
        assert names(q.get(timeout=5)) == ["a-node-1"]
    finally:
        stop.set()
        src.join(5)
    assert src._thread is not None and not src._thread.is_alive()


# -- hostile servers -----------------------------------------------------------------------------


def alias_bomb(levels: int = 8) -> str:
    """A static pod whose ``args`` is an alias nested ``levels`` deep (9**levels strings)."""
    names = "abcdefghijklmnop"
    lines = ["apiVersion: v1", "kind: Pod", "metadata:", "  name: bomb", "  annotations:",
             '    l0: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"    l{i}: &{names[i]} [" + ",".join([f"*{names[i - 1]}"] * 9) + "]")
    lines += ["spec:", "  containers:", "  - name: c", "    image: busybox",
              f"    args: *{names[levels - 1]}"]
    return "\n".join(lines) + "\n"


@pytest.mark.timeout(20)
def test_alias_bomb_is_rejected_quickly_and_the_last_pods_stay(server, q):
    src = make_source(server, q)
    src.extract_from_url()
    drain(q)
    server.serve(alias_bomb(8))
    started = time.monotonic()
    with pytest.raises(ManifestError) as info:
        src.extract_from_url()
    assert time.monotonic() - started < 1.0
    assert info.value.reason.startswith(
        "couldn't parse as pod: document contains excessive aliasing (line ")
    assert drain(q) == []


def test_pod_list_with_a_few_anchors_loads(server, q):
    server.serve(
        "apiVersion: v1\nkind: PodList\nitems:\n"
        "- &p {metadata: {name: a}, spec: {containers: [{name: c, image: 'x:1'}]}}\n"
        "- {<<: *p, metadata: {name: b}}\n")
    make_source(server, q).extract_from_url()
    (update,) = drain(q)
    assert names(update) == ["a-node-1", "b-node-1"]
    a, b = update.pods
    assert a["spec"]["containers"] is not b["spec"]["containers"]


SECRET_VALUE = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(("body", "content_type", "reason"), [
    (f"AWS_SECRET_ACCESS_KEY={SECRET_VALUE}\n", "text/plain",
     "received data that couldn't be parsed as single (couldn't parse as Pod: expected a Pod "
     "object, got a string) or multiple pods (couldn't parse as PodList: expected a PodList "
     "object, got a string)"),
    (f"<html><body>token={SECRET_VALUE}</body></html>", "text/html",
     "received an HTML page, not a Pod or PodList manifest; check the manifest URL"),
    (f"password: '{SECRET_VALUE}\n", "application/yaml",
     "couldn't parse as pod: while scanning a quoted scalar; found unexpected end of stream "
     "(line 2, column 1)"),
], ids=["env-file", "html", "unclosed-quote"])
def test_bodies_are_never_quoted_in_errors_or_logs(server, q, caplog, body, content_type,
                                                    reason):
    server.serve(Reply(body=body.encode(), content_type=content_type))
    src = make_source(server, q)
    with caplog.at_level(logging.DEBUG):
        assert src.poll() is False
    assert isinstance(src.last_error, ManifestError)
    assert src.last_error.reason == reason
    assert f"failed to read pods from URL: {server.url}: {reason}" in caplog.text
    assert SECRET_VALUE not in caplog.text and SECRET_VALUE[:8] not in caplog.text


@pytest.mark.parametrize(("answer", "reason"), [
    (f"AWS_SECRET_ACCESS_KEY={SECRET_VALUE}\r\n\r\n".encode(),
     "the answer is not HTTP (bad status line)"),
    (f"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{SECRET_VALUE}\r\n\r\n".encode(),
     "reading the body failed: ('Connection broken: IncompleteRead(0 bytes read)', "
     "IncompleteRead(0 bytes read))"),
], ids=["not-http", "chunk-length"])
def test_what_a_broken_server_sends_is_never_quoted(q, caplog, answer, reason):
    listener = socket.create_server(("127.0.0.1", 0))

    def answer_once() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(answer)

    server = threading.Thread(target=answer_once)
    server.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/pods"
    try:
        src = URLSource(url, None, NODE, 20.0, q, retry_attempts=1)
        with caplog.at_level(logging.DEBUG):
            assert src.poll() is False
    finally:
        server.join()
        listener.close()
    assert str(src.last_error) == f"{url}: {reason}"
    assert SECRET_VALUE not in caplog.text and SECRET_VALUE[:8] not in caplog.text


@dataclass
class Drip:
    """A raw HTTP server that sends its answer one byte every ``interval`` seconds."""

    part: str = "headers"
    interval: float = 0.05
    url: str = ""
    connected: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    sent: int = 0
    cut: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def drip() -> Iterator[Drip]:
    state = Drip()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    state.url = f"http://127.0.0.1:{listener.getsockname()[1]}/pods"
    handlers: list[threading.Thread] = []

    def handle(conn: socket.socket) -> None:
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                request += chunk
            if state.part == "headers":
                answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/yaml\r\n" + (
                    b"X-Drip: " + b"a" * 100_000)
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                answer = b"#" * 100_000
            state.connected.set()
            for i in range(len(answer)):
                try:
                    conn.sendall(answer[i:i + 1])
                except OSError:
                    state.cut.set()
                    return
                state.sent += 1
                if state.release.wait(state.interval):
                    return

    def serve() -> None:
        while not state.release.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            thread = threading.Thread(target=handle, args=(conn,), daemon=True)
            handlers.append(thread)
            thread.start()

    acceptor = threading.Thread(target=serve, daemon=True)
    acceptor.start()
    try:
        yield state
    finally:
        state.release.set()
        acceptor.join()
        for thread in handlers:
            thread.join()
        listener.close()


def url_source_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("kubelet-url-source")]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("part", ["headers", "body"])
def test_a_dripping_server_is_cut_at_the_whole_request_deadline(drip, q, part):
    """kubelet http.go: ``http.Client{Timeout: 10s}`` bounds headers and body together."""
    drip.part = part
    clock = FakeClock()
    src = URLSource(drip.url, None, NODE, 20.0, q, clock=clock, retry_attempts=1)
    errors: list[Exception] = []

    def poll() -> None:
        try:
            src.extract_from_url()
        except Exception as exc:
            errors.append(exc)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        assert drip.connected.wait(5)
        assert eventually(lambda: drip.sent >= 3)
        assert clock.wait_for_waiters(1, timeout=2)
        clock.step(9.9)
        time.sleep(0.2)  # the exchange goes on before the deadline
        assert poller.is_alive()
        clock.step(0.1)
        poller.join(2)
        assert not poller.is_alive()
        assert drip.cut.wait(2)  # the server sees the connection go
    finally:
        drip.release.set()
        poller.join()
    (error,) = errors
    assert isinstance(error, ManifestFetchError)
    assert str(error) == f"{drip.url}: timed out after 10s"
    assert drain(q) == []
    assert url_source_threads() == []


@pytest.mark.timeout(30)
def test_stop_cuts_a_request_in_flight_and_every_thread_is_joined(drip, q, caplog):
    src = URLSource(drip.url, None, NODE, 20.0, q)
    stop = threading.Event()
    with caplog.at_level(logging.DEBUG, logger="controllers.kubelet.url_source"):
        src.start(stop)
        try:
            assert drip.connected.wait(5)
            assert eventually(lambda: drip.sent >= 3)
            stop.set()
            started = time.monotonic()
            src.join(2)
            assert src._thread is not None and not src._thread.is_alive()
            assert time.monotonic() - started < 1.0
            assert drip.cut.wait(2)
        finally:
            stop.set()
            drip.release.set()
            src.join()
    assert url_source_threads() == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "ended by stop" in caplog.text
