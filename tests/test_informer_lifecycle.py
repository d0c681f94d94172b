"""Stopped informers free everything, with the opt-in memory tuning on and off.

``MemoryTuning`` ends an informer's first sync with ``gc.freeze()``: every object alive then
moves to the permanent generation, and a reference cycle among frozen objects is never
collected (``gc.collect()`` does not look at them). An informer with a handler that refers
back to it is such a cycle, so a stopped informer must break its cycles itself, or it and its
cache live forever. These tests start and stop informers against the embedded API server and
check, through weak references and the process's own counters (threads, file descriptors,
resident memory), that nothing stays behind.

The GC state is process-wide: each test restores CPython's thresholds and unfreezes what it
froze (``clean_gc``).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import LOOP_THREADS

from informers.client import list_watch_from_client
from informers.factory import SharedInformerFactory
from informers.handlers import ResourceEventHandlerFuncs
from informers.memory import MemoryTuning
from informers.shared_informer import SharedIndexInformer
from informers.testing import ApiServer

WAIT = 10.0
LEAK_BLOCKS_PER_CYCLE = 1_000  # Python memory blocks a start/stop cycle may leave behind
LEAK_BOUND_PER_CYCLE = 5_000_000  # bytes of RSS a start/stop cycle of 2,000 pods may add
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    """Resident bytes of this process (``/proc/self/statm``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def clean_gc() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.collect()
    yield
    gc.unfreeze()
    gc.set_threshold(*saved)
    gc.collect()


def new_pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{i:05d}", "namespace": "default",
                         "labels": {"app": "web", "shard": str(i % 16)},
                         "annotations": {"note": "x" * 800}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "img:1"}]}}


@pytest.fixture(scope="module")
def pods_server() -> Iterator[ApiServer]:
    """An embedded server holding 2,000 pods (about 1 KB of JSON each)."""
    with ApiServer() as srv:
        for i in range(2000):
            srv.create(new_pod(i))
        yield srv


def one_cycle(api: Any, tuning: MemoryTuning | None) -> tuple[weakref.ref[Any], ...]:
    """Start an informer with handlers that refer back to it, wait for its sync, stop it;
    return weak references to the informer and its cache."""
    informer = SharedIndexInformer(list_watch_from_client(api, "pods"), memory_tuning=tuning)
    seen: list[str] = []
    informer.add_event_handler(ResourceEventHandlerFuncs(
        on_add=lambda obj, initial: seen.append(informer.name)))
    informer.add_event_handler(ResourceEventHandlerFuncs(
        on_update=lambda old, new: informer.get_store()), synchronous=True)
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,))
    thread.start()
    try:
        deadline = time.monotonic() + WAIT
        while not (informer.has_synced() and len(seen) == 2000):
            assert time.monotonic() < deadline, "informer did not sync"
            time.sleep(0.005)
    finally:
        stop.set()
        thread.join(WAIT)
    assert not thread.is_alive()
    store = informer.get_store()
    assert len(store.list_keys()) == 2000
    return weakref.ref(informer), weakref.ref(store)


@pytest.mark.slow
def test_stopped_informers_are_freed_with_memory_tuning(pods_server, clean_gc):
    """The issue's measurement: 2,000 pods, 8 start/stop cycles with the tuning on (each cycle
    freezes), handlers referring to the informer. Every stopped informer and its cache are
    gone, without unfreezing (``gc.collect()`` skips frozen objects, so only breaking the
    cycles at stop frees them); Python's allocated memory blocks grow by less than 1,000 and
    resident memory by less than 5 MB a cycle."""
    api = pods_server.api_client()
    tuning = MemoryTuning()
    refs: list[tuple[weakref.ref[Any], ...]] = []
    sizes: list[int] = []
    blocks: list[int] = []
    try:
        for _ in range(8):
            refs.append(one_cycle(api, tuning))
            gc.collect()
            sizes.append(rss())
            blocks.append(sys.getallocatedblocks())
    finally:
        api.close()
    assert gc.get_freeze_count() > 0  # the tuning did freeze
    gc.collect()
    alive = [i for i, cycle in enumerate(refs) if any(ref() is not None for ref in cycle)]
    assert alive == []
    # From the second cycle on (the first fills caches and the allocator's arenas). A cache
    # of these 2,000 pods kept alive adds about 58,000 Python memory blocks and 7-9 MB of
    # RSS a cycle. The block count is exact; RSS also moves with allocator fragmentation, so
    # its bound is looser.
    cycles = len(sizes) - 2
    block_growth = (blocks[-1] - blocks[1]) / cycles
    assert block_growth < LEAK_BLOCKS_PER_CYCLE, f"{block_growth:.0f} blocks a cycle: {blocks}"
    growth = (sizes[-1] - sizes[1]) / cycles
    assert growth < LEAK_BOUND_PER_CYCLE, f"RSS grew {growth / 1e6:.2f} MB a cycle: {sizes}"


