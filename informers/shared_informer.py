"""Keeps one cache of a resource current and notifies any number of handlers of its changes.

client-go ``tools/cache/shared_informer.go`` (``sharedIndexInformer``) and the parts of
``controller.go`` it runs (``processDeltas``, the process loop). The data flow is::

    Reflector --(add/update/delete/replace/resync/bookmark)--> RealFIFO --pop--> indexer
        --> listeners

with a :class:`~informers.delta_fifo.DeltaFIFO` instead when the informer is created with
``queue=InformerQueue.DELTA_FIFO`` (:mod:`informers.informer_queue`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from typing import Any, Generic

from informers.clock import REAL_CLOCK, Clock
from informers.delta_fifo import DeltaFIFO, TransformFunc
from informers.errors import InformerStartedError, InformerStoppedError
from informers.fifo_metrics import InformerNameAndResource
from informers.handlers import ResourceEventHandler
from informers.indexer import Indexer
from informers.informer_queue import DeltaFIFOConsumer, InformerQueue, RealFIFOConsumer
from informers.keys import Indexers, deletion_handling_meta_namespace_key_func
from informers.list_watch import ListWatch
from informers.memory import InitialSyncGC, MemoryTuning
from informers.mutation_detector import CacheMutationDetector, mutation_detection_enabled
from informers.object_codec import (
    JSON_CODEC,
    Encoded,
    compact_index_func,
    compact_key_func,
    item_encoder,
)
from informers.object_type import ObjectT
from informers.processor_listener import (
    ADD,
    ProcessorListener,
    determine_resync_period,
)
from informers.real_fifo import RealFIFO
from informers.reflector import Reflector, ReflectorMetrics
from informers.reflector_options import ReflectorOptions
from informers.resource_version import ResourceVersionWaiter
from informers.shared_processor import SharedProcessor
from informers.synchronous_listener import SynchronousListener

__all__ = [
    "MINIMUM_RESYNC_PERIOD",
    "ResourceEventHandlerRegistration",
    "SharedIndexInformer",
    "strip_managed_fields",
]

logger = logging.getLogger(__name__)

MINIMUM_RESYNC_PERIOD = 1.0
"""Seconds; smaller handler periods are raised to it (client-go ``minimumResyncPeriod``)."""

def strip_managed_fields(obj: Any) -> Any:
    """The default transform: drop ``metadata.managedFields`` in place and return ``obj``.

    controller-runtime ``cache.TransformStripManagedFields``. Server-side-apply bookkeeping is
    rarely read by controllers and makes up about half of a typical pod's retained memory.
    """
    if obj.__class__ is dict:
        meta = obj.get("metadata")
        if meta.__class__ is dict and "managedFields" in meta:
            del meta["managedFields"]
    return obj


class _Default:
    def __repr__(self) -> str:
        return "strip_managed_fields"


_DEFAULT_TRANSFORM: Any = _Default()


class ResourceEventHandlerRegistration:
    """The handle :meth:`SharedIndexInformer.add_event_handler` returns (client-go
    ``ResourceEventHandlerRegistration``). Identity-based: registering the same handler twice
    gives two registrations."""

    __slots__ = ("_informer", "_listener", "handler")

    def __init__(
        self,
        informer: SharedIndexInformer[Any],
        listener: ProcessorListener,
        handler: ResourceEventHandler[Any],
    ) -> None:
        self._informer = informer
        self._listener = listener
        self.handler = handler

    def has_synced(self) -> bool:
        """True when the informer synced and this handler has been delivered every
        initial-list add (including the synthetic ones of a late registration).

        A handler call that raised counts as delivered.
        """
        return self._listener.has_synced()

    def __repr__(self) -> str:
        return f"<ResourceEventHandlerRegistration {self._listener.name} handler={self.handler!r}>"


class SharedIndexInformer(Generic[ObjectT]):
    """A shared, indexed cache of one resource plus event fan-out to registered handlers.

    Generic over the objects' static type: ``SharedIndexInformer[Pod]`` has an
    ``Indexer[Pod]`` and takes ``ResourceEventHandler[Pod]`` handlers (default
    ``dict[str, Any]``, :mod:`informers.object_type`); nothing checks it at run time.

    Contract:

    * **One writer.** Only the consumer of the queue writes the indexer: it pops, writes the
      indexer, and only then queues notifications, so a handler reading the cache sees the new
      state or newer. Everyone else reads through :meth:`get_indexer` or a lister. The
      consumer is the thread ``informer-<name>-process``; when it waits on an empty queue,
      the watch thread applies its own event in its place (the FIFO's ``direct_handoff``,
      which saves a thread wake-up per event); either way one pop at a time, in queue order.
    * **Ordering** (default queue, :class:`~informers.real_fifo.RealFIFO`, client-go v0.36):
      every handler sees the changes of every key in the order the watch delivered them,
      nothing merged. A relist swaps the cache in one step (a lister sees the old or the new
      set, never a mix), then notifies: deletions (tombstones) first, then updates and adds
      in list order (:mod:`informers.process_deltas`). With ``queue=InformerQueue.DELTA_FIFO``
      (before Kubernetes 1.33): a key's queued changes are merged and a relist is applied one
      object at a time.
    * **Read-your-writes.** :meth:`last_store_sync_resource_version` is the resourceVersion
      of the cache's last write; :meth:`wait_for_resource_version` waits until the cache has
      caught up with a write the caller made.
    * **Shared objects.** Cached objects and those passed to handlers are the same dicts; do
      not mutate them (see :mod:`informers.mutation_detector` for a debug check).
    * **Staleness.** The cache lags the server by the watch latency plus the queue; after a
      disconnect it may be stale until the relist.
    * **Handlers** each get a :class:`~informers.processor_listener.ProcessorListener`
      (thread + unbounded buffer): a slow or raising handler delays only itself. Calls to one
      handler never overlap and follow the order the cache was written. A handler registered
      ``synchronous`` is called by the cache's writer itself
      (:class:`~informers.synchronous_listener.SynchronousListener`).
    * **Sync updates.** An update whose old and new resourceVersion are equal (a resync, or a
      relist of an unchanged object) goes only to handlers marked syncing (client-go
      ``OnUpdate``/``distribute``): every handler is until the first resync tick, which keeps
      only those whose resync period is due (so without a resync period, every handler gets
      them); every other notification goes to every handler.
    * **Transform** (default :func:`strip_managed_fields`) runs exactly once per incoming
      object, when the FIFO queues it; never on resync ``Sync`` deltas or tombstones. With
      the default (or :func:`strip_managed_fields` itself) and a ListWatch that supports it
      (one of :func:`informers.client.list_watch_from_client`),
      the reflector gets a copy of the ListWatch with ``drop_managed_fields`` on, so the
      managedFields are never even decoded (about half the decode time and memory of a
      pod); the objects are the same. Any other transform sees the objects exactly as sent.
    * **Garbage collector.** Untouched unless ``memory_tuning`` is given
      (:class:`~informers.memory.MemoryTuning`: process-wide; the first list is decoded and
      processed with the cyclic GC paused, and the first sync ends with ``gc.freeze()``, a
      higher third threshold and ``malloc_trim``, all before :meth:`has_synced` turns true).
    * **Memory.** One key string per cached object, made by the DeltaFIFO and kept by the
      cache; a relisted object waits in the FIFO without a per-object delta or list; with
      only the namespace index nothing else is kept per object.
    * **Thread safety.** Every public method may be called from any thread.
      :meth:`add_event_handler` blocks delta processing briefly while it queues a late
      handler's synthetic adds.
    * **Lifecycle.** :meth:`run` once; it blocks until ``stop_event`` is set, then stops the
      reflector (aborting its list or watch request) and the process loop, lets every
      listener deliver what it has queued, and joins every thread it started before
      returning; a handler that never returns blocks that. The cache stays readable after the stop;
      the informer drops its listeners (and so the handlers, which often refer back to it), so no
      reference cycle keeps a stopped informer alive, which matters after ``gc.freeze()``. The
      calling thread only waits for ``stop_event``; a BaseException interrupting it
      (KeyboardInterrupt) gets the same clean-up before it propagates. Threads: the reflector's
      (``reflector-<name>``, and ``-resync``), the process loop (``informer-<name>-process``), one
      per handler (``informer-<name>-handler-<n>``), and the mutation detector's if enabled.

    Args:
        list_watch: lists and watches the resource.
        resync_period: seconds between resyncs for handlers that do not give their own;
            also the resync check period (client-go uses the same value for both); ``0``:
            never resync, and then no handler ever resyncs.
        indexers: extra indices (name -> function) on the cache.
        clock: for the reflector, resync bookkeeping and the mutation detector.
        transform: applied once to each incoming object; ``None`` for none. Default:
            :func:`strip_managed_fields` (then the managedFields are not even decoded, see
            the contract).
        name: for thread names and logs; default: the resource's ``group_resource``.
        detect_mutations: keep deep copies of cached objects and compare them (debug);
            ``None``: the ``KUBE_CACHE_MUTATION_DETECTOR`` environment variable decides.
        mutation_failure_func: what the mutation detector calls instead of raising.
        memory_tuning: opt-in, process-wide GC and C-heap tuning for large caches (see
            :class:`~informers.memory.MemoryTuning`); ``None`` (default) touches neither.
        reflector_options: passed to the :class:`~informers.reflector.Reflector`
            (:class:`~informers.reflector_options.ReflectorOptions`; default client-go's).
        queue: :attr:`~informers.informer_queue.InformerQueue.REAL_FIFO` (default, client-go
            v0.36) or :attr:`~informers.informer_queue.InformerQueue.DELTA_FIFO` (the classic
            queue of Kubernetes before 1.33).
        compact: keep the cache compact (:data:`~informers.object_codec.JSON_CODEC`): each
            cached object is held as its JSON bytes (about a quarter of the memory of the
            dicts, and one object for the garbage collector to walk instead of hundreds) and
            decoded again on every read, so listers, ``get_by_key`` and the ``old`` object of
            an update return fresh copies a caller may mutate. Costs a decode per read
            (about 6 us per 4 KB pod with orjson). Not in client-go. Default off.

    An explicit ``name`` also names the queue's metrics (:mod:`informers.fifo_metrics`).
    """

    def __init__(
        self,
        list_watch: ListWatch,
        resync_period: float = 0.0,
        indexers: Indexers | None = None,
        *,
        clock: Clock = REAL_CLOCK,
        transform: TransformFunc | None = _DEFAULT_TRANSFORM,
        name: str | None = None,
        detect_mutations: bool | None = None,
        mutation_failure_func: Callable[[str], None] | None = None,
        memory_tuning: MemoryTuning | None = None,
        reflector_options: ReflectorOptions | None = None,
        queue: InformerQueue | str = InformerQueue.REAL_FIFO,
        compact: bool = False,
    ) -> None:
        self._queue_kind = InformerQueue(queue)
        self._list_watch = list_watch
        resource = getattr(list_watch, "resource", None)
        self._resource = resource
        self.name = name or (resource.group_resource if resource is not None else "informer")
        self._identifier = None if not name else InformerNameAndResource(
            name, *((resource.group, resource.version, resource.plural)
                    if resource is not None else ()))
        self._clock = clock
        self._compact = bool(compact)
        if compact and self._queue_kind is InformerQueue.DELTA_FIFO:
            raise ValueError("the compact cache needs the RealFIFO queue")
        self._key_func = (compact_key_func(deletion_handling_meta_namespace_key_func)
                          if compact else deletion_handling_meta_namespace_key_func)
        self._indexer: Indexer[ObjectT] = Indexer(self._key_func, self._index_funcs(indexers),
                                                  codec=JSON_CODEC if compact else None)
        self._waiter = ResourceVersionWaiter(
            self._indexer.last_store_sync_resource_version, clock)
        self._processor = SharedProcessor(clock=clock)
        self._transform: TransformFunc | None = (
            strip_managed_fields if transform is _DEFAULT_TRANSFORM else transform
        )
        self._resync_check_period = float(resync_period)
        self._default_handler_resync_period = float(resync_period)
        self._memory_tuning = memory_tuning
        self._reflector_options = reflector_options or ReflectorOptions()
        self._detector: CacheMutationDetector | None = None
        if mutation_detection_enabled(detect_mutations):
            self._detector = CacheMutationDetector(
                self.name, clock=clock, failure_func=mutation_failure_func
            )
        self._started_lock = threading.Lock()
        # Reentrant: a synchronous handler runs under it and may register another handler.
        self._block_deltas = threading.RLock()
        self._started = False
        self._stopped = False
        self._fifo: DeltaFIFO | RealFIFO | None = None
        self._reflector: Reflector | None = None
        self._listener_count = 0

    # -- configuration before start ------------------------------------------------------------

    def set_transform(self, transform: TransformFunc | None) -> None:
        """Replace the transform (``None``: none). Only before :meth:`run`.

        Raises:
            InformerStartedError: the informer has already started.
        """
        with self._started_lock:
            if self._started:
                raise InformerStartedError("informer has already started")
            self._transform = transform

    def set_watch_error_handler(self, handler: Callable[[Any, BaseException], None]) -> None:
        """Set the reflector's watch error hook (the last call wins). Only before :meth:`run`.

        Raises:
            InformerStartedError: the informer has already started.
        """
        with self._started_lock:
            if self._started:
                raise InformerStartedError("informer has already started")
            self._reflector_options = dataclasses.replace(
                self._reflector_options, watch_error_handler=handler)

    # -- handlers ------------------------------------------------------------------------------

    def add_event_handler(
        self,
        handler: ResourceEventHandler[ObjectT],
        resync_period: float | None = None,
        *,
        synchronous: bool = False,
    ) -> ResourceEventHandlerRegistration:
        """Register ``handler``; it is notified from its own thread (client-go
        ``AddEventHandlerWithResyncPeriod``), or inline with ``synchronous``.

        A handler added after :meth:`run` started first receives ``on_add(obj, True)`` for
        every cached object, queued while delta processing is blocked, so no later event can
        overtake them and nothing is missed; its registration's ``has_synced`` turns true only
        once they were delivered.

        Args:
            handler: see :class:`~informers.handlers.ResourceEventHandler`.
            resync_period: seconds between this handler's resyncs; ``None``: the informer's
                default; ``0``: none. Raised to 1 s (client-go ``minimumResyncPeriod``). Before
                start a smaller period than the informer's check period lowers that period;
                after start it is raised to the check period instead. If the informer was
                created with period 0 it never resyncs.
            synchronous: call the handler on the thread that wrote the cache, right after
                the change, instead of handing the notification to a thread of its own
                (:class:`~informers.synchronous_listener.SynchronousListener`). Saves a thread
                wake-up per event (0.1-0.5 ms on a busy machine); only for handlers that never
                block, such as those that enqueue keys: a slow one holds up the cache and every
                other handler. Not in client-go, where the hand-off costs nothing. The initial
                adds of a late registration are delivered on the registering thread.

        Raises:
            InformerStoppedError: the informer has stopped.
        """
        if resync_period is None:
            resync_period = self._default_handler_resync_period
        with self._started_lock:
            if self._stopped:
                raise InformerStoppedError(
                    f"handler {handler!r} was not added to shared informer because it has "
                    "stopped already"
                )
            if resync_period > 0:
                if resync_period < MINIMUM_RESYNC_PERIOD:
                    logger.warning(
                        "%s: resync period %ss is too small; changing it to the minimum "
                        "allowed value of %ss",
                        self.name,
                        resync_period,
                        MINIMUM_RESYNC_PERIOD,
                    )
                    resync_period = MINIMUM_RESYNC_PERIOD
                if resync_period < self._resync_check_period:
                    if self._started:
                        logger.warning(
                            "%s: resync period %ss is smaller than the resync check period "
                            "%ss of a started informer; changing it to %ss",
                            self.name,
                            resync_period,
                            self._resync_check_period,
                            self._resync_check_period,
                        )
                        resync_period = self._resync_check_period
                    else:
                        self._resync_check_period = resync_period
                        self._processor.resync_check_period_changed(resync_period)
            self._listener_count += 1
            listener_class = SynchronousListener if synchronous else ProcessorListener
            untyped: ResourceEventHandler[Any] = handler  # the listeners store any objects
            listener = listener_class(
                untyped,
                resync_period,
                determine_resync_period(resync_period, self._resync_check_period),
                self._clock.now(),
                self.has_synced,
                clock=self._clock,
                name=f"informer-{self.name}-handler-{self._listener_count}"
                + ("-synchronous" if synchronous else ""),
            )
            registration = ResourceEventHandlerRegistration(self, listener, handler)
            if not self._started:
                self._processor.add_listener(listener)
                return registration
            with self._block_deltas:
                # Queue the synthetic adds before the listener can receive anything else.
                for obj in self._indexer.list_lazy():
                    listener.add((ADD, obj, True))
                self._processor.add_listener(listener)
            return registration

    def remove_event_handler(self, registration: object) -> None:
        """Unregister a handler; idempotent; a registration of another informer is ignored.

        Works on a stopped informer. Asynchronous: a call already in progress finishes
        afterwards; queued notifications are dropped. Use :meth:`shut_down_event_handler` to
        wait for the handler's thread.
        """
        if not isinstance(registration, ResourceEventHandlerRegistration):
            return
        if registration._informer is not self:
            return
        self._processor.remove_listener(registration._listener)

    def shut_down_event_handler(self, registration: object) -> None:
        """Unregister a handler and wait until its thread ended (client-go
        ``ShutDownEventHandler``): after this returns the handler is never called again.

        Called from the handler itself it does not wait (the call in progress is the last).
        """
        self.remove_event_handler(registration)
        if (
            isinstance(registration, ResourceEventHandlerRegistration)
            and registration._informer is self
        ):
            registration._listener.join()

    # -- cache access --------------------------------------------------------------------------

    def get_store(self) -> Indexer[ObjectT]:
        """The cache (the same object as :meth:`get_indexer`)."""
        return self._indexer

    def get_indexer(self) -> Indexer[ObjectT]:
        """The cache with its indices. Read-only for everyone but this informer."""
        return self._indexer

    def add_indexers(self, indexers: Indexers) -> None:
        """Add indices; allowed at any time until the informer stopped (client-go v0.30+).

        Existing objects are indexed at once.

        Raises:
            InformerStoppedError: the informer has stopped.
            IndexConflictError: an index of that name exists already.
        """
        with self._started_lock:
            if self._stopped:
                raise InformerStoppedError("indexer was not added because it has stopped already")
            self._indexer.add_indexers(self._index_funcs(indexers) or {})

    def _index_funcs(self, indexers: Indexers | None) -> Indexers | None:
        """The index functions as the cache runs them (a compact cache's decode first)."""
        if not self._compact or not indexers:
            return indexers
        return {name: compact_index_func(fn) for name, fn in indexers.items()}

    # -- state ---------------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the first list has been applied to the cache and its notifications queued
        (and, with ``memory_tuning``, the initial-sync GC pause ended, see the class
        docstring)."""
        fifo = self._fifo
        return fifo is not None and fifo.has_synced()

    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the last list or watch event applied (``""`` before)."""
        reflector = self._reflector
        return reflector.last_sync_resource_version() if reflector is not None else ""

    def last_store_sync_resource_version(self) -> str:
        """The resourceVersion of the cache's last write: the last object stored or deleted,
        relist or bookmark (client-go v0.36 ``GetStore().LastStoreSyncResourceVersion()``;
        advances with every watch event applied, unlike :meth:`last_sync_resource_version`,
        which the reflector sets before the queue was drained). ``""`` before any."""
        return self._indexer.last_store_sync_resource_version()

    def wait_for_resource_version(self, resource_version: str, timeout: float | None) -> bool:
        """Wait until the cache has caught up with ``resource_version`` (read-your-writes).

        ``resource_version`` is typically that of an object this process just created,
        updated or deleted; once this returns ``True`` the cache reflects that write or newer
        ones (including for other objects of the resource). Caveats: resourceVersions are
        opaque except for what Kubernetes 1.35+ guarantees: well-formed ones of the *same
        resource* compare as integers
        (:func:`~informers.resource_version.compare_resource_version`); a server that does not
        use them (some aggregated API servers) never satisfies the wait. The cache only
        advances with what its watch delivers, so a write the informer's selectors exclude
        is seen only through later events or bookmarks; a cache that stopped never catches
        up. Handler notifications may still be queued when this returns.

        Returns:
            ``True`` when caught up, ``False`` after ``timeout`` seconds (``None``: no limit).

        Raises:
            InvalidResourceVersionError: ``resource_version`` is not well formed.
        """
        return self._waiter.wait(resource_version, timeout)

    def last_sync_error(self) -> BaseException | None:
        """The reflector's last list-or-watch error (``None`` before :meth:`run` or before any
        error); it is not cleared by a later success, so read it with :meth:`has_synced`."""
        reflector = self._reflector
        return reflector.metrics.last_error if reflector is not None else None

    def reflector_metrics(self) -> ReflectorMetrics | None:
        """The list and watch counters of this informer's reflector (``None`` before
        :meth:`run`); written by the reflector thread, so reads may be a moment stale."""
        reflector = self._reflector
        return reflector.metrics if reflector is not None else None

    @property
    def list_watch(self) -> ListWatch:
        """The ListWatch this informer lists and watches with."""
        return self._list_watch

    def reset_backoff(self) -> None:
        """Restart the reflector's backoff at its first delay, before a relist that follows no
        failure (a :class:`~informers.shard.list_watch.ShardedListWatch` ends its watches
        when its ranges change), so repeated changes do not wait ever longer. No-op before
        :meth:`run`."""
        reflector = self._reflector
        if reflector is not None:
            reflector.backoff.reset()

    def has_started(self) -> bool:
        return self._started

    def is_stopped(self) -> bool:
        """True once :meth:`run` has returned (or is returning)."""
        return self._stopped

    @property
    def resync_check_period(self) -> float:
        """Seconds between the reflector's resync checks (``0``: never)."""
        return self._resync_check_period

    # -- running -------------------------------------------------------------------------------

    def _reflector_list_watch(self) -> ListWatch:
        """The ListWatch for the reflector: with the default transform, which drops
        managedFields anyway, a copy that never decodes them (when it can)."""
        lw = self._list_watch
        if (self._transform is strip_managed_fields
                and getattr(lw, "supports_drop_managed_fields", False)
                and not lw.drop_managed_fields):
            return lw.with_drop_managed_fields(True)
        return lw

    def _new_reflector(self, fifo: DeltaFIFO | RealFIFO) -> Reflector:
        resource = self._resource
        return Reflector(
            self._reflector_list_watch(),
            fifo,
            self._reflector_options,
            name=self.name,
            expected_kind=resource.kind if resource is not None and resource.kind else None,
            resync_period=self._resync_check_period,
            should_resync=self._processor.should_resync,
            clock=self._clock,
            memory_tuning=self._memory_tuning,
            list_item_hook=(item_encoder(self._key_func, self._transform)
                            if self._compact else None),
        )

    def _fifo_transform(self) -> TransformFunc | None:
        """The queue's transform: a compact informer's listed objects arrive transformed and
        encoded already (:func:`~informers.object_codec.item_encoder`) and pass as they are."""
        transform = self._transform
        if not self._compact or transform is None:
            return transform

        def queue_transform(obj: Any) -> Any:
            return obj if obj.__class__ is Encoded else transform(obj)

        return queue_transform

    def run(self, stop_event: threading.Event) -> None:
        """Run until ``stop_event`` is set; once per informer (a second call warns and returns).

        Stop order: the reflector and the process loop first, then every listener delivers
        what it has queued, then every thread started here is joined.
        """
        with self._started_lock:
            if self._started:
                logger.warning(
                    "%s: the shared informer has started; running it more than once is not "
                    "allowed",
                    self.name,
                )
                return
            tuning = self._memory_tuning
            initial_gc = InitialSyncGC(self.name, tuning) if tuning is not None else None
            indexer: Indexer[Any] = self._indexer  # the consumers write any objects
            consumer_args = (indexer, self._processor.distribute, self._block_deltas,
                             self._detector, self._waiter, self.name, self._key_func)
            fifo: DeltaFIFO | RealFIFO
            loop: Callable[[Any, threading.Event], None]
            if self._queue_kind is InformerQueue.DELTA_FIFO:
                classic = DeltaFIFOConsumer(*consumer_args)
                fifo = classic.new_fifo(indexer, self._transform, initial_gc)
                loop = classic.loop
            else:
                consumer = RealFIFOConsumer(*consumer_args)
                fifo = consumer.new_fifo(self._fifo_transform(), initial_gc, self._identifier)
                loop = consumer.loop
            reflector = self._new_reflector(fifo)
            self._fifo = fifo
            self._reflector = reflector
            self._started = True

        detector_stop = threading.Event()
        detector_thread: threading.Thread | None = None
        if self._detector is not None:
            detector_thread = threading.Thread(
                target=self._detector.run,
                args=(detector_stop,),
                name=f"informer-{self.name}-mutation-detector",
                daemon=True,
            )
            detector_thread.start()
        self._processor.run()
        process_halt = threading.Event()
        process_thread = threading.Thread(
            target=loop,
            args=(fifo, process_halt),
            name=f"informer-{self.name}-process",
            daemon=True,
        )
        process_thread.start()
        try:
            # This thread waits for stop_event; the reflector's own threads list and watch.
            reflector.run(stop_event)
        finally:
            # The reflector has stopped writing the FIFO: stop the process loop without
            # draining the FIFO, then the listeners (which deliver what they have queued).
            process_halt.set()
            fifo.close()
            process_thread.join()
            if initial_gc is not None:
                initial_gc.stopped()  # stopped before the initial sync: just resume
            with self._started_lock:
                self._stopped = True
            self._processor.stop()
            detector_stop.set()
            if detector_thread is not None:
                detector_thread.join()

    def __repr__(self) -> str:
        return f"<SharedIndexInformer {self.name}>"
