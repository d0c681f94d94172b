"""Defines what an informer notifies: the event handler protocol and its adapters.

client-go ``tools/cache/controller.go`` (``ResourceEventHandler``,
``ResourceEventHandlerFuncs``, ``ResourceEventHandlerDetailedFuncs``,
``FilteringResourceEventHandler``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Generic, Protocol, runtime_checkable

from informers.object_type import ObjectT, ObjectT_contra

__all__ = [
    "FilteringResourceEventHandler",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
]


@runtime_checkable
class ResourceEventHandler(Protocol[ObjectT_contra]):
    """Receives an informer's notifications (client-go ``ResourceEventHandler``).

    Generic over the objects' static type (``ResourceEventHandler[Pod]``; default
    ``dict[str, Any]``); ``on_delete`` takes ``Any`` as it may get a tombstone.

    Contract:

    * Each registration gets its own thread: calls to one handler never overlap and arrive in
      the order the informer applied the changes to its cache. The cache already holds the
      new state when a call is made (a lister read from the handler sees it, or newer).
    * Objects are the informer's shared cached dicts: **never mutate them**; copy first.
    * ``on_add(obj, is_in_initial_list)``: an object appeared. ``is_in_initial_list`` is true
      for the objects of the informer's first list, and for the synthetic adds a handler
      registered late receives for every cached object.
    * ``on_update(old, new)``: ``old`` is the previous cached state (intermediate states may
      have been skipped). ``old is new`` (same resourceVersion) on a resync or a relist of an
      unchanged object, which only handlers with a resync period receive.
    * ``on_delete(obj)``: ``obj`` is the last known state, or a
      :class:`~informers.keys.DeletedFinalStateUnknown` when the delete was missed and
      found by a relist; its ``obj`` may be stale or ``None``.
    * A call that raises is logged with the object's key; the handler keeps receiving.
    * Handlers should be quick (enqueue a key into a work queue): a slow handler only
      delays itself, but its backlog grows without bound.
    """

    def on_add(self, obj: ObjectT_contra, is_in_initial_list: bool) -> None: ...

    def on_update(self, old: ObjectT_contra, new: ObjectT_contra) -> None: ...

    def on_delete(self, obj: Any) -> None: ...


def _accepts_two_positional(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` can be called as ``fn(obj, is_in_initial_list)``.

    Decided once from the signature: a callable with two or more positional parameters
    (required or defaulted) or ``*args`` takes the flag. A signature that cannot be read
    (some builtins) is called with the object only.
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    count = 0
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            count += 1
    return count >= 2


class ResourceEventHandlerFuncs(Generic[ObjectT]):
    """Builds a :class:`ResourceEventHandler` from up to three functions; missing ones are no-ops.

    Generic over the objects' static type, inferred from ``on_update``'s parameters or
    given (``ResourceEventHandlerFuncs[Pod](on_add=...)``); default ``dict[str, Any]``.

    Merges client-go's ``ResourceEventHandlerFuncs`` (whose add drops the flag) and
    ``ResourceEventHandlerDetailedFuncs`` (whose add receives it): ``on_add`` is called as
    ``on_add(obj, is_in_initial_list)`` if its signature accepts two positional arguments
    (or ``*args``), else as ``on_add(obj)``. The choice is made once, here. Stateless and
    thread-safe in itself; the functions run on the registration's listener thread.

    Args:
        on_add: ``f(obj)`` or ``f(obj, is_in_initial_list)``.
        on_update: ``f(old, new)``.
        on_delete: ``f(obj)``; ``obj`` may be a ``DeletedFinalStateUnknown``.
    """

    __slots__ = ("_add", "_add_takes_flag", "add_func", "delete_func", "update_func")

    def __init__(
        self,
        on_add: Callable[..., Any] | None = None,
        on_update: Callable[[ObjectT, ObjectT], Any] | None = None,
        on_delete: Callable[[Any], Any] | None = None,
    ) -> None:
        self.add_func = on_add
        self.update_func = on_update
        self.delete_func = on_delete
        self._add_takes_flag = on_add is not None and _accepts_two_positional(on_add)

    def on_add(self, obj: ObjectT, is_in_initial_list: bool) -> None:
        fn = self.add_func
        if fn is None:
            return
        if self._add_takes_flag:
            fn(obj, is_in_initial_list)
        else:
            fn(obj)

    def on_update(self, old: ObjectT, new: ObjectT) -> None:
        if self.update_func is not None:
            self.update_func(old, new)

    def on_delete(self, obj: Any) -> None:
        if self.delete_func is not None:
            self.delete_func(obj)

    def __repr__(self) -> str:
        names = [
            f"{n}={getattr(f, '__qualname__', f)!s}"
            for n, f in (
                ("on_add", self.add_func),
                ("on_update", self.update_func),
                ("on_delete", self.delete_func),
            )
            if f is not None
        ]
        return f"ResourceEventHandlerFuncs({', '.join(names)})"


class FilteringResourceEventHandler(Generic[ObjectT]):
    """Passes on only the notifications about objects ``filter_func`` accepts.

    client-go ``FilteringResourceEventHandler``. Adds and deletes are passed on when the
    filter accepts the object (on delete it may be given a ``DeletedFinalStateUnknown``).
    An update is translated by which side passes, so the inner handler sees the filtered
    set change:

    ======================  ===========================  =================================
    ``filter(old)``         ``filter(new)``              inner handler receives
    ======================  ===========================  =================================
    true                    true                         ``on_update(old, new)``
    false                   true                         ``on_add(new, False)``
    true                    false                        ``on_delete(old)``
    false                   false                        nothing
    ======================  ===========================  =================================

    ``filter_func`` must be a pure, quick function of the object; it runs on the listener
    thread before each call.
    """

    __slots__ = ("filter_func", "handler")

    def __init__(self, filter_func: Callable[[Any], bool],
                 handler: ResourceEventHandler[ObjectT]) -> None:
        self.filter_func = filter_func
        self.handler = handler

    def on_add(self, obj: ObjectT, is_in_initial_list: bool) -> None:
        if self.filter_func(obj):
            self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: ObjectT, new: ObjectT) -> None:
        new_ok = self.filter_func(new)
        old_ok = self.filter_func(old)
        if new_ok and old_ok:
            self.handler.on_update(old, new)
        elif new_ok:
            self.handler.on_add(new, False)
        elif old_ok:
            self.handler.on_delete(old)

    def on_delete(self, obj: Any) -> None:
        if self.filter_func(obj):
            self.handler.on_delete(obj)

    def __repr__(self) -> str:
        return f"FilteringResourceEventHandler({self.filter_func!r}, {self.handler!r})"
