"""Dispatches PodConfig updates to a SyncHandler and runs periodic syncs and housekeeping.

The Python counterpart of the kubelet's ``syncLoop`` / ``syncLoopIteration``
(``pkg/kubelet/kubelet.go``, k8s.io/kubernetes v1.36.3): ADD goes to
``handle_pod_additions``, UPDATE and DELETE (a graceful deletion) to ``handle_pod_updates``,
REMOVE to ``handle_pod_removes``, RECONCILE to ``handle_pod_reconcile``; after each update its
source is marked seen. Periodic syncs (``handle_pod_syncs``) and housekeeping
(``handle_pod_cleanups``) run only once every configured source is ready.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Protocol

from controllers.kubelet.pod_config import PodConfig
from controllers.kubelet.pod_update import (
    ADD,
    DELETE,
    RECONCILE,
    REMOVE,
    SET,
    UPDATE,
    PodUpdate,
    pod_uid,
)
from informers.clock import REAL_CLOCK, Clock

__all__ = [
    "DEFAULT_HOUSEKEEPING_PERIOD",
    "DEFAULT_SYNC_PERIOD",
    "SyncHandler",
    "SyncLoop",
]

logger = logging.getLogger(__name__)

DEFAULT_SYNC_PERIOD = 60.0
"""Seconds between periodic syncs of every pod (kubelet ``--sync-frequency`` default, 1 min)."""
DEFAULT_HOUSEKEEPING_PERIOD = 2.0
"""Seconds between housekeeping runs (kubelet.go ``housekeepingPeriod``, 2 s)."""


class SyncHandler(Protocol):
    """What the sync loop calls (kubelet ``SyncHandler``). Called from the loop's thread only."""

    def handle_pod_additions(self, pods: list[dict[str, Any]]) -> None: ...

    def handle_pod_updates(self, pods: list[dict[str, Any]]) -> None: ...

    def handle_pod_removes(self, pods: list[dict[str, Any]]) -> None: ...

    def handle_pod_reconcile(self, pods: list[dict[str, Any]]) -> None: ...

    def handle_pod_syncs(self, pods: list[dict[str, Any]]) -> None: ...

    def handle_pod_cleanups(self) -> None: ...


