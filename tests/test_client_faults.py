"""The client against servers that answer badly: a garbled watch event, an event of an unknown
type, a ``Status`` in a ``200 OK`` (a broken proxy), and how the reflector recovers from each.

Black box: a raw HTTP server (tests/faulty_http.py) sends the bytes; the library's own
ListWatch, stream, reflector and informer read them. The watch-stream cases follow client-go:
``watch.StreamWatcher`` (apimachinery ``pkg/watch/streamwatcher.go``) turns a decode failure
into one ERROR event built by ``errors.NewClientErrorReporter(500, "GET",
"ClientWatchDecoding")`` and ends the watch; the ``rest/watch`` ``Decoder`` rejects an event of
an unknown type as a decode failure; the reflector (``tools/cache/reflector.go``
``handleAnyWatch``/``watch``) ends the watch with the event's error and relists at its last
synced version. A list answer that decodes as a ``Status`` other than ``Success`` is that error
(``rest.Result.Into``).
"""

from __future__ import annotations

import gc
import logging
import random
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faulty_http import (
    BlackHoleProxy,
    ScriptedApiServer,
    event_line,
    pod,
    pod_list,
    status_body,
)
from helpers import wait_until
from kubernetes import client as k8s

from informers.backoff import Backoff
from informers.client import api_call, list_watch_from_client
from informers.errors import StatusError
from informers.indexer import Indexer
from informers.list_watch import DEFAULT_WATCH_READ_TIMEOUT, ListOptions, watch_read_timeout
from informers.reflector import Reflector
from informers.reflector_options import ReflectorOptions
from informers.shared_informer import SharedIndexInformer

DECODE_PREFIX = "unable to decode an event from the watch stream: "


@pytest.fixture
def raw() -> Iterator[ScriptedApiServer]:
    with ScriptedApiServer() as server:
        yield server


@pytest.fixture
def api(raw: ScriptedApiServer) -> Iterator[Any]:
    cfg = k8s.Configuration()
    cfg.host = raw.url
    client = k8s.ApiClient(cfg)
    yield client
    client.close()


def fast_options(**kwargs: Any) -> ReflectorOptions:
    backoff = Backoff(initial=0.01, cap=0.05, rng=random.Random(1))
    return ReflectorOptions(backoff=backoff, rng=random.Random(2), **kwargs)


class Running:
    """A reflector into an Indexer, run on a thread until :meth:`stop`."""

    def __init__(self, api: Any, **options: Any) -> None:
        self.store = Indexer()
        self.reflector = Reflector(list_watch_from_client(api, "pods"), self.store,
                                   fast_options(**options), name="pods")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.reflector.run, args=(self._stop,))
        self._thread.start()

    def keys(self) -> list[str]:
        return sorted(self.store.list_keys())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        assert not self._thread.is_alive()


def client_decoding_status(message: str) -> dict[str, Any]:
    """What client-go's ``NewClientErrorReporter(500, "GET", "ClientWatchDecoding")``
    ``.AsObject(fmt.Errorf("unable to decode an event from the watch stream: %v", err))``
    makes (apimachinery ``errors.go``)."""
    text = DECODE_PREFIX + message
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 500,
        "reason": "InternalError",
        "message": f'an error on the server ("{text}") has prevented the request from '
                   "succeeding",
        "details": {"causes": [{"reason": "UnexpectedServerResponse", "message": text},
                               {"reason": "ClientWatchDecoding", "message": text}]},
    }


# -- item 2: a garbled watch event ends the watch; the reflector relists -------------------------

CUT_DELETE_OF_A = b'{"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1","metadata":{'\
                  b'"name":"a","namespace":"ns","resourceVersion":"11"\n'


def test_a_cut_deleted_event_is_not_lost(raw, api):
    """The issue's scenario: list a, b; the watch sends a cut DELETED of a, then ADDED d. The
    watch must end at the garbled line and the relist must drop a."""
    raw.list_answer(pod_list("10", pod("a", "5"), pod("b", "6")))
    raw.watch_answer([CUT_DELETE_OF_A, event_line("ADDED", pod("d", "12"))])
    raw.list_answer(pod_list("12", pod("b", "6"), pod("d", "12")))
    r = Running(api)
    try:
        wait_until(lambda: r.keys() == ["ns/b", "ns/d"])
        wait_until(lambda: len(raw.requests) >= 4)
    finally:
        r.stop()
    # client-go: the ERROR event ends the watch; ListAndWatch returns; the relist asks for the
    # last synced version (10: the garbled line moved nothing, ADDED d was never read).
    assert [(verb, _rv(target)) for verb, target in raw.requests[:4]] == [
        ("list", "0"), ("watch", "10"), ("list", "10"), ("watch", "12")]
    assert r.reflector.metrics.watch_errors_total == 1
    err = r.reflector.metrics.last_error
    assert isinstance(err, StatusError) and (err.code, err.reason) == (500, "InternalError")


