"""Pauses the cyclic GC through an informer's first list, then freezes the cache out of it.

The informer's part of the memory and speed work of ``benchmarks/bench_informer.py``:
:class:`InitialSyncGC` holds the pause and ends it, :class:`InformerFIFO` is the informer's
:class:`~informers.delta_fifo.DeltaFIFO`, which starts the pause at the first ``replace`` and
ends it while the last item of that list is being processed.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from informers.delta_fifo import DeltaFIFO, Deltas
from informers.gc_pause import gc_paused, release_free_memory

__all__ = ["FULL_COLLECTION_THRESHOLD", "InformerFIFO", "InitialSyncGC"]

logger = logging.getLogger(__name__)

FULL_COLLECTION_THRESHOLD = 100
"""The least third threshold of CPython's collector (``gc.set_threshold``) after an
informer's ``gc.freeze()``: a full collection per 100 generation-1 collections instead of 10
(CPython's default); see ``gc_freeze`` of
:class:`~informers.shared_informer.SharedIndexInformer`. Measured with 10,000
cached 7 KB pods: 4.3-5.9k watch events/s at 10, 8-10.6k at 100."""

_T = TypeVar("_T")


class InitialSyncGC:
    """Keeps the cyclic GC paused from the first list's ``replace`` until it was processed.

    The reflector pauses the collector while it decodes a list and calls ``replace``; without
    this, the collector resumes between ``replace`` and the informer's processing, and its next
    generation-0 collection traverses every object just decoded (all still "young"): about
    0.3 s for 10,000 pods. With ``freeze``, the objects alive at the end are moved to the
    permanent generation (``gc.freeze()``, while still paused), so later collections never
    traverse the initial cache again (reference/perf-anchors.md section 8, item 2), and the
    collector's third threshold is raised to at least :data:`FULL_COLLECTION_THRESHOLD`
    (process-wide): frozen objects no longer count in the "long-lived total" that normally
    spaces full collections out (a full collection runs only when the objects that survived
    since the last one exceed 25 % of it), so at CPython's default (10) watch events that
    replace cached objects trigger full collections again and again, each traversing every
    object decoded since the freeze: 6 of them, 0.95 s of 2.4 s, in a burst of 10,000
    MODIFIED 7 KB pods (``benchmarks/bench_informer.py``). Thread-safe; every method is
    idempotent after :meth:`done`.
    """

    def __init__(self, name: str, freeze: bool) -> None:
        self._name = name
        self._freeze = freeze
        self._lock = threading.Lock()
        self._pause: Any = None
        self.finished = False

    def enter(self) -> None:
        """Pause the collector (the first ``replace`` is about to be queued); nothing once
        :meth:`done`, or while already paused."""
        with self._lock:
            if self.finished or self._pause is not None:
                return
            self._pause = gc_paused()
            self._pause.__enter__()

    def done(self, freeze: bool = True) -> None:
        """The initial population was processed (or will never be, ``freeze=False``): resume
        the collector, and never pause it again."""
        with self._lock:
            if self.finished:
                return
            self.finished = True
            pause, self._pause = self._pause, None
            if pause is None:
                return
            try:
                if freeze and self._freeze:
                    gc.freeze()
                    first, second, third = gc.get_threshold()
                    if third < FULL_COLLECTION_THRESHOLD:
                        gc.set_threshold(first, second, FULL_COLLECTION_THRESHOLD)
                    release_free_memory()
                    logger.debug("%s: initial cache frozen out of the cyclic GC", self._name)
            finally:
                pause.__exit__(None, None, None)

    def abort(self) -> None:
        """The first replace failed: resume the collector, and pause again on the next one."""
        with self._lock:
            pause, self._pause = self._pause, None
        if pause is not None:
            pause.__exit__(None, None, None)


class InformerFIFO(DeltaFIFO):
    """The informer's DeltaFIFO: its first successful ``replace`` starts the initial-sync GC
    pause (see :class:`InitialSyncGC`), and the pause ends (:meth:`InitialSyncGC.done`:
    freeze, free memory released) while the last item of that list is still being popped, so
    :meth:`has_synced` turns true only after it (measured: the free memory is then returned
    before anyone sees the informer synced, 21.3 -> 21.1 KB per cached 7 KB pod); everything
    else is DeltaFIFO's."""

    def __init__(self, initial_gc: InitialSyncGC, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._initial_gc = initial_gc

    def replace(self, objects: Iterable[Any], resource_version: str = "") -> None:
        gcp = self._initial_gc
        if gcp.finished:
            super().replace(objects, resource_version)
            return
        gcp.enter()
        with self._lock:  # nobody sees has_synced() before done() below
            try:
                super().replace(objects, resource_version)
            except BaseException:
                gcp.abort()
                raise
            if self.has_synced():  # an empty list: nothing will be processed
                gcp.done()

    def pop_keyed(self, process: Callable[[str, Deltas, bool], _T]) -> _T:
        gcp = self._initial_gc
        if gcp.finished:
            return super().pop_keyed(process)

        def process_then_end_pause(key: str, deltas: Deltas, is_in_initial_list: bool) -> _T:
            try:
                return process(key, deltas, is_in_initial_list)
            finally:
                # Under the FIFO lock, before the count drops to 0 (has_synced turns true):
                # this was the first list's last item.
                if self._initial_population_count == 1:
                    gcp.done()

        return super().pop_keyed(process_then_end_pause)