class SyncLoop:
    """Reads :attr:`PodConfig.updates` and drives a :class:`SyncHandler` (kubelet ``syncLoop``).

    Contract:

    * One thread (:meth:`run`, or :meth:`start`'s daemon thread ``kubelet-sync-loop``) calls
      the handler, so handler methods never run concurrently. Each update is dispatched in the
      order PodConfig emitted it; then its source is added to :attr:`seen_sources`.
    * A SET (from the snapshot modes or :meth:`PodConfig.sync`) is a full desired state: it is
      compared with the pods the loop knows and dispatched as removes, additions and updates
      (the kubelet itself only supports the incremental mode and logs SETs as unsupported).
    * Every ``sync_period`` the handler gets ``handle_pod_syncs`` with every known pod, and
      every ``housekeeping_period`` ``handle_pod_cleanups``; both only while
      :meth:`sources_ready` (otherwise a pod of a not yet listed source could be cleaned up).
    * A handler exception is logged and the loop goes on.

    Args:
        config: the PodConfig to read.
        handler: receives the pods.
        clock: measures the periods (a FakeClock in tests).
        sync_period: seconds between periodic syncs.
        housekeeping_period: seconds between housekeeping runs.
        observer: called with each update before it is dispatched (e.g. to print the stream).
    """

    def __init__(
        self,
        config: PodConfig,
        handler: SyncHandler,
        *,
        clock: Clock = REAL_CLOCK,
        sync_period: float = DEFAULT_SYNC_PERIOD,
        housekeeping_period: float = DEFAULT_HOUSEKEEPING_PERIOD,
        observer: Callable[[PodUpdate], None] | None = None,
    ) -> None:
        self.config = config
        self.handler = handler
        self.sync_period = sync_period
        self.housekeeping_period = housekeeping_period
        self.observer = observer
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self._pods: dict[str, dict[str, Any]] = {}
        self._thread: threading.Thread | None = None
        self.updates_handled = 0
        self.syncs_run = 0
        self.housekeepings_run = 0

    # -- state ---------------------------------------------------------------------------------

    @property
    def seen_sources(self) -> frozenset[str]:
        """Sources whose updates the loop has consumed."""
        with self._lock:
            return frozenset(self._seen)

    def sources_ready(self) -> bool:
        """Every configured source has been seen (kubelet ``sourcesReady.AllReady``)."""
        return self.config.seen_all_sources(self.seen_sources)

    def desired_pods(self) -> list[dict[str, Any]]:
        """The pods the loop knows (desired state), in no particular order."""
        with self._lock:
            return list(self._pods.values())

    # -- dispatch ------------------------------------------------------------------------------

    def handle_update(self, update: PodUpdate) -> None:
        """Dispatch one update to the handler and mark its source seen."""
        if self.observer is not None:
            self._guard("observer", self.observer, update)
        pods = update.pods
        op = update.op
        with self._lock:
            if op == REMOVE:
                for pod in pods:
                    self._pods.pop(pod_uid(pod), None)
            elif op in (ADD, UPDATE, DELETE, RECONCILE):
                for pod in pods:
                    self._pods[pod_uid(pod)] = pod
        if op == ADD:
            self._guard("handle_pod_additions", self.handler.handle_pod_additions, pods)
        elif op in (UPDATE, DELETE):
            self._guard("handle_pod_updates", self.handler.handle_pod_updates, pods)
        elif op == REMOVE:
            self._guard("handle_pod_removes", self.handler.handle_pod_removes, pods)
        elif op == RECONCILE:
            self._guard("handle_pod_reconcile", self.handler.handle_pod_reconcile, pods)
        elif op == SET:
            self._handle_set(pods)
        else:
            logger.error("sync loop: invalid update op %s from %r", update.op_name, update.source)
        with self._lock:
            self._seen.add(update.source)
            self.updates_handled += 1

    def _handle_set(self, pods: list[dict[str, Any]]) -> None:
        desired = {pod_uid(p): p for p in pods}
        with self._lock:
            known = self._pods
            removed = [p for uid, p in known.items() if uid not in desired]
            added = [p for uid, p in desired.items() if uid not in known]
            changed = [p for uid, p in desired.items() if uid in known and known[uid] != p]
            self._pods = dict(desired)
        if removed:
            self._guard("handle_pod_removes", self.handler.handle_pod_removes, removed)
        if added:
            self._guard("handle_pod_additions", self.handler.handle_pod_additions, added)
        if changed:
            self._guard("handle_pod_updates", self.handler.handle_pod_updates, changed)

    def _guard(self, what: str, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            logger.exception("sync loop: %s failed", what)

    def run_periodic_sync(self) -> bool:
        """``handle_pod_syncs`` with every known pod if sources are ready; True if it ran."""
        if not self.sources_ready():
            return False
        pods = self.desired_pods()
        self.syncs_run += 1
        if pods:
            self._guard("handle_pod_syncs", self.handler.handle_pod_syncs, pods)
        return True

    def run_housekeeping(self) -> bool:
        """``handle_pod_cleanups`` if sources are ready; True if it ran."""
        if not self.sources_ready():
            logger.debug("sync loop: skipping housekeeping, sources not ready")
            return False
        self.housekeepings_run += 1
        self._guard("handle_pod_cleanups", self.handler.handle_pod_cleanups)
        return True

    # -- running -------------------------------------------------------------------------------

    def start(self, stop: threading.Event) -> None:
        """Run the loop on a daemon thread until ``stop`` is set."""
        self._thread = threading.Thread(target=self.run, args=(stop,), name="kubelet-sync-loop",
                                        daemon=True)
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread started by :meth:`start` (after ``stop`` was set)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self, stop: threading.Event) -> None:
        """Dispatch updates and run the timers until ``stop`` is set. Never raises."""
        updates = self.config.updates
        clock = self._clock
        stopper = threading.Thread(target=self._stopper, args=(stop,),
                                   name="kubelet-sync-loop-stopper", daemon=True)
        stopper.start()
        next_sync = clock.now() + self.sync_period
        next_housekeeping = clock.now() + self.housekeeping_period
        try:
            while not stop.is_set():
                timeout = max(min(next_sync, next_housekeeping) - clock.now(), 0.0)
                if updates.wait_not_empty(clock, timeout, stop):
                    try:
                        update = updates.get_nowait()
                    except queue.Empty:
                        continue
                    self.handle_update(update)
                now = clock.now()
                if now >= next_sync:
                    next_sync = now + self.sync_period
                    self.run_periodic_sync()
                if now >= next_housekeeping:
                    next_housekeeping = now + self.housekeeping_period
                    self.run_housekeeping()
        finally:
            stopper.join()

    def _stopper(self, stop: threading.Event) -> None:
        self._clock.wait_event(stop, None)
        self.config.updates.wake()
