"""The reflector and informer against what only a real kube-apiserver on etcd shows, and the
watch-cache semantics they rely on, held to parity on the embedded server.

Part 1 (both servers, ``any_api_server``): the watch cache as the API Concepts page documents
it: a watch from resourceVersion "0" starts with the current state, a watch from an exact
version replays every later event, a list at "0" is served whole from the cache (``limit``
ignored) while a consistent list paginates, and a streaming watch (``sendInitialEvents``) ends
its initial events with the ``k8s.io/initial-events-end`` bookmark.

Part 2 (the real control plane only):

* real compaction giving 410: etcd is compacted (its JSON gateway,
  ``POST /v3/kv/compaction``) at a revision past the last pod write, then restarted. The
  watch cache of pods, whose etcd watch resumes below the compacted revision, is told
  "compacted" and re-initialises from a fresh list: it ends every watch on it, answers 429
  ("storage is (re)initializing", Retry-After 1) meanwhile, and then 410 "too old resource
  version" to a watch from before its new start. The reflector must relist. (Compaction alone
  does not do it: the cache keeps its own history and serves watches from it.)
* etcd restarts (SIGKILL) under a running informer: its cache converges to the server's truth.

Periodic bookmarks are not tested against the real server: kube-apiserver sends them about once
a minute (``cacher.go`` ``bookmarkFrequency``) and no flag shortens that; the streaming list's
initial-events-end bookmark is tested instead (here and in test_reflector's
``test_live_streaming_list``).
"""

from __future__ import annotations

import base64
import json
import random
import threading
import time
import urllib.request

import pytest

from informers.backoff import Backoff
from informers.client import list_watch_from_client
from informers.errors import StatusError
from informers.handlers import ResourceEventHandlerFuncs
from informers.indexer import Indexer
from informers.keys import deletion_handling_meta_namespace_key_func
from informers.list_watch import ListOptions
from informers.reflector import Reflector
from informers.reflector_options import ReflectorOptions
from informers.shared_informer import SharedIndexInformer
from informers.wait import wait_for_cache_sync

WAIT = 10.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def new_pod(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "registry.invalid/pause:1"}]}}


def rv_of(obj: dict) -> str:
    return obj["metadata"]["resourceVersion"]


