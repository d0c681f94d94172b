"""Waits until caches have synced (client-go ``tools/cache.WaitForCacheSync``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from informers.clock import REAL_CLOCK, Clock
from informers.errors import CacheSyncTimeoutError

__all__ = ["SYNCED_POLL_PERIOD", "wait_for_cache_sync", "wait_for_named_cache_sync"]

logger = logging.getLogger(__name__)

SYNCED_POLL_PERIOD = 0.1
"""Seconds between polls (client-go ``shared_informer.go``: ``syncedPollPeriod``, 100 ms)."""


def wait_for_cache_sync(
    stop_event: threading.Event | None,
    *has_synced_funcs: Callable[[], bool],
    clock: Clock = REAL_CLOCK,
    timeout: float | None = None,
) -> bool:
    """Poll ``has_synced_funcs`` at once and then every 100 ms until all return true (each
    poll asks every function).

    Args:
        stop_event: ends the wait early when set (``None``: never).
        *has_synced_funcs: e.g. ``informer.has_synced`` or ``registration.has_synced``.
        clock: measures the poll period and the timeout.
        timeout: seconds to wait at most (``None``: no limit; client-go has none).

    Returns:
        ``True`` if every function returned true; ``False`` if ``stop_event`` was set first
        (client-go logs "stop requested" and returns false).

    Raises:
        CacheSyncTimeoutError: the timeout passed first. It names the caches that had not
            synced (the ``name`` of a bound method's owner, such as an informer, else the
            function) and their last error (the owner's ``last_sync_error()``, if it has one).
    """
    stop = stop_event if stop_event is not None else threading.Event()
    deadline = None if timeout is None else clock.now() + timeout
    while True:
        pending = [fn for fn in has_synced_funcs if not fn()]
        if not pending:
            return True
        if stop.is_set():
            logger.info("stop requested while waiting for caches to sync")
            return False
        wait = SYNCED_POLL_PERIOD
        if deadline is not None:
            remaining = deadline - clock.now()
            if remaining <= 0:
                raise CacheSyncTimeoutError(
                    {_name_of(fn): _last_error_of(fn) for fn in pending}, timeout or 0.0)
            wait = min(wait, remaining)
        if clock.sleep(wait, stop):
            if all(fn() for fn in pending):
                return True
            logger.info("stop requested while waiting for caches to sync")
            return False


def _name_of(fn: Callable[[], bool]) -> str:
    owner: Any = getattr(fn, "__self__", None)
    name = getattr(owner, "name", None)
    if isinstance(name, str):
        return name
    qualname = getattr(fn, "__qualname__", None)  # a function; else a callable object
    return qualname if isinstance(qualname, str) else type(fn).__qualname__


def _last_error_of(fn: Callable[[], bool]) -> BaseException | None:
    last = getattr(getattr(fn, "__self__", None), "last_sync_error", None)
    if not callable(last):
        return None
    err = last()
    return err if isinstance(err, BaseException) else None


def wait_for_named_cache_sync(
    controller_name: str,
    stop_event: threading.Event | None,
    *has_synced_funcs: Callable[[], bool],
    clock: Clock = REAL_CLOCK,
    timeout: float | None = None,
) -> bool:
    """:func:`wait_for_cache_sync` with client-go's log lines naming the controller.

    Raises:
        CacheSyncTimeoutError: as :func:`wait_for_cache_sync`.
    """
    logger.info('Waiting for caches to sync for "%s"', controller_name)
    try:
        synced = wait_for_cache_sync(stop_event, *has_synced_funcs, clock=clock, timeout=timeout)
    except CacheSyncTimeoutError as err:
        logger.error('unable to sync caches for "%s": %s', controller_name, err)
        raise
    if not synced:
        logger.error('unable to sync caches for "%s"', controller_name)
        return False
    logger.info('Caches are synced for "%s"', controller_name)
    return True
