"""Turns Kubernetes objects (plain dicts) into cache keys and back.

A key is ``"<namespace>/<name>"`` for a namespaced object and ``"<name>"`` for a
cluster-scoped one, exactly as client-go's ``MetaNamespaceKeyFunc`` builds it
(``tools/cache/store.go``), so keys interoperate with listers and work queues.

Key functions never guess: an object without ``metadata``, without a ``name``, or with a
``/`` inside its name or namespace raises :class:`~informers.errors.KeyFuncError` naming
what is wrong, instead of producing a key that would silently collide or fail to split.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from informers.errors import KeyFuncError

__all__ = [
    "NAMESPACE_INDEX",
    "DeletedFinalStateUnknown",
    "ExplicitKey",
    "IndexFunc",
    "Indexers",
    "KeyFunc",
    "call_key_func",
    "deletion_handling_meta_namespace_key_func",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "split_meta_namespace_key",
    "unwrap_tombstone",
]

KeyFunc = Callable[[Any], str]
"""Computes the cache key of an object; raises :class:`KeyFuncError` when it cannot."""

IndexFunc = Callable[[Any], list[str]]
"""Computes the (possibly several, possibly zero) index values of an object."""

Indexers = dict[str, IndexFunc]
"""Index name to index function (client-go ``cache.Indexers``)."""

NAMESPACE_INDEX = "namespace"
"""Name of the by-namespace index (client-go ``cache.NamespaceIndex``)."""


class ExplicitKey(str):
    """A string that key functions return unchanged as its own key (client-go ``ExplicitKey``).

    Lets a caller enqueue or delete by key when no object is at hand.
    """

    __slots__ = ()


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    """Tombstone of an object deleted while the watch was not looking (client-go same name).

    A relist (``DeltaFIFO.replace``) found ``key`` missing from the server. ``obj`` is the last
    state this process knew, which may be stale, or ``None`` when nothing was known. Delete
    handlers receive this instead of the object and must unwrap it. Immutable; ``obj`` is the
    shared cached object and must not be mutated either.
    """

    key: str
    obj: Any


def meta_namespace_key_func(obj: Any) -> str:
    """Return ``"ns/name"``, or ``"name"`` when the namespace is empty or absent.

    An :class:`ExplicitKey` is returned as a plain ``str`` unchanged.

    Raises:
        KeyFuncError: ``obj`` is not a dict, has no ``metadata`` dict, has no non-empty string
            ``metadata.name``, has a non-string namespace, or a ``/`` in its name or namespace.
            The message says which. A :class:`DeletedFinalStateUnknown` is refused too; use
            :func:`deletion_handling_meta_namespace_key_func` where tombstones can occur.
    """
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            name = meta.get("name")
            if name and isinstance(name, str) and "/" not in name:
                ns = meta.get("namespace")
                if not ns:
                    return name
                if isinstance(ns, str) and "/" not in ns:
                    return ns + "/" + name
    elif isinstance(obj, ExplicitKey):
        return str(obj)
    raise _key_error(obj)


def _key_error(obj: Any) -> KeyFuncError:
    """Build the error for an object :func:`meta_namespace_key_func` refused, naming why."""
    if isinstance(obj, DeletedFinalStateUnknown):
        reason = (
            f"object is a DeletedFinalStateUnknown tombstone for {obj.key!r}; "
            "use deletion_handling_meta_namespace_key_func"
        )
    elif not isinstance(obj, dict):
        reason = f"object has no meta: expected a dict, got {type(obj).__name__}"
    else:
        meta = obj.get("metadata")
        if meta is None:
            reason = "object has no meta: 'metadata' is missing"
        elif not isinstance(meta, dict):
            reason = f"object has no meta: 'metadata' is a {type(meta).__name__}, not a dict"
        else:
            name = meta.get("name")
            ns = meta.get("namespace")
            if name is None or name == "":
                reason = "object has no name: 'metadata.name' is missing or empty"
            elif not isinstance(name, str):
                reason = f"'metadata.name' is a {type(name).__name__}, not a str"
            elif "/" in name:
                reason = f"'metadata.name' {name!r} contains '/'"
            elif not isinstance(ns, str):
                reason = f"'metadata.namespace' is a {type(ns).__name__}, not a str"
            else:
                reason = f"'metadata.namespace' {ns!r} contains '/'"
    return KeyFuncError(f"couldn't create key for object: {reason}", obj)


def call_key_func(key_func: KeyFunc, obj: Any) -> str:
    """``key_func(obj)``, with any failure but a :class:`KeyFuncError` raised as one (client-go
    wraps a key function's error as "couldn't create key for object")."""
    try:
        return key_func(obj)
    except KeyFuncError:
        raise
    except Exception as err:
        raise KeyFuncError(f"couldn't create key for object: {err}", obj) from err


def deletion_handling_meta_namespace_key_func(obj: Any) -> str:
    """Like :func:`meta_namespace_key_func`, but a tombstone yields its ``key``.

    client-go ``DeletionHandlingMetaNamespaceKeyFunc``; the default key function of
    :class:`~informers.indexer.Indexer`, since informer caches receive tombstones on delete.
    """
    if isinstance(obj, DeletedFinalStateUnknown):
        return str(obj.key)
    return meta_namespace_key_func(obj)


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """Split a key into ``(namespace, name)`` (client-go ``SplitMetaNamespaceKey``).

    ``"name"`` gives ``("", "name")`` and ``"ns/name"`` gives ``("ns", "name")``. As in
    client-go, ``"/name"`` gives ``("", "name")``.

    Raises:
        KeyFuncError: (a ``ValueError``) ``unexpected key format: "<key>"`` for a key with
            more than one ``/``, an empty name, or a non-string key.
    """
    if not isinstance(key, str):
        raise KeyFuncError(f"unexpected key format: {key!r} is a {type(key).__name__}, not a str")
    parts = key.split("/")
    if len(parts) == 1:
        namespace, name = "", parts[0]
    elif len(parts) == 2:
        namespace, name = parts
    else:
        raise KeyFuncError(f'unexpected key format: "{key}"')
    if not name:
        raise KeyFuncError(f'unexpected key format: "{key}" (empty name)')
    return namespace, name


def meta_namespace_index_func(obj: Any) -> list[str]:
    """Index function of :data:`NAMESPACE_INDEX`: ``[namespace]``, ``[""]`` if cluster-scoped.

    client-go ``MetaNamespaceIndexFunc`` always returns exactly one value, the namespace.

    Raises:
        KeyFuncError: ``obj`` is not a dict with a ``metadata`` dict (client-go: ``object has
            no meta``), or its namespace is not a string.
    """
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            ns = meta.get("namespace")
            if not ns:
                return [""]
            if isinstance(ns, str):
                return [ns]
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
        ns = obj["metadata"].get("namespace")
        reason = f"'metadata.namespace' is a {type(ns).__name__}, not a str"
    elif not isinstance(obj, dict):
        reason = f"object has no meta: expected a dict, got {type(obj).__name__}"
    elif obj.get("metadata") is None:
        reason = "object has no meta: 'metadata' is missing"
    else:
        reason = f"object has no meta: 'metadata' is a {type(obj['metadata']).__name__}, not a dict"
    raise KeyFuncError(f"couldn't compute the namespace index of object: {reason}", obj)


def unwrap_tombstone(obj: Any) -> Any:
    """The object a delete notification is about: a tombstone's last known state (which may
    be stale or ``None``), or ``obj`` itself."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.obj
    return obj
