"""Runs a user's reconcile function over the keys in a rate-limited work queue.

The work-queue controller of client-go's ``examples/workqueue`` and of the Kubernetes
controllers, with controller-runtime's result handling
(``pkg/internal/controller/controller.go``):

* handlers (:mod:`informers.controller.enqueue`) put keys into the queue;
* N worker threads take keys and call ``reconcile(key)``, never two at once for one key (the
  work queue's guarantee);
* the result decides what happens to the key (see :class:`Controller`);
* the workers start only once the informers' caches have synced, and a stop drains the
  reconciles in flight within a timeout.

A minimal controller::

    def reconcile(key: str) -> Result | None:
        obj = lister.get(key)            # read the world from the cache
        ...                              # make the world match it; raise to retry

    controller = Controller("my-controller", reconcile)
    controller.watch(factory.core().v1().config_maps().informer(), EnqueueRequestForObject)
    factory.start(stop)
    controller.run(stop)                 # blocks until stop is set and in-flight work drained
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from informers.clock import REAL_CLOCK, Clock
from informers.controller.metrics import (
    RESULT_ERROR,
    RESULT_REQUEUE,
    RESULT_REQUEUE_AFTER,
    RESULT_SUCCESS,
    ControllerMetricsProvider,
    get_provider,
)
from informers.controller.predicates import Predicate, PredicateFilteredHandler
from informers.controller.result import Result
from informers.errors import AlreadyStartedError, InformerStoppedError, TerminalError
from informers.handlers import ResourceEventHandler
from informers.wait import wait_for_named_cache_sync
from informers.workqueue.rate_limiters import RateLimiter
from informers.workqueue.rate_limiting_queue import RateLimitingQueue

__all__ = [
    "DEFAULT_DRAIN_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "LEADERSHIP_POLL",
    "Controller",
    "HandlerFactory",
    "Reconcile",
    "SettleQueue",
    "Synced",
    "settle",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_RETRIES = 15
"""Failed retries of a key before it is dropped: the Kubernetes controllers' ``maxRetries = 15``
(kubernetes ``pkg/controller/endpoint/endpoints_controller.go`` and most others).
controller-runtime retries forever: pass ``max_retries=None`` for that."""

DEFAULT_DRAIN_TIMEOUT = 30.0
"""Seconds a stop waits for the reconciles in flight: controller-runtime's manager
``defaultGracefulShutdownPeriod = 30 * time.Second`` (pkg/manager/internal.go)."""

LEADERSHIP_POLL = 0.05
"""Seconds between checks of ``leader_check`` while leadership is in doubt: how soon workers
resume after a renewal confirms it again (client-go and controller-runtime have no such gate:
their workers run until the leader's context is cancelled)."""

Reconcile = Callable[[str], "Result | None"]
"""``reconcile(key) -> Result | None``: make the world match the object named by ``key``."""


class Synced(Protocol):
    """Anything a controller waits for before its first reconcile: an informer or a handler
    registration."""

    def has_synced(self) -> bool: ...


HandlerFactory = Callable[["Controller"], "ResourceEventHandler[Any]"]
"""Builds an enqueue handler for a controller, e.g. the class
:class:`~informers.controller.enqueue.EnqueueRequestForObject` itself."""


@dataclass
class _Watch:
    """One :meth:`Controller.watch`: what :meth:`Controller.reset` registers again."""

    informer: Any
    handler: ResourceEventHandler  # built and wrapped in the predicates
    resync_period: float | None
    registration: Any


class Controller:
    """A named reconcile loop: one rate-limited work queue of keys and N worker threads.

    Result handling (controller-runtime ``reconcileHandler``; metric ``result`` label):

    ========================================  ===============================================
    ``reconcile(key)`` ...                    the key ...
    ========================================  ===============================================
    returns ``None`` or ``Result()``          is forgotten (backoff reset); ``success``
    returns ``Result(requeue_after=s)``       is forgotten and added again after ``s`` seconds;
                                              ``requeue_after``
    returns ``Result(requeue=True)``          is added again through the rate limiter;
                                              ``requeue``
    raises :class:`TerminalError`             is forgotten, not retried; logged; ``error`` and
                                              the terminal-error counter
    raises anything else                      is retried through the rate limiter while it
                                              has been retried fewer than ``max_retries``
                                              times, else forgotten and dropped (logged,
                                              dropped counter); ``error``
    returns anything else                     counts as raising a ``TypeError``
    ========================================  ===============================================

    Retries are counted by the rate limiter (``queue.num_requeues(key)``) since the key was
    last forgotten, so ``Result(requeue=True)`` counts too, and an event about the object
    enqueues the key again without resetting its count: only a success, a
    ``requeue_after``, a terminal error or a drop resets it. With the default limiter a key
    that always fails is reconciled 16 times, 5 ms, 10 ms, ... 81.92 s apart, then dropped.

    Guarantees:

    * **One reconcile per key at a time**, however many workers (the queue never hands a key
      to two workers; a key re-added meanwhile is reconciled once more afterwards).
    * **Caches first**: no reconcile starts before every ``informers`` entry and every
      :meth:`watch` registration reports ``has_synced()``.
    * **Leadership**: with a ``leader_check`` (set by :meth:`Manager.add
      <informers.manager.Manager.add>` for a leader-only controller), a worker asks it
      before taking a key and again before reconciling the key it got; while it answers
      ``False`` (leadership in doubt, e.g. a renewal is overdue or the process was paused) no
      reconcile starts: keys stay queued (a key already taken is put back, its retry count
      unchanged) and the workers check again every :data:`LEADERSHIP_POLL` seconds. A
      reconcile that was already running is not interrupted; one that writes should ask the
      same check right before each write (there is no fencing).
    * **Stop**: once ``stop_event`` is set, no new reconcile starts (keys still queued are
      dropped; the next start re-lists everything anyway), the reconciles in flight get
      ``drain_timeout`` seconds to finish, and :meth:`run` returns. A reconcile still running
      then is reported (logged, returned by :meth:`run`, kept in :attr:`hanging_keys`) and
      abandoned on its daemon thread: Python cannot stop a thread, so reconciles must not
      block forever (give every request a timeout).

    Thread safety: :meth:`enqueue`, :meth:`enqueue_after` and the queue may be used from any
    thread at any time (events arriving before :meth:`run` wait in the queue); :meth:`watch`
    must be called before :meth:`run`; :meth:`run` once, or again after :meth:`reset`.

    Args:
        name: the controller's name: thread names, log lines, the ``controller`` metric label
            and the work queue's ``name``.
        reconcile: ``reconcile(key) -> Result | None``; called from worker threads.
        informers: what to wait for before the first reconcile (anything with
            ``has_synced()``); :meth:`watch` adds its informer and registration.
        workers: worker threads, i.e. concurrent reconciles (controller-runtime
            ``MaxConcurrentReconciles``, default 1).
        rate_limiter: the queue's limiter; ``None`` means
            :func:`~informers.workqueue.default_controller_rate_limiter` on ``clock``.
        max_retries: retries of a failing key before it is dropped (:data:`DEFAULT_MAX_RETRIES`,
            from the Kubernetes controllers); ``None`` retries forever, as controller-runtime
            does.
        clock: time source of the queue, the limiter, the cache-sync poll and the drain wait.
        drain_timeout: seconds a stop waits for reconciles in flight
            (:data:`DEFAULT_DRAIN_TIMEOUT`).
        metrics: where the controller and work-queue metrics go; ``None`` means the
            process-wide provider (:func:`informers.controller.metrics.get_provider`, a no-op
            by default).
        leader_check: ``None`` (always reconcile) or a cheap callable answering whether this
            process may act now, e.g. :meth:`LeaderElector.leading
            <informers.leaderelection.LeaderElector.leading>`; also settable as the
            attribute :attr:`leader_check` before :meth:`run`.

    Raises:
        ValueError: ``workers < 1``, ``max_retries < 0``, ``drain_timeout < 0`` or an empty name.
    """

    def __init__(
        self,
        name: str,
        reconcile: Reconcile,
        *,
        informers: Iterable[Synced] = (),
        workers: int = 1,
        rate_limiter: RateLimiter | None = None,
        max_retries: int | None = DEFAULT_MAX_RETRIES,
        clock: Clock = REAL_CLOCK,
        drain_timeout: float = DEFAULT_DRAIN_TIMEOUT,
        metrics: ControllerMetricsProvider | None = None,
        leader_check: Callable[[], bool] | None = None,
    ) -> None:
        check_options(name, workers, max_retries, drain_timeout)
        self.name = name
        self.reconcile = reconcile
        self.workers = workers
        self.max_retries = max_retries
        self.drain_timeout = drain_timeout
        self.leader_check = leader_check
        self.shard_check: Callable[[str], bool] | None = None
        """``None``, or a per-key gate asked right before each reconcile, atomically with
        registering the key in flight (:meth:`in_flight_keys`): ``False`` skips the key
        (forgotten, not retried; whoever set the gate re-enqueues it when it may run). Set by
        :meth:`ShardCoordinator.gate <informers.shard.coordinator.ShardCoordinator.gate>`;
        must be quick and must not call back into the controller."""
        self._clock = clock
        self._given_synced: list[Synced] = list(informers)
        self._synced: list[Synced] = list(informers)
        self._watches: list[_Watch] = []
        provider = metrics if metrics is not None else get_provider()
        self._metrics = provider.new_controller_metrics(name, workers)
        self._rate_limiter = rate_limiter
        self._workqueue_metrics = provider.workqueue_metrics_provider()
        self._queue = self._new_queue()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._started = False
        self._finished = False
        self._stopping = False
        self._workers_stop = threading.Event()  # wakes workers waiting for leadership
        self._running_workers = 0
        self._in_flight: dict[str, float] = {}  # key -> reconcile start time
        self._threads: list[threading.Thread] = []
        self.hanging_keys: tuple[str, ...] = ()
        """Keys whose reconcile was still running when the last stop gave up waiting."""

    def _new_queue(self) -> RateLimitingQueue[str]:
        return RateLimitingQueue(
            self._rate_limiter,
            name=self.name,
            metrics_provider=self._workqueue_metrics,
            clock=self._clock,
        )

    # -- feeding the queue ---------------------------------------------------------------------

    @property
    def queue(self) -> RateLimitingQueue[str]:
        """The work queue (shared with the workers; adds after a stop are ignored).
        :meth:`reset` replaces it: handlers must look it up here at each event."""
        return self._queue

    def enqueue(self, key: str) -> None:
        """Ask for a reconcile of ``key`` (deduplicated with any pending one)."""
        self._queue.add(key)

    def primary_informer(self) -> Any:
        """The informer of the first :meth:`watch`, or ``None``."""
        with self._lock:
            return self._watches[0].informer if self._watches else None

    def in_flight_keys(self) -> tuple[str, ...]:
        """The keys being reconciled right now (thread-safe snapshot)."""
        with self._lock:
            return tuple(self._in_flight)

    def enqueue_after(self, key: str, seconds: float) -> None:
        """Ask for a reconcile of ``key`` once ``seconds`` have passed on the controller's clock."""
        self._queue.add_after(key, seconds)

    def watch(
        self,
        informer: Any,
        handler: HandlerFactory | ResourceEventHandler[Any],
        *predicates: Predicate,
        resync_period: float | None = None,
    ) -> Any:
        """Enqueue keys for ``informer``'s events, filtered by ``predicates``.

        Registers the handler on the informer (``informer.add_event_handler``) and makes the
        controller wait for the informer and the registration to sync before its first
        reconcile. Call before :meth:`run`.

        Args:
            informer: a :class:`~informers.shared_informer.SharedIndexInformer` (or anything
                with ``add_event_handler`` and ``has_synced``).
            handler: an event handler, or a factory called with this controller to build one:
                ``EnqueueRequestForObject`` (the class),
                ``lambda c: EnqueueRequestForOwner(c, "Foo", group="example.com")``.
            *predicates: every one must pass an event (see
                :class:`~informers.controller.predicates.PredicateFilteredHandler`).
            resync_period: the registration's resync period (``None``: the informer's).

        Returns:
            The informer's registration handle.
        """
        with self._lock:
            if self._started:
                raise AlreadyStartedError(
                    f"controller {self.name}: watch() must be called before run()"
                )
        if isinstance(handler, type) or not isinstance(handler, ResourceEventHandler):
            handler = handler(self)
        if predicates:
            handler = PredicateFilteredHandler(handler, *predicates)
        registration = self._register(informer, handler, resync_period)
        with self._lock:
            self._watches.append(_Watch(informer, handler, resync_period, registration))
        return registration

    def _register(self, informer: Any, handler: ResourceEventHandler,
                  resync_period: float | None) -> Any:
        if resync_period is None:
            registration = informer.add_event_handler(handler)
        else:
            registration = informer.add_event_handler(handler, resync_period)
        with self._lock:
            self._synced.append(informer)
            if hasattr(registration, "has_synced"):
                self._synced.append(registration)
        return registration

    def reset(self, informers: Mapping[Any, Any] | None = None) -> None:
        """Make a stopped controller runnable again (what a restarted
        :class:`~informers.manager.Manager` does to the controllers it runs).

        After it: a new, empty work queue (the keys still queued at the stop are dropped;
        with the default rate limiter its retry counts start afresh, a ``rate_limiter`` given
        to the constructor is kept with its state); every :meth:`watch` registered again, with
        the same handler and predicates, on the informer ``informers`` maps its old informer
        to, or, when not mapped, again on the same informer (its old registration removed
        first, so the new queue gets the cached objects as adds); :meth:`run` allowed again.
        The name, reconcile, options, metrics and ``leader_check`` are kept.

        Args:
            informers: ``{old informer: its replacement}``, e.g. what
                :meth:`SharedInformerFactory.reset
                <informers.factory.SharedInformerFactory.reset>` returns.

        Raises:
            AlreadyStartedError: :meth:`run` has not returned, or a reconcile abandoned by the
                last stop (:attr:`hanging_keys`) is still running.
            InformerStoppedError: a watched informer was stopped and ``informers`` has no
                replacement for it.
        """
        mapping = dict(informers or {})
        with self._lock:
            if self._started and not self._finished:
                raise AlreadyStartedError(
                    f"controller {self.name} is running: stop it before reset()")
            if self._in_flight:
                raise AlreadyStartedError(
                    f"controller {self.name}: the reconcile of "
                    f"{', '.join(sorted(self._in_flight))} from the last run is still running")
            for w in self._watches:
                stopped = getattr(w.informer, "is_stopped", None)
                if w.informer not in mapping and callable(stopped) and stopped():
                    raise InformerStoppedError(
                        f"controller {self.name}: cannot watch {w.informer!r} again: it has "
                        "stopped and no informer replaces it")
            watches = list(self._watches)
            self._synced = [mapping.get(s, s) for s in self._given_synced]
            self._watches = []
            self._queue = self._new_queue()
            self._threads = []
            self._workers_stop = threading.Event()
            self._running_workers = 0
            self._stopping = False
            self._started = False
            self._finished = False
        for w in watches:
            informer = mapping.get(w.informer)
            if informer is None:
                informer = w.informer
                informer.remove_event_handler(w.registration)
            registration = self._register(informer, w.handler, w.resync_period)
            with self._lock:
                self._watches.append(_Watch(informer, w.handler, w.resync_period, registration))

    # -- running -------------------------------------------------------------------------------

    def run(self, stop_event: threading.Event) -> tuple[str, ...]:
        """Wait for the caches, run the workers until ``stop_event`` is set, then drain.

        Blocks. Returns after the stop once every reconcile in flight finished or
        ``drain_timeout`` passed, and also when ``stop_event`` is set before the caches synced
        (then nothing was reconciled). The work queue is shut down either way: to run the
        controller again, :meth:`reset` it first.

        Returns:
            The keys whose reconcile was still running when the drain timed out (also in
            :attr:`hanging_keys`); empty after a clean stop.

        Raises:
            AlreadyStartedError: :meth:`run` was called before (and the controller was not
                :meth:`reset` since).
        """
        with self._lock:
            if self._started:
                raise AlreadyStartedError(f"controller {self.name} was already started")
            self._started = True
            synced = list(self._synced)
        logger.info('Starting controller "%s" with %d workers', self.name, self.workers)
        try:
            if not wait_for_named_cache_sync(
                self.name, stop_event, *(s.has_synced for s in synced), clock=self._clock
            ):
                return self._stop()
            if stop_event.is_set():
                return self._stop()
            with self._lock:
                for i in range(self.workers):
                    thread = threading.Thread(
                        target=self._worker,
                        name=f"controller-{self.name}-worker-{i}",
                        daemon=True,
                    )
                    self._threads.append(thread)
                    self._running_workers += 1
                    thread.start()
            self._clock.wait_event(stop_event, None)
            logger.info(
                'Shutdown signal received for controller "%s", waiting for all workers to finish',
                self.name,
            )
        except BaseException:
            self._stop()
            raise
        return self._stop()

    def _stop(self) -> tuple[str, ...]:
        """Stop taking work, wait up to ``drain_timeout`` for the workers, report the rest."""
        with self._lock:
            self._stopping = True
        self._workers_stop.set()
        # Workers blocked in get() wake up; queued keys are handed out and skipped (see
        # _worker), so every worker not inside a reconcile exits at once.
        self._queue.shut_down()
        deadline = self._clock.now() + self.drain_timeout
        with self._cond:
            while self._running_workers > 0:
                remaining = deadline - self._clock.now()
                if remaining <= 0:
                    break
                self._clock.wait_condition(self._cond, remaining)
            now = self._clock.now()
            hanging = tuple(sorted(self._in_flight))
            running_for = {k: now - t for k, t in self._in_flight.items()}
            threads = list(self._threads)
            exited = self._running_workers == 0
        for key in hanging:
            logger.error(
                'controller "%s": reconcile of %s still running after the %ss drain timeout '
                "(running for %.3fs); abandoning it",
                self.name,
                key,
                self.drain_timeout,
                running_for[key],
            )
        for thread in threads:
            # Once every worker has counted itself out, each is past its last step: join all.
            if exited or not thread.is_alive():
                thread.join()
        self.hanging_keys = hanging
        with self._lock:
            self._finished = True
        if not hanging:
            logger.info('controller "%s": all workers finished', self.name)
        return hanging

    def _worker(self) -> None:
        queue = self._queue
        check = self.leader_check
        try:
            while True:
                if check is not None and not self._await_leadership(check):
                    return
                key, shutdown = queue.get()
                if shutdown:
                    return
                assert key is not None
                if self._stopping:  # stop taking work: skip what is still queued
                    queue.done(key)
                    continue
                if check is not None and not check():
                    # Leadership came into doubt while this worker waited for a key: put the
                    # key back (it is queued again by done()) without counting a retry.
                    queue.add(key)
                    queue.done(key)
                    continue
                self._process(key)
        finally:
            with self._cond:
                self._running_workers -= 1
                self._cond.notify_all()

    def _await_leadership(self, check: Callable[[], bool]) -> bool:
        """Wait until ``check()`` holds (True) or the controller stops (False)."""
        while not check():
            if self._stopping:
                return False
            if self._clock.sleep(LEADERSHIP_POLL, self._workers_stop):
                return False
        return not self._stopping

    def _process(self, key: str) -> None:
        queue = self._queue
        clock = self._clock
        metrics = self._metrics
        start = clock.now()
        with self._lock:
            gate = self.shard_check
            skip = gate is not None and not gate(key)
            if not skip:
                self._in_flight[key] = start
        if skip:
            queue.forget(key)
            queue.done(key)
            return
        metrics.active_workers(1)
        outcome = RESULT_ERROR
        try:
            try:
                result: object = self.reconcile(key)
            except Exception as err:
                result = err
            outcome = settle(self.name, queue, metrics, self.max_retries, key, result)
        finally:
            metrics.reconciled(outcome, clock.now() - start)
            metrics.active_workers(-1)
            with self._lock:
                self._in_flight.pop(key, None)
            queue.done(key)

    def __repr__(self) -> str:
        return f"<Controller {self.name!r} workers={self.workers}>"


class SettleQueue(Protocol):
    """What :func:`settle` needs of a work queue (the threaded
    :class:`~informers.workqueue.RateLimitingQueue` and the async one both have it)."""

    def forget(self, item: str) -> None: ...

    def add_after(self, item: str, seconds: float) -> None: ...

    def add_rate_limited(self, item: str) -> None: ...

    def num_requeues(self, item: str) -> int: ...


def check_options(name: str, workers: int, max_retries: int | None,
                  drain_timeout: float) -> None:
    """The checks of a controller's options, shared by the threaded and the async controller.

    Raises:
        ValueError: no name, fewer than one worker, negative ``max_retries`` or
            ``drain_timeout``.
    """
    if not name:
        raise ValueError("a controller needs a name")
    if workers < 1:
        raise ValueError(f"controller {name}: workers must be at least 1, got {workers}")
    if max_retries is not None and max_retries < 0:
        raise ValueError(f"controller {name}: max_retries must not be negative")
    if drain_timeout < 0:
        raise ValueError(f"controller {name}: drain_timeout must not be negative")


def settle(name: str, queue: SettleQueue, metrics: Any, max_retries: int | None, key: str,
           result: object) -> str:
    """What happens to ``key`` after its reconcile returned (or raised) ``result``: the table
    of :class:`Controller` (controller-runtime ``reconcileHandler``), shared by the threaded
    and the async controller. Returns the metric ``result`` label."""
    if not isinstance(result, BaseException):
        if result is None:
            result = Result()
        elif not isinstance(result, Result):
            result = TypeError(f"reconcile returned {type(result).__name__}, not Result or None")
    if isinstance(result, TerminalError):
        metrics.reconcile_error(True)
        queue.forget(key)
        logger.error('controller "%s": terminal error reconciling %s, not retrying: %s',
                     name, key, result)
        return RESULT_ERROR
    if isinstance(result, BaseException):
        metrics.reconcile_error(False)
        retries = queue.num_requeues(key)
        if max_retries is None or retries < max_retries:
            logger.warning('controller "%s": error reconciling %s (retry %d): %s',
                           name, key, retries + 1, result, exc_info=result)
            queue.add_rate_limited(key)
            return RESULT_ERROR
        queue.forget(key)
        metrics.dropped()
        logger.error('controller "%s": dropping %s out of the queue after %d retries: %s',
                     name, key, retries, result, exc_info=result)
        return RESULT_ERROR
    assert isinstance(result, Result)
    if result.requeue_after > 0:
        queue.forget(key)
        queue.add_after(key, result.requeue_after)
        return RESULT_REQUEUE_AFTER
    if result.requeue:
        queue.add_rate_limited(key)
        return RESULT_REQUEUE
    queue.forget(key)
    return RESULT_SUCCESS
