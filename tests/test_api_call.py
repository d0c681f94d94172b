"""Tests for informers.api_call through the embedded API server."""

from __future__ import annotations

import socket

import pytest
from kubernetes import client

from informers.api_call import api_call, status_code
from informers.errors import ApiConnectionError, StatusError

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


@pytest.fixture
def api(server):
    server.clear_faults()
    c = server.api_client()
    yield c
    c.close()


def lease(name):
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
    }


def test_create_get_put_patch_round_trip(api):
    created = api_call(api, "POST", LEASES, lease("one"))
    assert created["metadata"]["name"] == "one"
    assert created["spec"] == {"holderIdentity": "a", "leaseDurationSeconds": 15}
    got = api_call(api, "GET", f"{LEASES}/one")
    assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    got["spec"]["holderIdentity"] = "b"
    put = api_call(api, "PUT", f"{LEASES}/one", got)
    assert put["spec"]["holderIdentity"] == "b"
    patched = api_call(
        api, "PATCH", f"{LEASES}/one", {"spec": {"leaseTransitions": 3}},
        content_type="application/strategic-merge-patch+json",
    )
    assert patched["spec"] == {"holderIdentity": "b", "leaseDurationSeconds": 15,
                               "leaseTransitions": 3}


def test_error_answer_becomes_status_error(api):
    with pytest.raises(StatusError) as info:
        api_call(api, "GET", f"{LEASES}/missing")
    assert info.value.code == 404
    assert info.value.reason == "NotFound"
    assert status_code(info.value) == 404

    api_call(api, "POST", LEASES, lease("two"))
    with pytest.raises(StatusError) as info:
        api_call(api, "POST", LEASES, lease("two"))
    assert (info.value.code, info.value.reason) == (409, "AlreadyExists")


def test_injected_failure_keeps_retry_after(api, server):
    # (a create: the official client retries GETs answered 429 with Retry-After by itself)
    server.fail_next(1, 429, verb="create", resource="leases", retry_after=7)
    with pytest.raises(StatusError) as info:
        api_call(api, "POST", LEASES, lease("three"))
    assert info.value.code == 429
    assert info.value.retry_after == 7


def test_no_answer_becomes_connection_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = client.Configuration()
    config.host = f"http://127.0.0.1:{port}"
    config.retries = False
    with client.ApiClient(config) as dead, pytest.raises(ApiConnectionError) as info:
        api_call(dead, "GET", f"{LEASES}/x", request_timeout=2)
    assert info.value.refused is True
    assert status_code(info.value) == 0


def test_status_code_of_other_errors():
    assert status_code(ValueError("x")) == 0
    assert status_code(None) == 0
    assert status_code(client.ApiException(status=418)) == 418
