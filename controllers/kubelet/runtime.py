"""Runs pods on a node: the pluggable Runtime, a recording runtime and the default SyncHandler.

A :class:`Runtime` is what a node agent plugs in to really start and stop pods (containers,
processes, VMs...). :class:`RecordingRuntime` is the default: it only keeps the set of pods the
node should run, logs it (and writes it to a stream if given) whenever it changes, and checks
that no pod is ever synced by two threads at once. :class:`PodSyncHandler` is the
:class:`~controllers.kubelet.sync_loop.SyncHandler` that ties the sync loop to
:class:`~controllers.kubelet.pod_workers.PodWorkers` and a runtime, the way the kubelet's
``HandlePod*`` methods dispatch work (``pkg/kubelet/kubelet.go``).
"""

from __future__ import annotations

import copy
import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from controllers.kubelet.pod_update import SyncPodType, pod_uid
from controllers.kubelet.pod_workers import PodWorkers, UpdatePodOptions
from informers.clock import REAL_CLOCK, Clock
from informers.workqueue import RateLimiter

__all__ = [
    "PodSyncHandler",
    "RecordingRuntime",
    "Runtime",
    "TextStream",
    "pod_key",
]

logger = logging.getLogger(__name__)


def pod_key(pod: Mapping[str, Any]) -> str:
    """``namespace/name`` of a pod."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


class Runtime(Protocol):
    """Starts and stops pods. Called from pod worker threads, one thread per pod at a time;
    different pods concurrently. Raise to have the operation retried with backoff."""

    def sync_pod(self, pod: Mapping[str, Any], update_type: SyncPodType) -> None:
        """Make ``pod`` run as specified (create it, or update it in place)."""

    def kill_pod(self, pod: Mapping[str, Any]) -> None:
        """Stop ``pod`` and forget it."""

    def running_pods(self) -> list[dict[str, Any]]:
        """Every pod the runtime currently runs."""


class TextStream(Protocol):
    """Where :class:`RecordingRuntime` writes the running set (``sys.stdout`` fits)."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


Hook = Callable[[str, Mapping[str, Any], SyncPodType], None]
"""Called as ``hook(action, pod, update_type)`` inside :class:`RecordingRuntime` operations
(``action`` is ``"sync"`` or ``"kill"``); may block or raise (a raise fails the operation)."""


class RecordingRuntime:
    """A :class:`Runtime` that records which pods the node should run, and nothing else.

    * :meth:`sync_pod` stores a copy of the pod (``uid -> pod``), :meth:`kill_pod` removes it.
    * Whenever the set of ``namespace/name`` s changes it is logged, and written as one JSON line
      ``{"running": [...sorted keys]}`` to ``stream`` if one is given.
    * It counts, per UID, operations that overlapped in time on different threads
      (:attr:`overlaps`; must stay 0 under :class:`PodWorkers`) and records every operation in
      :attr:`history` as ``(action, uid, "ns/name", update_type)``.

    Thread-safe.

    Args:
        stream: a text stream for the running set (e.g. ``sys.stdout``); ``None`` only logs.
        hook: see :data:`Hook` (tests use it to block or fail operations).
    """

    def __init__(self, *, stream: TextStream | None = None, hook: Hook | None = None) -> None:
        self.stream = stream
        self.hook = hook
        self._lock = threading.Lock()
        self._pods: dict[str, dict[str, Any]] = {}
        self._active: dict[str, int] = {}
        self._last_keys: list[str] | None = None
        self.history: list[tuple[str, str, str, str]] = []
        self.overlaps = 0

    def _enter(self, uid: str) -> None:
        with self._lock:
            if self._active.get(uid, 0):
                self.overlaps += 1
                logger.error("runtime: pod %s is being synced by two threads at once", uid)
            self._active[uid] = self._active.get(uid, 0) + 1

    def _exit(self, uid: str) -> None:
        with self._lock:
            self._active[uid] -= 1
            if not self._active[uid]:
                del self._active[uid]

    def sync_pod(self, pod: Mapping[str, Any], update_type: SyncPodType) -> None:
        uid = pod_uid(pod)
        self._enter(uid)
        try:
            if self.hook is not None:
                self.hook("sync", pod, update_type)
            with self._lock:
                self._pods[uid] = copy.deepcopy(dict(pod))
                self.history.append(("sync", uid, pod_key(pod), str(update_type)))
        finally:
            self._exit(uid)
        self._report()

    def kill_pod(self, pod: Mapping[str, Any]) -> None:
        uid = pod_uid(pod)
        self._enter(uid)
        try:
            if self.hook is not None:
                self.hook("kill", pod, SyncPodType.KILL)
            with self._lock:
                self._pods.pop(uid, None)
                self.history.append(("kill", uid, pod_key(pod), str(SyncPodType.KILL)))
        finally:
            self._exit(uid)
        self._report()

    def running_pods(self) -> list[dict[str, Any]]:
        with self._lock:
            return [copy.deepcopy(p) for p in self._pods.values()]

    def running_keys(self) -> list[str]:
        """Sorted ``namespace/name`` of the running pods."""
        with self._lock:
            return sorted(pod_key(p) for p in self._pods.values())

    def running_uids(self) -> set[str]:
        with self._lock:
            return set(self._pods)

    def _report(self) -> None:
        with self._lock:
            keys = sorted(pod_key(p) for p in self._pods.values())
            if keys == self._last_keys:
                return
            self._last_keys = keys
            logger.info("runtime: node runs %d pods: %s", len(keys), ", ".join(keys) or "-")
            if self.stream is not None:
                self.stream.write(json.dumps({"running": keys}) + "\n")
                self.stream.flush()


