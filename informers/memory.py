"""The opt-in, process-wide memory tuning of informers (:class:`MemoryTuning`).

Nothing here runs unless a user passes a :class:`MemoryTuning` to a
:class:`~informers.factory.SharedInformerFactory`, a
:class:`~informers.shared_informer.SharedIndexInformer` or a
:class:`~informers.manager.Manager`: importing the library or running an informer without it
never touches the garbage collector or the C allocator. The bundled controllers' commands and
the benchmarks turn it on.

What it does to the whole process, and why (the figures: ``docs/performance.md`` and
``docs/benchmarks.md``):

* **Pause the cyclic GC while a list is decoded and stored** (:func:`gc_paused`). Decoding a
  list creates millions of containers that all stay alive in the cache; every collection on
  the way re-traverses them, which makes a large list several times slower to decode. JSON
  decodes to trees, so none of those objects can be cyclic garbage; reference counting still
  frees whatever is dropped. The pause is reference-counted across threads and restores the
  collector's state from before the first entry.
* **After an informer's first sync** (:class:`InitialSyncGC`): ``gc.freeze()`` moves every
  live object to the permanent generation, so later collections never traverse the initial
  cache again; the collector's third threshold is raised to at least
  :data:`FULL_COLLECTION_THRESHOLD`, because frozen objects no longer count in the
  "long-lived total" that spaces full collections out; and glibc's ``malloc_trim(0)``
  returns the free pages decoding left behind. All of this happens before ``has_synced()``
  turns true.

Caveats of the freeze: cyclic garbage alive at the moment of the freeze is never collected
(``gc.unfreeze()`` undoes the freeze), and so is any reference cycle made of objects frozen
then. A stopped informer therefore breaks its own reference cycles when it stops (see
``SharedIndexInformer.run``), so that reference counting frees its cache once the user drops
it, frozen or not.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

__all__ = [
    "FULL_COLLECTION_THRESHOLD",
    "InitialSyncGC",
    "MemoryTuning",
    "gc_pause_depth",
    "gc_paused",
    "release_free_memory",
]

logger = logging.getLogger(__name__)

FULL_COLLECTION_THRESHOLD = 100
"""The least third threshold of CPython's collector after the freeze: a full collection per
100 generation-1 collections instead of CPython's 10, so full collections (each traversing
every object decoded since the freeze) stay rare while watch events replace cached objects."""


@dataclass(frozen=True)
class MemoryTuning:
    """Opt-in, process-wide tuning of the garbage collector and the C heap for large caches.

    Pass one to ``SharedInformerFactory(..., memory_tuning=MemoryTuning())`` (or to a
    ``SharedIndexInformer`` or ``Manager``). Every field defaults to on; switch parts off one
    by one. See the module docstring for what each part does to the whole process.

    Attributes:
        pause_gc_while_listing: pause the cyclic GC while a list is decoded and stored, and
            from an informer's first list until it was processed.
        freeze_after_initial_sync: ``gc.freeze()`` once an informer's first list was
            processed, and raise the third GC threshold to at least
            ``full_collection_threshold``.
        full_collection_threshold: see ``freeze_after_initial_sync``.
        trim_after_initial_sync: call glibc's ``malloc_trim(0)`` after the first sync.
    """

    pause_gc_while_listing: bool = True
    freeze_after_initial_sync: bool = True
    full_collection_threshold: int = FULL_COLLECTION_THRESHOLD
    trim_after_initial_sync: bool = True

    def list_section(self) -> AbstractContextManager[None]:
        """The context a list's decode-and-store runs in: :func:`gc_paused` or nothing."""
        return gc_paused() if self.pause_gc_while_listing else contextlib.nullcontext()


def list_section(tuning: MemoryTuning | None) -> AbstractContextManager[None]:
    """``tuning.list_section()``, or an empty context without tuning."""
    return tuning.list_section() if tuning is not None else contextlib.nullcontext()


_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic GC for the duration of the ``with`` block. Thread-safe, re-entrant.

    The first entry (process-wide) records whether the collector was enabled and disables it;
    the last exit restores that state, so a program that disabled the collector itself keeps
    it disabled. Nested and concurrent uses only count.

    Caveat: keep the block to the decode-and-store of one list; garbage cycles created by
    other threads meanwhile are collected only after the pause ends.
    """
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def gc_pause_depth() -> int:
    """How many ``gc_paused`` blocks are active right now (for tests and diagnostics)."""
    with _lock:
        return _depth


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where the C library has none (looked up once)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_free_memory() -> bool:
    """Return the C heap's free pages to the operating system (glibc ``malloc_trim(0)``).

    Decoding a large list leaves freed response buffers in the allocator's arenas, where they
    count in the resident memory until reused. Only free memory is returned. A no-op returning
    ``False`` where the C library has no ``malloc_trim`` (musl, macOS).
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


class InitialSyncGC:
    """An informer's part of :class:`MemoryTuning`: keeps the collector paused from its first
    list's ``replace`` until that list was processed, then freezes, raises the threshold and
    trims as the tuning says.

    It is the :class:`~informers.delta_fifo.InitialPopulationHook` of the informer's FIFO:
    :meth:`started` runs under the FIFO's lock as the first replace begins, :meth:`processed`
    under the same lock once its last item was processed (before ``has_synced()`` turns
    true), :meth:`failed` if that replace raised. Without the hold, the collector would resume
    between the replace and the processing, and its next collection would traverse every
    object just decoded. Thread-safe; every method is a no-op once :meth:`processed` ran.
    """

    def __init__(self, name: str, tuning: MemoryTuning) -> None:
        self._name = name
        self._tuning = tuning
        self._lock = threading.Lock()
        self._pause: AbstractContextManager[None] | None = None
        self.finished = False

    def started(self) -> None:
        """Pause the collector (nothing once finished, or while already paused)."""
        with self._lock:
            if self.finished or self._pause is not None:
                return
            if self._tuning.pause_gc_while_listing:
                self._pause = gc_paused()
                self._pause.__enter__()

    def processed(self) -> None:
        """The initial population was processed: freeze, raise the threshold and trim (as
        the tuning says), resume the collector, and never pause it again."""
        with self._lock:
            if self.finished:
                return
            self.finished = True
            pause, self._pause = self._pause, None
            try:
                tuning = self._tuning
                if tuning.freeze_after_initial_sync:
                    gc.freeze()
                    first, second, third = gc.get_threshold()
                    if third < tuning.full_collection_threshold:
                        gc.set_threshold(first, second, tuning.full_collection_threshold)
                    logger.debug("%s: initial cache frozen out of the cyclic GC", self._name)
                if tuning.trim_after_initial_sync:
                    release_free_memory()
            finally:
                if pause is not None:
                    pause.__exit__(None, None, None)

    def stopped(self) -> None:
        """The informer stopped (before or after its first sync): resume the collector
        without freezing, and never pause it again."""
        with self._lock:
            self.finished = True
            pause, self._pause = self._pause, None
        if pause is not None:
            pause.__exit__(None, None, None)

    def failed(self) -> None:
        """The first replace failed: resume the collector; the next replace pauses again."""
        with self._lock:
            pause, self._pause = self._pause, None
        if pause is not None:
            pause.__exit__(None, None, None)
