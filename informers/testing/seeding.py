"""Reads and writes objects of the embedded API server directly, without HTTP.

:class:`Seeder` is what :meth:`ApiServer.create <informers.testing.ApiServer.create>`,
``update``, ``patch``, ``delete``, ``get`` and ``list`` do: the resource comes from the
registry (a kind not served is the API's 404), writes go through the
:class:`~informers.testing.strategy.Strategy` with ``seeding=True`` (the status given is
kept, a ``resourceVersion`` is ignored; no admission webhooks), so watchers see every change
as they would see an API write, and every object handed in or out is a copy with ``kind`` and
``apiVersion``. Thread-safe: each call is one atomic strategy or storage operation.
"""

from __future__ import annotations

import builtins
from typing import Any

from informers.testing import status
from informers.testing.codec import dumps, loads
from informers.testing.options import Predicate
from informers.testing.resources import ResourceRegistry, ResourceType
from informers.testing.storage import Entry, Storage, object_key
from informers.testing.strategy import JSON_PATCH, MERGE_PATCH, Strategy

__all__ = ["Seeder"]


class Seeder:
    """The seeding helpers of an ``ApiServer`` over its registry, storage and strategy."""

    def __init__(self, registry: ResourceRegistry, storage: Storage, strategy: Strategy) -> None:
        self._registry = registry
        self._storage = storage
        self._strategy = strategy

    def _rt(self, resource: str | None, obj: dict[str, Any] | None = None) -> ResourceType:
        """The served resource; a kind not served is the API's 404 (``the server could not
        find the requested resource``), as a request to its path would answer."""
        try:
            if resource is not None:
                return self._registry.find(resource)
            assert obj is not None
            return self._registry.for_object(obj)
        except KeyError:
            raise status.not_found_path() from None

    @staticmethod
    def _typed(rt: ResourceType, entry: Entry) -> dict[str, Any]:
        result: dict[str, Any] = loads(entry.typed(rt))
        return result

    @staticmethod
    def _namespace(rt: ResourceType, obj: dict[str, Any], namespace: str | None) -> str:
        if not rt.namespaced:
            return ""
        return namespace or (obj.get("metadata") or {}).get("namespace") or "default"

    def create(
        self, obj: dict[str, Any], resource: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]:
        """``ApiServer.create``: store a copy of ``obj``; returns the stored object."""
        rt = self._rt(resource, obj)
        copy: dict[str, Any] = loads(dumps(obj))
        target = self._namespace(rt, obj, namespace)
        if rt.namespaced and isinstance(copy.get("metadata"), dict):
            copy["metadata"]["namespace"] = target
        entry = self._strategy.create(rt, target, copy, seeding=True)
        return self._typed(rt, entry)

    def update(
        self, obj: dict[str, Any], resource: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]:
        """``ApiServer.update``: replace an object unconditionally, status included."""
        rt = self._rt(resource, obj)
        copy: dict[str, Any] = loads(dumps(obj))
        name = (copy.get("metadata") or {}).get("name", "")
        entry = self._strategy.update(
            rt, self._namespace(rt, obj, namespace), name, copy, subresource="*", seeding=True
        )
        return self._typed(rt, entry)

    def patch(
        self, resource: str, namespace: str | None, name: str, patch: Any, *,
        patch_type: str = "merge", subresource: str = "*",
    ) -> dict[str, Any]:
        """``ApiServer.patch``: a merge patch (``"merge"``) or JSON patch (``"json"``)."""
        rt = self._rt(resource)
        content_type = JSON_PATCH if patch_type == "json" else MERGE_PATCH
        entry = self._strategy.patch(
            rt, namespace or "", name, content_type, loads(dumps(patch)), subresource=subresource
        )
        return self._typed(rt, entry)

    def delete(
        self, resource: str, namespace: str | None, name: str, *,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any]:
        """``ApiServer.delete``: delete like the API; returns the object as answered."""
        rt = self._rt(resource)
        options = {} if grace_period_seconds is None else {
            "gracePeriodSeconds": grace_period_seconds
        }
        entry, _ = self._strategy.delete(rt, namespace or "", name, options)
        return self._typed(rt, entry)

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """``ApiServer.get``: a copy of the stored object, or ``None``."""
        rt = self._rt(resource)
        entry = self._storage.get(rt, object_key(rt, namespace or "", name))
        return None if entry is None else self._typed(rt, entry)

    def list(
        self, resource: str, namespace: str | None = None, *, label_selector: str = "",
        field_selector: str = "",
    ) -> builtins.list[dict[str, Any]]:
        """``ApiServer.list``: copies of the stored objects in key order, filtered."""
        rt = self._rt(resource)
        predicate = Predicate(rt, label_selector, field_selector)
        with self._storage.lock:
            coll = self._storage.collection(rt)
            entries = [coll.objects[k] for k in coll.sorted_keys()]
        return [
            self._typed(rt, e) for e in entries
            if (namespace is None or e.namespace == namespace) and predicate.matches(e)
        ]
