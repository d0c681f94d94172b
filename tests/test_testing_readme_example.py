"""The example of the README section "Testing your controller without a cluster"."""

from __future__ import annotations

import pytest
from kubernetes import client


def reconcile(core: client.CoreV1Api, namespace: str) -> int:
    """The code under test: give every pod of `namespace` an `owner` label."""
    changed = 0
    for pod in core.list_namespaced_pod(namespace).items:
        if "owner" not in (pod.metadata.labels or {}):
            core.patch_namespaced_pod(
                pod.metadata.name, namespace, {"metadata": {"labels": {"owner": "team-a"}}}
            )
            changed += 1
    return changed


def make_pod(name: str, **labels: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }


def test_reconcile_labels_unowned_pods(api_server, api_client):
    # Seed state without going through the client; watchers would see these changes too.
    api_server.create(make_pod("web"))
    api_server.create(make_pod("db", owner="team-b"))

    assert reconcile(client.CoreV1Api(api_client), "default") == 1

    # Assert the resulting state, then (where the sequence is the contract) the requests.
    assert api_server.get("pods", "default", "web")["metadata"]["labels"] == {"owner": "team-a"}
    assert api_server.get("pods", "default", "db")["metadata"]["labels"] == {"owner": "team-b"}
    assert [(r.verb, r.name) for r in api_server.request_log(resource="pods")] == [
        ("list", ""),
        ("patch", "web"),
    ]


def test_reconcile_reports_a_server_error(api_server, api_client):
    api_server.fail_next(1, 500, verb="list", resource="pods")  # fault injection
    with pytest.raises(client.ApiException) as info:
        reconcile(client.CoreV1Api(api_client), "default")
    assert info.value.status == 500
    assert reconcile(client.CoreV1Api(api_client), "default") == 0  # the next call works


@pytest.mark.api_server(bookmark_interval=0.1)  # options for this test's ApiServer
def test_watching_pods(api_server, api_client):
    core = client.CoreV1Api(api_client)
    stream = core.list_namespaced_pod(
        "default", watch=True, resource_version=api_server.resource_version,
        _preload_content=False, _request_timeout=10,
    )
    api_server.create(make_pod("web"))
    first_line = next(stream.stream()).split(b"\n")[0]
    stream.close()
    assert b'"type":"ADDED"' in first_line
