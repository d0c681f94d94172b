"""Keeps one cache of a resource current from async code and notifies async handlers and
subscriptions of its changes: the async driver of a shared informer.

The data flow and every rule are the threaded informer's
(:mod:`informers.shared_informer`), with the same objects::

    AsyncReflector --(add/update/delete/replace/bookmark)--> RealFIFO --pop--> Indexer
        --> Subscriptions (typed events) and async handlers

* the reflector's decisions are :class:`~informers.reflector_rules.ReflectorRules`';
* the queue is the same :class:`~informers.real_fifo.RealFIFO` (client-go v0.36's
  ``newQueueFIFO`` options), drained by a task that pops what is queued without blocking
  (:meth:`RealFIFO.pop_batch <informers.real_fifo.RealFIFO.pop_batch>` never waits when the
  queue is not empty);
* the cache is the same :class:`~informers.indexer.Indexer`, written by the same
  :class:`~informers.informer_queue.RealFIFOConsumer` (``process_deltas``), so listers
  (:class:`~informers.listers.Lister`) read it synchronously;
* notifications become :mod:`~informers.aio.events` values pushed to each subscription; an async
  handler is a subscription without bound read by its own task, which awaits the handler for
  each event in order (client-go's ``processorListener``: one handler's events in order, a slow
  handler delays only itself). Subscriptions are the listeners of the threaded informer's
  :class:`~informers.shared_processor.SharedProcessor`, so client-go's fan-out and per-listener
  resync rules are the same code: a sync update (a resync, or a relist of an unchanged object)
  goes only to the subscriptions whose resync period is due.

The options the threaded informer has are here with the same names and rules
(:mod:`informers.informer_rules`): per-handler ``resync_period``, the queue's metrics for a
named informer (:mod:`informers.fifo_metrics`), the mutation detector
(``detect_mutations``, ``KUBE_CACHE_MUTATION_DETECTOR``; its comparisons run on a thread of
their own, as in the threaded informer), the compact cache (``compact``) and ``memory_tuning``.

Lifecycle: :meth:`AsyncSharedIndexInformer.run` runs in a task until :meth:`stop` (or
cancellation). Stop order: the reflector's task is cancelled (its watch connection closes), what
is queued is applied, every subscription is closed (its reader still gets what it buffered),
handler tasks get ``drain_timeout`` seconds to deliver what they have, then are cancelled; last
the mutation detector compares once more and its thread is joined.
One event loop; listers may also be read from other threads (the Indexer is thread-safe).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread

from informers.aio.events import (
    DEFAULT_MAX_BUFFER,
    Added,
    Deleted,
    InformerEvent,
    Subscription,
    Updated,
)
from informers.aio.reflector import AsyncReflector
from informers.clock import REAL_CLOCK, Clock
from informers.errors import FIFOClosedError, InformerStartedError
from informers.handlers import ResourceEventHandlerFuncs
from informers.indexer import Indexer
from informers.informer_queue import RealFIFOConsumer
from informers.informer_rules import (
    cache_index_funcs,
    cache_key_func,
    fifo_identifier,
    fifo_transform,
    handler_resync_periods,
)
from informers.keys import DeletedFinalStateUnknown, Indexers
from informers.memory import InitialSyncGC, MemoryTuning
from informers.mutation_detector import CacheMutationDetector, mutation_detection_enabled
from informers.object_codec import JSON_CODEC, Encoded, decoded, item_encoder
from informers.processor_listener import (
    ADD,
    UPDATE,
    Notification,
    ProcessorListener,
    determine_resync_period,
)
from informers.real_fifo import RealFIFO
from informers.reflector_options import ReflectorOptions
from informers.reflector_rules import ReflectorMetrics
from informers.resource_version import (
    InvalidResourceVersionError,
    ResourceVersionWaiter,
    is_well_formed,
)
from informers.shared_informer import strip_managed_fields
from informers.shared_processor import SharedProcessor

__all__ = ["DEFAULT_DRAIN_TIMEOUT", "AsyncSharedIndexInformer"]

logger = logging.getLogger(__name__)

DEFAULT_DRAIN_TIMEOUT = 5.0
"""Seconds the handler tasks get, when the informer stops, to deliver what they have queued
(controller-runtime's ``GracefulShutdownTimeout`` is 30 s for a whole manager; one informer's
handlers get less)."""

_DRAIN_SLICE = 64  # batches popped before the drain task lets other tasks run

AsyncHandler = Callable[..., Awaitable[None]]


class _FifoStore:
    """The reflector's store: the RealFIFO, waking the drain task after every write."""

    def __init__(self, fifo: RealFIFO, wake: Callable[[], None]) -> None:
        self.fifo = fifo
        self._wake = wake

    def add(self, obj: Any) -> None:
        self.fifo.add(obj)
        self._wake()

    def update(self, obj: Any) -> None:
        self.fifo.update(obj)
        self._wake()

    def delete(self, obj: Any) -> None:
        self.fifo.delete(obj)
        self._wake()

    def replace(self, objects: list[Any], resource_version: str) -> None:
        self.fifo.replace(objects, resource_version)
        self._wake()

    def resync(self) -> None:
        self.fifo.resync()
        self._wake()

    def bookmark(self, resource_version: str) -> None:
        self.fifo.bookmark(resource_version)
        self._wake()


