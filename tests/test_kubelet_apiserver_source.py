"""Tests for controllers.kubelet.apiserver_source over HTTP: the same tests against the embedded
API server and the real kube-apiserver (``any_api_server``), plus the 410 relist, which needs
the embedded server's fault injection.

The source follows pods of all namespaces bound to its node, so each test uses a node name of
its own (the real server is shared by the session).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from controllers.kubelet.apiserver_source import APIServerSource, node_field_selector
from controllers.kubelet.pod_update import API_SOURCE, SET, PodUpdate
from informers.backoff import Backoff
from informers.reflector_options import ReflectorOptions
from informers.testing import ApiServer


def api_pod(name: str, node: str | None, namespace: str, image: str = "nginx:1.27",
            ) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": image}]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def keys(update: PodUpdate) -> list[str]:
    assert (update.op, update.source) == (SET, API_SOURCE)
    return sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in update.pods)


@pytest.fixture
def server(any_api_server):
    return any_api_server


@pytest.fixture
def node(server) -> str:
    return f"node-{server.namespace}"


def start_source(server, node: str, **kwargs: Any):
    q: queue.Queue[PodUpdate] = queue.Queue()
    client = server.api_client()
    src = APIServerSource(client, node, q, **kwargs)
    stop = threading.Event()
    src.start(stop)

    def close() -> None:
        stop.set()
        src.join(5)
        client.close()
        assert src._thread is not None and not src._thread.is_alive()

    return src, q, close


@pytest.fixture
def running(server, node) -> Iterator[tuple[APIServerSource, queue.Queue[PodUpdate]]]:
    src, q, close = start_source(
        server, node, reflector_options=ReflectorOptions(
            backoff=Backoff(initial=0.01, cap=0.05, factor=2.0, jitter=0.0)))
    try:
        yield src, q
    finally:
        close()


def next_keys(q: queue.Queue[PodUpdate]) -> list[str]:
    return keys(q.get(timeout=5))


def test_field_selector():
    assert node_field_selector("Node-A") == "spec.nodeName=Node-A"


def test_initial_empty_set_then_add_modify_delete(server, node, running):
    _, q = running
    ns = server.namespace
    assert next_keys(q) == []
    server.create(api_pod("web", node, ns))
    update = q.get(timeout=5)
    assert keys(update) == [f"{ns}/web"]
    assert update.pods[0]["spec"]["nodeName"] == node
    stored = server.get("pods", ns, "web")
    assert stored is not None
    stored["metadata"]["labels"] = {"v": "2"}
    server.update(stored)
    update = q.get(timeout=5)
    assert keys(update) == [f"{ns}/web"]
    assert update.pods[0]["metadata"]["labels"] == {"v": "2"}
    server.delete("pods", ns, "web", grace_period_seconds=0)
    # A pod's delete first marks it (deletionTimestamp, period 0), then removes it.
    update = q.get(timeout=5)
    assert keys(update) == [f"{ns}/web"]
    assert update.pods[0]["metadata"]["deletionGracePeriodSeconds"] == 0
    assert next_keys(q) == []
    assert q.empty()


def test_initial_set_holds_the_pods_already_bound(server, node):
    ns, other = server.namespace, server.new_namespace()
    server.create(api_pod("a", node, ns))
    server.create(api_pod("b", node, other))
    server.create(api_pod("elsewhere", f"{node}-2", ns))
    _, q, close = start_source(server, node)
    try:
        assert next_keys(q) == sorted([f"{ns}/a", f"{other}/b"])
    finally:
        close()


def test_pods_of_other_nodes_never_appear(server, node, running):
    _, q = running
    ns = server.namespace
    assert next_keys(q) == []
    server.create(api_pod("elsewhere", f"{node}-2", ns))
    server.create(api_pod("unscheduled", None, ns))
    server.create(api_pod("lookalike", f"{node}0", ns))
    server.create(api_pod("mine", node, ns))
    # the first SET after the foreign pods is the one for "mine": they sent nothing
    assert next_keys(q) == [f"{ns}/mine"]
    server.delete("pods", ns, "elsewhere", grace_period_seconds=0)
    server.create(api_pod("mine-too", node, ns))
    assert next_keys(q) == [f"{ns}/mine", f"{ns}/mine-too"]
    assert q.empty()


def test_graceful_delete_is_sent_with_its_deletion_timestamp(server, node, running):
    _, q = running
    ns = server.namespace
    assert next_keys(q) == []
    server.create(api_pod("web", node, ns))
    assert next_keys(q) == [f"{ns}/web"]
    server.delete("pods", ns, "web", grace_period_seconds=30)
    update = q.get(timeout=5)
    assert keys(update) == [f"{ns}/web"]
    assert update.pods[0]["metadata"]["deletionTimestamp"]
    assert update.pods[0]["metadata"]["deletionGracePeriodSeconds"] == 30
    server.delete("pods", ns, "web", grace_period_seconds=0)
    update = q.get(timeout=5)  # the period shortened to 0 ...
    assert update.pods[0]["metadata"]["deletionGracePeriodSeconds"] == 0
    assert next_keys(q) == []  # ... then the pod is gone
    assert q.empty()


# -- embedded server only: a watch that misses events, then a 410 -----------------------------

NODE = "node-1"


def test_relist_after_410_sends_the_right_set():
    with ApiServer() as server:
        src, q, close = start_source(
            server, NODE, reflector_options=ReflectorOptions(
                backoff=Backoff(initial=0.01, cap=0.05, factor=2.0, jitter=0.0)))
        try:
            server.create(api_pod("stays", NODE, "default"))
            server.create(api_pod("goes", NODE, "default"))
            assert eventually_keys(q, ["default/goes", "default/stays"])
            assert server.wait_for_watches(1, "pods")
            server.hang_watches()  # the watch sees nothing from here on
            server.delete("pods", "default", "goes", grace_period_seconds=0)  # bound: graceful
            server.create(api_pod("new", NODE, "default"))
            server.compact()  # history gone: re-watching from the old version answers 410
            lists_before = src.reflector.metrics.lists_total
            server.drop_watches("pods")
            server.resume_watches()
            assert eventually_keys(q, ["default/new", "default/stays"])
            assert src.reflector.metrics.lists_total > lists_before  # it was a relist
            assert server.wait_for_watches(1, "pods")
            server.create(api_pod("after", NODE, "default"))
            assert eventually_keys(q, ["default/after", "default/new", "default/stays"])
        finally:
            close()


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
