"""Queues every change the reflector reports, in arrival order (client-go ``RealFIFO``).

client-go v0.36 ``tools/cache/the_real_fifo.go``: the queue shared informers use since
Kubernetes 1.33 (feature ``InOrderInformers``, GA and locked on in 1.36). Unlike
:class:`~informers.delta_fifo.DeltaFIFO` it never merges the changes of a key: each ``add``,
``update`` and ``delete`` is one :class:`~informers.delta_fifo.Delta` and is popped alone, in
arrival order across all keys. With ``atomic_events`` (feature ``AtomicFIFO``, beta and on in
1.36) a relist is one ``ReplacedAll`` delta and a resync one ``SyncAll`` delta, so the consumer
can swap its whole cache at once; with ``unlock_while_processing`` (``UnlockWhileProcessingFIFO``,
beta and on) producers are not blocked while the consumer processes; :meth:`RealFIFO.pop_batch`
(``InOrderInformersBatchProcess``, beta and on) pops runs of distinct keys.
"""

from __future__ import annotations

import builtins
import dataclasses
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from informers.delta_fifo import (
    Delta,
    Deltas,
    DeltaType,
    InitialPopulationHook,
    KeyListerGetter,
    TransformFunc,
)
from informers.errors import FIFOClosedError, KeyFuncError
from informers.fifo_metrics import (
    FIFOMetrics,
    InformerMetricsProvider,
    InformerNameAndResource,
)
from informers.keys import DeletedFinalStateUnknown, KeyFunc, call_key_func, meta_namespace_key_func

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "BookmarkInfo",
    "RealFIFO",
    "ReplacedAllInfo",
    "SyncAllInfo",
    "reconcile_replacement",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_BATCH_SIZE = 1000
"""The most deltas one :meth:`RealFIFO.pop_batch` takes (client-go ``defaultBatchSize``)."""

_ADDED = DeltaType.ADDED
_UPDATED = DeltaType.UPDATED
_DELETED = DeltaType.DELETED
_REPLACED = DeltaType.REPLACED
_SYNC = DeltaType.SYNC

_BATCHABLE = frozenset({_SYNC, _REPLACED, _ADDED, _UPDATED, _DELETED})
"""Delta types :meth:`RealFIFO.pop_batch` may put in a batch (client-go ``batchable``)."""

_SLOW_DEPTH = 10
_SLOW_SECONDS = 0.1


@dataclasses.dataclass(frozen=True, slots=True)
class ReplacedAllInfo:
    """The object of a ``ReplacedAll`` delta (client-go ``ReplacedAllInfo``)."""

    resource_version: str
    """The resourceVersion given to the ``replace`` call."""
    objects: list[Any]
    """The listed objects, transformed already."""


@dataclasses.dataclass(frozen=True, slots=True)
class BookmarkInfo:
    """The object of a ``Bookmark`` delta (client-go ``BookmarkInfo``)."""

    resource_version: str


@dataclasses.dataclass(frozen=True, slots=True)
class SyncAllInfo:
    """The object of a ``SyncAll`` delta (client-go ``SyncAllInfo``): resync everything."""


_SYNC_ALL_INFO = SyncAllInfo()

ProcessFunc = Callable[[Deltas, bool], Any]
"""``process(deltas, is_in_initial_list)``: one delta, in a list (client-go ``PopProcessFunc``)."""
ProcessBatchFunc = Callable[[builtins.list[Delta], bool], Any]
"""``process_batch(deltas, is_in_initial_list)``: deltas of distinct keys, oldest first."""


def reconcile_replacement(
    queued: Iterable[Delta],
    known_objects: KeyListerGetter | None,
    new_items: Sequence[Any],
    key_of: Callable[[Any], str],
    on_delete: Callable[[DeletedFinalStateUnknown], None],
    on_replace: Callable[[Any], None],
) -> None:
    """Report what a relist means, deletions first (client-go ``reconcileReplacement``).

    For every queued key missing from ``new_items`` whose newest queued delta is not a
    deletion, ``on_delete`` gets a tombstone holding that newest object (in first-queued
    order); then for every ``known_objects`` key missing from both, a tombstone holding the
    known object (``None`` when the lookup fails or finds nothing, logged); then
    ``on_replace`` gets every object of ``new_items`` in order.

    Raises:
        KeyFuncError: a key cannot be computed (before anything is reported).
    """
    new_keys = {key_of(obj) for obj in new_items}
    last_for_key: dict[str, Delta] = {}
    for delta in queued:
        last_for_key[key_of(delta.object)] = delta  # dicts keep first-insertion order
    for key, last in last_for_key.items():
        if key in new_keys or last.type is _DELETED:
            continue
        on_delete(DeletedFinalStateUnknown(key, last.object))
    if known_objects is not None:
        for key in known_objects.list_keys():
            if key in new_keys or key in last_for_key:
                continue
            try:
                obj = known_objects.get_by_key(key)
            except Exception:
                logger.exception(
                    "error during lookup of %s, placing DeleteFinalStateUnknown marker "
                    "without object", key)
                obj = None
            else:
                if obj is None:
                    logger.error(
                        "key %s does not exist in known objects store, placing "
                        "DeleteFinalStateUnknown marker without object", key)
            on_delete(DeletedFinalStateUnknown(key, obj))
    for obj in new_items:
        on_replace(obj)


