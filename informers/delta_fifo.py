"""Queues, per object key, the list of changes not yet processed (client-go ``DeltaFIFO``).

The reflector is the producer (``add``/``update``/``delete`` for watch events, ``replace``
for a list, ``resync`` on its timer); the informer is the single consumer (``pop``), which
applies each key's deltas to its cache (the ``known_objects`` indexer) and notifies handlers.
Semantics are client-go v0.32's classic DeltaFIFO (``tools/cache/delta_fifo.go``), with the
``has_synced`` counting of RealFIFO (the counter drops after ``process`` returns).
"""

from __future__ import annotations

import builtins
import enum
import logging
import threading
from collections import deque
from collections.abc import Callable, Container, Iterable
from typing import Any, NamedTuple, Protocol, TypeVar

from informers.errors import FIFOClosedError, KeyFuncError
from informers.keys import DeletedFinalStateUnknown, KeyFunc, call_key_func, meta_namespace_key_func

__all__ = [
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "InitialPopulationHook",
    "KeyListerGetter",
    "TransformFunc",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class DeltaType(str, enum.Enum):
    """The kind of change a :class:`Delta` records (client-go ``DeltaType``; equals its str)."""

    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    REPLACED = "Replaced"
    """A relist found the object (only with ``emit_delta_type_replaced=True``; else ``SYNC``)."""
    SYNC = "Sync"
    """A periodic resync, or a relist with ``emit_delta_type_replaced=False``."""
    REPLACED_ALL = "ReplacedAll"
    """A whole relist as one delta (a :class:`~informers.real_fifo.RealFIFO` with atomic events;
    its object is a :class:`~informers.real_fifo.ReplacedAllInfo`)."""
    SYNC_ALL = "SyncAll"
    """A whole resync as one delta (a RealFIFO with atomic events)."""
    BOOKMARK = "Bookmark"
    """A watch bookmark (a RealFIFO with ``emit_delta_type_bookmark``; its object is a
    :class:`~informers.real_fifo.BookmarkInfo`)."""

    def __str__(self) -> str:
        return self.value


class Delta(NamedTuple):
    """One change: its type and the object after it (for ``DELETED``, the final state or a
    :class:`~informers.keys.DeletedFinalStateUnknown`)."""

    type: DeltaType
    object: Any


Deltas = list[Delta]


class InitialPopulationHook(Protocol):
    """Told about the first ``replace`` of a :class:`DeltaFIFO` and its processing (the
    informer's opt-in memory tuning, :class:`informers.memory.InitialSyncGC`, is one).

    Every method runs under the FIFO's lock, so nothing observes ``has_synced()`` in between.
    """

    def started(self) -> None:
        """The first ``replace`` is about to queue its items."""

    def processed(self) -> None:
        """The first ``replace``'s last item was processed (or it queued none);
        ``has_synced()`` turns true right after."""

    def failed(self) -> None:
        """The first ``replace`` raised; the next ``replace`` is the first again."""
"""Changes of one key, oldest first."""

TransformFunc = Callable[[Any], Any]
"""Rewrites an object once, when it enters the queue (client-go ``TransformFunc``)."""


class KeyListerGetter(Protocol):
    """What ``known_objects`` must offer (client-go ``KeyListerGetter``); an Indexer fits."""

    def list_keys(self) -> list[str]: ...

    def get_by_key(self, key: str) -> Any | None: ...


_ADDED = DeltaType.ADDED
_UPDATED = DeltaType.UPDATED
_DELETED = DeltaType.DELETED
_REPLACED = DeltaType.REPLACED
_SYNC = DeltaType.SYNC


class DeltaFIFO:
    """A producer/consumer queue of per-key deltas, in first-arrival key order.

    Contract (client-go v0.32 ``DeltaFIFO``):

    * **Ordering.** Keys pop in the order they were first queued; a change to an already
      queued key is appended to that key's deltas without moving it (no line jumping).
      ``pop`` hands over all of a key's deltas at once, oldest first.
    * **Coalescing.** Only two consecutive ``DELETED`` deltas collapse, keeping the one with
      more information (the real object over a tombstone). Nothing else is merged.
    * **Deletes of unknown objects** (not queued, and absent from ``known_objects``) are dropped.
    * **replace** queues ``REPLACED`` (or ``SYNC``) for every listed object, even one with a
      pending delete (kubernetes issue #83810), then a ``DELETED`` tombstone
      (:class:`~informers.keys.DeletedFinalStateUnknown`) for every queued key missing from
      the list (holding the newest queued object) and for every ``known_objects`` key missing
      from the list that has nothing queued (holding the known copy). Tombstones are queued
      in queue order, then in ``known_objects.list_keys()`` order.
    * **resync** queues ``SYNC`` with the known copy only for keys with nothing queued, so a
      stale cached copy never overtakes a newer queued event.
    * **Transformer** runs exactly once per object, when an ``ADDED``/``UPDATED``/``DELETED``/
      ``REPLACED`` delta (including a relist's ``SYNC``) is queued; never for resync ``SYNC``
      deltas or tombstones, whose objects were transformed already.
    * **Thread safety.** All methods are thread-safe. ``pop`` runs ``process`` while holding
      the queue lock, so that the consumer's cache update and this queue's view of it stay
      consistent for a concurrent ``replace``/``resync``; producers block meanwhile. The lock
      is re-entrant: ``process`` may call back into this FIFO from the same thread.
    * **Sync tracking.** :meth:`has_synced` is true once the first ``replace``'s items
      (unique keys plus the tombstones it queued) have all been popped *and processed*, or
      at once if ``add``/``update``/``delete`` came before any ``replace``.
    * **Memory.** A relisted dict whose key has nothing else queued is held alone, its one
      ``Delta`` and ``Deltas`` list made only when it is popped or read, and a first
      ``replace`` builds no set of its keys: queueing a list costs little more than its key
      strings and the map. :meth:`pop_keyed` hands the key strings over, so a consumer can
      keep them instead of making its own.

    Args:
        key_func: computes the key of an object (default
            :func:`~informers.keys.meta_namespace_key_func`). Tombstones and ``Deltas`` are
            keyed by this queue itself.
        known_objects: the consumer's cache (anything with ``list_keys()`` and
            ``get_by_key(key)``, such as :class:`~informers.indexer.Indexer`), used to decide
            deletes and to make resync/replace tombstones. ``None``: resync does nothing.
        emit_delta_type_replaced: queue ``REPLACED`` instead of ``SYNC`` on ``replace``
            (client-go default ``False``; informers set ``True``).
        transformer: optional function applied once to each incoming object (see above).
            Its exceptions propagate to the producer and nothing is queued.
        direct_handoff: when ``add``/``update``/``delete`` queues the only item while a
            consumer waits in :meth:`pop`, run that consumer's ``process`` on the producer's
            thread, under the lock, instead of waking the consumer (which keeps waiting).
            Order, sync tracking and the one-at-a-time guarantee are unchanged; only the
            thread differs, and it saves a thread wake-up per item when the queue runs empty
            (a fraction of a millisecond on a busy machine). Not in client-go, whose
            goroutine hand-off costs nothing. Default ``False``.
        initial_population_hook: told when the first ``replace`` starts, fails, or has had
            its last item processed (see :class:`InitialPopulationHook`). Default none.
    """

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key_func,
        known_objects: KeyListerGetter | None = None,
        emit_delta_type_replaced: bool = False,
        transformer: TransformFunc | None = None,
        direct_handoff: bool = False,
        initial_population_hook: InitialPopulationHook | None = None,
    ) -> None:
        self._key_func = key_func
        self._known = known_objects
        self._emit_replaced = emit_delta_type_replaced
        self._transformer = transformer
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        # items holds exactly the keys of queue, each with its deltas (see _deltas_of): a
        # non-empty Deltas list or, for a key whose one delta is a replace's (action _listed)
        # of a dict, that dict alone.
        self._listed = _REPLACED if emit_delta_type_replaced else _SYNC
        self._items: dict[str, Any] = {}
        self._queue: deque[str] = deque()
        self._populated = False
        self._initial_population_count = 0
        self._closed = False
        self._waiting = 0  # pops blocked in wait(): notify only when someone listens
        self._direct_handoff = direct_handoff
        # With direct_handoff: the process functions of the pops blocked in wait().
        self._idle_processes: builtins.list[Callable[[str, Deltas, bool], Any]] = []
        self._handing_off = False
        self._initial_hook = initial_population_hook

    # -- keys ----------------------------------------------------------------------------------

    def key_of(self, obj: Any) -> str:
        """The queue key of an object, a tombstone (its ``key``) or a ``Deltas`` (newest object).

        Raises:
            KeyFuncError: no key can be computed (including for an empty ``Deltas``).
        """
        if isinstance(obj, list):
            if not obj:
                raise KeyFuncError("0 length Deltas object; can't get key", obj)
            if isinstance(obj[-1], Delta):
                obj = obj[-1].object
        if isinstance(obj, DeletedFinalStateUnknown):
            return obj.key
        return call_key_func(self._key_func, obj)

    # -- producers -----------------------------------------------------------------------------

    def add(self, obj: Any) -> None:
        """Queue an ``ADDED`` delta (or hand it over: see ``direct_handoff``)."""
        key = self.key_of(obj)
        with self._lock:
            self._populated = True
            consumer = self._idle_consumer_locked()
            self._queue_locked(_ADDED, obj, key, transform=True, notify=consumer is None)
            if consumer is not None:
                self._hand_off_locked(consumer)

    def update(self, obj: Any) -> None:
        """Queue an ``UPDATED`` delta (or hand it over: see ``direct_handoff``)."""
        key = self.key_of(obj)
        with self._lock:
            self._populated = True
            consumer = self._idle_consumer_locked()
            self._queue_locked(_UPDATED, obj, key, transform=True, notify=consumer is None)
            if consumer is not None:
                self._hand_off_locked(consumer)

    def delete(self, obj: Any) -> None:
        """Queue a ``DELETED`` delta, unless the key is neither queued nor known.

        A delete of an object that is not queued and not in ``known_objects`` (or, without
        ``known_objects``, not queued) is dropped: "Presumably, this was deleted when a relist
        happened. Don't provide a second report of the same deletion." (client-go).
        """
        key = self.key_of(obj)
        with self._lock:
            self._populated = True
            if key not in self._items and not self._known_has(key):
                return
            consumer = self._idle_consumer_locked()
            self._queue_locked(_DELETED, obj, key, transform=True, notify=consumer is None)
            if consumer is not None:
                self._hand_off_locked(consumer)

    def replace(self, objects: Iterable[Any], resource_version: str = "") -> None:
        """Queue a relist: the listed objects, then tombstones for everything that vanished.

        ``resource_version`` is ignored, as in client-go. The first call arms
        :meth:`has_synced`. Every object's key is computed before anything is queued, so a bad
        object raises :class:`KeyFuncError` with the queue unchanged.
        """
        hook = self._initial_hook
        if hook is None:
            self._replace(objects)
            return
        with self._lock:  # nobody sees has_synced() between the replace and the hook
            hook.started()
            try:
                self._replace(objects)
            except BaseException:
                hook.failed()
                raise
            if self._initial_population_count == 0:  # an empty list: nothing to process
                self._initial_hook = None
                hook.processed()

    def _replace(self, objects: Iterable[Any]) -> None:
        objects = list(objects)
        # The keys first, in a list of their own (no (key, object) pair per object); the
        # strings are the ones pop_keyed hands over, which an informer keeps for its cache.
        listed = [self.key_of(obj) for obj in objects]
        action = self._listed
        with self._lock:
            # Nothing queued before: the queued keys are then exactly the listed ones, and the
            # queue's own map serves as their set (no set of 10,000 keys for a first list).
            fresh = not self._items
            for key, obj in zip(listed, objects, strict=True):
                self._queue_locked(action, obj, key, transform=True)
            keys: Container[str] = self._items
            unique = len(self._items)
            if not fresh:
                keys = distinct = set(listed)
                unique = len(distinct)
            del listed, objects

            queued_deletions = 0
            for key, value in () if fresh else list(self._items.items()):
                if key in keys:
                    continue
                newest = value[-1].object if value.__class__ is list else value
                if isinstance(newest, DeletedFinalStateUnknown):
                    newest = newest.obj
                queued_deletions += 1
                self._queue_locked(
                    _DELETED, DeletedFinalStateUnknown(key, newest), key, transform=False
                )

            known = self._known
            if known is not None:
                for key in known.list_keys():
                    if key in keys or key in self._items:
                        continue
                    try:
                        last = known.get_by_key(key)
                    except Exception:
                        logger.exception(
                            "DeltaFIFO: lookup of key %s in known objects failed; "
                            "placing a DeletedFinalStateUnknown marker without object",
                            key,
                        )
                        last = None
                    if last is None:
                        logger.info(
                            "DeltaFIFO: key %s does not exist in known objects; placing a "
                            "DeletedFinalStateUnknown marker without object",
                            key,
                        )
                    queued_deletions += 1
                    self._queue_locked(
                        _DELETED, DeletedFinalStateUnknown(key, last), key, transform=False
                    )

            if not self._populated:
                self._populated = True
                self._initial_population_count = unique + queued_deletions

    def resync(self) -> None:
        """Queue ``SYNC`` with the known copy for every known key that has nothing queued.

        No-op without ``known_objects``. Keys with pending deltas are skipped: the known copy
        is older than what is queued ("to avoid the race, in which the resync comes with the
        previous value of object", client-go ``TestDeltaFIFO_UpdateResyncRace``).
        """
        known = self._known
        if known is None:
            return
        with self._lock:
            for k in known.list_keys():
                try:
                    obj = known.get_by_key(k)
                except Exception:
                    logger.exception("DeltaFIFO: lookup of key %s failed; not queued for sync", k)
                    continue
                if obj is None:
                    logger.info("DeltaFIFO: key %s does not exist in known objects; not synced", k)
                    continue
                key = self.key_of(obj)
                if key in self._items:
                    continue
                self._queue_locked(_SYNC, obj, key, transform=False)

    def _deltas_of(self, value: Any) -> Deltas:
        """The deltas an ``_items`` value stands for (a new list for a lone relisted object)."""
        if value.__class__ is list:
            return value
        return [Delta(self._listed, value)]

    def _known_has(self, key: str) -> bool:
        known = self._known
        if known is None:
            return False
        try:
            return known.get_by_key(key) is not None
        except Exception:
            logger.exception("DeltaFIFO: lookup of key %s failed; queueing the delete", key)
            return True  # client-go queues the delete when the lookup errs

    def _queue_locked(
        self, action: DeltaType, obj: Any, key: str, transform: bool, notify: bool = True
    ) -> None:
        """Append one delta for ``key`` (lock held), deduplicating consecutive deletes; wake a
        waiting consumer unless ``notify`` is false."""
        if transform and self._transformer is not None and not isinstance(
            obj, DeletedFinalStateUnknown
        ):
            obj = self._transformer(obj)
        items = self._items
        deltas = items.get(key)
        if deltas is None:
            if action is self._listed and obj.__class__ is dict:
                items[key] = obj  # the one delta of a relisted object (see __init__)
            else:
                items[key] = [Delta(action, obj)]
            self._queue.append(key)
            if self._waiting and notify:
                self._cond.notify()
            return
        if deltas.__class__ is not list:
            deltas = items[key] = [Delta(self._listed, deltas)]
        if action is _DELETED:
            last = deltas[-1]
            if last.type is _DELETED:
                # Keep the one with more information: the older, unless it is a tombstone.
                if isinstance(last.object, DeletedFinalStateUnknown):
                    deltas[-1] = Delta(action, obj)
                return
        deltas.append(Delta(action, obj))

    # -- consumer ------------------------------------------------------------------------------

    def pop(self, process: Callable[[Deltas, bool], T]) -> T:
        """Wait for the oldest key, remove it, and return ``process(deltas, is_in_initial_list)``.

        ``process`` runs while the queue lock is held (see the class docstring), so it must be
        quick and must not wait for another thread that uses this queue. The deltas are handed
        over, not copied. ``is_in_initial_list`` is true while the FIFO has not synced, which
        is exactly for the items of the first ``replace`` (and its tombstones): nothing else
        can be queued ahead of them. If ``process`` raises, the exception propagates to the
        caller, the item is not requeued, and it still counts as popped for :meth:`has_synced`.
        Once :meth:`close` was called, remaining items are still popped; then
        :class:`~informers.errors.FIFOClosedError` is raised.

        Raises:
            FIFOClosedError: the queue is closed and empty.
        """
        return self.pop_keyed(lambda _, deltas, initial: process(deltas, initial))

    def pop_keyed(self, process: Callable[[str, Deltas, bool], T]) -> T:
        """:meth:`pop`, with the key handed over as well:
        ``process(key, deltas, is_in_initial_list)``.

        ``key`` is the string object this queue computed when the key was first queued (for
        the objects of a ``replace``, before any of its deltas were created). An informer
        stores its objects under it, so one string per key serves the queue and the cache.

        Raises:
            FIFOClosedError: the queue is closed and empty.
        """
        with self._lock:
            queue = self._queue
            while not queue:
                if self._closed:
                    raise FIFOClosedError()
                self._waiting += 1
                if self._direct_handoff:
                    self._idle_processes.append(process)
                try:
                    self._cond.wait()
                finally:
                    self._waiting -= 1
                    if self._direct_handoff:
                        self._idle_processes.remove(process)
            return self._pop_locked(process)

    def _pop_locked(self, process: Callable[[str, Deltas, bool], T]) -> T:
        """Remove the oldest key and return ``process(key, deltas, is_in_initial_list)``
        (lock held, queue not empty)."""
        queue = self._queue
        is_in_initial_list = not (self._populated and self._initial_population_count == 0)
        key = queue.popleft()
        deltas = self._deltas_of(self._items.pop(key))
        if not queue:
            # A dict never shrinks as keys are deleted: after a list of 10,000 objects the
            # empty map would keep a ~200 KB table until the next burst. clear() frees it.
            self._items.clear()
        try:
            return process(key, deltas, is_in_initial_list)
        finally:
            # After process, so has_synced never turns true while the last initial item
            # is still being applied (client-go RealFIFO.Pop).
            if self._initial_population_count > 0:
                if self._initial_population_count == 1 and self._initial_hook is not None:
                    hook, self._initial_hook = self._initial_hook, None
                    hook.processed()
                self._initial_population_count -= 1

    def _idle_consumer_locked(self) -> Callable[[str, Deltas, bool], Any] | None:
        """The ``process`` of a consumer waiting on an empty queue, to run in its place; None
        without ``direct_handoff``, with items queued, or during a hand-off (a ``process``
        that queues gets its item popped by the consumer, not recursively)."""
        if not self._idle_processes or self._queue or self._handing_off:
            return None
        return self._idle_processes[-1]

    def _hand_off_locked(self, process: Callable[[str, Deltas, bool], Any]) -> None:
        """Pop the one queued key and run the idle consumer's ``process`` on this thread. An
        exception is logged, not raised to the producer; the deltas are dropped, as a
        consumer's failed ``process`` drops them."""
        if not self._queue:
            return
        self._handing_off = True
        try:
            self._pop_locked(process)
        except Exception:
            logger.exception("DeltaFIFO: processing a handed-over item failed; it is dropped")
        finally:
            self._handing_off = False

    def close(self) -> None:
        """Close the queue: blocked and future pops raise once it is empty."""
        with self._lock:
            self._closed = True
            self._cond.notify_all()

    def is_closed(self) -> bool:
        with self._lock:
            return self._closed

    def has_synced(self) -> bool:
        """True once the first ``replace``'s items were all popped and processed, or if an
        ``add``/``update``/``delete`` came before any ``replace``; false before anything."""
        with self._lock:
            return self._populated and self._initial_population_count == 0

    # -- reads ---------------------------------------------------------------------------------

    def list_keys(self) -> builtins.list[str]:
        """Queued keys, in pop order."""
        with self._lock:
            return list(self._queue)

    def list(self) -> builtins.list[Any]:
        """The newest queued object of every key, in pop order (client-go v0.32 ``List``)."""
        with self._lock:
            items = self._items
            return [self._deltas_of(items[k])[-1].object for k in self._queue]

    def get(self, obj: Any) -> Deltas | None:
        """A copy of the deltas queued under ``obj``'s key, or ``None``."""
        return self.get_by_key(self.key_of(obj))

    def get_by_key(self, key: str) -> Deltas | None:
        """A copy of the deltas queued under ``key``, or ``None``."""
        with self._lock:
            deltas = self._items.get(key)
            return list(self._deltas_of(deltas)) if deltas is not None else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)
