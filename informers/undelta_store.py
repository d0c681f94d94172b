"""Turns incremental store changes into full-state pushes (client-go ``UndeltaStore``).

For consumers that want "here is everything now" instead of events, such as the kubelet's
pod sources: a reflector writes into this store, and every write calls ``push_func`` with the
complete current list.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from typing import Any

from informers.indexer import Indexer
from informers.keys import KeyFunc, meta_namespace_key_func

__all__ = ["UndeltaStore"]


class UndeltaStore:
    """A store that calls ``push_func(all objects)`` once after every write.

    Contract (client-go ``tools/cache/undelta_store.go``):

    * ``add``, ``update``, ``delete`` and ``replace`` each call ``push_func`` exactly once
      after the write succeeded (not when it raised), with a fresh list of every stored
      object in no particular order. ``delete`` of an absent object still pushes.
    * Reads (``list``, ``list_keys``, ``get``, ``get_by_key``) and ``resync`` never push.
    * **Thread safety.** Thread-safe. The push happens *after* the store lock is released,
      as in client-go, so under concurrent writers two pushes may carry the same list, and
      pushes may arrive out of order with respect to the writes; each push is a state the
      store really had. ``push_func`` must be thread-safe and runs on the writer's thread;
      its exceptions propagate to that writer (the write itself has happened).
    * Pushed objects are the stored ones (shared): do not mutate them.

    Args:
        push_func: receives the complete list after each write.
        key_func: computes each object's key (default
            :func:`~informers.keys.meta_namespace_key_func`, as client-go's callers use).
    """

    def __init__(
        self,
        push_func: Callable[[builtins.list[Any]], object],
        key_func: KeyFunc = meta_namespace_key_func,
    ) -> None:
        self._push = push_func
        self._store = Indexer(key_func=key_func)

    def add(self, obj: Any) -> None:
        """Store ``obj``, then push the full list."""
        self._store.add(obj)
        self._push(self._store.list())

    def update(self, obj: Any) -> None:
        """Store ``obj``, then push the full list."""
        self._store.update(obj)
        self._push(self._store.list())

    def delete(self, obj: Any) -> None:
        """Remove ``obj``'s key, then push the full list."""
        self._store.delete(obj)
        self._push(self._store.list())

    def replace(self, objects: Iterable[Any], resource_version: str = "") -> None:
        """Swap the content for ``objects``, then push the full list."""
        self._store.replace(objects, resource_version)
        self._push(self._store.list())

    def resync(self) -> None:
        """Does nothing and does not push (client-go: inherited ``Store.Resync``)."""

    def list(self) -> builtins.list[Any]:
        return self._store.list()

    def list_keys(self) -> builtins.list[str]:
        return self._store.list_keys()

    def get(self, obj: Any) -> Any | None:
        return self._store.get(obj)

    def get_by_key(self, key: str) -> Any | None:
        return self._store.get_by_key(key)

    def last_store_sync_resource_version(self) -> str:
        return self._store.last_store_sync_resource_version()

    def __len__(self) -> int:
        return len(self._store)

    def __contains__(self, key: object) -> bool:
        return key in self._store
