"""Watch semantics of the embedded API server (informers/testing/watch.py), driven through the
official ``kubernetes`` client's raw watch responses (``_preload_content=False``).

Real behaviour cited in comments comes from the Kubernetes API Concepts page ("Efficient
detection of changes", "Watch bookmarks", "Streaming lists") and kube-apiserver's
``staging/src/k8s.io/apiserver/pkg/storage/cacher``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes import client

from informers.clock import FakeClock

pytestmark = pytest.mark.api_server(bookmark_interval=0.2, fresh_wait=0.2)


class Stream:
    """Reads the JSON lines of a raw watch response."""

    def __init__(self, resp: Any) -> None:
        self.resp = resp
        self._chunks = resp.stream(65536)
        self._buf = b""

    def next(self) -> dict[str, Any]:
        while b"\n" not in self._buf:
            self._buf += next(self._chunks)
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def take(self, count: int) -> list[dict[str, Any]]:
        return [self.next() for _ in range(count)]

    def rest(self) -> list[dict[str, Any]]:
        """Every remaining event until the server ends the stream."""
        events = []
        while True:
            try:
                events.append(self.next())
            except StopIteration:
                assert self._buf == b""
                return events

    def close(self) -> None:
        self.resp.close()  # closes the connection: the server sees the client hang up


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", ""),
             e["object"]["metadata"]["resourceVersion"]) for e in events]


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


@pytest.fixture
def core(api_client: Any) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


def watch(core: client.CoreV1Api, namespace: str = "default", **kw: Any) -> Stream:
    kw.setdefault("_request_timeout", 10)
    return Stream(core.list_namespaced_pod(namespace, watch=True, _preload_content=False, **kw))


def test_watch_from_a_version_replays_every_later_event_in_order(api_server, core):
    rv0 = api_server.create(pod("a"))["metadata"]["resourceVersion"]
    api_server.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}})
    api_server.create(pod("b"))
    deleted = api_server.delete("pods", "default", "a")
    stream = watch(core, resource_version=rv0)
    events = stream.take(4)
    stream.close()
    rv = int(rv0)
    # "watch from a version replays every later event in order", each with its own version;
    # a pod's delete first marks it (deletionTimestamp, period 0), then removes it; the
    # DELETED object carries the deletion's resourceVersion (etcd3 watcher).
    assert summary(events) == [
        ("MODIFIED", "a", str(rv + 1)), ("ADDED", "b", str(rv + 2)),
        ("MODIFIED", "a", str(rv + 3)), ("DELETED", "a", str(rv + 4)),
    ]
    assert deleted["metadata"]["resourceVersion"] == str(rv + 4)
    assert events[0]["object"]["kind"] == "Pod" and events[0]["object"]["apiVersion"] == "v1"
    assert events[0]["object"]["metadata"]["labels"] == {"x": "1"}


@pytest.mark.parametrize("resource_version", [None, "0"])
def test_watch_from_unset_or_zero_sends_current_state_then_changes(api_server, core,
                                                                   resource_version):
    api_server.create(pod("b"))
    api_server.create(pod("a"))
    kw = {} if resource_version is None else {"resource_version": resource_version}
    stream = watch(core, **kw)
    initial = stream.take(2)
    api_server.create(pod("c"))
    later = stream.next()
    stream.close()
    # "Get State and Start at Most Recent" / "Start at Any": synthetic ADDED events first.
    assert sorted(e["object"]["metadata"]["name"] for e in initial) == ["a", "b"]
    assert {e["type"] for e in initial} == {"ADDED"}
    assert (later["type"], later["object"]["metadata"]["name"]) == ("ADDED", "c")


def test_watch_from_a_compacted_version_answers_200_with_an_expired_error_event(api_server,
                                                                                core):
    old = api_server.create(pod("a"))["metadata"]["resourceVersion"]
    api_server.create(pod("b"))
    compacted = api_server.compact()
    stream = watch(core, resource_version=old)
    assert stream.resp.status == 200
    events = stream.rest()
    stream.close()
    # watch_cache.go: errors.NewResourceExpired("too old resource version: %d (%d)")
    assert events == [{"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"too old resource version: {old} ({compacted})", "reason": "Expired",
        "code": 410}}]
    assert api_server.request_log(verb="watch")[-1].status == 200


def test_compaction_overtaking_a_watcher_that_is_behind_sends_an_error_event(api_server, core):
    start = api_server.resource_version
    stream = watch(core, resource_version=start)
    assert api_server.wait_for_watches(1)
    api_server.hang_watches()  # the watcher cannot consume, so it falls behind
    api_server.create(pod("a"))
    api_server.create(pod("b"))
    compacted = api_server.compact()
    api_server.resume_watches()
    events = stream.rest()
    stream.close()
    assert [(e["type"], e["object"]["code"], e["object"]["reason"]) for e in events] == [
        ("ERROR", 410, "Expired")]
    assert events[0]["object"]["message"] == (
        f"too old resource version: {start} ({compacted})")


def test_a_caught_up_watcher_survives_compaction(api_server, core):
    stream = watch(core, resource_version=api_server.resource_version)
    api_server.create(pod("a"))
    assert stream.next()["type"] == "ADDED"
    api_server.compact()
    api_server.create(pod("b"))
    event = stream.next()
    stream.close()
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "b")


def test_bookmarks_carry_the_latest_cluster_version_and_only_metadata(api_server, core):
    stream = watch(core, resource_version=api_server.resource_version,
                   allow_watch_bookmarks=True)
    # Any write advances the cluster-wide version the bookmark reports (the watch cache learns
    # it from etcd progress notifications); this one is of another kind.
    cm = client.CoreV1Api(api_server.api_client()).create_namespaced_config_map(
        "default", {"metadata": {"name": "cm"}})
    event = stream.next()
    stream.close()
    assert event == {"type": "BOOKMARK", "object": {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"resourceVersion": cm.metadata.resource_version}}}


def test_no_bookmark_without_progress_or_without_allow_watch_bookmarks():
    from informers.testing import ApiServer

    clock = FakeClock()
    with ApiServer(clock=clock, bookmark_interval=60.0) as server:
        core = client.CoreV1Api(server.api_client())
        start = server.resource_version
        # cache_watcher.go only sends a bookmark newer than the watch's starting version.
        quiet = watch(core, resource_version=start, allow_watch_bookmarks=True,
                      timeout_seconds=200)
        assert server.wait_for_watches(1) and clock.wait_for_waiters(1)
        clock.step(200.0)
        assert quiet.rest() == []
        quiet.close()
        assert server.wait_for_no_watches()
        server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
        unasked = watch(core, resource_version=start, timeout_seconds=200)
        assert server.wait_for_watches(1) and clock.wait_for_waiters(1)
        clock.step(200.0)
        assert unasked.rest() == []
        unasked.close()


def test_bookmark_interval_and_timeout_follow_the_server_clock():
    from informers.testing import ApiServer

    clock = FakeClock()
    with ApiServer(clock=clock, bookmark_interval=60.0) as server:
        core = client.CoreV1Api(server.api_client())
        stream = watch(core, resource_version=server.resource_version,
                       allow_watch_bookmarks=True, timeout_seconds=300)
        assert server.wait_for_watches(1)
        cm = server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
        assert clock.wait_for_waiters(1)
        clock.step(60.0)  # the bookmark period of cacher.go (bookmarkFrequency = 1 minute)
        first = stream.next()
        assert (first["type"], first["object"]["metadata"]["resourceVersion"]) == (
            "BOOKMARK", cm["metadata"]["resourceVersion"])
        assert clock.wait_for_waiters(1)
        clock.step(240.0)  # reach the timeout: the stream ends cleanly, without an error
        assert stream.rest() == [{"type": "BOOKMARK", "object": {
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"resourceVersion": cm["metadata"]["resourceVersion"]}}}]
        stream.close()


def test_timeout_seconds_ends_the_stream_cleanly(api_server, core):
    started = time.monotonic()
    stream = watch(core, resource_version=api_server.resource_version, timeout_seconds=1)
    assert stream.rest() == []  # the chunked body is terminated: no exception
    stream.close()
    assert 0.9 <= time.monotonic() - started < 5


def test_send_initial_events_ends_with_an_annotated_bookmark(api_server, core):
    api_server.create(pod("b"))
    api_server.create(pod("a"))
    current = api_server.resource_version
    stream = watch(core, send_initial_events=True, resource_version_match="NotOlderThan",
                   allow_watch_bookmarks=True)
    initial = stream.take(3)
    api_server.create(pod("c"))
    after = stream.next()
    stream.close()
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in initial[:2]] == [
        ("ADDED", "a"), ("ADDED", "b")]
    # "Streaming lists": a BOOKMARK at the state's version annotated initial-events-end.
    assert initial[2] == {"type": "BOOKMARK", "object": {
        "kind": "Pod", "apiVersion": "v1", "metadata": {
            "resourceVersion": current,
            "annotations": {"k8s.io/initial-events-end": "true"}}}}
    assert (after["type"], after["object"]["metadata"]["name"]) == ("ADDED", "c")


def test_send_initial_events_from_a_version_the_server_lacks_times_out(api_server, core):
    future = str(int(api_server.resource_version) + 100)
    stream = watch(core, send_initial_events=True, resource_version_match="NotOlderThan",
                   allow_watch_bookmarks=True, resource_version=future)
    events = stream.rest()
    stream.close()
    # storage/errors.go NewTooLargeResourceVersionError, reported in the stream.
    assert [e["type"] for e in events] == ["ERROR"]
    status = events[0]["object"]
    assert (status["code"], status["reason"]) == (504, "Timeout")
    assert status["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]


def test_label_selector_watch_adds_and_deletes_as_objects_start_and_stop_matching(
        api_server, core):
    api_server.create(pod("a", {"app": "x"}))
    api_server.create(pod("b", {"app": "y"}))
    stream = watch(core, label_selector="app=x", resource_version=api_server.resource_version)
    moved_in = api_server.patch("pods", "default", "b", {"metadata": {"labels": {"app": "x"}}})
    api_server.patch("pods", "default", "b", {"metadata": {"annotations": {"n": "1"}}})
    moved_out = api_server.patch("pods", "default", "a", {"metadata": {"labels": {"app": "z"}}})
    api_server.create(pod("c", {"app": "y"}))  # never matches: no event
    api_server.create(pod("d", {"app": "x"}))
    events = stream.take(4)
    stream.close()
    assert summary(events) == [
        ("ADDED", "b", moved_in["metadata"]["resourceVersion"]),
        ("MODIFIED", "b", str(int(moved_in["metadata"]["resourceVersion"]) + 1)),
        # cacheWatcher.convertToWatchEvent: "a delete event with the previous object content,
        # but with the event's resource version".
        ("DELETED", "a", moved_out["metadata"]["resourceVersion"]),
        ("ADDED", "d", str(int(moved_out["metadata"]["resourceVersion"]) + 2)),
    ]
    assert events[2]["object"]["metadata"]["labels"] == {"app": "x"}


def test_field_selector_watch_follows_node_binding_and_phase(api_server, core):
    api_server.create(pod("a"))
    stream = watch(core, field_selector="spec.nodeName=node-1,status.phase=Running",
                   resource_version=api_server.resource_version)
    api_server.patch("pods", "default", "a", {"spec": {"nodeName": "node-1"}})  # still Pending
    running = api_server.patch("pods", "default", "a", {"status": {"phase": "Running"}})
    done = api_server.patch("pods", "default", "a", {"status": {"phase": "Succeeded"}})
    events = stream.take(2)
    stream.close()
    assert summary(events) == [
        ("ADDED", "a", running["metadata"]["resourceVersion"]),
        ("DELETED", "a", done["metadata"]["resourceVersion"]),
    ]
    assert events[1]["object"]["status"]["phase"] == "Running"


def test_namespaced_watch_ignores_other_namespaces_and_all_namespaces_sees_both(api_server,
                                                                               core):
    api_server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    start = api_server.resource_version
    scoped = watch(core, resource_version=start)
    everywhere = Stream(core.list_pod_for_all_namespaces(
        watch=True, resource_version=start, _preload_content=False, _request_timeout=10))
    api_server.create(pod("x"), namespace="other")
    api_server.create(pod("y"))
    assert [e["object"]["metadata"]["name"] for e in everywhere.take(2)] == ["x", "y"]
    assert scoped.next()["object"]["metadata"]["name"] == "y"
    scoped.close()
    everywhere.close()


def test_watch_from_a_future_version_skips_older_events(api_server, core):
    future = int(api_server.resource_version) + 2
    stream = watch(core, resource_version=str(future))
    for name in ("a", "b", "c"):
        api_server.create(pod(name))
    event = stream.next()
    stream.close()
    assert (event["object"]["metadata"]["name"], event["object"]["metadata"]["resourceVersion"]) \
        == ("c", str(future + 1))


def test_legacy_watch_path_of_one_object(api_server, api_client):
    api_server.create(pod("a"))
    api_server.create(pod("b"))
    resp = api_client.call_api(
        "GET", f"{api_server.url}/api/v1/watch/namespaces/default/pods/b?resourceVersion=0",
        header_params={"Authorization": f"Bearer {api_server.token}"}, _request_timeout=10)
    stream = Stream(resp.response)
    first = stream.next()
    stream.close()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "b")
    assert api_server.request_log(verb="watch")[-1].name == "b"


def test_the_official_watch_helper_streams_typed_objects(api_server, core):
    from kubernetes import watch as k8s_watch

    api_server.create(pod("a"))
    helper = k8s_watch.Watch()
    seen = []
    for event in helper.stream(core.list_namespaced_pod, "default", timeout_seconds=1):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 1:
            api_server.delete("pods", "default", "a")
        if len(seen) == 3:
            helper.stop()
    assert seen == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]  # marked, removed
    assert helper.resource_version == api_server.resource_version
