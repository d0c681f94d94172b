"""The Python children of :mod:`benchmarks.bench_real`: ours and the official client's informer,
each run as ``python -m benchmarks.bench_real --child ...`` in a process of its own, which prints
one JSON object (its figures) on stdout and exits."""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from benchmarks.bench_informer import Sampler, rss_bytes
from benchmarks.real_runs import CHILD_TIMEOUT, POLL


def _emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()



def _client(kubeconfig: str) -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=kubeconfig)


def child_ours(kubeconfig: str, pods: int, rv: str, events: int, profile: bool,
               tuned: bool = True, compact: bool = False) -> int:
    from informers import MemoryTuning, ResourceEventHandlerFuncs, SharedInformerFactory
    from informers.list_watch import ListOptions

    state = {"seen": 0, "first": 0.0, "last": 0.0, "watch_start": 0.0, "watch_cpu": 0.0,
             "last_cpu": 0.0}

    def pin(options: ListOptions) -> None:
        # lists (not watches, which ask for bookmarks) start at rv, exactly; the first watch's
        # options are tweaked just before its request: the burst's start
        if options.allow_watch_bookmarks and not state["watch_start"]:
            state["watch_start"] = time.perf_counter()
            state["watch_cpu"] = cpu_seconds()
        if rv and not options.allow_watch_bookmarks and not options.continue_:
            options.resource_version = rv
            options.resource_version_match = "Exact"

    factory = SharedInformerFactory(_client(kubeconfig), tweak_list_options=pin if rv else None,
                                    memory_tuning=MemoryTuning() if tuned else None,
                                    compact=compact)
    informer = factory.core().v1().pods().informer()
    versions: set[str] = set()  # only the one handler thread writes
    done = threading.Event()

    def on_update(old: Any, new: Any) -> None:
        versions.add(new["metadata"]["resourceVersion"])
        state["seen"] += 1
        if state["seen"] == 1:
            state["first"] = time.perf_counter()
        if state["seen"] == events:
            state["last"] = time.perf_counter()
            state["last_cpu"] = cpu_seconds()
            done.set()

    informer.add_event_handler(ResourceEventHandlerFuncs(on_update=on_update))
    sampler = Sampler() if profile else None
    gc.collect()
    rss0 = rss_bytes()
    if sampler is not None:
        sampler.start()
    start = time.perf_counter()
    factory.start()
    while not informer.has_synced():
        if time.perf_counter() - start > CHILD_TIMEOUT:
            _emit({"error": "ours: not synced"})
            os._exit(1)
        time.sleep(POLL)
    synced = time.perf_counter() - start
    if sampler is not None:
        sys.stderr.write(sampler.report(f"our initial sync of {pods} pods ({synced:.2f} s)"))
        sampler = Sampler() if events else None
        if sampler is not None:
            sampler.start()
    if events:
        if not done.wait(CHILD_TIMEOUT):
            _emit({"error": f"ours: saw {state['seen']} of {events} MODIFIED events"})
            os._exit(1)
        if sampler is not None:
            sys.stderr.write(sampler.report(f"our watch burst of {events} events"))
        _emit({"events": events, "total": state["last"] - start, "synced": synced,
               "watch": state["last"] - state["watch_start"],
               "watch_cpu": state["last_cpu"] - state["watch_cpu"],
               "first_to_last": state["last"] - state["first"], "distinct": len(versions)})
    else:
        gc.collect()
        rss1 = rss_bytes()
        lister = factory.core().v1().pods().lister()
        _emit({"synced": synced, "rss0": rss0, "rss1": rss1,
               "cached": len(informer.get_indexer().list_keys()),
               "list_selector": _best_of(lambda: lister.list(SELECTOR))})
    os._exit(0)  # skip joining daemon threads: not measured


SELECTOR = "app.kubernetes.io/name=checkout"
"""The lister figure's label selector: one app of the 14 in benchmarks.pods (the Go program
uses the same)."""


def cpu_seconds() -> float:
    """The process's CPU time so far, user and system (every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _best_of(fn: Callable[[], Any], repeat: int = 5) -> float:
    """Best seconds of ``repeat`` calls of ``fn``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def child_official(kubeconfig: str, pods: int, rv: str, events: int) -> int:
    from kubernetes import client
    from kubernetes.informer import ADDED, MODIFIED, SharedInformer

    api = client.CoreV1Api(_client(kubeconfig))

    state = {"added": 0, "seen": 0, "first": 0.0, "last": 0.0, "watch_start": 0.0}

    def list_pods(**kwargs: Any) -> Any:
        if kwargs.get("watch") and not state["watch_start"]:
            state["watch_start"] = time.perf_counter()
        if rv and not kwargs.get("watch"):
            kwargs.update(resource_version=rv, resource_version_match="Exact")
        return api.list_pod_for_all_namespaces(**kwargs)

    informer = SharedInformer(list_pods)
    synced_event, done = threading.Event(), threading.Event()

    def on_added(obj: Any) -> None:
        state["added"] += 1
        if state["added"] == pods:
            synced_event.set()

    def on_modified(obj: Any) -> None:
        state["seen"] += 1
        if state["seen"] == 1:
            state["first"] = time.perf_counter()
        if state["seen"] == events:
            state["last"] = time.perf_counter()
            done.set()

    informer.add_event_handler(ADDED, on_added)
    informer.add_event_handler(MODIFIED, on_modified)
    versions: set[str] = set()
    informer.add_event_handler(MODIFIED, lambda obj: versions.add(obj.metadata.resource_version))
    gc.collect()
    rss0 = rss_bytes()
    start = time.perf_counter()
    informer.start()
    if not synced_event.wait(CHILD_TIMEOUT):
        _emit({"error": f"official: {state['added']} of {pods} pods after {CHILD_TIMEOUT} s"})
        os._exit(1)
    synced = time.perf_counter() - start
    if events:
        if not done.wait(CHILD_TIMEOUT):
            _emit({"error": f"official: saw {state['seen']} of {events} MODIFIED events"})
            os._exit(1)
        _emit({"events": events, "total": state["last"] - start, "synced": synced,
               "watch": state["last"] - state["watch_start"],
               "first_to_last": state["last"] - state["first"], "distinct": len(versions)})
    else:
        gc.collect()
        _emit({"synced": synced, "rss0": rss0, "rss1": rss_bytes(),
               "cached": len(informer.cache.list_keys())})
    os._exit(0)