_LAZY = (Encoded, DeletedFinalStateUnknown)  # what a compact cache's notifications may hold


def _never_synced() -> bool:
    return False


class _SubscriptionListener(ProcessorListener):
    """A :class:`~informers.aio.events.Subscription` as one listener of the informer's
    :class:`~informers.shared_processor.SharedProcessor`: the processor's fan-out and the
    listener's resync bookkeeping (``syncing``, ``next_resync``, ``should_resync``) are the
    threaded ones, unchanged; delivery is the subscription reader's (a handler task or user
    code) instead of a thread, so :meth:`start`, :meth:`stop` and :meth:`join` do nothing and
    :meth:`remove` closes the subscription. Used on the event loop only."""

    def __init__(self, subscription: Subscription, requested: float, period: float,
                 now: float, clock: Clock, name: str) -> None:
        super().__init__(ResourceEventHandlerFuncs(), requested, period, now, _never_synced,
                         clock=clock, name=name)
        self.subscription = subscription

    def add(self, notification: Notification) -> None:
        """Push the notification as a typed event; a compact cache's objects are decoded for
        each subscription (each gets its own copies, as each threaded handler does)."""
        kind, a, b = notification
        if a.__class__ in _LAZY or b.__class__ is Encoded:
            a, b = decoded(a, b)
        event: InformerEvent
        if kind == ADD:
            event = Added(a, bool(b))
        elif kind == UPDATE:
            event = Updated(a, b)
        else:
            event = Deleted(a)
        self.subscription.push(event)

    def pending(self) -> int:
        return len(self.subscription)

    def has_synced(self) -> bool:
        return self.subscription.has_synced()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def remove(self) -> None:
        self.subscription.close()

    def join(self) -> None:
        pass