class RealFIFO:
    """A producer/consumer queue of every change, in arrival order (client-go ``RealFIFO``).

    Contract (client-go v0.36):

    * **Ordering.** Every ``add``/``update``/``delete`` is queued as one delta and popped
      alone, oldest first across all keys; nothing is merged, nothing jumps the line, and a
      delete is queued even for an object nobody knows.
    * **replace**, without ``atomic_events``: tombstones
      (:class:`~informers.keys.DeletedFinalStateUnknown`) for queued keys missing from the
      list (unless their newest delta is a delete) and for ``known_objects`` keys missing from
      it, then ``REPLACED`` for every listed object (:func:`reconcile_replacement`). With
      ``atomic_events``: one ``REPLACED_ALL`` delta holding a :class:`ReplacedAllInfo`; the
      consumer reconciles it against its own cache.
    * **resync**, without ``atomic_events``: ``SYNC`` with the known copy of every known key
      that has nothing queued; with it: one ``SYNC_ALL`` delta.
    * **bookmark(rv)** queues a ``BOOKMARK`` delta (:class:`BookmarkInfo`) when
      ``emit_delta_type_bookmark``, else does nothing. The reflector calls it for every watch
      bookmark, so the consumer can record the resourceVersion in order with the events.
    * **Transformer** runs once per incoming object when it is queued (for a relist, on
      every listed object); never on ``SYNC`` deltas or tombstones. Its exceptions reach the
      producer and nothing of that call is queued.
    * **Sync tracking.** :meth:`has_synced` is true once every delta queued up to the end of
      the first ``replace`` was popped and processed, or at once if ``add``/``update``/
      ``delete`` came first; it never turns false again.
    * **Thread safety.** Every method is thread-safe; there must be one consumer (one thread
      calling :meth:`pop`/:meth:`pop_batch`). Without ``unlock_while_processing`` the
      consumer's ``process`` runs under the queue lock (producers wait); with it, the lock is
      released while ``process`` runs, unless two full batches are queued already (client-go
      ``whileProcessing_locked``: keeps the queue from growing without bound). The lock is
      re-entrant.
    * **Direct hand-off** (``direct_handoff``, not in client-go): when ``add``/``update``/
      ``delete`` queues the only delta while the consumer waits in :meth:`pop` or
      :meth:`pop_batch`, the producer runs the consumer's ``process`` (for a batch consumer,
      its ``process_single``) itself, instead of waking the consumer thread; one delta is
      processed at a time either way and the order is the same. This saves a thread wake-up
      per event when the queue runs empty, which Python pays and Go does not.

    Args:
        key_func: computes the key of an object (default
            :func:`~informers.keys.meta_namespace_key_func`; client-go ``KeyFunction``).
        known_objects: the consumer's cache (``list_keys``/``get_by_key``); required without
            ``atomic_events``, forbidden with them (client-go ``NewRealFIFOWithOptions``).
        transformer: applied once to each incoming object (see above).
        atomic_events: one delta per relist and per resync (client-go ``AtomicEvents``).
        unlock_while_processing: release the lock while processing (requires
            ``atomic_events``; client-go ``UnlockWhileProcessing``).
        emit_delta_type_bookmark: queue bookmarks (requires ``atomic_events``; client-go
            ``EmitDeltaTypeBookmark``).
        batch_size: the most deltas one :meth:`pop_batch` takes (client-go ``batchSize``,
            default 1000).
        identifier: names the FIFO for metrics (:mod:`informers.fifo_metrics`); metrics are
            published only when its name is not empty.
        metrics_provider: where the metrics come from (default: the process-wide provider).
        direct_handoff: see above; default ``False``.
        initial_population_hook: told when the first ``replace`` starts, fails, or has had
            everything it queued processed (as for :class:`~informers.delta_fifo.DeltaFIFO`).

    Raises:
        ValueError: an invalid combination of options (where client-go panics).
    """

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key_func,
        known_objects: KeyListerGetter | None = None,
        transformer: TransformFunc | None = None,
        *,
        atomic_events: bool = False,
        unlock_while_processing: bool = False,
        emit_delta_type_bookmark: bool = False,
        batch_size: int = DEFAULT_BATCH_SIZE,
        identifier: InformerNameAndResource | None = None,
        metrics_provider: InformerMetricsProvider | None = None,
        direct_handoff: bool = False,
        initial_population_hook: InitialPopulationHook | None = None,
    ) -> None:
        if atomic_events:
            if known_objects is not None:
                raise ValueError("known_objects must not be provided when atomic_events is true")
        else:
            if unlock_while_processing:
                raise ValueError("unlock_while_processing requires atomic_events")
            if known_objects is None:
                raise ValueError("known_objects must be provided when atomic_events is false")
            if emit_delta_type_bookmark:
                raise ValueError("emit_delta_type_bookmark requires atomic_events")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self._key_func = key_func
        self._known = known_objects
        self._transformer = transformer
        self._atomic = atomic_events
        self._unlock = unlock_while_processing
        self._emit_bookmark = emit_delta_type_bookmark
        self.batch_size = batch_size
        self.name = identifier.name if identifier is not None and identifier.name else "RealFIFO"
        self._metrics = FIFOMetrics.for_identifier(identifier, metrics_provider)
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._items: deque[Delta] = deque()
        self._populated = False
        self._initial_population_count = 0
        self._synced = False
        self._synced_event = threading.Event()
        self._closed = False
        self._waiting = 0
        self._direct_handoff = direct_handoff
        self._idle: builtins.list[ProcessFunc] = []
        self._handing_off = False
        self._hook = initial_population_hook
        self._hook_started = False

    # -- keys ----------------------------------------------------------------------------------

    def key_of(self, obj: Any) -> str:
        """The key of an object, a tombstone (its ``key``), a :class:`Delta` or a ``Deltas``
        list (its newest object).

        Raises:
            KeyFuncError: no key can be computed (including for an empty ``Deltas``).
        """
        if obj.__class__ is dict:  # the common case: an object
            return call_key_func(self._key_func, obj)
        if isinstance(obj, list):
            if not obj:
                raise KeyFuncError("0 length Deltas object; can't get key", obj)
            obj = obj[-1]
        if isinstance(obj, Delta):
            obj = obj.object
        if isinstance(obj, DeletedFinalStateUnknown):
            return obj.key
        return call_key_func(self._key_func, obj)

    # -- producers -----------------------------------------------------------------------------

    def add(self, obj: Any) -> None:
        """Queue an ``ADDED`` delta (or hand it over: see the class docstring)."""
        self._event(_ADDED, obj)

    def update(self, obj: Any) -> None:
        """Queue an ``UPDATED`` delta (or hand it over)."""
        self._event(_UPDATED, obj)

    def delete(self, obj: Any) -> None:
        """Queue a ``DELETED`` delta, whether or not the object is known (or hand it over)."""
        self._event(_DELETED, obj)

    def _event(self, action: DeltaType, obj: Any) -> None:
        with self._lock:
            self._populated = True
            if not self._synced:
                self._check_synced_locked()
            delta = self._delta_locked(action, obj, transform=True)
            consumer = self._idle_consumer_locked()
            self._append_locked(delta, notify=consumer is None)
            if consumer is not None:
                self._hand_off_locked(consumer)

    def bookmark(self, resource_version: str) -> None:
        """Queue a ``BOOKMARK`` delta when ``emit_delta_type_bookmark``; else do nothing."""
        if not self._emit_bookmark:
            return
        with self._lock:
            self._append_locked(Delta(DeltaType.BOOKMARK, BookmarkInfo(resource_version)))

    def replace(self, objects: Iterable[Any], resource_version: str = "") -> None:
        """Queue a relist (see the class docstring). The first call arms :meth:`has_synced`.

        Raises:
            KeyFuncError: a key cannot be computed; nothing was queued.
        """
        objects = list(objects)
        with self._lock:
            hook = self._hook if not self._populated and not self._hook_started else None
            if hook is not None:
                hook.started()
            try:
                if self._atomic:
                    transform = self._transformer
                    if transform is not None:
                        objects = [transform(obj) for obj in objects]
                    self._append_locked(Delta(
                        DeltaType.REPLACED_ALL, ReplacedAllInfo(resource_version, objects)))
                else:
                    pending: builtins.list[Delta] = []
                    reconcile_replacement(
                        self._items, self._known, objects, self.key_of,
                        lambda tomb: pending.append(Delta(_DELETED, tomb)),
                        lambda obj: pending.append(
                            self._delta_locked(_REPLACED, obj, transform=True)),
                    )
                    for delta in pending:
                        self._append_locked(delta)
            except BaseException:
                if hook is not None:
                    hook.failed()
                raise
            if hook is not None:
                self._hook_started = True
            if not self._populated:
                self._populated = True
                self._initial_population_count = len(self._items)
                self._check_synced_locked()

    def resync(self) -> None:
        """Queue a resync: one ``SYNC_ALL`` delta with ``atomic_events``; else ``SYNC`` with the
        known copy of every known key that has nothing queued ("to avoid the race, in which
        the resync comes with the previous value of object", client-go)."""
        with self._lock:
            if self._atomic:
                self._append_locked(Delta(DeltaType.SYNC_ALL, _SYNC_ALL_INFO))
                return
            known = self._known
            if known is None:
                return
            queued = {self.key_of(delta.object) for delta in self._items}
            for key in known.list_keys():
                if key in queued:
                    continue
                try:
                    obj = known.get_by_key(key)
                except Exception:
                    logger.exception("%s: unable to queue object %s for sync", self.name, key)
                    continue
                if obj is None:
                    logger.error("%s: key %s does not exist in known objects store, unable "
                                 "to queue object for sync", self.name, key)
                    continue
                self._append_locked(Delta(_SYNC, obj))

    def _delta_locked(self, action: DeltaType, obj: Any, transform: bool) -> Delta:
        """A delta for ``obj``, its key checked and, unless a tombstone, the transformer
        applied (client-go ``addToItems_locked``)."""
        self.key_of(obj)
        transformer = self._transformer
        if transform and transformer is not None and (
                obj.__class__ is dict or not isinstance(obj, DeletedFinalStateUnknown)):
            obj = transformer(obj)
        return Delta(action, obj)

    def _append_locked(self, delta: Delta, notify: bool = True) -> None:
        items = self._items
        items.append(delta)
        if self._waiting and notify:
            self._cond.notify()
        metrics = self._metrics
        if metrics is not None:
            metrics.queued_items.set(len(items))

    # -- consumer ------------------------------------------------------------------------------

    def pop(self, process: Callable[[Deltas, bool], T]) -> T:
        """Wait for the oldest delta, remove it, and return ``process([delta],
        is_in_initial_list)``.

        ``is_in_initial_list`` is true until :meth:`has_synced`. If ``process`` raises, the
        exception propagates, the delta is not requeued and it counts as processed. Once
        :meth:`close` was called, what is queued is still popped; then
        :class:`~informers.errors.FIFOClosedError` is raised.

        Raises:
            FIFOClosedError: the queue is closed and empty.
        """
        with self._lock:
            self._wait_locked(process)
            return self._pop_one_locked(process)

    def pop_batch(
        self, process_batch: Callable[[builtins.list[Delta], bool], T],
        process_single: Callable[[Deltas, bool], T],
    ) -> T:
        """Pop as many deltas as can go together and return ``process_batch(deltas,
        is_in_initial_list)``, or ``process_single([delta], ...)`` for a batch of one
        (client-go ``PopBatch``).

        A batch holds at most ``batch_size`` deltas of batchable types (``ADDED``,
        ``UPDATED``, ``DELETED``, ``REPLACED``, ``SYNC``) with distinct keys, and never
        mixes the first relist's deltas with later ones. It ends before a second delta of a
        key and before an unbatchable delta (which, first in line, is popped alone); a delta
        whose key cannot be computed ends it, included.

        Raises:
            FIFOClosedError: the queue is closed and empty.
        """
        with self._lock:
            self._wait_locked(process_single)
            items = self._items
            is_in_initial_list = not self._synced
            limit = min(self.batch_size, len(items))
            if self._initial_population_count > 0:
                limit = min(limit, self._initial_population_count)
            batch: builtins.list[Delta] = []
            unique: set[str] = set()
            key_of = self.key_of
            while len(batch) < limit:
                delta = items[0]
                if delta.type not in _BATCHABLE:
                    if not batch:
                        batch.append(items.popleft())
                    break
                try:
                    key = key_of(delta.object)
                except KeyFuncError:
                    batch.append(items.popleft())
                    break
                if key in unique:
                    break
                unique.add(key)
                batch.append(items.popleft())
            if not batch:  # the initial population count was used up: take one
                batch.append(items.popleft())
            metrics = self._metrics
            if metrics is not None:
                metrics.queued_items.set(len(items))
            try:
                if len(batch) == 1:
                    return self._process_locked(process_single, batch, is_in_initial_list)
                return self._process_locked(process_batch, batch, is_in_initial_list)
            finally:
                self._processed_locked(len(batch))

    def _wait_locked(self, process: ProcessFunc) -> None:
        """Wait until a delta can be popped (lock held); registers ``process`` for a
        direct hand-off while waiting.

        Raises:
            FIFOClosedError: the queue is closed and empty.
        """
        while not self._items or self._handing_off:
            if self._closed and not self._items:
                raise FIFOClosedError()
            self._waiting += 1
            if self._direct_handoff:
                self._idle.append(process)
            try:
                self._cond.wait()
            finally:
                self._waiting -= 1
                if self._direct_handoff:
                    self._idle.remove(process)

    def _pop_one_locked(self, process: Callable[[Deltas, bool], T]) -> T:
        items = self._items
        is_in_initial_list = not self._synced
        delta = items.popleft()
        metrics = self._metrics
        if metrics is not None:
            metrics.queued_items.set(len(items))
        try:
            return self._process_locked(process, [delta], is_in_initial_list)
        finally:
            if self._initial_population_count:
                self._processed_locked(1)

    def _process_locked(
        self, process: Callable[[builtins.list[Delta], bool], T], deltas: builtins.list[Delta],
        is_in_initial_list: bool,
    ) -> T:
        """Run ``process(deltas, is_in_initial_list)``, without the lock when
        ``unlock_while_processing`` and fewer than two batches are queued (client-go
        ``whileProcessing_locked``); record its latency."""
        metrics = self._metrics
        depth = len(self._items)
        timed = metrics is not None or depth > _SLOW_DEPTH
        start = time.monotonic() if timed else 0.0
        unlock = self._unlock and depth < self.batch_size * 2
        if unlock:
            self._lock.release()
        try:
            return process(deltas, is_in_initial_list)
        finally:
            if unlock:
                self._lock.acquire()
            if timed:
                elapsed = time.monotonic() - start
                if metrics is not None:
                    metrics.processing_latency.observe(elapsed)
                if depth > _SLOW_DEPTH and elapsed > _SLOW_SECONDS:
                    logger.info("%s: processing took %.3fs with %d deltas queued (slow event "
                                "handlers blocking the queue)", self.name, elapsed, depth)

    def _processed_locked(self, count: int) -> None:
        """After processing ``count`` popped deltas: count them off the initial population
        (after, so :meth:`has_synced` never turns true while the last one is applied)."""
        if self._initial_population_count > 0:
            self._initial_population_count = max(0, self._initial_population_count - count)
            self._check_synced_locked()

    def _check_synced_locked(self) -> None:
        if self._synced or not self._populated or self._initial_population_count:
            return
        hook, self._hook = self._hook, None
        if hook is not None and self._hook_started:
            hook.processed()  # before has_synced() turns true
        self._synced = True
        self._synced_event.set()

    def _idle_consumer_locked(self) -> ProcessFunc | None:
        """The ``process`` of a consumer waiting on an empty queue; ``None`` without
        ``direct_handoff``, with deltas queued, or during a hand-off."""
        if not self._idle or self._items or self._handing_off:
            return None
        return self._idle[-1]

    def _hand_off_locked(self, process: ProcessFunc) -> None:
        """Pop the one queued delta and run the idle consumer's ``process`` on this thread.
        An exception is logged, not raised to the producer; the delta is dropped, as a
        consumer's failed ``process`` drops it."""
        self._handing_off = True
        try:
            self._pop_one_locked(process)
        except Exception:
            logger.exception("%s: processing a handed-over delta failed; it is dropped",
                             self.name)
        finally:
            self._handing_off = False
            if self._items and self._waiting:
                self._cond.notify()

    def close(self) -> None:
        """Close the queue: blocked and future pops raise once it is empty."""
        with self._lock:
            self._closed = True
            self._cond.notify_all()

    def is_closed(self) -> bool:
        with self._lock:
            return self._closed

    def has_synced(self) -> bool:
        """True once the first ``replace``'s deltas were all popped and processed, or if an
        ``add``/``update``/``delete`` came first; false before anything."""
        return self._synced

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Block until :meth:`has_synced` (client-go ``HasSyncedChecker().Done()``); returns
        whether it did within ``timeout`` seconds (``None``: no limit)."""
        return self._synced_event.wait(timeout)

    @property
    def transformer(self) -> TransformFunc | None:
        """The transform applied to incoming objects (client-go ``Transformer()``)."""
        return self._transformer

    # -- reads ---------------------------------------------------------------------------------

    def items(self) -> builtins.list[Delta]:
        """A copy of the queued deltas, oldest first."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
