"""The convergence-under-faults run of tests/test_informer_convergence.py on the async informer
(``informers.aio``), on asyncio and on trio: the same writers, faults (drops, 410, 429, 500,
hangs, black holes, malformed and cut lines, broken-proxy 200s, restarts) and the same checks
(cache equal to the server, handler replays equal to it, per-key watch order)."""

from __future__ import annotations

import os

import pytest
from runtime_drivers import AsyncDriver
from test_informer_convergence import SEED_ENV, SMALL, _seed, run_convergence

ASYNC_SEEDS = 3
"""Seeds per backend (FIXED_SEED, +1, +2)."""


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("offset", range(ASYNC_SEEDS))
def test_async_cache_and_handlers_converge_under_random_faults(backend: str, offset: int) -> None:
    if os.environ.get(SEED_ENV, "").strip() and offset:
        pytest.skip(f"{SEED_ENV} runs its one seed")
    run_convergence(SMALL, _seed() + offset, require_tombstones=False,
                    driver=AsyncDriver(backend))


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_compact_async_cache_and_handlers_converge_under_random_faults(backend: str) -> None:
    """The same run on a compact cache (``compact=True``), one seed per backend."""
    run_convergence(SMALL, _seed(), require_tombstones=False,
                    driver=AsyncDriver(backend, compact=True))
