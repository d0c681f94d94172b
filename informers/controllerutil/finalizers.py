"""Adds, removes and runs finalizers on object dicts (controller-runtime
``controllerutil.AddFinalizer``/``RemoveFinalizer``/``ContainsFinalizer`` and
``pkg/finalizer``).

A finalizer is a string in ``metadata.finalizers``; while one is there, a delete only marks
the object (``metadata.deletionTimestamp``) and the controller that put it there does its
cleanup, then removes it, and the API server deletes the object when the list is empty.

:class:`Finalizers` is controller-runtime's ``finalizer.Finalizers``: register one cleanup
function per finalizer name; :meth:`Finalizers.finalize` adds every registered finalizer to
a live object and, on an object being deleted, runs each cleanup and removes its finalizer
when it succeeded. :meth:`Finalizers.run` does that and writes the change with a JSON merge
patch conditional on the object's ``resourceVersion`` (controller-runtime
``client.MergeFromWithOptimisticLock``: a finalizer list is replaced whole by a merge patch,
so a concurrent change of it must fail with a conflict rather than be lost).

Registration is not thread-safe (do it before the controller starts); running is, for
distinct objects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from informers.errors import InformersError

__all__ = [
    "FinalizeResult",
    "FinalizerError",
    "Finalizers",
    "add_finalizer",
    "cleaned_up",
    "contains_finalizer",
    "finalize_step",
    "finalizers_patch",
    "is_being_deleted",
    "remove_finalizer",
]

logger = logging.getLogger(__name__)


def _finalizers(obj: Mapping[str, Any]) -> list[str]:
    meta = obj.get("metadata")
    found = meta.get("finalizers") if isinstance(meta, Mapping) else None
    return [str(f) for f in found] if isinstance(found, list) else []


def add_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """Append ``finalizer`` unless present; ``True`` if the list changed (``AddFinalizer``).

    ``obj`` is changed in place: a dict, or a ``TypedDict`` (which type checkers do not
    take for a ``MutableMapping``, hence the annotation)."""
    current = _finalizers(obj)
    if finalizer in current:
        return False
    cast("MutableMapping[str, Any]", obj).setdefault("metadata", {})["finalizers"] = [
        *current, finalizer]
    return True


def remove_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """Remove every ``finalizer`` entry; ``True`` if the list changed (``RemoveFinalizer``);
    in place, as :func:`add_finalizer`."""
    current = _finalizers(obj)
    kept = [f for f in current if f != finalizer]
    if len(kept) == len(current):
        return False
    cast("MutableMapping[str, Any]", obj).setdefault("metadata", {})["finalizers"] = kept
    return True


def contains_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """``finalizer`` is in ``metadata.finalizers`` (``ContainsFinalizer``)."""
    return finalizer in _finalizers(obj)


def is_being_deleted(obj: Mapping[str, Any]) -> bool:
    """The object carries a ``metadata.deletionTimestamp``."""
    meta = obj.get("metadata")
    return isinstance(meta, Mapping) and bool(meta.get("deletionTimestamp"))


@dataclass
class FinalizeResult:
    """What a finalize step changed (controller-runtime ``finalizer.Result``).

    Attributes:
        updated: the object's metadata (its finalizers) changed and must be written.
        status_updated: the cleanup changed the object's status.
        errors: finalizer name -> the error its cleanup raised (its finalizer stays on the
            object).
    """

    updated: bool = False
    status_updated: bool = False
    errors: dict[str, BaseException] = field(default_factory=dict)


class FinalizerError(InformersError):
    """One or more cleanups failed (controller-runtime aggregates them); the message names
    each finalizer (``finalizer 'x' failed: ...``); ``errors`` maps names to causes."""

    def __init__(self, errors: dict[str, BaseException]) -> None:
        super().__init__("; ".join(f"finalizer {k!r} failed: {e}" for k, e in errors.items()))
        self.errors = dict(errors)


Cleanup = Callable[[dict[str, Any]], "FinalizeResult | None"]
"""A finalizer's cleanup: gets the object being deleted (it may change its status and say so
with ``FinalizeResult(status_updated=True)``); returns ``None`` or a result; raises to be
retried (the finalizer then stays)."""


class _Patcher(Protocol):
    def resource(self, ref: Any = None, obj: Mapping[str, Any] | None = None) -> Any: ...

    def patch(self, resource: Any, name: str, patch: Any, namespace: str | None = None, *,
              patch_type: Any = "merge", subresource: str | None = None) -> Any: ...


class Finalizers:
    """Cleanups by finalizer name (controller-runtime ``finalizer.NewFinalizers``)."""

    def __init__(self) -> None:
        self._cleanups: dict[str, Cleanup] = {}

    def register(self, key: str, cleanup: Cleanup) -> None:
        """Register ``cleanup`` under the finalizer name ``key``.

        Raises:
            ValueError: ``key`` is already registered.
        """
        if key in self._cleanups:
            raise ValueError(f"finalizer for key {key!r} already registered")
        self._cleanups[key] = cleanup

    def finalize(self, obj: Mapping[str, Any]) -> FinalizeResult:
        """In place, for each registered finalizer (``Finalizers.Finalize``): a live object
        without it gets it; an object being deleted with it gets its cleanup run and, when the
        cleanup returned, the finalizer removed. A cleanup that raised leaves its finalizer
        and its error in ``result.errors`` (controller-runtime's ``Finalizer`` returns a
        result with its error, which a raising Python function cannot: a failed cleanup
        counts as no change)."""
        result = FinalizeResult()
        for key, cleanup in self._cleanups.items():
            step = finalize_step(obj, key, result)
            if step is None:
                continue
            try:
                got = cleanup(obj)  # type: ignore[arg-type]
            except Exception as err:
                result.errors[key] = err
                continue
            cleaned_up(obj, key, got, result)
        return result

    def run(self, client: _Patcher, obj: Mapping[str, Any]) -> bool:
        """:meth:`finalize`, then write the finalizer list when it changed; ``True`` when the
        object is being deleted (the reconcile should stop there).

        The write is a merge patch of ``metadata.finalizers`` carrying the object's
        ``resourceVersion``; ``obj`` becomes the server's answer.

        Raises:
            FinalizerError: a cleanup failed (after writing what succeeded); retry later.
            Conflict: the object changed meanwhile; the next reconcile sees the new one.
        """
        result = self.finalize(obj)
        if result.updated:
            meta = obj["metadata"]
            answer = client.patch(client.resource(None, obj), meta["name"],
                                  finalizers_patch(obj), meta.get("namespace"))
            target = cast("MutableMapping[str, Any]", obj)  # a dict or a TypedDict
            target.clear()
            target.update(answer)
        if result.errors:
            raise FinalizerError(result.errors)
        return is_being_deleted(obj)


def finalize_step(obj: Mapping[str, Any], key: str, result: FinalizeResult) -> str | None:
    """One registered finalizer's step of ``Finalizers.Finalize``: a live object without it
    gets it (``result.updated``); an object being deleted with it needs its cleanup (``key``
    is answered: run the cleanup, then :func:`cleaned_up`); else nothing (``None``). Shared
    by the threaded and the async :class:`Finalizers`."""
    deleting = is_being_deleted(obj)
    if not deleting and not contains_finalizer(obj, key):
        add_finalizer(obj, key)
        result.updated = True
    elif deleting and contains_finalizer(obj, key):
        return key
    return None


def cleaned_up(obj: Mapping[str, Any], key: str, got: FinalizeResult | None,
               result: FinalizeResult) -> None:
    """After ``key``'s cleanup returned ``got``: remove its finalizer, note the changes."""
    result.updated = True
    remove_finalizer(obj, key)
    if got is not None and got.status_updated:
        result.status_updated = True


def finalizers_patch(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch writing ``obj``'s finalizer list, conditional on its
    ``resourceVersion`` (controller-runtime ``client.MergeFromWithOptimisticLock``)."""
    meta = obj["metadata"]
    return {"metadata": {"finalizers": meta.get("finalizers") or None,
                         "resourceVersion": meta.get("resourceVersion")}}