def wait_until(predicate, timeout: float = WAIT, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


class Events:
    """Reads a watch stream on a thread; ``take(n)`` waits for the first n events."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.events: list = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for event in self.stream:
                with self.cond:
                    self.events.append(event)
                    self.cond.notify_all()
        except Exception:  # the stream was closed under us
            pass

    def take(self, n: int) -> list[tuple]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.events) >= n, WAIT), self.events
            return [(e.type, e.object["metadata"].get("name"), rv_of(e.object))
                    for e in self.events[:n]]

    def close(self) -> None:
        self.stream.close()
        self.thread.join(WAIT)


@pytest.fixture
def pods(any_api_server):
    """A ListWatch on the pods of the test's namespace."""
    api = any_api_server.api_client()
    yield list_watch_from_client(api, "pods", namespace=any_api_server.namespace)
    api.close()


# -- part 1: watch-cache semantics, on both servers --------------------------------------------


def test_a_watch_from_0_starts_with_the_current_state(any_api_server, pods):
    s, ns = any_api_server, any_api_server.namespace
    a = s.create(new_pod("a"), namespace=ns)
    b = s.create(new_pod("b"), namespace=ns)
    events = Events(pods.watch(ListOptions(resource_version="0", timeout_seconds=30)))
    try:
        first = events.take(2)
        assert sorted(first) == [("ADDED", "a", rv_of(a)), ("ADDED", "b", rv_of(b))]
        c = s.create(new_pod("c"), namespace=ns)
        assert events.take(3)[2] == ("ADDED", "c", rv_of(c))
    finally:
        events.close()


def test_a_watch_from_an_exact_version_replays_every_later_event(any_api_server, pods):
    s, ns = any_api_server, any_api_server.namespace
    start = rv_of(s.create(new_pod("a"), namespace=ns))
    patched = s.patch("pods", ns, "a", {"metadata": {"labels": {"x": "1"}}})
    b = s.create(new_pod("b"), namespace=ns)
    gone = s.delete("pods", ns, "b", grace_period_seconds=0)
    events = Events(pods.watch(ListOptions(resource_version=start, timeout_seconds=30)))
    try:
        # A pod's delete writes the mark (deletionTimestamp, period 0), then removes it.
        assert events.take(4) == [
            ("MODIFIED", "a", rv_of(patched)), ("ADDED", "b", rv_of(b)),
            ("MODIFIED", "b", str(int(rv_of(gone)) - 1)), ("DELETED", "b", rv_of(gone)),
        ]
        assert events.events[2].object["metadata"]["deletionGracePeriodSeconds"] == 0
    finally:
        events.close()


def test_a_list_at_0_is_served_whole_from_the_cache_a_consistent_one_paginates(
        any_api_server, pods):
    s, ns = any_api_server, any_api_server.namespace
    for name in ("a", "b", "c"):
        s.create(new_pod(name), namespace=ns)
    cached = pods.list(ListOptions(resource_version="0", limit=2))
    assert (sorted(p["metadata"]["name"] for p in cached.items), cached.continue_) == (
        ["a", "b", "c"], None)
    page = pods.list(ListOptions(limit=2))
    assert [p["metadata"]["name"] for p in page.items] == ["a", "b"]
    assert page.continue_ and page.remaining_item_count == 1
    rest = pods.list(ListOptions(limit=2, continue_=page.continue_))
    assert ([p["metadata"]["name"] for p in rest.items], rest.continue_) == (["c"], None)
    assert rest.resource_version == page.resource_version  # one snapshot


def test_a_streaming_watch_ends_its_initial_events_with_a_bookmark(any_api_server, pods):
    s, ns = any_api_server, any_api_server.namespace
    a = s.create(new_pod("a"), namespace=ns)
    b = s.create(new_pod("b"), namespace=ns)
    events = Events(pods.watch(ListOptions(
        send_initial_events=True, resource_version_match="NotOlderThan",
        allow_watch_bookmarks=True, timeout_seconds=30)))
    try:
        first = events.take(3)
        assert sorted(first[:2]) == [("ADDED", "a", rv_of(a)), ("ADDED", "b", rv_of(b))]
        kind, _, bookmark_rv = first[2]
        assert kind == "BOOKMARK"
        assert events.events[2].object["metadata"]["annotations"] == {INITIAL_EVENTS_END: "true"}
        assert int(bookmark_rv) >= int(rv_of(b))
        c = s.create(new_pod("c"), namespace=ns)
        assert events.take(4)[3] == ("ADDED", "c", rv_of(c))
    finally:
        events.close()


# -- part 2: only a real kube-apiserver on etcd ----------------------------------------------

real = pytest.mark.real_apiserver


def etcd(plane, path: str, body: dict) -> dict:
    """A call to etcd's JSON gRPC gateway."""
    request = urllib.request.Request(plane.etcd_url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def etcd_revision(plane) -> int:
    answer = etcd(plane, "/v3/kv/range", {"key": base64.b64encode(b"/").decode()})
    return int(answer["header"]["revision"])


class Running:
    """A reflector (real clock, fast backoff) into an Indexer, on a thread."""

    def __init__(self, server) -> None:
        self.api = server.api_client()
        self.store = Indexer()
        self.errors: list[BaseException] = []
        lw = list_watch_from_client(self.api, "pods", namespace=server.namespace)
        self.reflector = Reflector(
            lw, self.store, ReflectorOptions(
                rng=random.Random(1),
                backoff=Backoff(initial=0.1, cap=1.0, factor=2.0, jitter=0.0),
                watch_error_handler=lambda r, e: self.errors.append(e)),
            name="real-pods")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.reflector.run, args=(self.stop,),
                                       daemon=True)
        self.thread.start()

    def keys(self) -> list[str]:
        return sorted(self.store.list_keys())

    def close(self) -> None:
        self.stop.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()
        self.api.close()


def truth(server) -> list[str]:
    return sorted(f"{server.namespace}/{p['metadata']['name']}"
                  for p in server.list("pods", server.namespace))


@pytest.fixture
def real_server(any_api_server):
    if any_api_server.plane is None:
        pytest.skip("needs the real control plane")
    return any_api_server


@real
@pytest.mark.parametrize("any_api_server", ["real"], indirect=True)
def test_compaction_then_a_cache_reinit_answers_410_and_the_reflector_relists(real_server):
    s, ns, plane = real_server, real_server.namespace, real_server.plane
    a = s.create(new_pod("a"), namespace=ns)
    s.create(new_pod("b"), namespace=ns)
    running = Running(s)
    try:
        wait_until(lambda: running.keys() == [f"{ns}/a", f"{ns}/b"], what="the initial sync")
        assert running.reflector.metrics.lists_total == 1
        # Move etcd past the last pod write with writes the pods' watch cache never sees,
        # and compact there: its etcd watch is now below the compacted revision.
        for i in range(3):
            s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}},
                     namespace=ns)
        revision = etcd_revision(plane)
        etcd(plane, "/v3/kv/compaction", {"revision": revision, "physical": True})
        plane.restart_etcd(kill=True)  # the pods' watch cache resumes, is told "compacted"
        wait_until(lambda: running.reflector.metrics.lists_total == 2, timeout=20,
                   what="the relist after the watch's 410")
        last = running.reflector.metrics.last_error
        assert isinstance(last, StatusError) and (last.code, last.reason) == (410, "Expired")
        assert "too old resource version" in last.message
        assert running.keys() == truth(s)
        # The re-initialised cache holds nothing older, nor does etcd: an exact list at a
        # version before the compaction is gone too.
        with pytest.raises(StatusError) as info:
            list_watch_from_client(running.api, "pods", namespace=ns).list(
                ListOptions(resource_version=rv_of(a), resource_version_match="Exact"))
        assert (info.value.code, info.value.reason) == (410, "Expired")
        s.create(new_pod("after"), namespace=ns)  # and it watches again
        wait_until(lambda: running.keys() == [f"{ns}/a", f"{ns}/after", f"{ns}/b"],
                   what="the pod created after the relist")
        # Leave the shared control plane with every watch cache ready again.
        wait_until(lambda: _caches_ready(running.api), timeout=20, what="the watch caches")
    finally:
        running.close()