class PodSyncHandler:
    """The default :class:`~controllers.kubelet.sync_loop.SyncHandler`: pods to workers to runtime.

    * additions (sorted by creation time, as the kubelet does) are dispatched as ``CREATE``,
      updates as ``UPDATE``, removals as ``KILL``, periodic syncs as ``SYNC``; reconciles only
      refresh the stored pod. A pod with a ``deletionTimestamp`` is killed whatever the update.
    * ``handle_pod_cleanups`` (housekeeping) forgets the workers of pods no longer desired and
      kills, through the workers, every pod the runtime runs that is not desired.
    * The handler's own map of desired pods is written by the sync loop's thread only.

    Args:
        runtime: runs the pods.
        clock: the pod workers' clock (retry backoff).
        rate_limiter: the pod workers' retry delays.
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        clock: Clock = REAL_CLOCK,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        self.runtime = runtime
        self.pod_workers = PodWorkers(self._sync_pod, clock=clock, rate_limiter=rate_limiter)
        self._lock = threading.Lock()
        self._pods: dict[str, dict[str, Any]] = {}

    def _sync_pod(self, options: UpdatePodOptions) -> None:
        pod = options.pod
        meta = pod.get("metadata") or {}
        if options.update_type == SyncPodType.KILL or meta.get("deletionTimestamp"):
            self.runtime.kill_pod(pod)
        else:
            self.runtime.sync_pod(pod, options.update_type)

    def desired_pods(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._pods.values())

    def _store(self, pods: list[dict[str, Any]]) -> None:
        with self._lock:
            for pod in pods:
                self._pods[pod_uid(pod)] = pod

    def handle_pod_additions(self, pods: list[dict[str, Any]]) -> None:
        ordered = sorted(pods, key=lambda p: str((p.get("metadata") or {}).get(
            "creationTimestamp") or ""))
        self._store(ordered)
        for pod in ordered:
            self.pod_workers.update_pod(pod, SyncPodType.CREATE)

    def handle_pod_updates(self, pods: list[dict[str, Any]]) -> None:
        self._store(pods)
        for pod in pods:
            self.pod_workers.update_pod(pod, SyncPodType.UPDATE)

    def handle_pod_removes(self, pods: list[dict[str, Any]]) -> None:
        with self._lock:
            for pod in pods:
                self._pods.pop(pod_uid(pod), None)
        for pod in pods:
            self.pod_workers.update_pod(pod, SyncPodType.KILL)

    def handle_pod_reconcile(self, pods: list[dict[str, Any]]) -> None:
        self._store(pods)

    def handle_pod_syncs(self, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            self.pod_workers.update_pod(pod, SyncPodType.SYNC)

    def handle_pod_cleanups(self) -> None:
        with self._lock:
            desired = set(self._pods)
        self.pod_workers.forget_non_existing_pod_workers(desired)
        for pod in self.runtime.running_pods():
            uid = pod_uid(pod)
            if uid not in desired and not self.pod_workers.is_working(uid):
                logger.info("housekeeping: killing orphaned pod %s (uid %s)", pod_key(pod), uid)
                self.pod_workers.update_pod(pod, SyncPodType.KILL)

    def shut_down(self, timeout: float | None = None) -> None:
        """Stop the pod workers (running syncs finish)."""
        self.pod_workers.shut_down(timeout)
