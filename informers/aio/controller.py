"""Runs an async reconcile function over the keys of a rate-limited work queue, in tasks.

The async counterpart of :class:`informers.controller.Controller`, with its rules: the result
of ``await reconcile(request)`` is handled by the same
:func:`informers.controller.controller.settle` (success, ``Result(requeue=True)``,
``Result(requeue_after=s)``, :class:`~informers.errors.TerminalError`, retries up to
``max_retries`` through the rate limiter, then a drop), with the same metrics; one key is never
reconciled by two workers at once (the queue's guarantee); no reconcile starts before every
watched informer has synced and every handler :meth:`AsyncController.watch` added has enqueued
the initial list (the registration's ``has_synced``, as controller-runtime waits for).

Usage::

    async def reconcile(request: Request) -> Result | None:
        obj = lister.get(request.name, request.namespace)
        ...

    controller = AsyncController("my-controller", reconcile, workers=50)
    controller.watch(factory.informer_for("configmaps"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(controller.run)
        ...
        controller.stop()   # no new reconcile; those in flight get drain_timeout seconds

One event loop. Workers are tasks: ``workers`` is the number of reconciles awaiting at once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import anyio

from informers.aio.events import Subscription
from informers.aio.informer import AsyncSharedIndexInformer
from informers.aio.workqueue import AsyncWorkQueue
from informers.controller.controller import (
    DEFAULT_DRAIN_TIMEOUT,
    DEFAULT_MAX_RETRIES,
    check_options,
    settle,
)
from informers.controller.enqueue import EnqueueRequestForObject
from informers.controller.metrics import (
    RESULT_ERROR,
    ControllerMetrics,
    ControllerMetricsProvider,
    get_provider,
)
from informers.controller.predicates import Predicate, PredicateFilteredHandler
from informers.controller.request import Request
from informers.controller.result import Result
from informers.errors import AlreadyStartedError
from informers.handlers import ResourceEventHandler
from informers.workqueue.rate_limiters import RateLimiter

__all__ = ["AsyncController", "AsyncReconcile"]

logger = logging.getLogger(__name__)

AsyncReconcile = Callable[[Request], Awaitable["Result | None"]]
"""``async def reconcile(request) -> Result | None``."""


class AsyncController:
    """A named async reconcile loop: one rate-limited queue of keys and ``workers`` tasks.

    Args:
        name: log lines and the ``controller`` metric label.
        reconcile: ``async def reconcile(request: Request) -> Result | None``.
        informers: waited for (``wait_synced``) before the first reconcile; :meth:`watch` adds
            its informer.
        workers: concurrent reconciles (controller-runtime ``MaxConcurrentReconciles``).
        rate_limiter: the queue's limiter (default client-go's controller limiter).
        max_retries: as :class:`informers.controller.Controller`'s (default 15; ``None``:
            forever).
        drain_timeout: seconds a stop waits for the reconciles in flight; then they are
            cancelled (unlike threads, tasks can be).
        metrics: the controller metrics provider (default the process-wide one).
        setup: ``async def setup(controller)``, awaited first thing in :meth:`run`, before
            the caches are waited for: work that must ask the server before the controller
            can watch (the builder resolves ``(group, version, plural)`` kinds through
            discovery there, then adds their watches and the default name, as
            controller-runtime's ``Controller.Start`` starts its sources). It may
            :meth:`watch` and set :attr:`name`; the metrics are made after it, under that
            name (without a ``setup``, at construction, as the threaded controller's). An
            exception from it is raised by :meth:`run`.

    Raises:
        ValueError: ``workers < 1``, a negative ``max_retries`` or ``drain_timeout``, or an
            empty name (the threaded controller's checks).
    """

    def __init__(
        self,
        name: str,
        reconcile: AsyncReconcile,
        *,
        informers: Iterable[AsyncSharedIndexInformer] = (),
        workers: int = 1,
        rate_limiter: RateLimiter | None = None,
        max_retries: int | None = DEFAULT_MAX_RETRIES,
        drain_timeout: float = DEFAULT_DRAIN_TIMEOUT,
        metrics: ControllerMetricsProvider | None = None,
        setup: Callable[[AsyncController], Awaitable[None]] | None = None,
    ) -> None:
        check_options(name, workers, max_retries, drain_timeout)
        self.name = name
        self.reconcile = reconcile
        self.workers = workers
        self.max_retries = max_retries
        self.drain_timeout = drain_timeout
        self._informers = list(informers)
        self._registrations: list[Subscription] = []
        self._metrics_provider = metrics if metrics is not None else get_provider()
        self._setup = setup
        self._metrics: ControllerMetrics | None = (
            None if setup is not None  # made in run(), under the name setup may give
            else self._metrics_provider.new_controller_metrics(name, workers))
        self.queue = AsyncWorkQueue(rate_limiter)
        self._stop = anyio.Event()
        self._idle = anyio.Event()
        self._running = 0
        self._started = False
        self.in_flight: set[str] = set()

    def enqueue(self, key: str) -> None:
        self.queue.add(key)

    def enqueue_after(self, key: str, seconds: float) -> None:
        self.queue.add_after(key, seconds)

    def watch(self, informer: AsyncSharedIndexInformer,
              handler: ResourceEventHandler[Any] | Callable[[Any], ResourceEventHandler[Any]]
              | None = None,
              *predicates: Predicate) -> None:
        """Enqueue keys for ``informer``'s events, filtered by ``predicates``, and wait for
        ``informer`` to sync before the first reconcile (as
        :meth:`informers.controller.Controller.watch`).

        Args:
            informer: an informer of the controller's factory.
            handler: one of the threaded controller's enqueue handlers
                (:mod:`informers.controller.enqueue`), or a factory called with this
                controller to build one (``EnqueueRequestForObject``, the class); default
                :class:`~informers.controller.enqueue.EnqueueRequestForObject`. It is called
                from the informer's handler task and only enqueues.
            *predicates: every one must pass an event
                (:class:`~informers.controller.predicates.PredicateFilteredHandler`).
        """
        if handler is None:
            handler = EnqueueRequestForObject
        if isinstance(handler, type) or not isinstance(handler, ResourceEventHandler):
            handler = handler(self)
        if predicates:
            handler = PredicateFilteredHandler(handler, *predicates)
        sync = handler

        async def on_add(obj: Any, initial: bool) -> None:
            sync.on_add(obj, initial)

        async def on_update(old: Any, new: Any) -> None:
            sync.on_update(old, new)

        async def on_delete(obj: Any) -> None:
            sync.on_delete(obj)

        self._registrations.append(informer.add_event_handler(on_add, on_update, on_delete))
        self._informers.append(informer)

    def stop(self) -> None:
        """Stop taking keys; :meth:`run` drains the reconciles in flight and returns."""
        self._stop.set()

    async def run(self) -> None:
        """Wait for the caches, reconcile until :meth:`stop` (or cancellation), drain, return.

        Raises:
            AlreadyStartedError: run a second time.
        """
        if self._started:
            raise AlreadyStartedError(f"controller {self.name} runs once")
        self._started = True
        if self._setup is not None:
            await self._setup(self)
            self._metrics = self._metrics_provider.new_controller_metrics(self.name,
                                                                          self.workers)
        if not await self._caches_synced():
            return
        async with anyio.create_task_group() as tg:
            self.queue.start(tg)
            self._running = self.workers
            for i in range(self.workers):
                tg.start_soon(self._worker, name=f"controller-{self.name}-{i}")
            await self._stop.wait()
            self.queue.shut_down()
            with anyio.move_on_after(self.drain_timeout) as waited:
                await self._idle.wait()
            if waited.cancelled_caught:
                logger.warning('controller "%s": reconciles of %s still running after %gs; '
                               "cancelled", self.name, sorted(self.in_flight),
                               self.drain_timeout)
            tg.cancel_scope.cancel()

    async def _caches_synced(self) -> bool:
        """Wait until every informer synced (``True``) or :meth:`stop` (``False``)."""
        async with anyio.create_task_group() as tg:
            async def synced() -> None:
                for informer in self._informers:
                    await informer.wait_synced()
                # and every handler of watch() was handed the initial list (controller-runtime
                # v0.23 pkg/internal/source/kind.go waits for the registration's HasSynced)
                for registration in self._registrations:
                    await registration.wait_synced()
                tg.cancel_scope.cancel()

            async def stopped() -> None:
                await self._stop.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(synced)
            tg.start_soon(stopped)
        return not self._stop.is_set()

    async def _worker(self) -> None:
        queue = self.queue
        try:
            while True:
                key = await queue.get()
                if key is None:
                    return
                await self._process(key)
        finally:
            self._running -= 1
            if self._running == 0:
                self._idle.set()

    async def _process(self, key: str) -> None:
        metrics = self._metrics
        assert metrics is not None  # made by run() before the workers start
        start = anyio.current_time()
        self.in_flight.add(key)
        metrics.active_workers(1)
        outcome = RESULT_ERROR
        try:
            try:
                result: object = await self.reconcile(Request.from_key(key))
            except Exception as err:
                result = err
            outcome = settle(self.name, self.queue, metrics, self.max_retries, key, result)
        finally:
            metrics.reconciled(outcome, anyio.current_time() - start)
            metrics.active_workers(-1)
            self.in_flight.discard(key)
            self.queue.done(key)

    def __repr__(self) -> str:
        return f"<AsyncController {self.name}>"