def _caches_ready(api) -> bool:
    """Lists from the watch cache of the kinds the suite uses answer (not 429)."""
    for resource in ("namespaces", "pods", "services", "endpoints", "configmaps", "events"):
        try:
            list_watch_from_client(api, resource).list(ListOptions(resource_version="0", limit=1))
        except StatusError as err:
            if err.code == 429:
                return False
            raise
    return True


@real
@pytest.mark.parametrize("any_api_server", ["real"], indirect=True)
def test_an_informer_converges_across_etcd_restarts(real_server):
    s, ns, plane = real_server, real_server.namespace, real_server.plane
    for name in ("a", "b", "c"):
        s.create(new_pod(name), namespace=ns)
    api = s.api_client()
    informer = SharedIndexInformer(list_watch_from_client(api, "pods", namespace=ns),
                                   name="real-pods")
    deleted: list[str] = []
    informer.add_event_handler(ResourceEventHandlerFuncs(
        on_delete=lambda obj: deleted.append(deletion_handling_meta_namespace_key_func(obj))))
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert wait_for_cache_sync(stop, informer.has_synced, timeout=WAIT)
        plane.restart_etcd(kill=True)  # a crash: kube-apiserver answers 5xx until it is back
        wait_until(lambda: _writable(s, ns), timeout=20, what="kube-apiserver to write again")
        s.delete("pods", ns, "a", grace_period_seconds=0)
        s.patch("pods", ns, "b", {"metadata": {"labels": {"v": "2"}}})
        s.create(new_pod("d"), namespace=ns)
        plane.restart_etcd(kill=True)  # and once more, with the changes in flight or not
        wait_until(lambda: _writable(s, ns), timeout=20, what="kube-apiserver to write again")
        s.create(new_pod("e"), namespace=ns)

        def cached() -> list[str]:
            return sorted(informer.get_indexer().list_keys())

        wait_until(lambda: cached() == truth(s), timeout=20, what="the cache to converge")
        assert cached() == [f"{ns}/{n}" for n in ("b", "c", "d", "e")]
        b = informer.get_indexer().get_by_key(f"{ns}/b")
        assert b["metadata"]["labels"] == {"v": "2"}
        assert rv_of(b) == rv_of(s.get("pods", ns, "b"))
        assert deleted == [f"{ns}/a"]
    finally:
        stop.set()
        thread.join(WAIT)
        api.close()
    assert not thread.is_alive()


def _writable(server, namespace: str) -> bool:
    try:
        server.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"generateName": "probe-"}}, namespace=namespace)
    except StatusError as err:
        if err.code >= 500 or err.code == 429:
            return False
        raise
    except OSError:
        return False
    return True
