"""Decides which informer events reach a controller's enqueue handler.

controller-runtime ``pkg/predicate/predicate.go``. A :class:`Predicate` answers, per event,
whether the event is worth enqueueing: :meth:`~Predicate.create` for adds,
:meth:`~Predicate.update` for updates, :meth:`~Predicate.delete` for deletes; each returns true
unless a predicate says otherwise. The change predicates here only filter updates:

* :class:`GenerationChangedPredicate`: ``metadata.generation`` changed (the spec changed;
  status-only writes and resyncs are dropped);
* :class:`ResourceVersionChangedPredicate`: ``metadata.resourceVersion`` changed (drops
  resyncs and relists of unchanged objects);
* :class:`LabelChangedPredicate`, :class:`AnnotationChangedPredicate`: the labels or the
  annotations changed.

Predicates compose: ``a & b`` (:class:`And`), ``a | b`` (:class:`Or`), ``~a`` (:class:`Not`);
:class:`PredicateFuncs` and :func:`new_predicate_funcs` build one from functions.
:class:`PredicateFilteredHandler` applies predicates in front of any event handler.

Predicates are pure functions of the objects they are given: they never mutate them and keep
no state, so one predicate may serve several handlers and threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from informers.handlers import ResourceEventHandler
from informers.keys import unwrap_tombstone

__all__ = [
    "And",
    "AnnotationChangedPredicate",
    "GenerationChangedPredicate",
    "LabelChangedPredicate",
    "Not",
    "Or",
    "Predicate",
    "PredicateFilteredHandler",
    "PredicateFuncs",
    "ResourceVersionChangedPredicate",
    "new_predicate_funcs",
]


def _metadata(obj: Any) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, dict) else None


class Predicate:
    """Filters events; the base class lets every event through (controller-runtime
    ``predicate.Funcs`` with no functions). Subclasses override what they filter."""

    def create(self, obj: Any) -> bool:
        """Whether an add of ``obj`` is passed on."""
        return True

    def update(self, old: Any, new: Any) -> bool:
        """Whether an update from ``old`` to ``new`` is passed on."""
        return True

    def delete(self, obj: Any) -> bool:
        """Whether a delete of ``obj`` (the last known state, never a tombstone) is passed on."""
        return True

    def __and__(self, other: Predicate) -> Predicate:
        return And(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return Or(self, other)

    def __invert__(self) -> Predicate:
        return Not(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class PredicateFuncs(Predicate):
    """A predicate from up to three functions; a missing one lets its events through
    (controller-runtime ``predicate.Funcs``).

    Args:
        create: ``f(obj) -> bool`` for adds.
        update: ``f(old, new) -> bool`` for updates.
        delete: ``f(obj) -> bool`` for deletes.
    """

    def __init__(
        self,
        create: Callable[[Any], bool] | None = None,
        update: Callable[[Any, Any], bool] | None = None,
        delete: Callable[[Any], bool] | None = None,
    ) -> None:
        self.create_func = create
        self.update_func = update
        self.delete_func = delete

    def create(self, obj: Any) -> bool:
        return True if self.create_func is None else bool(self.create_func(obj))

    def update(self, old: Any, new: Any) -> bool:
        return True if self.update_func is None else bool(self.update_func(old, new))

    def delete(self, obj: Any) -> bool:
        return True if self.delete_func is None else bool(self.delete_func(obj))


def new_predicate_funcs(filter_func: Callable[[Any], bool]) -> PredicateFuncs:
    """A predicate that passes an event when ``filter_func`` accepts its object: the object
    of an add or delete, the *new* object of an update (controller-runtime
    ``NewPredicateFuncs``)."""
    return PredicateFuncs(
        create=filter_func,
        update=lambda old, new: filter_func(new),
        delete=filter_func,
    )


class GenerationChangedPredicate(Predicate):
    """Passes updates whose ``metadata.generation`` changed (controller-runtime
    ``GenerationChangedPredicate``).

    The API server bumps ``generation`` on spec changes of most resources (and of custom
    resources with the status subresource), so this drops status-only updates, metadata-only
    updates and resyncs. Caveat: objects that have no ``generation`` (ConfigMaps, Secrets,
    custom resources without the status subresource for some writes) never pass an update
    with it. Adds and deletes pass.
    """

    def update(self, old: Any, new: Any) -> bool:
        old_meta, new_meta = _metadata(old), _metadata(new)
        if old_meta is None or new_meta is None:
            return False
        return old_meta.get("generation") != new_meta.get("generation")


class ResourceVersionChangedPredicate(Predicate):
    """Passes updates whose ``metadata.resourceVersion`` changed (controller-runtime
    ``ResourceVersionChangedPredicate``): drops the periodic resyncs and the relists of
    unchanged objects, where old and new are the same state. Adds and deletes pass."""

    def update(self, old: Any, new: Any) -> bool:
        old_meta, new_meta = _metadata(old), _metadata(new)
        if old_meta is None or new_meta is None:
            return False
        return old_meta.get("resourceVersion") != new_meta.get("resourceVersion")


class LabelChangedPredicate(Predicate):
    """Passes updates whose ``metadata.labels`` changed (controller-runtime
    ``LabelChangedPredicate``). Absent labels and ``{}`` count as equal. Adds and deletes
    pass."""

    def update(self, old: Any, new: Any) -> bool:
        old_meta, new_meta = _metadata(old), _metadata(new)
        if old_meta is None or new_meta is None:
            return False
        return (old_meta.get("labels") or {}) != (new_meta.get("labels") or {})


class AnnotationChangedPredicate(Predicate):
    """Passes updates whose ``metadata.annotations`` changed (controller-runtime
    ``AnnotationChangedPredicate``). Absent annotations and ``{}`` count as equal. Adds and
    deletes pass."""

    def update(self, old: Any, new: Any) -> bool:
        old_meta, new_meta = _metadata(old), _metadata(new)
        if old_meta is None or new_meta is None:
            return False
        return (old_meta.get("annotations") or {}) != (new_meta.get("annotations") or {})


class And(Predicate):
    """Passes an event when every predicate does (controller-runtime ``And``); evaluation
    stops at the first that refuses. ``And()`` passes everything."""

    def __init__(self, *predicates: Predicate) -> None:
        self.predicates = predicates

    def create(self, obj: Any) -> bool:
        return all(p.create(obj) for p in self.predicates)

    def update(self, old: Any, new: Any) -> bool:
        return all(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Any) -> bool:
        return all(p.delete(obj) for p in self.predicates)

    def __repr__(self) -> str:
        return f"And({', '.join(map(repr, self.predicates))})"


class Or(Predicate):
    """Passes an event when any predicate does (controller-runtime ``Or``); evaluation stops
    at the first that passes. ``Or()`` passes nothing."""

    def __init__(self, *predicates: Predicate) -> None:
        self.predicates = predicates

    def create(self, obj: Any) -> bool:
        return any(p.create(obj) for p in self.predicates)

    def update(self, old: Any, new: Any) -> bool:
        return any(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Any) -> bool:
        return any(p.delete(obj) for p in self.predicates)

    def __repr__(self) -> str:
        return f"Or({', '.join(map(repr, self.predicates))})"


class Not(Predicate):
    """Passes an event when ``predicate`` refuses it (controller-runtime ``Not``)."""

    def __init__(self, predicate: Predicate) -> None:
        self.predicate = predicate

    def create(self, obj: Any) -> bool:
        return not self.predicate.create(obj)

    def update(self, old: Any, new: Any) -> bool:
        return not self.predicate.update(old, new)

    def delete(self, obj: Any) -> bool:
        return not self.predicate.delete(obj)

    def __repr__(self) -> str:
        return f"Not({self.predicate!r})"


class PredicateFilteredHandler:
    """Calls ``handler`` only for the events every predicate passes (what
    controller-runtime's source does before calling its handler).

    Adds ask :meth:`Predicate.create`, updates :meth:`Predicate.update`, deletes
    :meth:`Predicate.delete` with the last known state taken out of a tombstone; a delete whose
    last state is unknown (a tombstone holding ``None``) is passed on without asking, since
    nothing can be judged. A predicate that raises propagates to the informer, which logs it
    and drops the event. Unlike :class:`~informers.handlers.FilteringResourceEventHandler`, an
    update refused by a predicate is simply dropped (no add or delete is synthesised).
    Stateless; the informer calls it from one listener thread.

    Args:
        handler: the handler to call, typically an enqueue handler.
        *predicates: all must pass; none passes everything.
    """

    __slots__ = ("handler", "predicates")

    def __init__(self, handler: ResourceEventHandler[Any], *predicates: Predicate) -> None:
        self.handler = handler
        self.predicates = predicates

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if all(p.create(obj) for p in self.predicates):
            self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        if all(p.update(old, new) for p in self.predicates):
            self.handler.on_update(old, new)

    def on_delete(self, obj: Any) -> None:
        last = unwrap_tombstone(obj)
        if last is None or all(p.delete(last) for p in self.predicates):
            self.handler.on_delete(obj)

    def __repr__(self) -> str:
        preds = "".join(f", {p!r}" for p in self.predicates)
        return f"PredicateFilteredHandler({self.handler!r}{preds})"