def test_an_unknown_event_type_ends_the_watch(raw, api, caplog):
    """client-go ``rest/watch`` ``Decoder``: "got invalid watch event type: %v" is a decode
    failure, so the watch ends and the reflector relists."""
    raw.list_answer(pod_list("10", pod("a", "5")))
    raw.watch_answer([event_line("SURPRISE", pod("a", "11")),
                      event_line("ADDED", pod("d", "12"))])
    raw.list_answer(pod_list("12", pod("d", "12")))
    with caplog.at_level(logging.WARNING):
        r = Running(api)
        try:
            wait_until(lambda: r.keys() == ["ns/d"])
            wait_until(lambda: len(raw.requests) >= 4)
        finally:
            r.stop()
    assert [(verb, _rv(target)) for verb, target in raw.requests[:4]] == [
        ("list", "0"), ("watch", "10"), ("list", "10"), ("watch", "12")]
    warnings = [rec.getMessage() for rec in caplog.records if rec.name == "informers.reflector"]
    assert warnings == [
        "pods: watch of Pod ended with: 500 InternalError: an error on the server "
        f'("{DECODE_PREFIX}got invalid watch event type: SURPRISE") has prevented the request '
        "from succeeding"]


def test_stream_watcher_error(raw, api):
    """apimachinery ``TestStreamWatcherError``: a decode error gives one Error event, then the
    result channel is closed (here: nothing after it is read, though the server sends more)."""
    raw.watch_answer([event_line("ADDED", pod("a", "2")), b"{oops\n",
                      event_line("ADDED", pod("b", "3"))], hold=False)
    stream = list_watch_from_client(api, "pods").watch(ListOptions(resource_version="1"))
    events = list(stream)
    assert [e.type for e in events] == ["ADDED", "ERROR"]
    error = events[1].object
    message = error["details"]["causes"][0]["message"]
    assert message.startswith(DECODE_PREFIX + "watch line is not JSON: ")
    assert error == client_decoding_status(message[len(DECODE_PREFIX):])
    assert (stream.events, stream.decode_errors, stream.unknown_events) == (1, 1, 0)
    assert stream.error is None
    assert stream.closed


@pytest.mark.parametrize(("line", "problem"), [
    (b'["not","an","event"]', "watch line is not a JSON object"),
    (b'{"kind":"Pod","metadata":{"name":"a"}}',
     "watch event without a string 'type' and an object 'object'"),
    (b'{"type":"ADDED","object":"a"}',
     "watch event without a string 'type' and an object 'object'"),
])
def test_json_that_is_no_event_ends_the_stream(raw, api, line, problem):
    raw.watch_answer([line + b"\n", event_line("ADDED", pod("b", "3"))], hold=False)
    stream = list_watch_from_client(api, "pods").watch(ListOptions(resource_version="1"))
    assert [(e.type, e.object) for e in stream] == [("ERROR", client_decoding_status(problem))]


