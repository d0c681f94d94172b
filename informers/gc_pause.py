"""Pauses Python's cyclic garbage collector while a large list is decoded and stored.

Why: decoding a LIST creates millions of container objects (every pod is a tree of dicts and
lists) that all stay alive, because the cache keeps them. Each generation-0 collection
triggered on the way re-traverses the young part of that growing graph, and each full
collection the whole graph. Measured on the project's machines
(reference/perf-anchors.md section 2): a 10,000-pod list (73 MB) decodes with orjson in
~0.7 s with the collector paused and ~2.4 s with it running, i.e. about 3x; keeping the
objects is what makes the collector expensive. None of those objects can be cyclic garbage
(JSON decodes to trees), so pausing the collector loses nothing; reference counting still
frees everything that is dropped.

The pause is process-wide (``gc.disable`` is global), so it is reference-counted: several
reflectors may list at once, and the collector is re-enabled only when the last of them
leaves, and only if it was enabled when the first one entered (a program that disabled the
collector itself keeps it disabled).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["gc_pause_depth", "gc_paused", "release_free_memory"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic GC for the duration of the ``with`` block. Thread-safe, re-entrant.

    The first entry (process-wide) records whether the collector was enabled and disables it;
    the last exit restores that state. Nested and concurrent uses only count.

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

    Decoding a large list leaves megabytes of freed response buffers and dropped members
    (``managedFields``) in the C allocator's arenas, where they count in the process's resident
    memory until reused. The informer calls this once after its initial cache is built (with
    ``gc_freeze``, the same knob): measured 21.3 -> 21.05 KB per cached 7 KB pod
    (``benchmarks/bench_informer.py``). Process-wide but harmless: only free memory is returned.
    A no-op returning ``False`` where the C library has no ``malloc_trim`` (musl, macOS).
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
