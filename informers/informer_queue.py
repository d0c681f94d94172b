"""The queue between a shared informer's reflector and its cache, and the loop that drains it.

client-go v0.36 ``controller.go`` (``newQueueFIFO``, ``processLoop``) and
``shared_informer.go`` (``handleDeltas``, ``handleBatchDeltas``, ``OnAdd``/``OnUpdate``/
``OnDelete``). By default (:attr:`InformerQueue.REAL_FIFO`) a
:class:`~informers.real_fifo.RealFIFO` with the options client-go v0.36 turns on (feature gates
``InOrderInformers``, ``AtomicFIFO``, ``UnlockWhileProcessingFIFO``,
``InOrderInformersBatchProcess``): atomic events, bookmark deltas, no lock held while
processing, batch pops. :attr:`InformerQueue.DELTA_FIFO` keeps the classic
:class:`~informers.delta_fifo.DeltaFIFO` (Kubernetes before 1.33), which merges a key's
changes and pops keys in first-arrival order.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from typing import Any

from informers.delta_fifo import (
    Delta,
    DeltaFIFO,
    Deltas,
    DeltaType,
    InitialPopulationHook,
    TransformFunc,
)
from informers.errors import FIFOClosedError
from informers.fifo_metrics import InformerNameAndResource
from informers.indexer import Indexer
from informers.keys import KeyFunc, deletion_handling_meta_namespace_key_func
from informers.mutation_detector import CacheMutationDetector
from informers.object_codec import Encoded
from informers.process_deltas import process_deltas, process_deltas_in_batch
from informers.processor_listener import ADD, DELETE, UPDATE
from informers.real_fifo import RealFIFO
from informers.resource_version import ResourceVersionWaiter

__all__ = ["DeltaFIFOConsumer", "InformerQueue", "RealFIFOConsumer"]

logger = logging.getLogger(__name__)


class InformerQueue(str, enum.Enum):
    """Which queue a shared informer uses (client-go: the ``InOrderInformers`` gate)."""

    REAL_FIFO = "RealFIFO"
    """Every change in arrival order, relists and resyncs as one atomic step (client-go v0.36,
    Kubernetes 1.33+). The default."""
    DELTA_FIFO = "DeltaFIFO"
    """The classic queue (Kubernetes before 1.33): a key's changes are merged and keys pop in
    first-arrival order; a relist is applied one object at a time."""

    def __str__(self) -> str:
        return self.value


def _is_sync(old: Any, new: Any) -> bool:
    """Whether an update is a sync (client-go: equal resourceVersions). A compact cache's
    :class:`~informers.object_codec.Encoded` objects compare by their JSON, which holds the
    version (and costs no decode)."""
    if old.__class__ is Encoded or new.__class__ is Encoded:
        if old.__class__ is new.__class__:
            return bool(old.data == new.data)
        old = old.decode() if old.__class__ is Encoded else old
        new = new.decode() if new.__class__ is Encoded else new
    return bool(_rv(old) == _rv(new))


def _rv(obj: Any) -> Any:
    try:
        return obj["metadata"].get("resourceVersion")
    except Exception:
        return None


class RealFIFOConsumer:
    """Drains a shared informer's RealFIFO into its cache and hands notifications out.

    The informer's ``on_add``/``on_update``/``on_delete`` of client-go: every notification
    goes to the processor's ``distribute``; an update whose old and new resourceVersion are
    equal (a resync, or a relist of an unchanged object) is a sync update, delivered only to
    handlers whose resync is due. Processing runs under ``block_deltas`` (so a late handler's
    synthetic adds are never overtaken) and, after each pop, wakes the resourceVersion
    waiters.

    Args:
        indexer: the informer's cache (the only writer is this consumer).
        distribute: the shared processor's ``distribute(notification, is_sync)``.
        block_deltas: the informer's lock against concurrent handler registration.
        detector: the mutation detector, if enabled.
        waiter: woken after every pop.
        name: for logs.
        key_func: the cache's and the queue's key function (a compact informer's also keys
            :class:`~informers.object_codec.Encoded` objects).
    """

    def __init__(
        self,
        indexer: Indexer,
        distribute: Callable[[tuple[Any, Any, Any], bool], None],
        block_deltas: threading.RLock,
        detector: CacheMutationDetector | None,
        waiter: ResourceVersionWaiter,
        name: str,
        key_func: KeyFunc = deletion_handling_meta_namespace_key_func,
    ) -> None:
        self._key_func = key_func
        self._indexer = indexer
        self._distribute = distribute
        self._block = block_deltas
        self._detector = detector
        self._waiter = waiter
        self._name = name

    def new_fifo(
        self,
        transform: TransformFunc | None,
        hook: InitialPopulationHook | None,
        identifier: InformerNameAndResource | None,
    ) -> RealFIFO:
        """The RealFIFO client-go v0.36's ``newQueueFIFO`` makes, plus the direct hand-off."""
        return RealFIFO(
            self._key_func,
            transformer=transform,
            atomic_events=True,
            unlock_while_processing=True,
            emit_delta_type_bookmark=True,
            identifier=identifier,
            direct_handoff=True,
            initial_population_hook=hook,
        )

    # -- the handler process_deltas notifies ----------------------------------------------------

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if self._detector is not None and obj.__class__ is not Encoded:
            self._detector.add_object(obj)
        self._distribute((ADD, obj, is_in_initial_list), False)

    def on_update(self, old: Any, new: Any) -> None:
        if self._detector is not None and new.__class__ is not Encoded:
            self._detector.add_object(new)
        self._distribute((UPDATE, old, new), _is_sync(old, new))

    def on_delete(self, obj: Any) -> None:
        self._distribute((DELETE, obj, None), False)

    # -- processing -----------------------------------------------------------------------------

    def handle(self, deltas: Deltas, is_in_initial_list: bool) -> None:
        """client-go ``handleDeltas``: errors are logged, the deltas dropped. A lone add or
        update (a watch event) takes an inlined copy of :func:`process_deltas`'s path."""
        try:
            with self._block:
                delta_type, obj = deltas[0]
                if len(deltas) == 1 and delta_type in _STORED:
                    indexer = self._indexer
                    key = self._key_func(obj)
                    old = indexer.get_lazy_by_key(key)  # a compact cache's stays encoded
                    indexer.update(obj, key=key)
                    if self._detector is not None and obj.__class__ is not Encoded:
                        self._detector.add_object(obj)
                    if old is None:
                        self._distribute((ADD, obj, is_in_initial_list), False)
                    else:
                        self._distribute((UPDATE, old, obj), _is_sync(old, obj))
                else:
                    process_deltas(self, self._indexer, deltas, is_in_initial_list,
                                   self._key_func)
        except Exception:
            logger.exception("%s: failed to apply %s; it is dropped", self._name,
                             _describe(deltas))
        self._waiter.notify()

    def handle_batch(self, deltas: list[Delta], is_in_initial_list: bool) -> None:
        """client-go ``handleBatchDeltas``: every delta is attempted; errors are logged."""
        try:
            with self._block:
                process_deltas_in_batch(self, self._indexer, deltas, is_in_initial_list,
                                        self._key_func)
        except Exception:
            logger.exception("%s: failed to apply part of a batch of %d deltas", self._name,
                             len(deltas))
        self._waiter.notify()

    def loop(self, fifo: RealFIFO, halt: threading.Event) -> None:
        """Pop batches until ``halt`` is set or the FIFO is closed and empty (client-go
        ``processLoop`` with batch processing)."""
        pop_batch = fifo.pop_batch
        handle, handle_batch = self.handle, self.handle_batch
        while not halt.is_set():
            try:
                pop_batch(handle_batch, handle)
            except FIFOClosedError:
                return
            except Exception:  # handle and handle_batch log their own; this is a bug
                logger.exception("%s: the process loop failed", self._name)