@pytest.mark.parametrize("etype", ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"])
def test_decoder(raw, api, etype):
    """client-go ``rest/watch`` ``TestDecoder``: each of the five event types decodes; after the
    source ends, there is nothing more (and no error)."""
    obj = pod("foo", "2")
    raw.watch_answer([event_line(etype, obj)], hold=False)
    stream = list_watch_from_client(api, "pods").watch(ListOptions(resource_version="1"))
    assert [(e.type, e.object) for e in stream] == [(etype, obj)]
    assert stream.error is None


def test_a_cut_last_line_at_the_end_of_the_body_is_a_normal_end(raw, api):
    """apimachinery ``StreamWatcher.receive``: ``io.ErrUnexpectedEOF`` (the body ended inside
    an event) closes the watch without an ERROR event; the reflector re-watches from its last
    version, which sends the event again."""
    raw.watch_answer([event_line("ADDED", pod("a", "2")), b'{"type":"ADDED","obj'], hold=False)
    stream = list_watch_from_client(api, "pods").watch(ListOptions(resource_version="1"))
    assert [e.type for e in stream] == ["ADDED"]
    assert (stream.error, stream.decode_errors) == (None, 0)


def test_a_status_instead_of_an_event_ends_the_watch(raw, api):
    """A 200 watch whose body is a bare ``Status`` (a broken proxy): not a ``WatchEvent``, so
    client-go's decoder fails ("unable to decode to metav1.WatchEvent") and the watch ends
    with the client's 500."""
    raw.watch_answer([status_body("Failure", 503, "ServiceUnavailable", "upstream down")
                      + b"\n"], hold=False)
    stream = list_watch_from_client(api, "pods").watch(ListOptions(resource_version="1"))
    events = list(stream)
    assert [e.type for e in events] == ["ERROR"]
    assert events[0].object == client_decoding_status(
        "unable to decode to metav1.WatchEvent: got a Status "
        "(Failure, 503 ServiceUnavailable: upstream down)")


# -- item 4: a Status in a 200 list is an error ----------------------------------------------------


def test_list_200_with_a_failure_status_is_that_error(raw, api):
    """client-go ``rest.Result.Into``: "any status besides StatusSuccess is considered an
    error" (``errors.FromObject``: the Status as it is)."""
    raw.list_answer(status_body("Failure", 503, "ServiceUnavailable", "no healthy upstream"))
    with pytest.raises(StatusError) as info:
        list_watch_from_client(api, "pods").list(ListOptions(resource_version="0"))
    assert (info.value.code, info.value.reason, info.value.message) == (
        503, "ServiceUnavailable", "no healthy upstream")
    assert str(info.value) == "503 ServiceUnavailable: no healthy upstream"


def test_list_200_with_a_status_without_status_field_is_an_error(raw, api):
    # "" != "Success": an error too; FromObject keeps the Status's (absent) code.
    raw.list_answer(status_body("", None, "", "proxy says no"))
    with pytest.raises(StatusError) as info:
        list_watch_from_client(api, "pods").list(ListOptions())
    assert (info.value.code, info.value.message) == (0, "proxy says no")


def test_list_200_with_a_success_status_is_an_empty_list(raw, api):
    # rest.Result.Into: a Success Status is no error, and the list is left empty.
    raw.list_answer(status_body("Success", 200, "", ""))
    result = list_watch_from_client(api, "pods").list(ListOptions())
    assert (result.items, result.resource_version) == ([], "")


def test_a_write_answered_2xx_with_a_failure_status_is_that_error(raw, api):
    # rest.Result.Into applies to every request, writes included.
    raw.list_answer(status_body("Failure", 409, "Conflict", "proxy: stale"), code=201)
    with pytest.raises(StatusError) as info:
        api_call(api, "POST", "/api/v1/namespaces/ns/configmaps", {"metadata": {"name": "x"}})
    assert (info.value.code, info.value.reason) == (409, "Conflict")
    raw.list_answer(status_body("Success", 200, "", ""))
    assert api_call(api, "DELETE", "/api/v1/namespaces/ns/configmaps/x")["status"] == "Success"


def test_informer_does_not_sync_on_a_status_in_a_200_list(raw, api, caplog):
    """The issue: a broken proxy's ``200`` + ``Status`` was cached as an empty list, and the
    informer synced with nothing. Now the list fails, is logged as client-go's
    ``DefaultWatchErrorHandler`` logs a ``ListAndWatch`` list failure ("failed to list <type>:
    <err>", ``reflector.go`` ``list``), and the informer syncs only on the real list."""
    raw.list_answer(status_body("Failure", 503, "ServiceUnavailable", "no healthy upstream"))
    raw.list_answer(pod_list("7", pod("a", "5")))
    informer = SharedIndexInformer(list_watch_from_client(api, "pods"),
                                   reflector_options=fast_options())
    stop = threading.Event()
    with caplog.at_level(logging.ERROR, logger="informers.reflector"):
        thread = threading.Thread(target=informer.run, args=(stop,))
        thread.start()
        try:
            wait_until(informer.has_synced)
            assert sorted(informer.get_store().list_keys()) == ["ns/a"]
            wait_until(lambda: len(raw.requests) >= 3)
        finally:
            stop.set()
            thread.join(10)
    assert [(rec.levelname, rec.getMessage()) for rec in caplog.records] == [
        ("ERROR", "pods: Failed to watch Pod: failed to list Pod: 503 ServiceUnavailable: "
                  "no healthy upstream")]
    assert [verb for verb, _ in raw.requests[:3]] == ["list", "list", "watch"]


def _rv(target: str) -> str | None:
    for part in target.split("?", 1)[-1].split("&"):
        if part.startswith("resourceVersion="):
            return part.split("=", 1)[1]
    return None


# -- item 3: a dead connection is noticed by the read timeout --------------------------------------


def test_default_watch_read_timeout_is_150_seconds():
    """The default the docs state (docs/concepts.md "Faults on the wire", the
    ``DEFAULT_WATCH_READ_TIMEOUT`` and ``ReflectorOptions.read_timeout`` docstrings): 150 s for
    a watch that asks for bookmarks, whatever its ``timeoutSeconds``."""
    assert DEFAULT_WATCH_READ_TIMEOUT == 150.0
    assert ReflectorOptions().read_timeout is None  # the ListWatch's default applies
    # the reflector's watches: bookmarks and a timeout in [300, 600) s
    assert watch_read_timeout(ListOptions(allow_watch_bookmarks=True, timeout_seconds=599)) == 150
    assert watch_read_timeout(ListOptions(allow_watch_bookmarks=True, send_initial_events=True,
                                          timeout_seconds=300)) == 150
    # no bookmarks: the server may be silent until its timeout
    assert watch_read_timeout(ListOptions(timeout_seconds=599)) == 599 + 30
    assert watch_read_timeout(ListOptions()) == 3630
    assert watch_read_timeout(ListOptions(allow_watch_bookmarks=True, read_timeout=2.5)) == 2.5
    concepts = (Path(__file__).resolve().parent.parent / "docs" / "concepts.md").read_text()
    assert "so a watch silent for 150 s (`DEFAULT_WATCH_READ_TIMEOUT`)" in concepts


BLACK_HOLE_READ_TIMEOUT = 1.5  # seconds: short, so the test runs in seconds


@pytest.mark.real_apiserver
def test_a_black_holed_watch_is_noticed_and_rewatched(real_api_server):
    """A TCP proxy in front of the real kube-apiserver stops forwarding the watch's connection
    without closing it. The reflector notices by its read timeout, watches again through a
    new (working) connection from its last version, and its cache converges to the server's
    truth, including the writes made while the path was dead."""
    from servers import RealServer

    from informers.testing.client_config import api_client

    server = RealServer(real_api_server)
    ns = server.namespace
    proxy = BlackHoleProxy((real_api_server.host, real_api_server.port))
    api = api_client(f"https://127.0.0.1:{proxy.port}", real_api_server.token,
                     real_api_server.ca_file)
    store = Indexer()
    reflector = Reflector(list_watch_from_client(api, "configmaps", namespace=ns), store,
                          fast_options(read_timeout=BLACK_HOLE_READ_TIMEOUT), name="cms")
    stop = threading.Event()
    thread = threading.Thread(target=reflector.run, args=(stop,))

    def cm(name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}

    def truth() -> list[str]:
        return sorted(f"{ns}/{o['metadata']['name']}" for o in server.list("configmaps", ns))

    try:
        server.create(cm("a"), namespace=ns)
        thread.start()
        wait_until(lambda: f"{ns}/a" in store.list_keys(), 10)
        server.create(cm("b"), namespace=ns)  # seen through the watch: it is open and working
        wait_until(lambda: f"{ns}/b" in store.list_keys(), 10)
        watches = reflector.metrics.watches_total
        connections = proxy.connections

        assert proxy.black_hole() >= 1
        holed_at = time.monotonic()
        server.create(cm("c"), namespace=ns)
        server.delete("configmaps", ns, "a")
        time.sleep(BLACK_HOLE_READ_TIMEOUT / 2)
        assert f"{ns}/c" not in store.list_keys()  # the dead path delivers nothing

        wait_until(lambda: sorted(store.list_keys()) == truth(), 10 + BLACK_HOLE_READ_TIMEOUT)
        noticed_after = time.monotonic() - holed_at
    finally:
        stop.set()
        thread.join(10)
        proxy.close()
        api.close()
        server.close()
    assert not thread.is_alive()
    assert sorted(store.list_keys()) == [f"{ns}/b", f"{ns}/c"]
    assert reflector.metrics.watches_total > watches  # watched again ...
    assert proxy.connections > connections  # ... on a new connection
    assert BLACK_HOLE_READ_TIMEOUT <= noticed_after < BLACK_HOLE_READ_TIMEOUT + 8


# -- a stream closed before its end leaves no reference cycle --------------------------------------


@pytest.mark.parametrize("lines", [
    [event_line("ADDED", pod("a", "2"))],  # closed while the server still streams
    [b"{oops\n", event_line("ADDED", pod("a", "2"))],  # ended by its ERROR event
], ids=["open", "failed"])
def test_a_closed_stream_is_freed_by_reference_counting(raw, api, lines):
    """A stream whose iterator is suspended (the reflector returns from it on an ERROR
    event) refers to it and back; close() breaks that cycle, so the stream and its response
    are freed at once, also after a ``gc.freeze()`` that would keep a cycle forever."""
    raw.watch_answer(lines)
    stream = list_watch_from_client(api, "pods").watch(ListOptions(resource_version="1"))
    assert next(iter(stream)).type in ("ADDED", "ERROR")
    gc.disable()
    try:
        stream.close()
        ref = weakref.ref(stream)
        del stream
        assert ref() is None
    finally:
        gc.enable()