HYGIENE_CYCLES = 1000
HYGIENE_WARMUP = 20  # cycles before the baseline: pools, caches and arenas fill up first
HYGIENE_RSS_BOUND = 10_000_000  # bytes over the 1,000 cycles: 10 KB a cycle
HYGIENE_FD_SLACK = 4
HYGIENE_BLOCKS_BOUND = 100_000  # Python memory blocks over the 1,000 cycles: 100 a cycle
# (the embedded server, in this process, keeps a log of every request: about 30 a cycle)


@pytest.fixture(scope="module")
def small_server() -> Iterator[ApiServer]:
    with ApiServer() as srv:
        for i in range(5):
            srv.create(new_pod(i))
        yield srv


def library_threads() -> list[str]:
    """Every thread but the embedded server's own (one per client connection)."""
    return sorted(t.name for t in threading.enumerate()
                  if not t.name.startswith(("informers-testing-apiserver", *LOOP_THREADS)))


def factory_cycle(api: Any, tuning: MemoryTuning | None) -> None:
    factory = SharedInformerFactory(api, memory_tuning=tuning)
    informer = factory.core().v1().pods().informer()
    added: list[Any] = []
    informer.add_event_handler(ResourceEventHandlerFuncs(
        on_add=lambda obj: added.append((factory, informer))))
    factory.start()
    try:
        # (not wait_for_cache_sync: its 100 ms poll period, client-go's, would be most of a cycle)
        deadline = time.monotonic() + WAIT
        while not (informer.has_synced() and len(added) == 5):
            assert time.monotonic() < deadline, "factory did not sync"
            time.sleep(0.0005)
    finally:
        factory.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("tuning", [None, MemoryTuning()], ids=["untuned", "tuned"])
def test_factory_start_stop_cycles_leave_nothing_behind(small_server, clean_gc, tuning):
    """The issue's hygiene test: 1,000 start/stop cycles of a factory with a handler that
    refers to the factory and the informer. After them the process has the same threads and
    the same open file descriptors as before (give or take 4 pooled connections), less than
    100,000 more Python memory blocks (100 a cycle) and less than 10 MB more resident memory
    (10 KB a cycle). A stopped factory kept alive costs about 350 blocks and 30 KB a
    cycle."""
    api = small_server.api_client()
    try:
        for _ in range(HYGIENE_WARMUP):
            factory_cycle(api, tuning)
        gc.collect()
        threads, fds, rss0, blocks0 = library_threads(), open_fds(), rss(), sys.getallocatedblocks()
        for _ in range(HYGIENE_CYCLES):
            factory_cycle(api, tuning)
        gc.collect()
        assert library_threads() == threads
        # Pooled keep-alive connections (the client's and, in this process, the server's
        # ends) come and go by a few; one leaked per cycle would be a thousand.
        assert open_fds() <= fds + HYGIENE_FD_SLACK
        blocks = sys.getallocatedblocks() - blocks0
        assert blocks < HYGIENE_BLOCKS_BOUND, f"{blocks} more Python memory blocks"
        growth = rss() - rss0
        assert growth < HYGIENE_RSS_BOUND, f"RSS grew {growth / 1e6:.1f} MB"
    finally:
        api.close()