class DeltaFIFOConsumer(RealFIFOConsumer):
    """Drains a shared informer's classic :class:`~informers.delta_fifo.DeltaFIFO` (client-go
    before v0.33 ``HandleDeltas``): one key's merged deltas per pop, applied under the FIFO's
    lock; the same arguments as :class:`RealFIFOConsumer`.

    A new object is stored under the FIFO's key string when it equals the object's own key
    (computed again: a transform may have changed it), so cache and queue share one string
    per object."""

    def new_fifo(  # type: ignore[override]
        self, known: Indexer, transform: TransformFunc | None,
        hook: InitialPopulationHook | None,
    ) -> DeltaFIFO:
        """The DeltaFIFO client-go's ``newQueueFIFO`` made before ``InOrderInformers``."""
        return DeltaFIFO(
            key_func=deletion_handling_meta_namespace_key_func,
            known_objects=known,
            emit_delta_type_replaced=True,
            transformer=transform,
            direct_handoff=True,
            initial_population_hook=hook,
        )

    def loop(self, fifo: DeltaFIFO, halt: threading.Event) -> None:  # type: ignore[override]
        """Pop and apply deltas until ``halt`` is set or the FIFO is closed and empty."""
        pop = fifo.pop_keyed
        handle = self.handle_keyed
        while not halt.is_set():
            try:
                pop(handle)
            except FIFOClosedError:
                return
            except Exception:
                logger.exception("%s: failed to apply deltas; they are dropped", self._name)

    def handle_keyed(self, key: str, deltas: Deltas, is_in_initial_list: bool) -> None:
        """Apply one key's deltas to the cache, then queue notifications."""
        indexer = self._indexer
        distribute = self._distribute
        detector = self._detector
        key_func = deletion_handling_meta_namespace_key_func
        with self._block:
            try:
                for delta_type, obj in deltas:
                    if delta_type is _DELETED:
                        indexer.delete(obj)
                        distribute((DELETE, obj, None), False)
                        continue
                    own = key_func(obj)
                    old = indexer.get_by_key(own)
                    indexer.update(obj, key=key if own == key else own)
                    if detector is not None:
                        detector.add_object(obj)
                    if old is None:
                        distribute((ADD, obj, is_in_initial_list), False)
                    else:
                        distribute((UPDATE, old, obj), _rv(old) == _rv(obj))
            except Exception:
                logger.exception(
                    "%s: failed to apply the deltas of %s; the rest of them are dropped",
                    self._name, key)
        self._waiter.notify()


_DELETED = DeltaType.DELETED
_STORED = frozenset({DeltaType.ADDED, DeltaType.UPDATED, DeltaType.REPLACED, DeltaType.SYNC})


def _describe(deltas: Deltas) -> str:
    if not deltas:
        return "no deltas"
    delta = deltas[-1]
    try:
        key = deletion_handling_meta_namespace_key_func(delta.object)
    except Exception:
        key = "<unknown key>"
    return f"a {delta.type} delta of {key}"
