"""Keeps every selector Service's core/v1 Endpoints equal to the pods it selects.

The Python counterpart of kube-controller-manager's endpoints controller: the ``Controller``
of ``pkg/controller/endpoint/endpoints_controller.go`` in k8s.io/kubernetes v1.36.3
(``NewEndpointController``, ``Run``, ``processNextWorkItem``, ``handleErr``, ``syncService``,
``checkLeftoverEndpoints``); ``tests/test_endpoint_differential.py`` compares what it writes
with what kube-controller-manager v1.36.3 writes. ``NewEndpointController``'s event handlers,
which decide what to enqueue, are :mod:`~controllers.endpoint.sync_triggers`.

It keeps upstream's structure (its own worker loop and ``handleErr``) rather than running on
:class:`informers.controller.Controller`, so that it reads function by function against
endpoints_controller.go. The pure logic lives in
:mod:`~controllers.endpoint.subsets`, :mod:`~controllers.endpoint.repack`,
:mod:`~controllers.endpoint.truncate`, :mod:`~controllers.endpoint.trigger_time`,
:mod:`~controllers.endpoint.desired` and :mod:`~controllers.endpoint.membership`, the API
writes in :mod:`~controllers.endpoint.writer`; this module wires them to informers and a work
queue and runs the workers that sync.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from controllers.endpoint.desired import (
    HEADLESS_SERVICE_LABEL,
    desired_endpoints,
    endpoints_up_to_date,
    string_map,
)
from controllers.endpoint.event_handler import informer_and_lister
from controllers.endpoint.json_values import as_map as _map
from controllers.endpoint.json_values import meta_of as _meta
from controllers.endpoint.membership import valid_selector
from controllers.endpoint.metrics import SyncMetrics
from controllers.endpoint.pod_selection import PodSelector
from controllers.endpoint.service_selection import ServiceSelector
from controllers.endpoint.stale_tracker import StaleEndpointsTracker
from controllers.endpoint.subsets import PodEntryMemo, compute_subsets
from controllers.endpoint.sync_triggers import SyncTriggers
from controllers.endpoint.trigger_time import TriggerTimeTracker
from controllers.endpoint.write_echoes import WriteEchoTracker
from controllers.endpoint.writer import EndpointsWriter, EventRecorderLike
from informers.clock import REAL_CLOCK, Clock
from informers.controller.controller import LEADERSHIP_POLL
from informers.errors import ApiConnectionError, InformersError, NotFoundError, StatusError
from informers.keys import split_meta_namespace_key
from informers.labels import EVERYTHING
from informers.wait import wait_for_named_cache_sync
from informers.workqueue import RateLimitingQueue
from informers.workqueue.metrics import MetricsProvider
from informers.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = [
    "CONTROLLER_NAME",
    "HEADLESS_SERVICE_LABEL",
    "LEADER_ELECTION_ANNOTATION",
    "MAX_RETRIES",
    "EndpointController",
    "EventRecorderLike",
    "NotLeadingError",
    "StaleEndpointsCacheError",
]

logger = logging.getLogger(__name__)

CONTROLLER_NAME = "endpoint-controller"
"""Name in logs and the event source component (kube-controller-manager's controller name)."""

MAX_RETRIES = 15
"""Failed syncs of a key are retried while it was requeued fewer times than this, then dropped
(endpoints_controller.go ``maxRetries``: 5 ms, 10 ms, ... 82 s with the default limiter)."""

LEADER_ELECTION_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
"""Endpoints carrying it are leader-election records, never swept at startup
(client-go resourcelock ``LeaderElectionRecordAnnotationKey``)."""

_QUEUE_NAME = "endpoint"  # endpoints_controller.go: RateLimitingQueueConfig{Name: "endpoint"}

class StaleEndpointsCacheError(InformersError):
    """The Endpoints informer still holds a version this controller already replaced.

    Raised by :meth:`EndpointController.sync_service` so the key is retried with rate limiting
    once the cache has caught up (endpoints_controller.go: "endpoints informer cache is out of
    date").
    """


class NotLeadingError(InformersError):
    """Raised by :meth:`EndpointController.sync_service` instead of a write when
    ``leader_check`` answers ``False``; the worker puts the key back (no retry counted)."""


class EndpointController:
    """Manages selector-based Services' Endpoints, like kube-controller-manager's controller.

    **Construction** registers event handlers on the three informers (so build it before the
    factory starts them, or they replay their caches to it) and creates the work queue. Pass a
    factory's typed informers (``factory.core().v1().pods()``, which have ``informer()`` and
    ``lister()``) or bare :class:`~informers.shared_informer.SharedIndexInformer` s.

    **Handlers only enqueue Service keys** (upstream's ``onServiceUpdate``, ``onPodUpdate``
    and ``onEndpointsDelete``; :class:`~controllers.endpoint.sync_triggers.SyncTriggers`):
    Service add/update/delete at once; pod add/update/delete for the Services selecting the
    pod (old and new labels on a label change, nothing unless fields the Endpoints depend on
    changed) after ``batch_period``; Endpoints delete at once.
    Deviation from upstream, on by default (``watch_endpoints_updates``): an Endpoints added or
    updated by someone else whose Service exists and has a selector is re-synced at once
    (logged at INFO), so hand edits are corrected instead of lingering until the next pod or
    Service change. The watch echoes of this controller's own writes are told apart by their
    resourceVersions (:class:`~controllers.endpoint.write_echoes.WriteEchoTracker`), also when
    an echo arrives before the write returns or after a later write (logged at DEBUG, no
    sync).

    **sync_service** reads only listers (never the API) and writes through ``api_client``.

    **Thread safety**: handlers run inline on the threads that write the informers' caches
    (registered ``synchronous``: they only enqueue keys), syncs on the worker threads; they
    share only thread-safe parts (the work queue, listers, the trigger-time, stale and
    write-echo trackers, metrics). The work queue never hands one key to two workers, so
    syncs of one Service never overlap. Cached objects are never mutated: writes deep-copy
    them. :meth:`run` may be called once.

    **Leadership**: a ``leader_check`` (e.g. :meth:`Manager.is_leader
    <informers.manager.Manager.is_leader>`) is asked before taking a key, before syncing it
    and right before each write; while it answers ``False`` nothing is synced or written, keys
    stay queued (retry counts unchanged) and workers re-ask every ``LEADERSHIP_POLL`` s. Only
    a write already sent when the process froze can still arrive (no fencing).

    **Staleness**: listers lag the server. A cached Endpoints older than one this controller
    replaced is detected (stale tracker) and the sync retried; any other lag is healed by the
    events that follow.

    Args:
        pod_informer: pods (typed informer from a factory, or a SharedIndexInformer).
        service_informer: services.
        endpoints_informer: endpoints.
        api_client: a ``kubernetes.client.ApiClient`` for the writes.
        batch_period: seconds pod-triggered syncs wait, coalescing pod events into one sync
            (``--endpoint-updates-batch-period``; default 0: no batching). Service and
            Endpoints events are never delayed.
        clock: time source for the queue, the rate limiter and durations.
        event_recorder: receives ``FailedToCreateEndpoint`` / ``FailedToUpdateEndpoint``
            warnings; ``None``: events are only logged.
        max_retries: see :data:`MAX_RETRIES`.
        rate_limiter: retry delays; default
            :func:`~informers.workqueue.default_controller_rate_limiter` (client-go
            ``DefaultControllerRateLimiter``: per-item 5 ms doubling to 1000 s, overall 10 qps
            with a burst of 100).
        metrics: where sync counts and durations go (a new :class:`SyncMetrics` by default).
        metrics_provider: work-queue metrics (queue name ``endpoint``); ``None``: the global
            provider.
        watch_endpoints_updates: re-sync on foreign Endpoints adds/updates (see above);
            ``False`` behaves exactly like upstream.
        request_timeout: seconds per API request; ``None``: the client's default (none). A
            request that never returns blocks its worker, and :meth:`run`'s shutdown.
        name: the controller name in logs and cache-sync messages.
        leader_check: ``None`` (always act) or a cheap callable answering whether this process
            may act as leader now (see *Leadership*); also settable as the attribute
            :attr:`leader_check` before :meth:`run`.
    """

    def __init__(
        self,
        pod_informer: Any,
        service_informer: Any,
        endpoints_informer: Any,
        api_client: Any,
        batch_period: float = 0.0,
        *,
        clock: Clock = REAL_CLOCK,
        event_recorder: EventRecorderLike | None = None,
        max_retries: int = MAX_RETRIES,
        rate_limiter: RateLimiter | None = None,
        metrics: SyncMetrics | None = None,
        metrics_provider: MetricsProvider | None = None,
        watch_endpoints_updates: bool = True,
        request_timeout: float | None = None,
        name: str = CONTROLLER_NAME,
        leader_check: Callable[[], bool] | None = None,
    ) -> None:
        if batch_period < 0:
            raise ValueError(f"batch_period must be >= 0, got {batch_period!r}")
        self.name = name
        self.max_retries = max_retries
        self.metrics = metrics if metrics is not None else SyncMetrics()
        self.leader_check = leader_check
        self.shard_check: Callable[[str], bool] | None = None
        """``None``, or a per-key gate asked before each sync, atomically with registering the
        key in flight (:meth:`in_flight_keys`): ``False`` skips the key (forgotten; whoever
        set the gate re-enqueues it when it may run). Set by :meth:`ShardCoordinator.gate
        <informers.shard.coordinator.ShardCoordinator.gate>` (``--shard-ring``)."""
        self._in_flight_lock = threading.Lock()
        self._in_flight: set[str] = set()
        self._clock = clock
        self.queue = RateLimitingQueue(
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock),
            name=_QUEUE_NAME,
            metrics_provider=metrics_provider,
            clock=clock,
        )
        self.writer = EndpointsWriter(
            api_client, event_recorder=event_recorder, request_timeout=request_timeout
        )
        self._trigger_times = TriggerTimeTracker()
        # Per Service key: its pods' subsets entries from the last sync (compute_subsets).
        self._pod_memos: dict[str, PodEntryMemo] = {}
        self._stale = StaleEndpointsTracker()
        self._echoes = WriteEchoTracker()
        self._warned_lock = threading.Lock()
        # key -> (service resourceVersion, problems already logged for it)
        self._warned: dict[str, tuple[str, set[str]]] = {}
        self._run_lock = threading.Lock()
        self._ran = False

        self._pod_informer, self._pods = informer_and_lister(pod_informer, "pods")
        self._service_informer, self._services = informer_and_lister(service_informer, "services")
        self._endpoints_informer, self._endpoints = informer_and_lister(
            endpoints_informer, "endpoints"
        )
        self._pod_selector = PodSelector(self._pod_informer, self._pods, self.name)
        self._service_selector = ServiceSelector(
            self._service_informer, self._services, self.name
        )
        self._triggers = SyncTriggers(
            self.queue, self._services, self._service_selector, self._echoes,
            batch_period=float(batch_period), watch_endpoints_updates=watch_endpoints_updates,
        )
        registrations = self._triggers.register(
            CONTROLLER_NAME, self._service_informer, self._pod_informer, self._endpoints_informer
        )
        informers = (self._service_informer, self._pod_informer, self._endpoints_informer)
        self._synced = [
            getattr(reg, "has_synced", None) or informer.has_synced
            for reg, informer in zip(registrations, informers, strict=True)
        ]

    @property
    def batch_period(self) -> float:
        """Seconds pod-triggered syncs wait (the ``batch_period`` argument); settable."""
        return self._triggers.batch_period

    @batch_period.setter
    def batch_period(self, value: float) -> None:
        self._triggers.batch_period = value

    @property
    def watch_endpoints_updates(self) -> bool:
        """Whether foreign Endpoints adds and updates re-sync their Service (the
        ``watch_endpoints_updates`` argument); settable."""
        return self._triggers.watch_endpoints_updates

    @watch_endpoints_updates.setter
    def watch_endpoints_updates(self, value: bool) -> None:
        self._triggers.watch_endpoints_updates = value

    # -- run -------------------------------------------------------------------------------------

    def enqueue(self, key: str) -> None:
        """Ask for a sync of the Service ``key``."""
        self.queue.add(key)

    def in_flight_keys(self) -> tuple[str, ...]:
        """The Service keys being synced right now."""
        with self._in_flight_lock:
            return tuple(self._in_flight)

    def has_synced(self) -> bool:
        """Whether the three informers have synced and delivered their initial objects to the
        controller's handlers (what :meth:`run` waits for before starting workers)."""
        return all(fn() for fn in self._synced)

    def run(self, workers: int, stop_event: threading.Event) -> None:
        """Run until ``stop_event`` is set; blocks (client-go ``Run``).

        Waits until all three informers (and these handlers) have synced; if ``stop_event``
        is set first, returns without starting anything or making any request. Then starts
        ``workers`` worker threads, enqueues every cached Endpoints except leader-election
        records (so those whose Service is gone get deleted), and waits. On stop it shuts the
        queue down; workers take no new key, finish the sync in progress and exit, and are
        joined before this returns. The informers are started and stopped by their owner.

        Raises:
            ValueError: ``workers`` < 1.
            RuntimeError: called a second time.
        """
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers!r}")
        with self._run_lock:
            if self._ran:
                raise RuntimeError(f"{self.name}: run() may be called only once")
            self._ran = True
        logger.info("Starting controller %s", self.name)
        threads: list[threading.Thread] = []
        try:
            if not wait_for_named_cache_sync(
                self.name, stop_event, self.has_synced, clock=self._clock
            ):
                return
            for i in range(workers):
                thread = threading.Thread(
                    target=self._worker, args=(stop_event,), name=f"{self.name}-worker-{i}",
                    daemon=True,
                )
                thread.start()
                threads.append(thread)
            self.check_leftover_endpoints()
            self._clock.wait_event(stop_event, None)
        finally:
            logger.info("Shutting down controller %s", self.name)
            self.queue.shut_down()
            for thread in threads:
                thread.join()

    def check_leftover_endpoints(self) -> None:
        """Enqueue every cached Endpoints but leader-election records (``checkLeftoverEndpoints``).

        Those whose Service no longer exists are deleted by their sync.
        """
        for endpoints in self._endpoints.list(EVERYTHING):
            if LEADER_ELECTION_ANNOTATION in _map(_meta(endpoints).get("annotations")):
                continue
            self._triggers.enqueue_service(endpoints)

    def _worker(self, stop_event: threading.Event) -> None:
        while self._await_leadership(stop_event) and self.process_next_work_item(stop_event):
            pass

    def _await_leadership(self, stop_event: threading.Event) -> bool:
        """Wait until ``leader_check()`` holds (True) or the worker should end (False)."""
        check = self.leader_check
        while check is not None and not check():
            if self.queue.shutting_down():
                return False
            if self._clock.sleep(LEADERSHIP_POLL, stop_event):
                return False
        return True

    def _ensure_leading(self, key: str) -> None:
        check = self.leader_check
        if check is not None and not check():
            raise NotLeadingError(f"not leading: endpoints {key} left for the leader")

    def process_next_work_item(self, stop_event: threading.Event | None = None) -> bool:
        """Take one key, sync it and handle the result; ``False`` once the worker should end.
        A key taken or a sync aborted while not leading is put back (no sync recorded)."""
        key, shutdown = self.queue.get()
        if shutdown:
            return False
        try:
            if stop_event is not None and stop_event.is_set():
                return False  # stop taking work; the key is dropped with the queue
            if self.leader_check is not None and not self.leader_check():
                self.queue.add(key)  # queued again by done(): for when leadership returns
                return True
            with self._in_flight_lock:
                gate = self.shard_check
                if gate is not None and not gate(str(key)):
                    self.queue.forget(key)
                    return True
                self._in_flight.add(str(key))
            start = self._clock.now()
            result = "error"
            try:
                result = self.sync_service(str(key))
            except NotLeadingError as err:
                logger.info("Not syncing service %s: %s", key, err)
                self.queue.add(key)
                return True
            except Exception as err:
                self.handle_err(err, key)
            else:
                self.handle_err(None, key)
            self.metrics.observe_sync(result, self._clock.now() - start)
            return True
        finally:
            with self._in_flight_lock:
                self._in_flight.discard(str(key))
            self.queue.done(key)

    def handle_err(self, err: BaseException | None, key: Any) -> None:
        """``handleErr``: forget on success; retry with rate limiting while requeued fewer
        than ``max_retries`` times; then forget and drop."""
        if err is None:
            self.queue.forget(key)
            return
        if not isinstance(err, (StatusError, ApiConnectionError, StaleEndpointsCacheError)):
            logger.error("Unexpected error syncing service %s", key, exc_info=err)
        if self.queue.num_requeues(key) < self.max_retries:
            logger.info("Error syncing endpoints for service %s, retrying: %s", key, err)
            self.metrics.observe_retry()
            self.queue.add_rate_limited(key)
            return
        logger.warning("Dropping service %s out of the queue: %s", key, err)
        self.metrics.observe_drop()
        self.queue.forget(key)

    # -- sync (syncService) ----------------------------------------------------------------------

    def sync_service(self, key: str) -> str:
        """Make the Endpoints of the Service ``key`` (``namespace/name``) right.

        Returns the result recorded in the metrics: ``"created"``, ``"updated"``,
        ``"deleted"``, ``"unchanged"`` or ``"skipped"``.

        Raises:
            StatusError, ApiConnectionError: a write failed (after a warning event).
            StaleEndpointsCacheError: the cached Endpoints is older than our last write.
            KeyFuncError: ``key`` is not a valid key.
        """
        namespace, name = split_meta_namespace_key(key)
        try:
            service = self._services.by_namespace(namespace).get(name)
        except NotFoundError:
            self._ensure_leading(key)
            if self.writer.delete(namespace, name):
                logger.debug("Deleted endpoints %s: its service is gone", key)
            self._trigger_times.delete_service(namespace, name)
            self._pod_memos.pop(key, None)
            self._stale.delete(namespace, name)
            self._echoes.forget(key)
            with self._warned_lock:
                self._warned.pop(key, None)
            return "deleted"

        spec = _map(_map(service).get("spec"))
        if spec.get("type") == "ExternalName":
            return "skipped"  # issues.k8s.io/105986
        if spec.get("selector") is None:
            return "skipped"  # endpoints of selector-less services are managed by their users
        selector = valid_selector(service)
        if selector is None:
            self._warn_once(key, service, f"spec.selector is not a map of strings: "
                            f"{spec.get('selector')!r}; the service gets no endpoints")
            return "skipped"
        self._check_ports(key, service, spec)

        pods = self._pod_selector.select(namespace, selector)
        # Always computed, so the tracker's state moves on even when nothing gets written.
        trigger_time = self._trigger_times.compute_endpoint_last_change_trigger_time(
            namespace, service, pods
        )
        memo = self._pod_memos.get(key)
        if memo is None:
            memo = self._pod_memos[key] = PodEntryMemo()
        computed = compute_subsets(service, pods, memo)

        try:
            current: Any = self._endpoints.by_namespace(namespace).get(name)
        except NotFoundError:
            current = None
        if current is not None and self._stale.is_stale(current):
            raise StaleEndpointsCacheError(
                f"endpoints informer cache is out of date, resource version "
                f"{_meta(current).get('resourceVersion')} already processed for endpoints {key}"
            )
        creating = not _meta(current).get("resourceVersion")
        service_labels = string_map(_meta(service).get("labels"))
        if not creating and endpoints_up_to_date(current, computed.subsets, service_labels):
            logger.debug("Endpoints %s are up to date, skipping update", key)
            return "unchanged"

        new = desired_endpoints(current, name, service, computed.subsets, trigger_time)
        logger.debug(
            "%s endpoints %s: %d ready, %d not ready",
            "Creating" if creating else "Updating", key, computed.ready, computed.not_ready,
        )
        return self._write(key, namespace, current, new, creating)

    def _write(
        self, key: str, namespace: str, current: Any, new: dict[str, Any], creating: bool
    ) -> str:
        self._ensure_leading(key)
        track = self.watch_endpoints_updates
        if track:  # before sending: the echo may be delivered before the write returns
            self._echoes.write_started(key)
        produced: str | None = None
        try:
            if creating:
                answer = self.writer.create(key, namespace, new)
                if answer is None:
                    return "skipped"  # the namespace is terminating: drop the key
            else:
                answer = self.writer.update(key, namespace, new)
            new_rv = _meta(answer).get("resourceVersion")
            # Only a changed resourceVersion makes the cached one stale (and has an echo): an
            # update can be a no-op on the server (a truncated Endpoints is re-PUT on every
            # sync), kubernetes#127370.
            if new_rv != _meta(current).get("resourceVersion"):
                if not creating:
                    self._stale.stale(current)
                if isinstance(new_rv, str):
                    produced = new_rv
            return "created" if creating else "updated"
        finally:
            if track:
                for rv in self._echoes.write_finished(key, produced):
                    self._triggers.foreign_write(key, rv)

    # -- bad input ---------------------------------------------------------------------------------

    def _warn_once(self, key: str, service: Mapping[str, Any], problem: str) -> None:
        """Log a warning about a malformed Service once per problem and Service version."""
        rv = str(_meta(service).get("resourceVersion") or "")
        with self._warned_lock:
            seen_rv, problems = self._warned.get(key, ("", set()))
            if seen_rv != rv:
                problems = set()
            if problem in problems:
                return
            problems.add(problem)
            self._warned[key] = (rv, problems)
        logger.warning("Service %s: %s", key, problem)

    def _check_ports(self, key: str, service: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
        ports = spec.get("ports")
        if ports is None:
            return
        if not isinstance(ports, list):
            self._warn_once(key, service, f"spec.ports is not a list: {ports!r}; ignored")
            return
        for i, port in enumerate(ports):
            if not isinstance(port, Mapping):
                self._warn_once(key, service, f"spec.ports[{i}] is not an object: {port!r}; "
                                "ignored")
                continue
            target = port.get("targetPort", 0)
            if isinstance(target, bool) or not isinstance(target, (int, str)):
                self._warn_once(key, service, f"spec.ports[{i}].targetPort {target!r} is "
                                "neither a number nor a name; the port gets no endpoints")
