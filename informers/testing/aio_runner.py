"""Runs an :class:`~informers.aio.manager.AsyncManager` for the length of an ``async with``
block, and waits for what a test expects: the async counterparts of
:func:`informers.testing.runner.run_manager` and :func:`informers.testing.runner.eventually`.

::

    async with run_async_manager(manager):          # started, caches synced
        await anyio.to_thread.run_sync(client.create, website)
        await eventually(lambda: client.get("deployments", "site", ns))
    # stopped and waited for here; an error the manager raised is raised here

:func:`run_async_manager` starts :meth:`AsyncManager.run
<informers.aio.manager.AsyncManager.run>` in a task of its own task group, returns once every
informer of the manager's factory synced (or raises what stopped the manager), and on exit
asks the manager to stop, waits for it (controllers drained, informers stopped, connections
closed) and re-raises the manager's error. A failing reconcile is retried by its controller and
is not an error of the manager. A cancellation of the block cancels the manager at once.

:func:`eventually` awaits ``anyio.sleep`` between tries (other tasks run meanwhile) and fails
with the same message as the threaded one. Both work on asyncio and on trio.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar, overload

import anyio

from informers.testing.runner import (
    DEFAULT_EVENTUALLY_TIMEOUT,
    DEFAULT_SYNC_TIMEOUT,
    failure_text,
    still_failing,
)

__all__ = ["DEFAULT_STOP_TIMEOUT", "eventually", "run_async_manager"]

T = TypeVar("T")

DEFAULT_STOP_TIMEOUT = 45.0
"""Seconds :func:`run_async_manager` waits for the manager to return after asking it to stop:
a controller's ``drain_timeout`` (30 s, controller-runtime's graceful shutdown period), the
informers' handler drain (5 s) and 10 s to spare."""


def _unsynced(manager: Any) -> list[str] | None:
    """The unsynced informers' names, or ``None`` while the factory has not been entered."""
    factory = manager.factory
    if factory.transport is None:
        return None
    return sorted(res.group_resource for res, inf in factory.informers.items()
                  if not inf.has_synced())


@contextlib.asynccontextmanager
async def run_async_manager(manager: Any, *, sync_timeout: float = DEFAULT_SYNC_TIMEOUT,
                            stop_timeout: float = DEFAULT_STOP_TIMEOUT) -> AsyncIterator[Any]:
    """Run ``manager`` (an :class:`~informers.aio.manager.AsyncManager`, not run before) for the
    ``async with`` block.

    Args:
        sync_timeout: seconds to wait for the caches to sync.
        stop_timeout: seconds to wait for the manager at exit.

    Raises:
        TimeoutError: the caches did not sync in time (the manager is stopped first; the message
            names the unsynced informers), or the manager did not return in time (it is then
            cancelled).
        Exception: what the manager's ``run`` raised, at entry if it stopped before syncing,
            else at exit, also when the block raised (then chained from the block's error).
    """
    failure: list[BaseException] = []
    finished = anyio.Event()

    async def target() -> None:
        try:
            await manager.run()
        except Exception as err:
            failure.append(err)
        finally:
            finished.set()

    # Entered and left by hand, as the factory does: the block's own exception must come out
    # as itself, not wrapped in an exception group by the task group.
    group = anyio.create_task_group()
    await group.__aenter__()

    async def stop_and_wait() -> None:
        manager.stop()
        with anyio.move_on_after(stop_timeout) as waited:
            await finished.wait()
        group.cancel_scope.cancel()
        await group.__aexit__(None, None, None)
        if waited.cancelled_caught:
            raise TimeoutError(f"the manager did not stop within {stop_timeout:g}s")

    async def cancel() -> None:
        group.cancel_scope.cancel()
        await group.__aexit__(None, None, None)

    try:
        group.start_soon(target, name="run-async-manager")
        pending: list[str] | None = None
        with anyio.move_on_after(sync_timeout):
            while not finished.is_set():
                pending = _unsynced(manager)
                if pending == []:
                    break
                await anyio.sleep(0.005)
        if pending != [] and not finished.is_set():
            raise TimeoutError(f"the manager's caches did not sync within {sync_timeout:g}s"
                               f" (unsynced: {', '.join(pending or []) or 'none'})")
        if finished.is_set() and failure:
            raise failure[0]
    except anyio.get_cancelled_exc_class():
        await cancel()
        raise
    except BaseException:
        await stop_and_wait()
        raise
    try:
        yield manager
    except anyio.get_cancelled_exc_class():
        await cancel()
        raise
    except BaseException as err:
        await stop_and_wait()
        if failure and failure[0] is not err:
            raise failure[0] from err  # the manager's error explains the block's
        raise
    await stop_and_wait()
    if failure:
        raise failure[0]


@overload
async def eventually(check: Callable[[], Awaitable[T]], *, timeout: float = ...,
                     interval: float = ..., message: str = ...) -> T: ...


@overload
async def eventually(check: Callable[[], T], *, timeout: float = ..., interval: float = ...,
                     message: str = ...) -> T: ...


async def eventually(check: Callable[[], Any], *,
                     timeout: float = DEFAULT_EVENTUALLY_TIMEOUT, interval: float = 0.02,
                     message: str = "") -> Any:
    """Call ``check`` (a function, or an async function awaited) until it returns a truthy
    value without raising ``AssertionError`` (or a :class:`~informers.errors.NotFound`/
    ``LookupError``); return that value. Time is anyio's (``anyio.current_time``).

    Raises:
        AssertionError: still failing after ``timeout`` seconds; the message says how many
            tries over how long, ``message``, and the last error or falsy value (the format of
            :func:`informers.testing.runner.eventually`).
    """
    start = anyio.current_time()
    tries = 0
    last = ""
    while True:
        tries += 1
        try:
            value = check()
            if inspect.isawaitable(value):
                value = await value
        except (AssertionError, LookupError) as err:
            last = failure_text(err)
        else:
            if value:
                return value
            last = f"returned {value!r}"
        if anyio.current_time() - start >= timeout:
            raise still_failing(check, message, tries, timeout, last)
        await anyio.sleep(interval)
