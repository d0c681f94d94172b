"""Stores objects by key and keeps secondary indices over them (client-go ``Indexer``).

This is the informer's cache: the one writer (the informer's pop loop) adds, updates and
deletes; listers and controllers read. It combines client-go's ``cache`` (``store.go``) and
``threadSafeMap``/``storeIndex`` (``thread_safe_store.go``).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable
from typing import Any, Generic

from informers.errors import (
    IndexConflictError,
    IndexFuncError,
    IndexNotFoundError,
)
from informers.keys import (
    Indexers,
    IndexFunc,
    KeyFunc,
    call_key_func,
    deletion_handling_meta_namespace_key_func,
)
from informers.object_codec import Encoded, ObjectCodec
from informers.object_type import ObjectT

__all__ = ["Indexer"]


class _Index:
    """One named index: value -> set of the keys indexed under it."""

    __slots__ = ("fn", "name", "values")

    def __init__(self, name: str, fn: IndexFunc) -> None:
        self.name = name
        self.fn = fn
        self.values: dict[str, set[str]] = {}

    def add(self, key: str, new: Iterable[str]) -> None:
        values = self.values
        for v in new:
            keys = values.get(v)
            if keys is None:
                values[v] = {key}
            else:
                keys.add(key)

    def remove(self, key: str, old: Iterable[str]) -> None:
        values = self.values
        for v in old:
            keys = values.get(v)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del values[v]  # no empty sets left behind (kubernetes issue #84959)

    def move(self, key: str, old: list[str], new: list[str]) -> None:
        """Re-index ``key`` from values ``old`` to values ``new``."""
        if len(old) == 1 and len(new) == 1:
            self.remove(key, old)
            self.add(key, new)
            return
        old_set, new_set = set(old), set(new)
        self.remove(key, old_set - new_set)
        self.add(key, new_set - old_set)


_Values = list[list[str]]  # one object's values, one list per index, in index order

_Packed = Any
"""How an object's :data:`_Values` are remembered (:func:`_pack`): ``str | _Values``."""


def _rv_of(obj: Any) -> str | None:
    """``metadata.resourceVersion`` of an object with metadata (``""`` when unset); ``None``
    for anything else, which leaves the store's resourceVersion alone (client-go
    ``rvFromObject`` fails on non-meta objects)."""
    if obj.__class__ is dict:
        meta = obj.get("metadata")
        if meta.__class__ is dict:
            rv = meta.get("resourceVersion", "")
            return rv if rv.__class__ is str else str(rv)
    elif obj.__class__ is Encoded:
        return str(obj.rv)
    return None


def _pack(values: _Values) -> _Packed:
    """``values`` in the form remembered per key: the value itself when there is one index
    and it gave exactly one ``str`` (the namespace index: usually the very string held in the
    object's metadata, so nothing is allocated per key); else ``values`` as it is.

    Equal values always pack to equal forms, so packed forms compare like the values. With
    the namespace index alone this saves the two small lists per key the values would take
    (about 0.2 KB per cached object).
    """
    if len(values) == 1:
        only = values[0]
        if len(only) == 1 and only[0].__class__ is str:
            return only[0]
    return values


def _unpack(packed: _Packed) -> _Values:
    """The values :func:`_pack` packed (new lists for a packed ``str``)."""
    if packed.__class__ is list:
        return packed
    return [[packed]]


def _index_error(indexes: tuple[_Index, ...], key: str, obj: Any) -> Exception:
    """The error for an index function that raised on ``obj``: find and name that index."""
    for idx in indexes:
        try:
            _as_values(idx.fn(obj), key, idx.name)
        except IndexFuncError as err:
            return err
        except Exception as err:
            wrapped = IndexFuncError(
                f"unable to calculate an index entry for key {key!r} on index "
                f"{idx.name!r}: {err}"
            )
            wrapped.__cause__ = err
            return wrapped
    return IndexFuncError(f"unable to calculate an index entry for key {key!r}")


def _as_values(values: Any, key: str, index_name: str) -> list[str]:
    """Accept a list (as is) or another non-string iterable (copied into a list)."""
    if values.__class__ is list:
        return values
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise IndexFuncError(
            f"unable to calculate an index entry for key {key!r} on index {index_name!r}: "
            f"the index function returned {type(values).__name__}, expected a list of str"
        )
    return list(values)


