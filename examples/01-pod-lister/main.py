"""Lists pods from an informer's cache: a shared informer factory, a custom index by node name,
and lister queries (client-go's listers and ``Indexer.ByIndex``).

    python examples/01-pod-lister/main.py                       # embedded API server, demo pods
    python examples/01-pod-lister/main.py --kubeconfig ~/.kube/config --duration 30

The cache is filled by one list and kept current by one watch; every query below reads memory,
never the API server.
"""

from __future__ import annotations

import argparse
import threading
from typing import Any

from informers import (
    GenericInformer,
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
)
from informers.signals import SignalHandler
from informers.testing import ApiServer, connect

BY_NODE = "by-node"
"""Our custom index: pods by ``spec.nodeName``."""


def node_name_index(pod: dict[str, Any]) -> list[str]:
    """The index function: a pod's node, or no value for a pod not scheduled yet."""
    node = (pod.get("spec") or {}).get("nodeName")
    return [node] if node else []


def show(pods: GenericInformer) -> None:
    """Answer a few questions from the cache."""
    lister = pods.lister()
    indexer = pods.informer().get_indexer()
    print(f"{len(lister.list())} pods cached")
    for node in sorted(indexer.list_index_func_values(BY_NODE)):
        keys = sorted(meta_namespace_key_func(p) for p in indexer.by_index(BY_NODE, node))
        print(f"node {node}: {', '.join(keys)}")
    web = sorted(p["metadata"]["name"] for p in lister.pods("default").list("app=web"))
    print(f"app=web in default: {', '.join(web)}")


def on_add(pod: dict[str, Any], is_in_initial_list: bool) -> None:
    if not is_in_initial_list:
        print(f"added {meta_namespace_key_func(pod)}")


def on_delete(pod: Any) -> None:
    print(f"deleted {deletion_handling_meta_namespace_key_func(pod)}")


def new_pod(namespace: str, name: str, app: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}}}


def seed(server: ApiServer) -> None:
    """The demo's pods on the embedded API server."""
    for pod in (new_pod("default", "web-0", "web", "node-a"),
                new_pod("default", "web-1", "web", "node-b"),
                new_pod("default", "db-0", "db", "node-a"),
                new_pod("kube-system", "dns-0", "dns", "node-b"),
                new_pod("default", "web-pending", "web")):
        server.create(pod)


def demo(server: ApiServer, pods: GenericInformer, stop: threading.Event) -> None:
    """Change the cluster, wait until the cache has caught up, and ask again."""
    server.create(new_pod("default", "web-2", "web", "node-b"))
    server.delete("pods", "default", "db-0", grace_period_seconds=0)  # no kubelet to wait for
    cache = pods.informer().get_indexer()
    while not stop.is_set() and ("default/web-2" not in cache or "default/db-0" in cache):
        stop.wait(0.02)
    show(pods)


def run(kubeconfig: str | None, duration: float | None, stop: threading.Event) -> int:
    # The cluster of the kubeconfig, or else a new embedded API server with the demo's pods.
    with connect(kubeconfig) as (api_client, server):
        if server is not None:
            seed(server)
        factory = SharedInformerFactory(api_client)
        pods = factory.core().v1().pods()
        pods.informer().add_indexers({BY_NODE: node_name_index})
        pods.informer().add_event_handler(
            ResourceEventHandlerFuncs(on_add=on_add, on_delete=on_delete))
        factory.start()
        try:
            if not all(factory.wait_for_cache_sync(stop).values()):
                return 1
            show(pods)
            if server is not None:
                demo(server, pods, stop)
            stop.wait(duration)
        finally:
            factory.shutdown()
    return 0


def main(argv: list[str] | None = None, stop: threading.Event | None = None) -> int:
    parser = argparse.ArgumentParser(description="List pods from an informer's cache.")
    parser.add_argument("--kubeconfig", help="use this cluster (default: an embedded API server)")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds to keep watching after the queries (default: until Ctrl-C)")
    args = parser.parse_args(argv)
    signals = SignalHandler(stop)  # Ctrl-C sets the stop event; a second one exits at once
    if threading.current_thread() is threading.main_thread():
        signals.install()
    try:
        return run(args.kubeconfig, args.duration, signals.stop_event)
    finally:
        signals.uninstall()


if __name__ == "__main__":
    raise SystemExit(main())
