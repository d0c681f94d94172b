"""Holds a process-wide metrics provider: the state behind each ``set_provider``/``get_provider``.

client-go keeps one package-level provider per metrics package (``workqueue.SetProvider``,
``leaderelection.SetProvider``) behind a ``sync.Once``, so only the first call counts. Ours
(:mod:`informers.workqueue.metrics`, :mod:`informers.leaderelection.metrics`,
:mod:`informers.controller.metrics`) let a later call replace the provider, so tests and
embedding applications can swap it back; components created afterwards use the new one.
"""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

__all__ = ["GlobalProvider"]

P = TypeVar("P")


class GlobalProvider(Generic[P]):
    """One process-wide provider, replaced by :meth:`set` and read by :meth:`get`.

    Thread-safe (one lock). Only the metrics modules create these, one each, at import.

    Args:
        default: the provider until the first :meth:`set` (a no-op provider).
    """

    __slots__ = ("_lock", "_provider")

    def __init__(self, default: P) -> None:
        self._lock = threading.Lock()
        self._provider = default

    def set(self, provider: P) -> P:
        """Replace the provider; returns the one that was set before."""
        with self._lock:
            previous = self._provider
            self._provider = provider
            return previous

    def get(self) -> P:
        """The current provider."""
        with self._lock:
            return self._provider
