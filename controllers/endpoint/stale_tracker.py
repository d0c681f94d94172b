"""Remembers which Endpoints resource versions this controller already replaced.

The Python counterpart of ``staleEndpointsTracker`` (``pkg/controller/endpoint/
endpoints_tracker.go``, Kubernetes ≥ 1.31): after an update that changed an Endpoints'
``resourceVersion``, the old version is *stale*; finding it again in the informer cache means
the cache has not caught up yet, so the sync must be retried rather than computed against it
(kubernetes#127370, #126578). ``syncService`` (``endpoints_controller.go``) asks it before
computing and marks the old version after an update that changed it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["StaleEndpointsTracker"]


def _identity(endpoints: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = endpoints.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return (
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        str(meta.get("resourceVersion") or ""),
    )


class StaleEndpointsTracker:
    """One stale ``resourceVersion`` per Endpoints (namespace/name). Thread-safe (one lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stale: dict[tuple[str, str], str] = {}

    def stale(self, endpoints: Mapping[str, Any]) -> None:
        """Record ``endpoints``' current resourceVersion as already replaced."""
        namespace, name, rv = _identity(endpoints)
        with self._lock:
            self._stale[(namespace, name)] = rv

    def is_stale(self, endpoints: Mapping[str, Any]) -> bool:
        """Whether ``endpoints`` carries the resourceVersion recorded as replaced."""
        namespace, name, rv = _identity(endpoints)
        with self._lock:
            return self._stale.get((namespace, name)) == rv

    def delete(self, namespace: str, name: str) -> None:
        """Forget the Endpoints (its Service is gone)."""
        with self._lock:
            self._stale.pop((namespace, name), None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._stale)