def _compute(indexes: tuple[_Index, ...], key: str, obj: Any) -> _Values:
    """The values of ``obj`` for every index, in ``indexes`` order; nothing is changed."""
    try:
        out = [idx.fn(obj) for idx in indexes]
    except Exception:
        raise _index_error(indexes, key, obj)  # noqa: B904 - it carries its own cause
    for values in out:
        if values.__class__ is not list:
            return [_as_values(v, key, idx.name) for idx, v in zip(indexes, out, strict=True)]
    return out


def _build(
    indexes: tuple[_Index, ...], items: dict[str, Any]
) -> tuple[tuple[_Index, ...], dict[str, _Packed]]:
    """Fresh, filled copies of ``indexes`` over ``items``, with every key's packed values."""
    fresh = tuple(_Index(i.name, i.fn) for i in indexes)
    key_values: dict[str, _Packed] = {}
    if not fresh:
        return fresh, key_values
    fns = [idx.fn for idx in fresh]
    value_maps = [idx.values for idx in fresh]
    for key, obj in items.items():  # inlined _compute and _Index.add: replace is O(n)
        try:
            values = [fn(obj) for fn in fns]
        except Exception:
            raise _index_error(fresh, key, obj)  # noqa: B904 - it carries its own cause
        for new in values:
            if new.__class__ is not list:
                values = _compute(fresh, key, obj)
                break
        key_values[key] = _pack(values)
        for value_map, new in zip(value_maps, values, strict=True):
            for v in new:
                keys = value_map.get(v)
                if keys is None:
                    value_map[v] = {key}
                else:
                    keys.add(key)
    return fresh, key_values


