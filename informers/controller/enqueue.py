"""Turns informer events into keys in a controller's work queue.

controller-runtime ``pkg/handler`` (``EnqueueRequestForObject``, ``EnqueueRequestForOwner``,
``EnqueueRequestsFromMapFunc``). Each handler here is a
:class:`~informers.handlers.ResourceEventHandler`: register it on an informer directly
(``informer.add_event_handler(EnqueueRequestForObject(controller))``) or through
:meth:`Controller.watch <informers.controller.controller.Controller.watch>`, which also filters
with predicates and waits for the registration to sync before the first reconcile.

Handlers only enqueue keys (``"namespace/name"`` or ``"name"``, the form of
:func:`~informers.keys.meta_namespace_key_func`); the reconcile reads the world from listers.
The event type is deliberately lost: reconciliation is level-based (controller-runtime FAQ:
"different logic for create/update/delete? You should not.").

A key that cannot be computed (an object without a name, a map function that raises) is
logged and skipped; it never stops the informer's delivery.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Union

from informers.keys import deletion_handling_meta_namespace_key_func, unwrap_tombstone

if TYPE_CHECKING:
    from informers.controller.controller import Controller
    from informers.workqueue.queue import Queue

__all__ = [
    "EnqueueRequestForObject",
    "EnqueueRequestForOwner",
    "EnqueueRequestsFromMapFunc",
    "EnqueueTarget",
    "MapFunc",
    "group_of",
]

logger = logging.getLogger(__name__)

EnqueueTarget = Union["Controller", "Queue[Any]"]
"""Where a handler puts keys: a :class:`~informers.controller.controller.Controller` (through
its ``enqueue``) or any work queue (through its ``add``)."""

MapFunc = Callable[[Any], Iterable[str]]
"""Maps an object to the keys to enqueue (controller-runtime ``MapFunc``)."""


def _adder(target: EnqueueTarget) -> Callable[[str], None]:
    enqueue = getattr(target, "enqueue", None)
    if callable(enqueue):
        return enqueue
    add = getattr(target, "add", None)
    if not callable(add):
        raise TypeError(
            f"cannot enqueue into {target!r}: expected a Controller or a work queue "
            "(an object with enqueue(key) or add(key))"
        )
    return add


def group_of(api_version: str) -> str:
    """The API group of an ``apiVersion``: ``"apps"`` for ``"apps/v1"``, ``""`` for ``"v1"``."""
    group, sep, _ = api_version.rpartition("/")
    return group if sep else ""


class EnqueueRequestForObject:
    """Enqueues the key of the object an event is about (controller-runtime
    ``EnqueueRequestForObject``).

    Adds and deletes enqueue the object's key; an update enqueues the new object's key (old and
    new have the same key). A delete of a tombstone enqueues the tombstone's key. Thread-safe;
    the informer calls it from one listener thread.

    Args:
        target: the controller or work queue the keys go to.
    """

    __slots__ = ("_add", "target")

    def __init__(self, target: EnqueueTarget) -> None:
        self.target = target
        self._add = _adder(target)

    def _enqueue(self, obj: Any) -> None:
        try:
            key = deletion_handling_meta_namespace_key_func(obj)
        except Exception as err:
            logger.error("cannot enqueue an object without a valid key: %s", err)
            return
        self._add(key)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._enqueue(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._enqueue(new)

    def on_delete(self, obj: Any) -> None:
        self._enqueue(obj)

    def __repr__(self) -> str:
        return f"EnqueueRequestForObject({self.target!r})"


class EnqueueRequestForOwner:
    """Enqueues the keys of an object's owners of one kind (controller-runtime
    ``EnqueueRequestForOwner``), e.g. the custom resource that owns a ConfigMap.

    For each entry of ``metadata.ownerReferences`` whose ``kind`` is ``owner_kind`` and whose
    group (the ``apiVersion`` without its version: versions are not compared, as in
    controller-runtime) is the owner's group, it enqueues ``"<object's namespace>/<owner
    name>"`` (owner references never cross namespaces), or ``"<owner name>"`` when the owner
    is cluster-scoped (``owner_namespaced=False``) or the object itself is cluster-scoped.
    With ``is_controller`` (the default, controller-runtime ``OnlyControllerOwner()``) only the
    reference with ``controller: true`` counts. An update enqueues the owners of the old and
    of the new object (a changed owner reference notifies both owners); a delete the owners of
    the deleted object's last known state.

    The owner may not exist (a dangling reference, or an owner deleted first): its key is
    enqueued anyway and the reconcile finds nothing in its lister. Thread-safe.

    Args:
        target: the controller or work queue the keys go to.
        owner_kind: the owner's ``kind``, e.g. ``"ReplicaSet"``.
        owner_api_version: the owner's ``apiVersion`` (``"apps/v1"``, ``"v1"``); only its
            group is compared. Give this or ``group``; neither means the core group ``""``.
        group: the owner's API group (``"apps"``, ``"example.com"``, ``""`` for core).
        is_controller: count only the controlling owner reference.
        owner_namespaced: whether the owner kind is namespaced.

    Raises:
        ValueError: ``owner_api_version`` and ``group`` disagree, or ``owner_kind`` is empty.
    """

    __slots__ = ("_add", "group", "is_controller", "owner_kind", "owner_namespaced", "target")

    def __init__(
        self,
        target: EnqueueTarget,
        owner_kind: str,
        owner_api_version: str | None = None,
        *,
        group: str | None = None,
        is_controller: bool = True,
        owner_namespaced: bool = True,
    ) -> None:
        if not owner_kind:
            raise ValueError("EnqueueRequestForOwner needs an owner kind")
        if owner_api_version is not None:
            derived = group_of(owner_api_version)
            if group is not None and group != derived:
                raise ValueError(
                    f"owner_api_version {owner_api_version!r} is in group {derived!r}, "
                    f"not {group!r}"
                )
            group = derived
        self.target = target
        self.owner_kind = owner_kind
        self.group = group or ""
        self.is_controller = is_controller
        self.owner_namespaced = owner_namespaced
        self._add = _adder(target)

    def owner_keys(self, obj: Any) -> list[str]:
        """The keys of ``obj``'s matching owners, in reference order, without duplicates."""
        if not isinstance(obj, dict):
            return []
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict):
            return []
        refs = metadata.get("ownerReferences") or ()
        namespace = metadata.get("namespace") or ""
        keys: list[str] = []
        for ref in refs:
            if not isinstance(ref, dict):
                continue
            if ref.get("kind") != self.owner_kind:
                continue
            if group_of(str(ref.get("apiVersion") or "")) != self.group:
                continue
            if self.is_controller and ref.get("controller") is not True:
                continue
            name = ref.get("name")
            if not isinstance(name, str) or not name or "/" in name:
                logger.error(
                    "ignoring an owner reference of %s/%s with an invalid name %r",
                    namespace,
                    metadata.get("name"),
                    name,
                )
                continue
            key = f"{namespace}/{name}" if namespace and self.owner_namespaced else name
            if key not in keys:
                keys.append(key)
        return keys

    def _enqueue(self, *objs: Any) -> None:
        seen: set[str] = set()
        for obj in objs:
            for key in self.owner_keys(obj):
                if key not in seen:
                    seen.add(key)
                    self._add(key)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._enqueue(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._enqueue(old, new)

    def on_delete(self, obj: Any) -> None:
        self._enqueue(unwrap_tombstone(obj))

    def __repr__(self) -> str:
        return (
            f"EnqueueRequestForOwner({self.target!r}, {self.owner_kind!r}, "
            f"group={self.group!r}, is_controller={self.is_controller})"
        )


class EnqueueRequestsFromMapFunc:
    """Enqueues the keys a function maps the object to (controller-runtime
    ``EnqueueRequestsFromMapFunc``), e.g. every Service selecting a Pod.

    ``fn(obj)`` returns an iterable of keys. An update maps the old and the new object and
    enqueues the union (a Pod that stops matching a Service still notifies it); a delete maps
    the last known state (a tombstone without one maps nothing). Each key is enqueued once per
    event. ``fn`` runs on the informer's listener thread: keep it quick and read only caches.
    A raising ``fn`` is logged and the event skipped.

    Args:
        target: the controller or work queue the keys go to.
        fn: the map function.
    """

    __slots__ = ("_add", "fn", "target")

    def __init__(self, target: EnqueueTarget, fn: MapFunc) -> None:
        self.target = target
        self.fn = fn
        self._add = _adder(target)

    def _enqueue(self, *objs: Any) -> None:
        keys: dict[str, None] = {}  # ordered, without duplicates
        for obj in objs:
            if obj is None:
                continue
            try:
                keys.update(dict.fromkeys(self.fn(obj)))
            except Exception:
                logger.exception("map function %r failed; no keys enqueued", self.fn)
                return
        for key in keys:
            self._add(key)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._enqueue(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._enqueue(old, new)

    def on_delete(self, obj: Any) -> None:
        self._enqueue(unwrap_tombstone(obj))

    def __repr__(self) -> str:
        return f"EnqueueRequestsFromMapFunc({self.target!r}, {self.fn!r})"
