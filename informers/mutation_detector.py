"""Detects in-place mutation of cached objects, a debug aid (client-go ``cacheMutationDetector``).

Cached objects are shared by every handler and lister of a process; editing one corrupts the
cache and its indices for everyone. With detection on, the informer keeps a deep copy of every
object it caches and compares each with its copy periodically. It costs a deep copy per event
and memory for every object seen in the retention window: for tests and debugging only.

Turned on by the environment variable ``KUBE_CACHE_MUTATION_DETECTOR=true`` (client-go's
variable) or explicitly with ``detect_mutations=True`` on the informer or factory.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from informers.clock import REAL_CLOCK, Clock
from informers.errors import CacheMutationError
from informers.keys import DeletedFinalStateUnknown, deletion_handling_meta_namespace_key_func

__all__ = [
    "DEFAULT_COMPARE_PERIOD",
    "DEFAULT_RETAIN_DURATION",
    "ENV_VAR",
    "CacheMutationDetector",
    "mutation_detection_enabled",
]

logger = logging.getLogger(__name__)

ENV_VAR = "KUBE_CACHE_MUTATION_DETECTOR"
"""client-go ``tools/cache/mutation_detector.go``: ``KUBE_CACHE_MUTATION_DETECTOR``."""

DEFAULT_COMPARE_PERIOD = 1.0
"""Seconds between comparisons (client-go ``NewCacheMutationDetector``: 1 s)."""

DEFAULT_RETAIN_DURATION = 120.0
"""How long an object is kept for comparison (client-go ``retainDuration: 2 * time.Minute``)."""


def mutation_detection_enabled(explicit: bool | None = None) -> bool:
    """``explicit`` if given, else whether ``KUBE_CACHE_MUTATION_DETECTOR`` is ``true``."""
    if explicit is not None:
        return explicit
    return os.environ.get(ENV_VAR, "").strip().lower() == "true"


class _Cached:
    __slots__ = ("cached", "copied")

    def __init__(self, cached: Any, copied: Any) -> None:
        self.cached = cached
        self.copied = copied


def _key(obj: Any) -> str:
    try:
        return deletion_handling_meta_namespace_key_func(obj)
    except Exception:
        return "<unknown key>"


class CacheMutationDetector:
    """Keeps ``(cached, deep copy)`` pairs and reports any pair that no longer compares equal.

    Contract:

    * :meth:`add_object` is called by the informer for every object it stores (tombstones are
      ignored). Thread-safe; it deep-copies outside the lock.
    * :meth:`compare_objects` compares every pair with ``==``; each mutated object is logged at
      ERROR with its key and then forgotten (reported once). If any was mutated it calls
      ``failure_func(message)``, or raises :class:`~informers.errors.CacheMutationError` when
      no ``failure_func`` was given.
    * :meth:`run` compares every ``period`` seconds (on ``clock``) until ``stop`` is set, and
      every ``retain_duration`` forgets the objects older than the previous rotation (as
      client-go does). Without a ``failure_func``, a detected mutation raises out of the
      detector's thread (as client-go panics): the thread ends and ``threading.excepthook``
      reports it, which fails a pytest test.

    Args:
        name: the informer's name, used in messages.
        clock: for the comparison period and rotation.
        period: seconds between comparisons.
        retain_duration: seconds an object stays under watch.
        failure_func: called with the message instead of raising.
    """

    def __init__(
        self,
        name: str,
        *,
        clock: Clock = REAL_CLOCK,
        period: float = DEFAULT_COMPARE_PERIOD,
        retain_duration: float = DEFAULT_RETAIN_DURATION,
        failure_func: Callable[[str], None] | None = None,
    ) -> None:
        self.name = name
        self._clock = clock
        self._period = period
        self._retain = retain_duration
        self._failure_func = failure_func
        self._lock = threading.Lock()
        self._added: list[_Cached] = []
        self._cached: list[_Cached] = []
        self._retained: list[_Cached] = []
        self._last_rotated: float | None = None

    def add_object(self, obj: Any) -> None:
        """Remember ``obj`` with a deep copy of it."""
        if isinstance(obj, DeletedFinalStateUnknown):
            return
        pair = _Cached(obj, copy.deepcopy(obj))
        with self._lock:
            self._added.append(pair)

    def compare_objects(self) -> list[str]:
        """Compare every remembered object with its copy; report and return mutated keys."""
        with self._lock:
            self._cached.extend(self._added)
            self._added = []
            mutated: list[str] = []
            for pairs in (self._cached, self._retained):
                kept = []
                for pair in pairs:
                    if pair.cached == pair.copied:
                        kept.append(pair)
                    else:
                        mutated.append(_key(pair.cached))
                if len(kept) != len(pairs):
                    pairs[:] = kept
        if not mutated:
            return mutated
        for key in mutated:
            logger.error(
                "cache %s modified: object %s was mutated in place; cached objects are "
                "shared and must be copied before editing",
                self.name,
                key,
            )
        message = f"cache {self.name} modified: {', '.join(mutated)}"
        if self._failure_func is not None:
            self._failure_func(message)
        else:
            raise CacheMutationError(message)
        return mutated

    def _rotate(self) -> None:
        now = self._clock.now()
        with self._lock:
            if self._last_rotated is None:
                self._last_rotated = now
            elif now - self._last_rotated > self._retain:
                self._retained = self._cached
                self._cached = []
                self._last_rotated = now

    def run(self, stop: threading.Event) -> None:
        """Compare periodically until ``stop`` is set (a final comparison runs at stop)."""
        logger.warning(
            "mutation detector is enabled for %s: every cached object is deep-copied "
            "(memory and CPU cost; debugging only)",
            self.name,
        )
        while True:
            self._rotate()
            self.compare_objects()
            if self._clock.sleep(self._period, stop):
                self.compare_objects()
                return
