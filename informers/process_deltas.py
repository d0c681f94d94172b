"""Applies what a FIFO pops to a cache and tells a handler (client-go ``processDeltas``).

client-go v0.36 ``tools/cache/controller.go``: ``processDeltas``, ``processReplacedAllInfo`` and
``processDeltasInBatch``, which the shared informer runs (``handleDeltas``,
``handleBatchDeltas``) on what its :class:`~informers.real_fifo.RealFIFO` pops. The cache is
written first, then the handler is called, so a handler reading the cache sees the change.

What a handler sees on a relist (a ``REPLACED_ALL`` delta, :func:`process_replaced_all_info`):
the cache is swapped for the listed objects in one step
(:meth:`~informers.indexer.Indexer.replace`, under the cache's lock: a reader sees the old set
or the new one, never a mix), then ``on_delete`` with a
:class:`~informers.keys.DeletedFinalStateUnknown` for every cached object missing from the list
(in the cache's key order), then, in list order, ``on_update(old, new)`` for every listed object
that was cached and ``on_add(new, is_in_initial_list)`` for every other one. On a resync
(``SYNC_ALL``): ``on_update(obj, obj)`` for every cached object. On a bookmark: no call; the
cache records the resourceVersion.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from informers.delta_fifo import Delta, DeltaType
from informers.errors import IndexFuncError
from informers.indexer import Indexer
from informers.keys import DeletedFinalStateUnknown, KeyFunc
from informers.real_fifo import BookmarkInfo, ReplacedAllInfo

__all__ = [
    "DeltaHandler",
    "process_deltas",
    "process_deltas_in_batch",
    "process_replaced_all_info",
]

logger = logging.getLogger(__name__)

_ADDED = DeltaType.ADDED
_UPDATED = DeltaType.UPDATED
_DELETED = DeltaType.DELETED
_REPLACED = DeltaType.REPLACED
_SYNC = DeltaType.SYNC
_REPLACED_ALL = DeltaType.REPLACED_ALL
_SYNC_ALL = DeltaType.SYNC_ALL
_BOOKMARK = DeltaType.BOOKMARK
_STORED = frozenset({_ADDED, _UPDATED, _REPLACED, _SYNC})


class DeltaHandler(Protocol):
    """What :func:`process_deltas` notifies (client-go ``ResourceEventHandler``)."""

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None: ...

    def on_update(self, old: Any, new: Any) -> None: ...

    def on_delete(self, obj: Any) -> None: ...


def process_deltas(
    handler: DeltaHandler,
    store: Indexer,
    deltas: Sequence[Delta],
    is_in_initial_list: bool,
    key_func: KeyFunc,
) -> None:
    """Apply ``deltas`` (oldest first) to ``store`` and notify ``handler`` after each write
    (client-go ``processDeltas``).

    ``ADDED``/``UPDATED``/``REPLACED``/``SYNC``: stored, then ``on_update(old, new)`` if the
    key was cached, else ``on_add``; ``DELETED``: removed, then ``on_delete`` (with the object
    as queued, possibly a tombstone); ``REPLACED_ALL``: :func:`process_replaced_all_info`;
    ``SYNC_ALL``: ``on_update(obj, obj)`` for every cached object; ``BOOKMARK``:
    ``store.bookmark(rv)``.

    Raises:
        TypeError: a ``REPLACED_ALL`` or ``BOOKMARK`` delta without its info object.
        KeyFuncError, IndexFuncError: from the store; the deltas after it are not applied.
    """
    for delta_type, obj in deltas:
        if delta_type in _STORED:  # the common case first
            key = key_func(obj)
            old = store.get_lazy_by_key(key)
            store.update(obj, key=key)
            if old is not None:
                handler.on_update(old, obj)
            else:
                handler.on_add(obj, is_in_initial_list)
        elif delta_type is _DELETED:
            store.delete(obj)
            handler.on_delete(obj)
        elif delta_type is _REPLACED_ALL:
            if not isinstance(obj, ReplacedAllInfo):
                raise TypeError(f"ReplacedAll did not contain ReplacedAllInfo: {type(obj)}")
            process_replaced_all_info(handler, obj, store, is_in_initial_list, key_func)
        elif delta_type is _SYNC_ALL:
            for cached in store.list_lazy():
                handler.on_update(cached, cached)
            return
        elif delta_type is _BOOKMARK:
            if not isinstance(obj, BookmarkInfo):
                raise TypeError(f"bookmark delta did not contain BookmarkInfo: {type(obj)}")
            store.bookmark(obj.resource_version)


def process_deltas_in_batch(
    handler: DeltaHandler,
    store: Indexer,
    deltas: Sequence[Delta],
    is_in_initial_list: bool,
    key_func: KeyFunc,
) -> None:
    """Apply a batch of deltas of distinct keys (client-go ``processDeltasInBatch``): each
    delta in turn, as :func:`process_deltas`; every delta is attempted and only those applied
    are notified.

    Raises:
        RuntimeError: some failed: "failed to apply (failed/total) deltas of the batch", its
            cause the first failure.
    """
    first: Exception | None = None
    failed = 0
    for delta in deltas:
        try:
            process_deltas(handler, store, (delta,), is_in_initial_list, key_func)
        except Exception as err:
            failed += 1
            if first is None:
                first = err
    if first is not None:
        raise RuntimeError(
            f"failed to apply ({failed}/{len(deltas)}) deltas of the batch: {first}"
        ) from first


def process_replaced_all_info(
    handler: DeltaHandler,
    info: ReplacedAllInfo,
    store: Indexer,
    is_in_initial_list: bool,
    key_func: KeyFunc,
) -> None:
    """Swap ``store`` for a relist and notify ``handler`` (client-go
    ``processReplacedAllInfo``; the order is in the module docstring).

    A listed object whose key or index values cannot be computed is left out (logged with
    its key), as it would be from the stream of a classic queue; the rest are applied
    (client-go's store panics instead).
    """
    keys, objects = _keyed(info.objects, key_func)
    deletions, replacements = _reconcile(store, keys, objects)
    try:
        store.replace(objects, info.resource_version, keys=keys)
    except IndexFuncError:
        keys, objects = _indexable(store, keys, objects)
        deletions, replacements = _reconcile(store, keys, objects)
        store.replace(objects, info.resource_version, keys=keys)
    for tombstone in deletions:
        handler.on_delete(tombstone)
    for old, new in replacements:
        if old is not None:
            handler.on_update(old, new)
        else:
            handler.on_add(new, is_in_initial_list)


def _keyed(objects: list[Any], key_func: KeyFunc) -> tuple[list[str], list[Any]]:
    """The keys of ``objects`` and the objects that have one (the others logged)."""
    try:
        return [key_func(obj) for obj in objects], objects
    except Exception:
        pass
    keys, kept = [], []
    for obj in objects:
        try:
            keys.append(key_func(obj))
        except Exception as err:
            logger.error("relist: leaving out an object whose key cannot be computed: %s", err)
            continue
        kept.append(obj)
    return keys, kept


def _indexable(store: Indexer, keys: list[str], objects: list[Any]) -> tuple[list[str], list[Any]]:
    """The keys and objects every index function of ``store`` accepts (the others logged)."""
    indexers = store.get_indexers()
    good_keys, good = [], []
    for key, obj in zip(keys, objects, strict=True):
        try:
            for fn in indexers.values():
                fn(obj)
        except Exception as err:
            logger.error("relist: leaving out %s, whose index values cannot be computed: %s",
                         key, err)
            continue
        good_keys.append(key)
        good.append(obj)
    return good_keys, good


def _reconcile(
    store: Indexer, keys: list[str], objects: list[Any]
) -> tuple[list[DeletedFinalStateUnknown], list[tuple[Any, Any]]]:
    """reconcile_replacement with nothing queued, each key computed once: the tombstones of
    cached keys not listed (cache order), and (old or None, new) per listed object."""
    if not len(store):
        return [], [(None, obj) for obj in objects]
    listed = set(keys)
    get = store.get_lazy_by_key
    deletions = [DeletedFinalStateUnknown(key, get(key))
                 for key in store.list_keys() if key not in listed]
    return deletions, [(get(key), obj) for key, obj in zip(keys, objects, strict=True)]
