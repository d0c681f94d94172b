"""Fault injection of the embedded API server (informers/testing/faults.py and the ApiServer
switches), observed through the official ``kubernetes`` client."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from informers.clock import FakeClock
from informers.testing import ApiServer


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


@pytest.fixture
def core(api_client: Any) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


def open_watch(core: client.CoreV1Api, **kw: Any) -> Any:
    kw.setdefault("_request_timeout", 10)
    return core.list_namespaced_pod("default", watch=True, _preload_content=False, **kw)


def lines(resp: Any) -> Any:
    buf = b""
    for chunk in resp.stream(65536):
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line


def status_of(err: ApiException) -> dict[str, Any]:
    return json.loads(err.body)


def test_drop_watches_cuts_the_stream_and_the_server_keeps_serving(api_server, core):
    resp = open_watch(core, resource_version=api_server.resource_version)
    assert api_server.wait_for_watches(1, resource="pods")
    api_server.create(pod("a"))
    stream = lines(resp)
    assert json.loads(next(stream))["type"] == "ADDED"
    assert api_server.drop_watches() == 1
    # An abrupt close: the chunked body never ends, as when the connection dies.
    with pytest.raises(urllib3.exceptions.ProtocolError):
        next(stream)
    assert api_server.wait_for_no_watches()
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["a"]


def test_fail_next_fails_only_matching_requests(api_server, core):
    api_server.fail_next(2, 500, verb="list", resource="pods")
    for _ in range(2):
        with pytest.raises(ApiException) as info:
            core.list_namespaced_pod("default")
        assert status_of(info.value) == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Internal error occurred: injected failure", "reason": "InternalError",
            "details": {"causes": [{"message": "injected failure"}]}, "code": 500}
    core.list_namespaced_config_map("default")  # another resource: not failed
    assert core.list_namespaced_pod("default").items == []
    assert [r.status for r in api_server.request_log(verb="list")] == [500, 500, 200, 200]
    assert api_server.faults.pending_failures() == 0


def test_fail_next_match_targets_one_page_of_a_paginated_list(api_server, core):
    for name in ("a", "b", "c"):
        api_server.create(pod(name))
    seen = []

    def second_page(record):
        seen.append(record)
        return "continue" in record.query

    api_server.fail_next(1, 410, verb="list", resource="pods", match=second_page)
    first = core.list_namespaced_pod("default", limit=2)  # no continue token: served
    assert [p.metadata.name for p in first.items] == ["a", "b"]
    core.list_namespaced_config_map("default", limit=1)  # another resource: not asked
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod("default", limit=2, _continue=first.metadata._continue)
    assert status_of(info.value)["reason"] == "Expired"
    again = core.list_namespaced_pod("default", limit=2, _continue=first.metadata._continue)
    assert [p.metadata.name for p in again.items] == ["c"]  # the rule was used up
    # The predicate saw the requests as records, before they were answered.
    assert [(r.verb, r.resource, r.namespace, "continue" in r.query, r.status)
            for r in seen] == [("list", "pods", "default", False, 0),
                               ("list", "pods", "default", True, 0)]
    assert [(r.query.get("limit"), "continue" in r.query, r.status)
            for r in api_server.request_log(verb="list", resource="pods")] == [
        ("2", False, 200), ("2", True, 410), ("2", True, 200)]
    assert api_server.faults.pending_failures() == 0


def test_fail_next_429_carries_retry_after(api_server, core):
    api_server.fail_next(1, 429, retry_after=3)
    # (A create: urllib3 itself retries idempotent requests that get 429 with Retry-After.)
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    assert info.value.status == 429
    assert info.value.headers["Retry-After"] == "3"
    assert status_of(info.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Too many requests, please try again later.", "reason": "TooManyRequests",
        "details": {"retryAfterSeconds": 3}, "code": 429}


@pytest.mark.parametrize(("code", "reason"), [
    (410, "Expired"), (504, "Timeout"), (503, "ServiceUnavailable"), (409, "Conflict")])
def test_fail_next_uses_the_real_reason_for_each_code(api_server, core, code, reason):
    api_server.fail_next(1, code, verb="list")
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod("default")
    assert (info.value.status, status_of(info.value)["reason"]) == (code, reason)


def test_fail_next_in_stream_answers_a_watch_with_an_error_event(api_server, core):
    api_server.fail_next(1, 410, verb="watch", in_stream=True,
                         message="too old resource version: 1 (5)")
    resp = open_watch(core, resource_version="1")
    assert resp.status == 200
    assert [json.loads(line) for line in lines(resp)] == [{"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "too old resource version: 1 (5)", "reason": "Expired", "code": 410}}]


def test_delay_holds_matching_requests_on_the_server_clock():
    clock = FakeClock()
    with ApiServer(clock=clock) as server:
        core = client.CoreV1Api(server.api_client())
        server.delay(5.0, verb="list", resource="pods")
        done = threading.Event()
        result: list[Any] = []

        def list_pods() -> None:
            result.append(core.list_namespaced_pod("default", _request_timeout=10))
            done.set()

        worker = threading.Thread(target=list_pods)
        worker.start()
        assert clock.wait_for_waiters(1)
        core.read_namespace("default")  # not delayed: other verbs pass
        assert not done.is_set()
        clock.step(5.0)
        worker.join(10)
        assert result[0].items == []
        server.delay(0)  # clears
        core.list_namespaced_pod("default")
        assert not clock.has_waiters()


def test_hang_watches_sends_headers_then_nothing_until_resumed(api_server, core):
    api_server.create(pod("a"))
    api_server.hang_watches()
    hung = open_watch(core, _request_timeout=(5, 0.3))
    assert hung.status == 200  # headers arrive
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        next(lines(hung))
    hung.close()
    waiting = open_watch(core)
    assert api_server.wait_for_watches(1)
    api_server.resume_watches()
    first = json.loads(next(lines(waiting)))
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "a")
    waiting.close()


def test_drop_watches_ends_a_hang(api_server, core):
    api_server.hang_watches()
    resp = open_watch(core)
    assert api_server.wait_for_watches(1)
    api_server.drop_watches()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        next(lines(resp))
    assert api_server.faults.hung is False


def test_inject_malformed_watch_line_then_normal_events(api_server, core):
    resp = open_watch(core, resource_version=api_server.resource_version)
    assert api_server.wait_for_watches(1)
    assert api_server.inject_malformed_watch_line() == 1
    stream = lines(resp)
    with pytest.raises(json.JSONDecodeError):
        json.loads(next(stream))
    api_server.create(pod("a"))
    event = json.loads(next(stream))
    resp.close()
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "a")


def test_garble_watch_events_cuts_a_real_event_and_the_next_one_follows(api_server, core):
    # The scenario of issue 14 item 2: a cut DELETED of a, then the ADDED of d.
    api_server.create(pod("a"))
    resp = open_watch(core, resource_version=api_server.resource_version)
    assert api_server.wait_for_watches(1)
    assert api_server.garble_watch_events(event_type="DELETED", resource="pods") == 1
    api_server.update(pod("a") | {"metadata": {"name": "a", "labels": {"x": "y"}}})
    deleted = api_server.delete("pods", "default", "a")
    api_server.create(pod("d"))
    stream = lines(resp)
    modified = json.loads(next(stream))  # not DELETEDs: sent whole
    marked = json.loads(next(stream))  # a pod's delete marks it first
    cut = next(stream)
    added = json.loads(next(stream))
    resp.close()
    assert (modified["type"], modified["object"]["metadata"]["name"]) == ("MODIFIED", "a")
    assert "deletionTimestamp" in marked["object"]["metadata"]
    whole = json.dumps({"type": "DELETED", "object": {"kind": "Pod", "apiVersion": "v1",
                                                      **deleted}}, separators=(",", ":"))
    assert cut == whole.encode()[:(len(whole) + 1) // 2]  # half of the line with its newline
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut)
    assert (added["type"], added["object"]["metadata"]["name"]) == ("ADDED", "d")


def test_garble_watch_events_of_any_type_counts_events_and_spares_bookmarks(api_server, core):
    resp = open_watch(core, resource_version=api_server.resource_version)
    assert api_server.wait_for_watches(1)
    assert api_server.garble_watch_events(2) == 1
    for name in ("a", "b", "c"):
        api_server.create(pod(name))
    stream = lines(resp)
    first, second, third = next(stream), next(stream), json.loads(next(stream))
    resp.close()
    assert first.startswith(b'{"type":"ADDED","object":{"kind":"Pod"')
    assert second.startswith(b'{"type":"ADDED","object":{"kind":"Pod"')
    for line in (first, second):
        with pytest.raises(json.JSONDecodeError):
            json.loads(line)
    assert third["object"]["metadata"]["name"] == "c"


def test_garble_watch_events_checks_its_arguments(api_server):
    with pytest.raises(ValueError, match="count must be >= 1, got 0"):
        api_server.garble_watch_events(0)
    with pytest.raises(ValueError, match="event_type must be one of"):
        api_server.garble_watch_events(1, "BOOKMARK")
    assert api_server.garble_watch_events() == 0  # no open watch


def test_fail_next_as_ok_answers_200_with_the_status_on_list_and_watch(api_server, core):
    # A broken proxy: 200 OK and a failure Status as the body, for a list and for a watch.
    failure = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Internal error occurred: injected failure",
               "reason": "InternalError",
               "details": {"causes": [{"message": "injected failure"}]}, "code": 500}
    api_server.fail_next(1, 500, verb="list", resource="pods", as_ok=True)
    api_server.fail_next(1, 500, verb="watch", resource="pods", as_ok=True)
    listed = core.list_namespaced_pod("default", _preload_content=False)
    assert (listed.status, json.loads(listed.data)) == (200, failure)
    watched = open_watch(core, resource_version="0")
    assert watched.status == 200
    assert watched.headers.get("Transfer-Encoding") is None
    assert int(watched.headers["Content-Length"]) == len(watched.data)
    assert json.loads(watched.data) == failure
    assert [r.status for r in api_server.request_log(resource="pods")] == [200, 200]
    assert core.list_namespaced_pod("default").items == []  # served normally again


def test_fail_next_as_ok_excludes_in_stream(api_server):
    with pytest.raises(ValueError, match="in_stream and as_ok exclude each other"):
        api_server.fail_next(1, 500, in_stream=True, as_ok=True)


def test_compact_makes_older_versions_answer_410(api_server, core):
    old = api_server.create(pod("a"))["metadata"]["resourceVersion"]
    api_server.create(pod("b"))
    assert api_server.compact() == api_server.resource_version
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod("default", resource_version=old, resource_version_match="Exact")
    assert info.value.status == 410
    # The current version stays servable.
    current = core.list_namespaced_pod("default", resource_version=api_server.resource_version,
                                       resource_version_match="Exact")
    assert [p.metadata.name for p in current.items] == ["a", "b"]


def test_restart_keeps_data_and_history_but_cuts_connections(api_server, core):
    port = api_server.port
    api_server.create(pod("a"))
    resp = open_watch(core, resource_version=api_server.resource_version)
    assert api_server.wait_for_watches(1)
    before = api_server.resource_version
    api_server.restart()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        next(lines(resp))
    assert api_server.port == port
    api_server.create(pod("b"))
    # The client reconnects; objects and the history of versions survived.
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["a", "b"]
    resumed = open_watch(core, resource_version=before)
    event = json.loads(next(lines(resumed)))
    resumed.close()
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "b")


# -- the faults against an informer (issue 14 items 2 and 4) -------------------------------------


def _pod_names(informer: Any) -> set[str]:
    return {o["metadata"]["name"] for o in informer.get_indexer().list()}


def _eventually(predicate: Any, timeout: float = 5.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def test_an_informer_does_not_lose_a_garbled_delete(api_server):
    from informers import SharedInformerFactory

    for name in ("a", "b"):
        api_server.create(pod(name))
    with api_server.api_client() as api_client:
        factory = SharedInformerFactory(api_client, namespace="default")
        informer = factory.core().v1().pods().informer()
        factory.start()
        try:
            assert factory.wait_for_cache_sync(timeout=10.0) == {"pods": True}
            assert api_server.wait_for_watches(1, "pods")
            assert api_server.garble_watch_events(event_type="DELETED", resource="pods") == 1
            api_server.delete("pods", "default", "a", grace_period_seconds=0)
            api_server.create(pod("d"))
            assert _eventually(lambda: "d" in _pod_names(informer))
            assert _eventually(lambda: _pod_names(informer) == {"b", "d"}, timeout=3.0)
        finally:
            factory.shutdown()


def test_an_informer_does_not_sync_from_a_failure_status_in_a_200(api_server):
    from informers import SharedInformerFactory

    api_server.create(pod("a"))
    api_server.fail_next(1, 500, verb="list", resource="pods", as_ok=True)
    # the watch that follows comes late, so it cannot mend the cache before the sync
    api_server.delay(3.0, verb="watch", resource="pods")
    with api_server.api_client() as api_client:
        factory = SharedInformerFactory(api_client, namespace="default")
        informer = factory.core().v1().pods().informer()
        factory.start()
        try:
            assert factory.wait_for_cache_sync(timeout=10.0) == {"pods": True}
            assert _pod_names(informer) == {"a"}  # synced from the second, real list
        finally:
            api_server.delay(0)
            factory.shutdown()
