"""client-go's classic work-queue controller (``examples/workqueue``), written by hand in Python.

The informer's handlers only put pod keys into a rate-limited work queue; N worker threads take
keys out and call ``sync_to_stdout(key)``, which reads the pod from the informer's cache;
``handle_err`` retries a failed key with backoff, up to 5 times, then drops it. The work queue
never hands one key to two workers at once, and a key added many times while it waits is
processed once. (``informers.controller.Controller`` packages this loop; example 04 uses it.)

    python examples/03-workqueue-controller/main.py             # embedded API server, demo pods
    python examples/03-workqueue-controller/main.py --kubeconfig ~/.kube/config --workers 4
"""

from __future__ import annotations

import argparse
import threading
from typing import Any

from informers import (
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    deletion_handling_meta_namespace_key_func,
    lookup,
    meta_namespace_key_func,
    wait_for_cache_sync,
)
from informers.client import list_watch_from_client
from informers.signals import SignalHandler
from informers.testing import ApiServer, connect
from informers.workqueue import RateLimitingQueue, default_controller_rate_limiter

MAX_RETRIES = 5
"""Retries of a failing key before it is dropped (client-go's example: ``NumRequeues < 5``)."""

FAIL_ANNOTATION = "example.com/fail"
"""The demo's way to make a sync fail: a pod annotated ``example.com/fail: "true"``."""


class Controller:
    """Pods from an informer, processed by workers through a rate-limited queue."""

    def __init__(self, informer: SharedIndexInformer, queue: RateLimitingQueue[str]) -> None:
        self.informer = informer
        self.indexer = informer.get_indexer()
        self.queue = queue
        self.outcomes: dict[str, str] = {}  # key -> "synced" | "gone" | "dropped", for the demo

    def process_next_item(self) -> bool:
        """Process one key; False once the queue is shut down."""
        key, shutdown = self.queue.get()
        if shutdown:
            return False
        assert key is not None
        try:  # always tell the queue we are done with the key: it may hand it out again
            try:
                self.sync_to_stdout(key)
            except Exception as err:
                self.handle_err(err, key)
            else:
                self.handle_err(None, key)
        finally:
            self.queue.done(key)
        return True

    def sync_to_stdout(self, key: str) -> None:
        """The business logic: read the pod from the cache (never from the API server)."""
        pod = self.indexer.get_by_key(key)
        if pod is None:
            print(f"Pod {key} does not exist anymore")
            self.outcomes[key] = "gone"
            return
        if pod["metadata"].get("annotations", {}).get(FAIL_ANNOTATION) == "true":
            raise RuntimeError(f"pod {key} asks to fail")
        print(f"Sync/Add/Update for Pod {pod['metadata']['name']}")
        self.outcomes[key] = "synced"

    def handle_err(self, err: Exception | None, key: str) -> None:
        if err is None:
            self.queue.forget(key)  # success: reset the key's backoff
            return
        if self.queue.num_requeues(key) < MAX_RETRIES:
            print(f"Error syncing pod {key}: {err}")
            self.queue.add_rate_limited(key)  # retry after 5 ms, 10 ms, 20 ms, ...
            return
        self.queue.forget(key)
        print(f"Dropping pod {key} out of the queue: {err}")
        self.outcomes[key] = "dropped"

    def run_worker(self) -> None:
        while self.process_next_item():
            pass

    def run(self, workers: int, stop: threading.Event) -> None:
        """Start the informer and the workers; block until ``stop`` is set."""
        informer = threading.Thread(target=self.informer.run, args=(stop,), name="informer")
        informer.start()
        threads: list[threading.Thread] = []
        try:
            if not wait_for_cache_sync(stop, self.informer.has_synced):
                return
            print("Starting Pod controller")
            for i in range(workers):
                threads.append(threading.Thread(target=self.run_worker, name=f"worker-{i}"))
                threads[-1].start()
            stop.wait()
        finally:
            self.queue.shut_down()  # workers finish their keys and return
            for thread in threads:
                thread.join()
            informer.join()
            print("Stopping Pod controller")


def new_controller(api_client: Any, namespace: str) -> Controller:
    """Wire the informer's handlers to the queue: they only enqueue keys."""
    queue: RateLimitingQueue[str] = RateLimitingQueue(default_controller_rate_limiter())
    informer = SharedIndexInformer(list_watch_from_client(api_client, lookup("pods"), namespace))
    informer.add_event_handler(ResourceEventHandlerFuncs(
        on_add=lambda pod: queue.add(meta_namespace_key_func(pod)),
        on_update=lambda old, new: queue.add(meta_namespace_key_func(new)),
        # a delete may carry a DeletedFinalStateUnknown tombstone: this key function handles it
        on_delete=lambda pod: queue.add(deletion_handling_meta_namespace_key_func(pod)),
    ))
    return Controller(informer, queue)


def pod(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"containers": [{"name": "main", "image": "nginx"}]}}


def demo(server: ApiServer, controller: Controller, stop: threading.Event) -> None:
    """Add, delete and break pods; wait until the controller has seen each outcome."""
    wait_for(controller, {"default/web-0": "synced"}, stop)  # the pod that was there at start
    server.create(pod("web-1"))
    server.create(pod("broken", {FAIL_ANNOTATION: "true"}))
    server.delete("pods", "default", "web-0")
    wait_for(controller, {"default/web-1": "synced", "default/broken": "dropped",
                          "default/web-0": "gone"}, stop)


def wait_for(controller: Controller, outcomes: dict[str, str], stop: threading.Event) -> None:
    while not stop.is_set() and any(controller.outcomes.get(k) != v for k, v in outcomes.items()):
        stop.wait(0.02)


def run(args: argparse.Namespace, stop: threading.Event) -> int:
    # The cluster of the kubeconfig, or else a new embedded API server with one pod.
    with connect(args.kubeconfig) as (api_client, server):
        if server is not None:
            server.create(pod("web-0"))
        controller = new_controller(api_client, args.namespace)
        runner = threading.Thread(target=controller.run, args=(args.workers, stop))
        runner.start()
        try:
            if server is not None:
                demo(server, controller, stop)
            stop.wait(args.duration)
        finally:
            stop.set()
            runner.join()
    return 0


def main(argv: list[str] | None = None, stop: threading.Event | None = None) -> int:
    parser = argparse.ArgumentParser(description="client-go's work-queue controller, in Python.")
    parser.add_argument("--kubeconfig", help="use this cluster (default: an embedded API server)")
    parser.add_argument("--namespace", default="default", help="watch this namespace")
    parser.add_argument("--workers", type=int, default=2, help="worker threads (default 2)")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds to run after the demo (default: until Ctrl-C)")
    args = parser.parse_args(argv)
    signals = SignalHandler(stop)  # Ctrl-C sets the stop event; a second one exits at once
    if threading.current_thread() is threading.main_thread():
        signals.install()
    try:
        return run(args, signals.stop_event)
    finally:
        signals.uninstall()


if __name__ == "__main__":
    raise SystemExit(main())
