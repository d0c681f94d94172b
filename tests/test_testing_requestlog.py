"""The request log of the embedded API server (informers/testing/requestlog.py)."""

from __future__ import annotations

import threading

from kubernetes import client

from informers.clock import FakeClock
from informers.testing.requestlog import RequestLog, RequestRecord


def test_wait_for_requests_returns_once_enough_were_answered(api_server, api_client):
    core = client.CoreV1Api(api_client)
    worker = threading.Thread(target=lambda: [core.list_namespaced_pod("default")
                                              for _ in range(3)])
    worker.start()
    assert api_server.wait_for_requests(3, verb="list", resource="pods", timeout=10)
    worker.join()
    assert not api_server.wait_for_requests(4, verb="list", timeout=0.05)
    assert [r.status for r in api_server.request_log(verb="list")] == [200, 200, 200]


def test_records_are_filtered_copies_and_wait_follows_its_clock():
    log = RequestLog()
    log.append(RequestRecord(verb="list", resource="pods"))
    log.append(RequestRecord(verb="watch", resource="pods"))
    log.append(RequestRecord(verb="list", resource="nodes"))
    assert [r.resource for r in log.records(verb="list")] == ["pods", "nodes"]
    copy = log.records()
    copy.clear()
    assert len(log.records()) == 3
    clock = FakeClock()
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(
        log.wait_for(lambda records: len(records) > 3, 5.0, clock)))
    waiter.start()
    assert clock.wait_for_waiters(1)
    clock.step(5.0)
    waiter.join(5)
    assert result == [False]
    log.clear()
    assert log.records() == []
