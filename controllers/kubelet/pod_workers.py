"""Runs each pod's syncs on its own worker, one at a time, coalescing and retrying them.

The Python counterpart of the kubelet's ``pkg/kubelet/pod_workers.go`` in its classic form
(``UpdatePod``, ``ForgetWorker``, ``ForgetNonExistingPodWorkers``, ``managePodLoop``,
``lastUndeliveredWorkUpdate``): one worker thread per pod UID, created on the pod's first
update. Failed syncs are retried after a per-pod backoff chosen by a rate limiter from
:mod:`informers.workqueue` and scheduled on a :class:`~informers.workqueue.RateLimitingQueue`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controllers.kubelet.pod_update import SyncPodType, pod_uid
from informers.clock import REAL_CLOCK, Clock
from informers.workqueue import (
    ItemExponentialFailureRateLimiter,
    RateLimiter,
    RateLimitingQueue,
)

__all__ = [
    "DEFAULT_BACKOFF_PERIOD",
    "DEFAULT_MAX_BACKOFF",
    "PodWorkers",
    "SyncPodFunc",
    "UpdatePodOptions",
    "default_pod_worker_rate_limiter",
]

logger = logging.getLogger(__name__)

DEFAULT_BACKOFF_PERIOD = 10.0
"""First retry delay of a failed sync (kubelet.go ``backOffPeriod``, 10 s)."""
DEFAULT_MAX_BACKOFF = 300.0
"""Largest retry delay (kubelet.go ``MaxContainerBackOff``, 300 s)."""


def default_pod_worker_rate_limiter() -> ItemExponentialFailureRateLimiter:
    """Per-pod backoff: 10 s doubling to 300 s.

    kubelet.go ``backOffPeriod`` and ``MaxContainerBackOff``.
    """
    return ItemExponentialFailureRateLimiter(DEFAULT_BACKOFF_PERIOD, DEFAULT_MAX_BACKOFF)


@dataclass(frozen=True)
class UpdatePodOptions:
    """One request to a pod worker (kubelet ``UpdatePodOptions``)."""

    pod: Mapping[str, Any]
    update_type: SyncPodType

    @property
    def uid(self) -> str:
        return pod_uid(self.pod)


SyncPodFunc = Callable[[UpdatePodOptions], None]
"""Brings one pod to its desired state; raises to have the update retried with backoff."""


class _Worker:
    __slots__ = ("closed", "cond", "pending", "thread", "uid", "working")

    def __init__(self, uid: str, lock: threading.Lock) -> None:
        self.uid = uid
        self.cond = threading.Condition(lock)
        self.pending: UpdatePodOptions | None = None
        self.working = False
        self.closed = False
        self.thread: threading.Thread | None = None


class PodWorkers:
    """Per-pod workers (kubelet ``podWorkers``).

    Contract:

    * **One worker per UID.** :meth:`update_pod` starts a daemon thread ``pod-worker-<uid>``
      for a UID that has none; that thread alone calls ``sync_pod`` for the UID, so a pod is
      never synced by two threads at once, and different pods sync in parallel.
    * **Coalescing.** An update that arrives while the pod's worker is busy waits as the pod's
      single pending update; a newer update replaces it, except that a pending ``KILL`` is
      never replaced by anything but another ``KILL``. So a busy pod only ever runs its latest
      update next.
    * **Retry.** When ``sync_pod`` raises, the update is retried after the rate limiter's delay
      for the UID (default 10 s doubling to 300 s), as a ``SYNC`` (a ``KILL`` stays a ``KILL``),
      unless a newer update is pending by then. A successful sync forgets the UID's backoff.
    * **Forgetting.** :meth:`forget_worker` drops the pending update and any scheduled retry;
      the worker finishes its current sync and ends. An update for the UID before that reuses
      the same worker, so one-thread-per-UID still holds.
      :meth:`forget_non_existing_pod_workers` forgets every worker whose UID is not desired.
    * **Shutdown.** :meth:`shut_down` drops pending updates, lets running syncs finish and joins
      every thread; later updates are ignored.

    Thread-safe: every method may be called from any thread (``sync_pod`` may call
    :meth:`update_pod`).

    Args:
        sync_pod: called with an :class:`UpdatePodOptions`; raises on failure.
        clock: the clock of the retry queue.
        rate_limiter: retry delays per UID; default :func:`default_pod_worker_rate_limiter`.
    """

    def __init__(
        self,
        sync_pod: SyncPodFunc,
        *,
        clock: Clock = REAL_CLOCK,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        self._sync_pod = sync_pod
        self._clock = clock
        self.rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None else default_pod_worker_rate_limiter()
        )
        self._lock = threading.Lock()
        self._workers: dict[str, _Worker] = {}
        self._failed: dict[str, UpdatePodOptions] = {}
        self._retry_queue: RateLimitingQueue | None = None
        self._retry_thread: threading.Thread | None = None
        self._shut_down = False

    # -- public API ----------------------------------------------------------------------------

    def update_pod(
        self, pod: Mapping[str, Any], update_type: SyncPodType = SyncPodType.UPDATE
    ) -> None:
        """Ask the pod's worker to sync ``pod`` (see the class contract for coalescing).

        Raises:
            ValueError: the pod has no ``metadata.uid``.
        """
        options = UpdatePodOptions(pod, SyncPodType(update_type))
        uid = options.uid
        if not uid:
            raise ValueError("PodWorkers.update_pod: the pod has no metadata.uid")
        with self._lock:
            if self._shut_down:
                logger.debug("pod workers are shut down; ignoring %s of pod %s", update_type, uid)
                return
            worker = self._workers.get(uid)
            if worker is None:
                worker = self._workers[uid] = _Worker(uid, self._lock)
                worker.thread = threading.Thread(
                    target=self._manage_pod_loop, args=(worker,), name=f"pod-worker-{uid}",
                    daemon=True,
                )
                worker.thread.start()
            worker.closed = False
            self._deliver(worker, options)

    def _deliver(self, worker: _Worker, options: UpdatePodOptions) -> None:
        """Make ``options`` the worker's pending update unless a kill is pending. Lock held."""
        pending = worker.pending
        if (
            pending is not None
            and pending.update_type == SyncPodType.KILL
            and options.update_type != SyncPodType.KILL
        ):
            logger.debug("pod %s: a kill is pending; dropping %s", worker.uid, options.update_type)
            return
        worker.pending = options
        worker.cond.notify()

    def forget_worker(self, uid: str) -> None:
        """Drop the pending update and scheduled retry of ``uid``; the worker then ends."""
        with self._lock:
            self._remove_worker(uid)

    def forget_non_existing_pod_workers(self, desired: Iterable[str]) -> None:
        """Forget every worker whose UID is not in ``desired`` (a collection of UIDs)."""
        keep = set(desired)
        with self._lock:
            for uid in [u for u in self._workers if u not in keep]:
                self._remove_worker(uid)

    def _remove_worker(self, uid: str) -> None:
        worker = self._workers.get(uid)
        if worker is not None:
            worker.closed = True
            worker.pending = None
            worker.cond.notify()
        self._failed.pop(uid, None)

    def is_working(self, uid: str) -> bool:
        """True while ``uid``'s worker runs a sync or has one pending."""
        with self._lock:
            worker = self._workers.get(uid)
            return worker is not None and (worker.working or worker.pending is not None)

    def pending_retries(self) -> int:
        """How many failed pods wait for their backoff to end before being synced again."""
        with self._lock:
            queue = self._retry_queue
        return 0 if queue is None else queue.waiting_len()

    def worker_uids(self) -> list[str]:
        """UIDs that currently have a worker thread."""
        with self._lock:
            return sorted(self._workers)

    def idle(self) -> bool:
        """True when no sync runs, none is pending and no retry is scheduled."""
        with self._lock:
            return not self._failed and all(
                not w.working and w.pending is None for w in self._workers.values()
            )

    def shut_down(self, timeout: float | None = None) -> None:
        """Stop every worker after its running sync and the retry thread; join them."""
        with self._lock:
            self._shut_down = True
            workers = list(self._workers.values())
            for worker in workers:
                worker.closed = True
                worker.pending = None
                worker.cond.notify()
            self._failed.clear()
            queue = self._retry_queue
            retry_thread = self._retry_thread
        if queue is not None:
            queue.shut_down()
        for worker in workers:
            if worker.thread is not None and worker.thread is not threading.current_thread():
                worker.thread.join(timeout)
        if retry_thread is not None and retry_thread is not threading.current_thread():
            retry_thread.join(timeout)

    # -- the worker ----------------------------------------------------------------------------

    def _manage_pod_loop(self, worker: _Worker) -> None:
        while True:
            with self._lock:
                while worker.pending is None and not worker.closed:
                    worker.cond.wait()
                options = worker.pending
                if options is None:  # closed with nothing to do: this worker ends
                    if self._workers.get(worker.uid) is worker:
                        del self._workers[worker.uid]
                    return
                worker.pending = None
                worker.working = True
            error: BaseException | None = None
            try:
                self._sync_pod(options)
            except Exception as exc:
                error = exc
            self._wrap_up(worker, options, error)

    def _wrap_up(self, worker: _Worker, options: UpdatePodOptions,
                 error: BaseException | None) -> None:
        uid = worker.uid
        if error is None:
            self.rate_limiter.forget(uid)
            with self._lock:
                self._failed.pop(uid, None)
                worker.working = False
            return
        delay = self.rate_limiter.when(uid)
        meta = options.pod.get("metadata") or {}
        logger.error("pod %s/%s (uid %s): %s failed: %s; retrying in %gs",
                     meta.get("namespace"), meta.get("name"), uid, options.update_type, error,
                     delay)
        with self._lock:
            worker.working = False
            if worker.closed or self._shut_down:
                return
            self._failed[uid] = options
            queue = self._ensure_retry_queue()
        queue.add_after(uid, delay)

    def _ensure_retry_queue(self) -> RateLimitingQueue:
        """The retry queue and its thread, created on the first failure. Lock held."""
        if self._retry_queue is None:
            self._retry_queue = RateLimitingQueue(self.rate_limiter, clock=self._clock)
            self._retry_thread = threading.Thread(
                target=self._retry_loop, args=(self._retry_queue,), name="pod-workers-retry",
                daemon=True,
            )
            self._retry_thread.start()
        return self._retry_queue

    def _retry_loop(self, queue: RateLimitingQueue) -> None:
        while True:
            uid, shutdown = queue.get()
            if shutdown:
                return
            try:
                with self._lock:
                    options = self._failed.pop(str(uid), None)
                    worker = self._workers.get(str(uid))
                    if options is None or worker is None or worker.closed:
                        continue
                    if worker.pending is not None:
                        continue  # a newer update runs anyway
                    retry_type = (
                        SyncPodType.KILL if options.update_type == SyncPodType.KILL
                        else SyncPodType.SYNC
                    )
                    self._deliver(worker, UpdatePodOptions(options.pod, retry_type))
            finally:
                queue.done(uid)
