"""Connects the endpoints controller's callbacks to informers: a handler that never raises.

Also accepts either a factory's typed informer or a bare informer (:func:`informer_and_lister`)
and registers handlers synchronously where possible (:func:`register`).
"""

from __future__ import annotations

import logging
from typing import Any

from informers.listers import Lister
from informers.resources import lookup
from informers.shared_informer import SharedIndexInformer

__all__ = ["EventHandler", "informer_and_lister", "register"]

logger = logging.getLogger(__name__)


def informer_and_lister(source: Any, plural: str) -> tuple[Any, Any]:
    """Accept a factory's typed informer (``.informer()`` / ``.lister()``) or a bare informer."""
    informer_fn = getattr(source, "informer", None)
    lister_fn = getattr(source, "lister", None)
    if callable(informer_fn) and callable(lister_fn):
        return informer_fn(), lister_fn()
    return source, Lister(source.get_indexer(), lookup(plural))


def register(informer: Any, handler: EventHandler) -> Any:
    """Add ``handler`` to ``informer``: ``synchronous`` (called on the thread that writes the
    cache) when it is a :class:`SharedIndexInformer`, since the handlers only enqueue keys and
    that saves a thread hand-off per event; else as the informer-like object registers
    handlers."""
    if isinstance(informer, SharedIndexInformer):
        return informer.add_event_handler(handler, synchronous=True)
    return informer.add_event_handler(handler)


class EventHandler:
    """A ResourceEventHandler that forwards to three callables and never lets them raise (a
    failure is logged with the controller's and the resource's name)."""

    def __init__(
        self, controller: str, name: str, on_add: Any, on_update: Any, on_delete: Any
    ) -> None:
        self._controller = controller
        self._name = name
        self._add, self._update, self._delete = on_add, on_update, on_delete

    def _guard(self, fn: Any, *args: Any) -> None:
        if fn is None:
            return
        try:
            fn(*args)
        except Exception:
            logger.exception("%s: %s event handler failed", self._controller, self._name)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._guard(self._add, obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        self._guard(self._update, old, new)

    def on_delete(self, obj: Any) -> None:
        self._guard(self._delete, obj)

    def __repr__(self) -> str:
        return f"<{self._controller} {self._name} handler>"