class AsyncSharedIndexInformer:
    """A shared informer driven by tasks (see the module docstring).

    The threaded :class:`~informers.shared_informer.SharedIndexInformer`'s contract holds for
    the cache (one writer, ordering, read-your-writes, shared objects, transform once per
    object, resync rules); handlers and subscriptions are served on the event loop.

    Args:
        list_watch: an :class:`~informers.aio.transport.AsyncListWatch`.
        indexers: the cache's indexers (name -> function).
        options: the reflector's :class:`~informers.reflector_options.ReflectorOptions`.
        resync_period: seconds between resyncs for handlers and subscriptions that do not give
            their own; also the resync check period (as in client-go); ``0`` (default): never
            resync, and then nothing ever resyncs.
        transform: applied to each object before it is cached (default: drop
            ``metadata.managedFields``, as the threaded informer does); ``None`` for none.
        drain_timeout: see :data:`DEFAULT_DRAIN_TIMEOUT`.
        name: for logs; default the resource's name. An explicit name also names the queue's
            metrics (:mod:`informers.fifo_metrics`), as for the threaded informer.
        clock: the reflector's (backoff, resync), the resync bookkeeping's and the mutation
            detector's; a FakeClock in tests.
        detect_mutations: keep deep copies of cached objects and compare them (debug);
            ``None``: the ``KUBE_CACHE_MUTATION_DETECTOR`` environment variable decides
            (:mod:`informers.mutation_detector`).
        mutation_failure_func: what the mutation detector calls instead of raising (without
            it a mutation raises on the detector's thread, as client-go panics).
        memory_tuning: opt-in, process-wide GC and C-heap tuning around the first sync
            (:class:`~informers.memory.MemoryTuning`); ``None`` (default) touches neither.
        compact: keep the cache as JSON bytes, decoded on every read (see the threaded
            informer's ``compact``); listers, ``get_by_key`` and every event's objects are
            fresh copies, one per subscription. Not in client-go. Default off.
    """

    def __init__(
        self,
        list_watch: Any,
        indexers: Indexers | None = None,
        *,
        options: ReflectorOptions | None = None,
        resync_period: float = 0.0,
        transform: Callable[[Any], Any] | None = strip_managed_fields,
        drain_timeout: float = DEFAULT_DRAIN_TIMEOUT,
        name: str | None = None,
        clock: Clock = REAL_CLOCK,
        detect_mutations: bool | None = None,
        mutation_failure_func: Callable[[str], None] | None = None,
        memory_tuning: MemoryTuning | None = None,
        compact: bool = False,
    ) -> None:
        self.list_watch = list_watch
        resource = getattr(list_watch, "resource", None)
        self.resource = resource
        self.name = name or (str(resource) if resource is not None else "informer")
        self._clock = clock
        self._compact = bool(compact)
        key_func = cache_key_func(self._compact)
        self._indexer = Indexer(key_func, cache_index_funcs(indexers, self._compact),
                                codec=JSON_CODEC if self._compact else None)
        self._waiter = ResourceVersionWaiter(self._indexer.last_store_sync_resource_version)
        self._processor = SharedProcessor(clock=clock)
        self._listeners: dict[Subscription, _SubscriptionListener] = {}
        self._resync_check_period = float(resync_period)
        self._default_resync_period = float(resync_period)
        self._detector: CacheMutationDetector | None = None
        if mutation_detection_enabled(detect_mutations):
            self._detector = CacheMutationDetector(self.name, clock=clock,
                                                   failure_func=mutation_failure_func)
        self._initial_gc = (InitialSyncGC(self.name, memory_tuning)
                            if memory_tuning is not None else None)
        self._consumer = RealFIFOConsumer(self._indexer, self._processor.distribute,
                                          threading.RLock(), self._detector, self._waiter,
                                          self.name, key_func)
        self._transform = transform
        self._fifo = self._consumer.new_fifo(fifo_transform(transform, self._compact),
                                             self._initial_gc, fifo_identifier(name, resource))
        self._wake = anyio.Event()
        self._reflector = self._new_reflector(
            _FifoStore(self._fifo, self._set_wake), options, memory_tuning,
            item_encoder(key_func, transform) if self._compact else None)
        self.drain_timeout = drain_timeout
        self._synced = anyio.Event()
        self._applied = anyio.Event()  # set (and replaced) each time the drain applied a batch
        self._started = False
        self._stopped = False
        self._core_scope: anyio.CancelScope | None = None
        self._handler_group: Any = None
        self._handler_tasks = 0
        self._handlers_idle = anyio.Event()
        self._handlers_idle.set()
        self._pending_handlers: list[tuple[Subscription, Any, Any, Any]] = []

    def _new_reflector(self, store: _FifoStore, options: ReflectorOptions | None,
                       memory_tuning: MemoryTuning | None,
                       list_item_hook: Callable[[Any], Any] | None) -> Any:
        """The reflector writing ``store`` (tests replace it, as for the threaded informer);
        its resync period is the check period, set again by :meth:`run`."""
        reflector = AsyncReflector(self.list_watch, store, options, name=self.name,
                                   resync_period=self._resync_check_period,
                                   should_resync=self._processor.should_resync,
                                   clock=self._clock, memory_tuning=memory_tuning,
                                   list_item_hook=list_item_hook)
        reflector.handler_backlog = self._handler_backlog
        return reflector

    def _handler_backlog(self) -> int:
        """Events queued for the slowest subscription: those still in the queue plus the most
        one subscription has buffered (the reflector waits while its handlers catch up)."""
        return len(self._fifo) + max((len(sub) for sub in self._listeners), default=0)

    # -- the cache -------------------------------------------------------------------------------

    @property
    def indexer(self) -> Indexer:
        """The cache (read it, never write it; listers wrap it)."""
        return self._indexer

    def has_synced(self) -> bool:
        """Whether the first list has been applied to the cache and delivered to handlers'
        queues."""
        return self._fifo.has_synced()

    async def wait_synced(self) -> None:
        """Wait until :meth:`has_synced`."""
        await self._synced.wait()

    def last_sync_resource_version(self) -> str:
        return self._reflector.last_sync_resource_version()

    async def wait_for_resource_version(self, resource_version: str,
                                        timeout: float | None = None) -> bool:
        """Wait until the cache has caught up with ``resource_version`` (read-your-writes),
        with the caveats of the threaded
        :meth:`SharedIndexInformer.wait_for_resource_version
        <informers.shared_informer.SharedIndexInformer.wait_for_resource_version>`
        (resourceVersions of one resource compare as integers; a stopped cache never catches
        up; handlers may not have been told yet).

        Returns:
            ``True`` when caught up, ``False`` after ``timeout`` seconds (``None``: no limit).

        Raises:
            InvalidResourceVersionError: ``resource_version`` is not well formed.
        """
        if not is_well_formed(resource_version):
            raise InvalidResourceVersionError(resource_version)
        with anyio.move_on_after(timeout):
            while not self._waiter.reached(resource_version):
                await self._applied.wait()
            return True
        return False

    def _notify_applied(self) -> None:
        applied, self._applied = self._applied, anyio.Event()
        applied.set()

    @property
    def reflector_metrics(self) -> ReflectorMetrics:
        return self._reflector.metrics

    @property
    def last_sync_error(self) -> BaseException | None:
        return self._reflector.metrics.last_error

    @property
    def reflector(self) -> AsyncReflector:
        return self._reflector

    # -- notifications ---------------------------------------------------------------------------

    @property
    def resync_check_period(self) -> float:
        """Seconds between the reflector's resync checks (``0``: never): the smallest period
        of the handlers and subscriptions registered before :meth:`run`."""
        return self._resync_check_period

    def subscribe(self, max_buffer: int | None = DEFAULT_MAX_BUFFER, *,
                  resync_period: float | None = None) -> Subscription:
        """A new :class:`~informers.aio.events.Subscription`, starting with an ``Added``
        (``is_in_initial_list=True``) for every object already in the cache, then every change
        (see :mod:`informers.aio.events` for the overflow policy).

        Args:
            max_buffer: see :class:`~informers.aio.events.Subscription`.
            resync_period: seconds between this subscription's resyncs, by the threaded
                ``add_event_handler``'s rules
                (:func:`~informers.informer_rules.handler_resync_periods`): ``None``: the
                informer's; ``0``: none; raised to 1 s; before :meth:`run` a smaller one
                lowers the informer's check period, after it is raised to it.
        """
        if self._stopped:
            sub = Subscription(max_buffer)
            sub.close()
            return sub
        sub = Subscription(max_buffer, on_close=self._unsubscribe)
        requested = self._default_resync_period if resync_period is None else resync_period
        requested, check = handler_resync_periods(self.name, requested,
                                                  self._resync_check_period, self._started)
        if check != self._resync_check_period:
            self._resync_check_period = check
            self._processor.resync_check_period_changed(check)
        listener = _SubscriptionListener(
            sub, requested, determine_resync_period(requested, check), self._clock.now(),
            self._clock, f"{self.name}-subscription-{len(self._listeners) + 1}")
        for obj in self._indexer.list_lazy():
            listener.add((ADD, obj, True))
        if self._synced.is_set():
            sub.mark_sync_point()  # what it was handed so far is its initial list
        self._listeners[sub] = listener
        self._processor.add_listener(listener)
        return sub

    def _mark_synced(self) -> None:
        self._synced.set()
        for sub in list(self._listeners):
            sub.mark_sync_point()

    def _unsubscribe(self, sub: Subscription) -> None:
        listener = self._listeners.pop(sub, None)
        if listener is not None:
            self._processor.remove_listener(listener)

    def add_event_handler(
        self,
        on_add: AsyncHandler | None = None,
        on_update: AsyncHandler | None = None,
        on_delete: AsyncHandler | None = None,
        *,
        resync_period: float | None = None,
    ) -> Subscription:
        """Call async handlers for every event, in order, from a task of this informer:
        ``await on_add(obj, is_in_initial_list)``, ``await on_update(old, new)``,
        ``await on_delete(obj)``. An exception is logged; the next event is delivered.
        Returns the subscription (close it to remove the handler); its ``has_synced()`` /
        ``await wait_synced()`` tell when the handler finished with the initial list
        (client-go's registration ``HasSynced``). ``resync_period`` as for :meth:`subscribe`
        (client-go ``AddEventHandlerWithResyncPeriod``): a resync calls ``on_update(obj,
        obj)`` for every cached object, only for handlers whose period is due.

        Raises:
            InformerStartedError: the informer has stopped.
        """
        if self._stopped:
            raise InformerStartedError(f"{self.name}: the informer has stopped")
        sub = self.subscribe(max_buffer=None, resync_period=resync_period)
        if self._handler_group is not None:
            self._start_handler(sub, on_add, on_update, on_delete)
        else:
            self._pending_handlers.append((sub, on_add, on_update, on_delete))
        return sub

    def _start_handler(self, sub: Subscription, on_add: Any, on_update: Any,
                       on_delete: Any) -> None:
        self._handler_tasks += 1
        self._handlers_idle = anyio.Event()
        self._handler_group.start_soon(self._run_handler, sub, on_add, on_update, on_delete)

    async def _run_handler(self, sub: Subscription, on_add: Any, on_update: Any,
                           on_delete: Any) -> None:
        try:
            async for event in sub:
                try:
                    if isinstance(event, Added):
                        if on_add is not None:
                            await on_add(event.obj, event.is_in_initial_list)
                    elif isinstance(event, Updated):
                        if on_update is not None:
                            await on_update(event.old, event.new)
                    elif on_delete is not None:
                        await on_delete(event.obj)
                except Exception:
                    logger.exception("%s: event handler failed on %s", self.name,
                                     type(event).__name__)
                sub.mark_handled()
        finally:
            sub.close()
            self._handler_tasks -= 1
            if self._handler_tasks == 0:
                self._handlers_idle.set()

    # -- running ---------------------------------------------------------------------------------

    def _set_wake(self) -> None:
        self._wake.set()

    def _drain_now(self) -> None:
        """Apply everything queued (never blocks: pops only while the queue is not empty)."""
        fifo = self._fifo
        consumer = self._consumer
        while len(fifo):
            try:
                fifo.pop_batch(consumer.handle_batch, consumer.handle)
            except FIFOClosedError:
                return
        self._notify_applied()
        if not self._synced.is_set() and fifo.has_synced():
            self._mark_synced()

    async def _drain_loop(self) -> None:
        fifo = self._fifo
        consumer = self._consumer
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            popped = 0
            while len(fifo):
                fifo.pop_batch(consumer.handle_batch, consumer.handle)
                popped += 1
                if popped % _DRAIN_SLICE == 0:
                    self._notify_applied()
                    await anyio.sleep(0)
            self._notify_applied()
            if not self._synced.is_set() and fifo.has_synced():
                self._mark_synced()

    async def run(self) -> None:
        """Run until :meth:`stop` or cancellation (see the module docstring). Once.

        Raises:
            InformerStartedError: run a second time.
        """
        if self._started:
            raise InformerStartedError(f"{self.name}: the informer has already run")
        self._started = True
        self._reflector.resync_period = self._resync_check_period  # final once started
        detector_stop = threading.Event()
        detector_thread: threading.Thread | None = None
        if self._detector is not None:
            detector_thread = threading.Thread(
                target=self._detector.run, args=(detector_stop,),
                name=f"informer-{self.name}-mutation-detector", daemon=True)
            detector_thread.start()
        try:
            async with anyio.create_task_group() as handlers:
                self._handler_group = handlers
                for pending in self._pending_handlers:
                    self._start_handler(*pending)
                self._pending_handlers.clear()
                async with anyio.create_task_group() as core:
                    self._core_scope = core.cancel_scope
                    if self._stopped:
                        core.cancel_scope.cancel()
                    core.start_soon(self._reflector.run)
                    core.start_soon(self._drain_loop)
                # stopped: the reflector wrote its last; apply what is queued, end the streams
                self._finish()
                with anyio.move_on_after(self.drain_timeout) as waited:
                    await self._handlers_idle.wait()
                if waited.cancelled_caught:
                    logger.warning("%s: event handlers did not finish within %gs; cancelled",
                                   self.name, self.drain_timeout)
                handlers.cancel_scope.cancel()
        finally:
            self._finish()
            self._handler_group = None
            if detector_thread is not None:  # it compares once more, then ends
                detector_stop.set()
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(detector_thread.join)

    def _finish(self) -> None:
        self._stopped = True
        if not self._fifo.is_closed():
            self._drain_now()
            self._fifo.close()
        if self._initial_gc is not None:
            self._initial_gc.stopped()  # stopped before the initial sync: just resume
        for sub in list(self._listeners):
            sub.close()

    def stop(self) -> None:
        """Ask :meth:`run` to stop (see the module docstring); returns at once."""
        self._stopped = True
        if self._core_scope is not None:
            self._core_scope.cancel()

    def __repr__(self) -> str:
        return f"<AsyncSharedIndexInformer {self.name}>"
