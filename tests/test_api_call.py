"""Tests for informers.client.api_call through the embedded API server."""

from __future__ import annotations

import socket

import pytest
from kubernetes import client

from informers.client.api_call import api_call, status_code
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


def test_host_and_headers_are_asked_for_once_per_reuse_period(server):
    """The kubeconfig loader's refresh hook runs on every ``param_serialize``; api_call asks
    for the headers once per HEADERS_REUSE_SECONDS per client and content type, so a rotated
    token is picked up within that period."""
    from informers.client.transport import HEADERS_REUSE_SECONDS
    from informers.clock import FakeClock

    clock = FakeClock()
    tokens = [server.token]
    calls: list[str] = []
    configuration = client.Configuration(
        host=server.url, api_key={"BearerToken": "stale"}, api_key_prefix={"BearerToken": "Bearer"})

    def refresh(conf):
        calls.append(tokens[-1])
        conf.api_key["BearerToken"] = tokens[-1]

    configuration.refresh_api_key_hook = refresh
    with client.ApiClient(configuration) as api:
        api_call(api, "POST", LEASES, lease("reuse"), clock=clock)
        api_call(api, "GET", f"{LEASES}/reuse", clock=clock)
        api_call(api, "GET", f"{LEASES}/reuse", clock=clock)
        assert len(calls) == 2  # one for bodies (Content-Type), one for body-less requests
        tokens.append("revoked")
        clock.step(HEADERS_REUSE_SECONDS - 0.001)
        assert api_call(api, "GET", f"{LEASES}/reuse", clock=clock)["metadata"]["name"] == "reuse"
        assert len(calls) == 2
        clock.step(0.001)
        with pytest.raises(StatusError) as info:
            api_call(api, "GET", f"{LEASES}/reuse", clock=clock)
        assert info.value.code == 401
        assert calls == [server.token, server.token, "revoked"]


def test_requests_go_through_the_hosts_pool_and_survive_its_closing(server, api):
    """Without a proxy, requests skip the pool manager and use the host's pool; a closed
    pool sends them back through the manager."""
    from informers.client.transport import _prepared

    api_call(api, "POST", LEASES, lease("pool"))
    prepared = _prepared[api]["application/json"]
    manager = api.rest_client.pool_manager
    assert prepared.pool is manager.connection_from_url(server.url)
    manager.clear()  # the manager drops its pools; urllib3 1.x also closed them:
    prepared.pool.close()
    assert api_call(api, "GET", f"{LEASES}/pool")["metadata"]["name"] == "pool"
    api_call(api, "DELETE", f"{LEASES}/pool", {})
    with pytest.raises(StatusError) as info:
        api_call(api, "GET", f"{LEASES}/pool")
    assert info.value.code == 404


def test_a_path_in_the_host_prefixes_every_request(server):
    configuration = client.Configuration(
        host=server.url + "/prefix/", api_key={"BearerToken": server.token},
        api_key_prefix={"BearerToken": "Bearer"})
    with client.ApiClient(configuration) as prefixed, pytest.raises(StatusError) as info:
        api_call(prefixed, "GET", f"{LEASES}/x")
    assert info.value.code == 404
    assert server.requests[-1].path == f"/prefix{LEASES}/x"


def test_a_client_with_a_proxy_sends_through_the_proxy():
    configuration = client.Configuration(host="http://127.0.0.1:1")
    configuration.proxy = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    with client.ApiClient(configuration) as proxied, pytest.raises(ApiConnectionError) as info:
        api_call(proxied, "GET", f"{LEASES}/x")
    assert "Unable to connect to proxy" in str(info.value)
    assert configuration.proxy.rsplit(":", 1)[1] in str(info.value)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