class Indexer(Generic[ObjectT]):
    """A thread-safe key -> object store with named secondary indices.

    Generic over the objects' static type (``Indexer[Pod]``; default ``dict[str, Any]``,
    :mod:`informers.object_type`); nothing checks it at run time.

    Contract:

    * **Thread safety.** Every method may be called from any thread. One lock guards the
      state; keys and index values are computed outside it, so the critical sections are
      dict and set operations only. Index and key functions must be pure functions of
      the object (they may run concurrently, on any thread, and occasionally under the
      lock), so they must not call back into this indexer.
    * **Shared objects.** Stored objects are returned as is, never copied. Callers must not
      mutate them (client-go ``ThreadSafeStore``: "modifying objects stored by the indexers
      will not automatically lead to a re-index"); copy first.
    * **Atomicity.** A failing key or index function raises before anything changes.
      ``replace`` swaps the whole content and every index at once.
    * **Ordering.** ``list``, ``list_keys``, ``index``, ``by_index`` and
      ``list_index_func_values`` return in no particular order; ``index_keys`` is sorted.
    * ``add`` and ``update`` are the same operation (client-go ``threadSafeMap.Add``).
    * **Index maintenance.** Each key's index values are remembered when it is stored, so an
      update or delete removes exactly the entries that were added, without calling the index
      functions on the old object again (client-go does; that goes wrong once a caller has
      mutated the cached object). Updates whose values did not change only store the object.
      The cost is one small list per stored key holding the lists the index functions
      returned (which must therefore not be mutated afterwards either), or nothing with a
      single index that gives one string (the namespace index): the string is kept instead.

    Args:
        key_func: computes each object's key. Default
            :func:`~informers.keys.deletion_handling_meta_namespace_key_func` (client-go
            ``NewIndexer`` as used by informers), so a tombstone deletes by its key.
        indexers: index name -> index function returning a list of values (several values
            index the object under each; an empty list leaves it out of that index).
        codec: how objects are kept (:class:`~informers.object_codec.ObjectCodec`); ``None``
            (default): as given, shared. With a codec (the compact cache,
            :class:`~informers.object_codec.JsonCodec`) each object is encoded when stored
            and every read decodes a fresh copy: "shared, do not mutate" below then does not
            apply, and key and index functions still see the objects as given.
    """

    def __init__(
        self,
        key_func: KeyFunc = deletion_handling_meta_namespace_key_func,
        indexers: Indexers | None = None,
        *,
        codec: ObjectCodec | None = None,
    ) -> None:
        self._key_func = key_func
        self._codec = codec
        self._encode = codec.encode if codec is not None else None
        self._decode = codec.decode if codec is not None else None
        self._lock = threading.Lock()
        self._items: dict[str, Any] = {}  # the objects, or what the codec made of them
        self._rv = ""
        self._indexes: dict[str, _Index] = {}
        # The same indices in a tuple (replaced, never mutated, whenever they change: writers
        # compare it by identity to detect a concurrent change), and each key's values on
        # them, in the same order and packed (_pack): updates compare these instead of
        # recomputing old values.
        self._index_list: tuple[_Index, ...] = ()
        self._key_values: dict[str, _Packed] = {}
        if indexers:
            self.add_indexers(indexers)

    # -- keys ----------------------------------------------------------------------------------

    def _key(self, obj: Any) -> str:
        return call_key_func(self._key_func, obj)

    # -- writes --------------------------------------------------------------------------------

    def update(self, obj: ObjectT, *, key: str | None = None) -> None:
        """Insert or replace ``obj`` under its key; move its index entries to its new values.

        Args:
            obj: the object.
            key: its key, when the caller has it already; it must be what the key function
                gives for ``obj`` (not checked). A new key is stored as this very string: the
                informer passes the one its DeltaFIFO computed, so that one string per object
                serves both.

        Raises:
            KeyFuncError: the key function failed.
            IndexFuncError: an index function failed; nothing was changed.
        """
        if key is None:
            key = call_key_func(self._key_func, obj)
        rv = _rv_of(obj)
        stored = obj if self._encode is None else self._encode(obj)
        indexes = self._index_list
        if not indexes:
            with self._lock:
                if not self._index_list:
                    self._items[key] = stored
                    if rv is not None:
                        self._rv = rv
                    return
            indexes = self._index_list  # add_indexers ran meanwhile: take the slow path
        # Index values are computed outside the lock; the lock only covers dict/set work.
        try:
            values = [idx.fn(obj) for idx in indexes]
        except Exception:
            raise _index_error(indexes, key, obj)  # noqa: B904 - it carries its own cause
        for v in values:
            if v.__class__ is not list:
                values = _compute(indexes, key, obj)
                break
        packed: _Packed = values  # _pack, inlined
        if len(values) == 1:
            only = values[0]
            if len(only) == 1 and only[0].__class__ is str:
                packed = only[0]
        with self._lock:
            while self._index_list is not indexes:  # indices changed meanwhile (rare)
                indexes = self._index_list
                values = _compute(indexes, key, obj)
                packed = _pack(values)
            self._items[key] = stored
            if rv is not None:
                self._rv = rv
            key_values = self._key_values
            old = key_values.get(key)
            if old == packed:
                return  # the fast path: most updates leave every index value unchanged
            key_values[key] = packed
            if old is None:
                for idx, new in zip(indexes, values, strict=True):
                    if new:
                        idx.add(key, new)
            else:
                for idx, prev, new in zip(indexes, _unpack(old), values, strict=True):
                    if prev != new:
                        idx.move(key, prev, new)

    add = update
    """Insert or replace ``obj`` under its key and index it (the same method as :meth:`update`)."""

    def delete(self, obj: Any) -> None:
        """Remove the object under ``obj``'s key (a tombstone's key works); absent keys: no-op.

        ``obj``'s resourceVersion (the one of the deletion) becomes the store's, even if the
        key was absent; a tombstone's does not (client-go ``DeleteWithObject``)."""
        key = self._key(obj)
        rv = _rv_of(obj)
        with self._lock:
            if rv is not None:
                self._rv = rv
            if self._items.pop(key, _MISSING) is _MISSING:
                return
            old = self._key_values.pop(key, None)
            if old is not None:
                for idx, prev in zip(self._index_list, _unpack(old), strict=True):
                    if prev:
                        idx.remove(key, prev)

    def replace(
        self, objects: Iterable[Any], resource_version: str = "", *,
        keys: Iterable[str] | None = None,
    ) -> None:
        """Swap the whole content for ``objects`` and rebuild every index from scratch.

        The new map and indices are built before the lock is taken, then swapped in at once,
        so readers see either the old or the new content. A later object with the same key
        as an earlier one wins. ``keys``, when given, are the objects' keys in order (as the
        key function gives them; not checked), which saves computing them again.

        Raises:
            KeyFuncError, IndexFuncError: before anything is changed.
        """
        items: dict[str, Any] = {}
        key_func = self._key_func
        if keys is not None:
            items = dict(zip(keys, objects, strict=True))
            objects = ()
        for obj in objects:
            key = call_key_func(key_func, obj)
            items[key] = obj
        snapshot = self._index_list
        indexes, key_values = _build(snapshot, items)
        decoded = items
        encode = self._encode
        if encode is not None:
            items = {key: encode(obj) for key, obj in items.items()}
        with self._lock:
            if self._index_list is not snapshot:  # add_indexers ran meanwhile
                indexes, key_values = _build(self._index_list, decoded)
            self._items = items
            self._index_list = indexes
            self._indexes = {idx.name: idx for idx in indexes}
            self._key_values = key_values
            self._rv = resource_version

    def resync(self) -> None:
        """Does nothing: a plain store has nothing to resync (client-go ``cache.Resync``)."""

    # -- reads ---------------------------------------------------------------------------------

    def list(self) -> builtins.list[ObjectT]:
        """Every stored object (shared, do not mutate), in no particular order."""
        with self._lock:
            stored = list(self._items.values())
        return stored if self._decode is None else list(map(self._decode, stored))

    def list_keys(self) -> builtins.list[str]:
        """Every stored key, in no particular order."""
        with self._lock:
            return list(self._items)

    def get(self, obj: Any) -> ObjectT | None:
        """The stored object with ``obj``'s key, or ``None``."""
        return self.get_by_key(self._key(obj))

    def get_by_key(self, key: str) -> ObjectT | None:
        """The stored object under ``key``, or ``None``."""
        with self._lock:
            stored = self._items.get(key)
        if stored is None or self._decode is None:
            return stored
        return self._decode(stored)

    @property
    def compact(self) -> bool:
        """Whether objects are kept encoded (a ``codec`` was given)."""
        return self._decode is not None

    def list_matching(self, stored_filter: Callable[[bytes], bool]) -> builtins.list[Any]:
        """:meth:`list`, decoding only the objects whose encoded form passes
        ``stored_filter`` (a compact cache's cheap pre-filter, such as a label selector's
        byte patterns; a superset of what the caller wants, which it filters exactly
        afterwards). Objects kept unencoded, and every object of a plain cache, are returned
        unfiltered."""
        with self._lock:
            stored = list(self._items.values())
        return self._decode_matching(stored, stored_filter)

    def by_index_matching(self, index_name: str, indexed_value: str,
                          stored_filter: Callable[[bytes], bool]) -> builtins.list[Any]:
        """:meth:`by_index` with :meth:`list_matching`'s pre-filter.

        Raises:
            IndexNotFoundError: no index of that name.
        """
        return self._decode_matching(self._stored_by_index(index_name, indexed_value),
                                     stored_filter)

    def _decode_matching(self, stored: builtins.list[Any],
                         stored_filter: Callable[[bytes], bool]) -> builtins.list[Any]:
        decode = self._decode
        if decode is None:
            return stored
        return [decode(obj) for obj in stored
                if obj.__class__ is not bytes or stored_filter(obj)]

    def get_lazy_by_key(self, key: str) -> Any | None:
        """:meth:`get_by_key` for a notification: in a compact cache, an
        :class:`~informers.object_codec.Encoded` that the listener decodes (each listener its
        own copy, when it delivers); otherwise the stored object."""
        with self._lock:
            stored = self._items.get(key)
        if stored.__class__ is bytes and self._decode is not None:
            return Encoded(key, stored)
        return stored if stored is None or self._decode is None else self._decode(stored)

    def list_lazy(self) -> builtins.list[Any]:
        """:meth:`list` for notifications (see :meth:`get_lazy_by_key`): a resync or a late
        handler's initial adds of a compact cache never hold every object decoded at once."""
        with self._lock:
            stored = list(self._items.items())
        if self._decode is None:
            return [obj for _, obj in stored]
        decode = self._decode
        return [Encoded(key, obj) if obj.__class__ is bytes else decode(obj)
                for key, obj in stored]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def last_store_sync_resource_version(self) -> str:
        """The resourceVersion of the last write (client-go ``LastStoreSyncResourceVersion``):
        of the object last added, updated or deleted, the one given to the last
        :meth:`replace` or :meth:`bookmark`; ``""`` before any. Objects without ``metadata``
        (and tombstones) leave it unchanged. Opaque: compare it only with
        :func:`informers.resource_version.compare_resource_version`."""
        with self._lock:
            return self._rv

    def bookmark(self, resource_version: str) -> None:
        """Record ``resource_version`` as the store's last (client-go ``Bookmark``): a watch
        bookmark says nothing changed up to it."""
        with self._lock:
            self._rv = resource_version

    # -- index queries -------------------------------------------------------------------------

    def _index_locked(self, name: str) -> _Index:
        idx = self._indexes.get(name)
        if idx is None:
            raise IndexNotFoundError(name)
        return idx

    def index(self, index_name: str, obj: Any) -> builtins.list[ObjectT]:
        """Objects sharing any of ``obj``'s values on ``index_name`` (deduplicated).

        Raises:
            IndexNotFoundError: no index of that name.
            IndexFuncError: the index function failed on ``obj``.
        """
        with self._lock:
            fn = self._index_locked(index_name).fn
        try:
            values = _as_values(fn(obj), "<query object>", index_name)
        except IndexFuncError:
            raise
        except Exception as err:
            raise IndexFuncError(
                f"unable to calculate the index values of the query object on index "
                f"{index_name!r}: {err}"
            ) from err
        with self._lock:
            index_values = self._index_locked(index_name).values
            if len(values) == 1:
                keys: Iterable[str] = index_values.get(values[0], ())
            else:
                union: set[str] = set()
                for v in values:
                    union.update(index_values.get(v, ()))
                keys = union
            items = self._items
            stored = [items[k] for k in keys]
        return stored if self._decode is None else list(map(self._decode, stored))

    def index_keys(self, index_name: str, indexed_value: str) -> builtins.list[str]:
        """Sorted keys indexed under ``indexed_value`` on ``index_name``.

        Raises:
            IndexNotFoundError: no index of that name.
        """
        with self._lock:
            keys = self._index_locked(index_name).values.get(indexed_value)
            return sorted(keys) if keys else []

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[ObjectT]:
        """Objects indexed under ``indexed_value`` on ``index_name`` (shared, do not mutate).

        Raises:
            IndexNotFoundError: no index of that name.
        """
        stored = self._stored_by_index(index_name, indexed_value)
        return stored if self._decode is None else list(map(self._decode, stored))

    def _stored_by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]:
        """What is stored for the keys indexed under ``indexed_value`` (one consistent read)."""
        with self._lock:
            keys = self._index_locked(index_name).values.get(indexed_value)
            if not keys:
                return []
            items = self._items
            return [items[k] for k in keys]

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        """Every value that currently has at least one key on ``index_name``.

        Raises:
            IndexNotFoundError: no index of that name (client-go returns an empty list;
                an unknown name is a programming error worth surfacing).
        """
        with self._lock:
            return list(self._index_locked(index_name).values)

    def get_indexers(self) -> Indexers:
        """A copy of the registered index name -> function map."""
        with self._lock:
            return {name: idx.fn for name, idx in self._indexes.items()}

    def add_indexers(self, indexers: Indexers) -> None:
        """Register more indices and index every stored object on them at once.

        client-go v0.30+ behaviour (``AddIndexers`` on a populated store indexes existing
        items). Runs under the lock, so it costs O(stored objects) of writer blocking.

        Raises:
            IndexConflictError: a name is already registered (``indexer conflict: [...]``);
                nothing is added.
            IndexFuncError: an index function failed on a stored object; nothing is added.
        """
        if not indexers:
            return
        with self._lock:
            conflict = sorted(set(indexers) & set(self._indexes))
            if conflict:
                raise IndexConflictError(f"indexer conflict: {conflict}")
            items = self._items
            if self._decode is not None:
                decode = self._decode
                items = {key: decode(stored) for key, stored in items.items()}
            added, added_values = _build(
                tuple(_Index(name, fn) for name, fn in indexers.items()), items
            )
            old_values = self._key_values
            none: _Values = [[] for _ in self._index_list]
            self._key_values = {
                key: _pack(
                    (_unpack(old_values[key]) if key in old_values else none) + _unpack(packed)
                )
                for key, packed in added_values.items()
            }
            self._index_list = self._index_list + added
            self._indexes = {idx.name: idx for idx in self._index_list}


_MISSING: Any = object()
