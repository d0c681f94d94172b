"""A namespace's life: the NamespaceLifecycle admission plugin and the namespace controller.

For the embedded server, run synchronously inside the request that triggers them:

* on a create, :meth:`NamespaceLifecycle.admit` refuses a namespaced object whose namespace
  is missing (404) or terminating (403), as
  ``apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go`` does;
* on a namespace's delete, :meth:`NamespaceLifecycle.delete` marks it ``Terminating``
  (``registry/core/namespace/storage`` ``REST.Delete``) and then does the namespace
  controller's work (``pkg/controller/namespace/deletion``): it deletes every object in the
  namespace and, once none is left, removes the ``kubernetes`` spec finalizer;
* after any namespaced object is removed, :meth:`NamespaceLifecycle.removed` finalizes its
  namespace if that was the last object of a terminating one.

Thread safety: every method runs under the storage lock, held by the
:class:`~informers.testing.strategy.Strategy` that owns this object; the deletes, removals and
the ``/finalize`` update go through that strategy (the callables given to the constructor).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

from informers.clock import Clock
from informers.testing import status
from informers.testing.graceful_deletion import Remove, rfc3339
from informers.testing.kind_rules import (
    KUBERNETES_FINALIZER,
    TERMINATING,
    is_terminating,
    spec_finalizers,
)
from informers.testing.resources import ResourceRegistry, ResourceType
from informers.testing.storage import Entry, Storage

__all__ = ["NamespaceLifecycle"]

Delete = Callable[[ResourceType, str, str, dict[str, Any]], tuple[Entry, bool]]
"""An API delete of one object: ``(rt, namespace, name, options) -> (entry, gone)``."""

Finalize = Callable[[ResourceType, str, Entry, dict[str, Any]], Entry]
"""The ``/finalize`` update of a namespace: ``(rt, name, stored entry, new object)``."""


class NamespaceLifecycle:
    """Admits creates into live namespaces and takes deleted namespaces through
    ``Terminating`` to removal. Not thread-safe on its own: the owning strategy calls it
    with the storage lock held.

    Args:
        storage: the objects (read, and the namespace's marking written, directly).
        registry: where the ``namespaces`` resource is found.
        clock: the ``deletionTimestamp`` of a namespace being deleted.
        delete: deletes one object of a terminating namespace, like an API delete without
            options (finalizers are honoured).
        remove: removes an object (the namespace itself, once nothing holds it).
        finalize: writes a namespace without the ``kubernetes`` spec finalizer.
    """

    def __init__(self, storage: Storage, registry: ResourceRegistry, clock: Clock, *,
                 delete: Delete, remove: Remove, finalize: Finalize) -> None:
        self._storage = storage
        self._registry = registry
        self._clock = clock
        self._delete = delete
        self._remove = remove
        self._finalize = finalize
        self._sweeping = False  # deleting a namespace's content: finalize once, at the end

    def _namespaces(self) -> ResourceType:
        rt = self._registry.lookup("", "v1", "namespaces")
        assert rt is not None
        return rt

    def admit(self, rt: ResourceType, namespace: str, name: str) -> None:
        """The NamespaceLifecycle admission plugin on a create
        (``apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go``): 404 for a
        missing namespace, 403 with a ``NamespaceTerminating`` cause for a terminating one
        (``status.phase``). Admission runs before names are generated or validated."""
        if not rt.namespaced:
            return
        ns = self._storage.get(self._namespaces(), namespace)
        if ns is None:
            raise status.not_found("namespaces", "", namespace)
        if is_terminating(ns):
            raise status.namespace_terminating(rt.plural, rt.group, name, namespace)

    def delete(
        self, rt: ResourceType, current: Entry, obj: dict[str, Any]
    ) -> tuple[Entry, bool]:
        """``registry/core/namespace/storage`` ``REST.Delete``, then the namespace controller.

        The first delete sets ``deletionTimestamp`` and ``status.phase: Terminating`` and
        answers that object; the controller's work (``pkg/controller/namespace/deletion``)
        follows at once: every object in the namespace is deleted like an API delete without
        options (finalizers are honoured), and once nothing is left the ``kubernetes`` spec
        finalizer is removed, which removes the namespace unless other finalizers remain. A
        later delete answers the namespace unchanged while it has spec finalizers.
        """
        meta = obj["metadata"]
        name = meta["name"]
        if meta.get("deletionTimestamp"):
            if spec_finalizers(obj) or meta.get("finalizers"):
                return current, False
            return self._remove(rt, current.key, None), True
        meta["deletionTimestamp"] = rfc3339(self._clock.wall())
        status_part = obj.get("status")
        obj["status"] = {**(status_part if isinstance(status_part, dict) else {}),
                         "phase": TERMINATING}
        marked = self._storage.put(rt, obj)
        self._sweeping = True
        try:
            self._delete_contents(name)
        finally:
            self._sweeping = False
        self._finalize_if_empty(name)
        return marked, False

    def removed(self, namespace: str) -> None:
        """An object of ``namespace`` was removed: when that empties a terminating namespace,
        finalize it (while a namespace's content is being deleted: once, at the end)."""
        if not self._sweeping:
            self._finalize_if_empty(namespace)

    def _keys(self, namespace: str) -> list[tuple[ResourceType, str]]:
        prefix = namespace + "/"
        found = []
        for coll in self._storage.collections():
            if not coll.rt.namespaced:
                continue
            keys = coll.sorted_keys()
            index = bisect.bisect_left(keys, prefix)
            while index < len(keys) and keys[index].startswith(prefix):
                found.append((coll.rt, keys[index]))
                index += 1
        return found

    def _delete_contents(self, namespace: str) -> None:
        # namespaced_resources_deleter.go deleteAllContent: a delete of every object.
        for rt, key in self._keys(namespace):
            entry = self._storage.get(rt, key)
            if entry is not None:
                self._delete(rt, entry.namespace, entry.name, {})

    def _finalize_if_empty(self, namespace: str) -> None:
        """The namespace controller's last step: a terminating namespace that is empty loses
        the ``kubernetes`` spec finalizer (``finalizeNamespace``, a ``/finalize`` update)."""
        rt = self._namespaces()
        ns = self._storage.get(rt, namespace)
        if ns is None or not is_terminating(ns):
            return
        obj = ns.decode()
        if KUBERNETES_FINALIZER not in spec_finalizers(obj):
            return
        if self._keys(namespace):
            return
        spec = obj["spec"]
        rest = sorted({f for f in spec["finalizers"] if f != KUBERNETES_FINALIZER})
        if rest:
            spec["finalizers"] = rest
        else:
            del spec["finalizers"]  # omitempty
        self._finalize(rt, namespace, ns, obj)
