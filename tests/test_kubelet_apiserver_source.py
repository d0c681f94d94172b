"""Tests for controllers.kubelet.apiserver_source through the embedded API server over HTTP."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from controllers.kubelet.apiserver_source import APIServerSource, node_field_selector
from controllers.kubelet.pod_update import API_SOURCE, SET, PodUpdate
from informers.backoff import Backoff
from informers.testing import ApiServer

NODE = "node-1"


def api_pod(name: str, node: str | None = NODE, image: str = "nginx:1.27",
            namespace: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": image}]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def keys(update: PodUpdate) -> list[str]:
    assert (update.op, update.source) == (SET, API_SOURCE)
    return sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in update.pods)


@pytest.fixture
def server() -> Iterator[ApiServer]:
    with ApiServer() as s:
        yield s


@pytest.fixture
def running(server: ApiServer) -> Iterator[tuple[APIServerSource, queue.Queue[PodUpdate]]]:
    q: queue.Queue[PodUpdate] = queue.Queue()
    client = server.api_client()
    src = APIServerSource(client, NODE, q,
                          backoff=Backoff(initial=0.01, cap=0.05, factor=2.0, jitter=0.0))
    stop = threading.Event()
    src.start(stop)
    try:
        yield src, q
    finally:
        stop.set()
        src.join(5)
        client.close()
        assert src._thread is not None and not src._thread.is_alive()


def next_keys(q: queue.Queue[PodUpdate]) -> list[str]:
    return keys(q.get(timeout=5))


def test_field_selector():
    assert node_field_selector("Node-A") == "spec.nodeName=Node-A"


def test_initial_empty_set_then_add_modify_delete(server, running):
    _, q = running
    assert next_keys(q) == []
    assert server.wait_for_watches(1, "pods")
    server.create(api_pod("web"))
    update = q.get(timeout=5)
    assert keys(update) == ["default/web"]
    assert update.pods[0]["spec"]["nodeName"] == NODE
    stored = server.get("pods", "default", "web")
    assert stored is not None
    stored["metadata"]["labels"] = {"v": "2"}
    server.update(stored)
    update = q.get(timeout=5)
    assert keys(update) == ["default/web"]
    assert update.pods[0]["metadata"]["labels"] == {"v": "2"}
    server.delete("pods", "default", "web")
    assert next_keys(q) == []


def test_initial_set_holds_the_pods_already_bound(server):
    server.create(api_pod("a"))
    server.create(api_pod("b", namespace="kube-system"))
    server.create(api_pod("elsewhere", node="node-2"))
    q: queue.Queue[PodUpdate] = queue.Queue()
    client = server.api_client()
    src = APIServerSource(client, NODE, q)
    stop = threading.Event()
    src.start(stop)
    try:
        assert next_keys(q) == ["default/a", "kube-system/b"]
    finally:
        stop.set()
        src.join(5)
        client.close()


def test_pods_of_other_nodes_never_appear(server, running):
    _, q = running
    assert next_keys(q) == []
    assert server.wait_for_watches(1, "pods")
    server.create(api_pod("elsewhere", node="node-2"))
    server.create(api_pod("unscheduled", node=None))
    server.create(api_pod("node-1-lookalike", node="node-10"))
    server.create(api_pod("mine"))
    # the first SET after the foreign pods is the one for "mine": they sent nothing
    assert next_keys(q) == ["default/mine"]
    server.delete("pods", "default", "elsewhere")
    server.create(api_pod("mine-too"))
    assert next_keys(q) == ["default/mine", "default/mine-too"]
    assert q.empty()


def test_graceful_delete_is_sent_with_its_deletion_timestamp(server, running):
    _, q = running
    assert next_keys(q) == []
    assert server.wait_for_watches(1, "pods")
    server.create(api_pod("web"))
    assert next_keys(q) == ["default/web"]
    server.delete("pods", "default", "web", grace_period_seconds=30)
    update = q.get(timeout=5)
    assert keys(update) == ["default/web"]
    assert update.pods[0]["metadata"]["deletionTimestamp"]
    server.delete("pods", "default", "web", grace_period_seconds=0)
    assert next_keys(q) == []


def test_relist_after_410_sends_the_right_set(server, running):
    src, q = running
    server.create(api_pod("stays"))
    server.create(api_pod("goes"))
    assert eventually_keys(q, ["default/goes", "default/stays"])
    assert server.wait_for_watches(1, "pods")
    server.hang_watches()  # the watch sees nothing from here on
    server.delete("pods", "default", "goes")
    server.create(api_pod("new"))
    server.compact()  # history gone: re-watching from the old version answers 410
    lists_before = src.reflector.metrics.lists_total
    server.drop_watches("pods")
    server.resume_watches()
    assert eventually_keys(q, ["default/new", "default/stays"])
    assert src.reflector.metrics.lists_total > lists_before  # it was a relist
    assert server.wait_for_watches(1, "pods")
    server.create(api_pod("after"))
    assert eventually_keys(q, ["default/after", "default/new", "default/stays"])


def eventually_keys(q: queue.Queue[PodUpdate], expected: list[str]) -> bool:
    """Read SETs until one equals ``expected`` (intermediate SETs may come first)."""
    seen = []
    while True:
        try:
            update = q.get(timeout=5)
        except queue.Empty:
            raise AssertionError(f"never got {expected}; got {seen}") from None
        seen.append(keys(update))
        if seen[-1] == expected:
            return True
