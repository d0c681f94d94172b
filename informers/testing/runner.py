"""Runs a Manager for the length of a ``with`` block, and waits for what a test expects
(kopf's ``KopfRunner``, controller-runtime's envtest pattern of ``go mgr.Start(ctx)``).

::

    with run_manager(manager):                     # started, caches synced
        client.create(website)
        eventually(lambda: client.get("deployments", "site", ns))
    # stopped and joined here; an error the manager raised is raised here

:func:`run_manager` starts :meth:`Manager.start <informers.manager.Manager.start>` on a
thread, returns once the caches synced (or raises what stopped it), and on exit sets the stop
event, joins the thread and re-raises the manager's error (a failing reconcile is retried by
its controller and is not an error of the manager). :func:`eventually` retries an assertion
until it holds, then fails with the last error and how long it tried.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["DEFAULT_EVENTUALLY_TIMEOUT", "DEFAULT_SYNC_TIMEOUT", "eventually", "run_manager"]

T = TypeVar("T")

DEFAULT_SYNC_TIMEOUT = 10.0
"""Seconds :func:`run_manager` waits for the caches to sync."""

DEFAULT_EVENTUALLY_TIMEOUT = 5.0
"""Seconds :func:`eventually` keeps trying (Gomega's ``Eventually`` default is 1 s; API
round trips through informers on a loaded machine need more)."""


@contextlib.contextmanager
def run_manager(manager: Any, *, sync_timeout: float = DEFAULT_SYNC_TIMEOUT,
                stop_timeout: float | None = None) -> Iterator[Any]:
    """Run ``manager`` (a :class:`~informers.manager.Manager`) for the ``with`` block.

    The same manager may be run by several ``with`` blocks, one after the other: each one
    restarts it (fresh caches, queues and workers; see the Manager's "Restart").

    Args:
        sync_timeout: seconds to wait for the caches to sync.
        stop_timeout: seconds to wait for the manager's thread at exit (default: the
            manager's ``shutdown_timeout`` plus 5).

    Raises:
        TimeoutError: the caches did not sync in time (the manager is stopped first), or the
            manager did not stop in time.
        BaseException: what the manager's ``start`` raised (leadership lost, a runnable's
            error), at entry if it stopped before syncing, else at exit, also when the block
            raised (then chained from the block's error).
    """
    stop = threading.Event()
    failure: list[BaseException] = []

    def target() -> None:
        try:
            manager.start(stop)
        except BaseException as err:
            failure.append(err)

    thread = threading.Thread(target=target, name="run-manager", daemon=True)
    thread.start()
    deadline = time.monotonic() + sync_timeout
    # First until start() has begun (a manager run before still answers caches_synced()
    # from its last run until then), then until the caches synced.
    while not manager.running() and thread.is_alive():
        time.sleep(0.001)
    while not manager.caches_synced() and thread.is_alive():
        if time.monotonic() >= deadline:
            break
        time.sleep(0.01)

    def stop_and_join() -> None:
        stop.set()
        wait = stop_timeout if stop_timeout is not None else (
            float(getattr(manager, "shutdown_timeout", 30.0)) + 5.0)
        thread.join(wait)
        if thread.is_alive():
            raise TimeoutError(f"the manager did not stop within {wait:g}s")

    try:
        if not manager.caches_synced():
            if thread.is_alive():
                factory = getattr(manager, "factory", None)
                pending = sorted(
                    name for name, inf in (factory.informers() if factory else {}).items()
                    if not inf.has_synced())
                raise TimeoutError(f"the manager's caches did not sync within {sync_timeout:g}s"
                                   f" (unsynced: {', '.join(pending) or 'none'})")
            if failure:
                raise failure[0]
        yield manager
    except BaseException as err:
        stop_and_join()
        if failure and failure[0] is not err:
            raise failure[0] from err  # the manager's error explains the block's
        raise
    stop_and_join()
    if failure:
        raise failure[0]


def eventually(check: Callable[[], T], *, timeout: float = DEFAULT_EVENTUALLY_TIMEOUT,
               interval: float = 0.02, message: str = "") -> T:
    """Call ``check`` until it returns a truthy value without raising ``AssertionError`` (or a
    :class:`~informers.errors.NotFound`/``LookupError``); return that value.

    Raises:
        AssertionError: still failing after ``timeout`` seconds; the message says how many
            tries over how long, ``message``, and the last error or falsy value.
    """
    start = time.monotonic()
    tries = 0
    last: str = ""
    while True:
        tries += 1
        try:
            value = check()
        except (AssertionError, LookupError) as err:
            last = failure_text(err)
        else:
            if value:
                return value
            last = f"returned {value!r}"
        if time.monotonic() - start >= timeout:
            raise still_failing(check, message, tries, timeout, last)
        time.sleep(interval)


def failure_text(err: BaseException) -> str:
    """How :func:`eventually` (and the async one) reports a check's last error."""
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def still_failing(check: Callable[..., Any], message: str, tries: int, timeout: float,
                  last: str) -> AssertionError:
    """The error :func:`eventually` (and the async one) raises when it gives up."""
    what = getattr(check, "__qualname__", repr(check))
    return AssertionError(f"{message + ': ' if message else ''}{what} still failing after "
                          f"{tries} tries over {timeout:g}s; last: {last}")
