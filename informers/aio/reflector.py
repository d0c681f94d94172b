"""Keeps a store equal to the API server's contents of one resource, in a task: the async
driver of the reflector's rules.

Every decision is :class:`~informers.reflector_rules.ReflectorRules`' (client-go
``tools/cache/reflector.go``), shared with the threaded :class:`~informers.reflector.Reflector`:
the states (``LIST``, ``STREAM``, ``WATCH``, the backoffs) and their transitions are documented
in :mod:`informers.reflector`. This module only does the I/O: it awaits the
:class:`~informers.aio.transport.AsyncListWatch`'s list (paginated by the same
:class:`~informers.list_watch.ListPager` rules) and watch, reads the stream with ``async for``
and feeds each event to the same :class:`~informers.reflector_rules.WatchConsumer`, and waits
backoffs on the rules' clock (``anyio.sleep`` on the real one).

Cancellation: :meth:`AsyncReflector.run` runs until its task is cancelled (it is meant to run in
a task group); a cancelled run closes its open stream and resync task before it ends. The store
is written from the run's task only; it may be a thread-safe store (the informers' RealFIFO).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import anyio

from informers.aio.transport import AsyncWatchStream
from informers.clock import REAL_CLOCK
from informers.errors import WatchDecodeError
from informers.list_watch import ListPager, ListResult
from informers.memory import list_section
from informers.reflector_rules import ReflectorRules, ReflectorState, WatchConsumer

__all__ = ["AsyncReflector"]

logger = logging.getLogger("informers.reflector")


YIELD_EVERY = 8
"""Watch events the reflector's task feeds before it gives the event loop to other tasks (the
threaded listener's ``YIELD_BACKLOG``)."""

YIELD_MAX_BACKLOG = 64
"""A handler this far behind is slow, not starved: the reflector no longer waits for it (the
threaded listener's ``YIELD_MAX_BACKLOG``)."""

YIELD_TRIES = 16
"""Most scheduling points the reflector takes in a row for its handlers to catch up: trio runs
the tasks of a batch in a random order, so one checkpoint does not always let them run."""

class AsyncReflector(ReflectorRules):
    """Lists and watches one resource into ``store`` from a task, by client-go's rules.

    The constructor is :class:`~informers.reflector_rules.ReflectorRules`', the same as the
    threaded :class:`~informers.reflector.Reflector`'s (documented there), with an
    :class:`~informers.aio.transport.AsyncListWatch` (anything with ``async list(options)`` and
    ``async watch(options)`` returning an async-iterable stream with ``aclose()``). Every
    wait goes through ``clock`` (``anyio.sleep`` on the real clock; a FakeClock is waited on in
    a worker thread, so tests step time as for the threaded reflector).

    Contract: one ``run`` at a time; the only writer of ``store`` while it runs. Every
    :data:`YIELD_EVERY` watch events it takes a scheduling point, and more (up to
    :data:`YIELD_TRIES`) while ``handler_backlog()`` (set by the informer: the events queued
    for the slowest subscription) is above 0 and below :data:`YIELD_MAX_BACKLOG`.
    """

    handler_backlog: Callable[[], int] | None = None

    # the driver's state, set per run (class-level defaults: no constructor of its own)
    _stream: AsyncWatchStream | None = None
    _pending: AsyncWatchStream | None = None
    _resync_scope: anyio.CancelScope | None = None
    _resync_error: BaseException | None = None
    _task_group: Any = None

    async def run(self) -> None:
        """List and watch until cancelled; close the open stream and the resync task, then
        let the cancellation through. An unexpected Exception is logged and followed by a
        relist, as in the threaded driver."""
        logger.debug("%s: starting async reflector for %s", self.name, self.type_description)
        state = self.initial_state()
        try:
            async with anyio.create_task_group() as tg:
                self._task_group = tg
                while state is not ReflectorState.STOPPED:
                    try:
                        state = await self.step(state)
                    except Exception as exc:
                        logger.exception("%s: unexpected error in state %s", self.name,
                                         state.name)
                        self._note_error(exc)
                        state = ReflectorState.BACKOFF_RELIST
                tg.cancel_scope.cancel()
        finally:
            self._task_group = None
            self._end_cycle()
            for stream in (self._stream, self._pending):
                if stream is not None:
                    await stream.aclose()
            self._stream = self._pending = None
            logger.debug("%s: stopped async reflector for %s", self.name,
                         self.type_description)

    async def step(self, state: ReflectorState) -> ReflectorState:
        """Do the work of ``state`` once and return the next state."""
        if state is ReflectorState.LIST:
            return await self._step_list()
        if state is ReflectorState.WATCH:
            return await self._step_watch()
        if state is ReflectorState.STREAM:
            return await self._step_stream()
        if state in (ReflectorState.BACKOFF_WATCH, ReflectorState.BACKOFF_STREAM,
                     ReflectorState.BACKOFF_RELIST):
            if state is ReflectorState.BACKOFF_RELIST:
                self._end_cycle()
            await self._sleep(self.backoff_delay())
            return self.after_backoff(state)
        return ReflectorState.STOPPED

    async def _sleep(self, seconds: float) -> None:
        """Wait on the rules' clock: ``anyio.sleep`` on the real clock. Another clock (a
        FakeClock in tests) is waited on by a thread of this wait, polled every millisecond
        and joined before returning (also on cancellation), so no thread outlives it."""
        if self._clock is REAL_CLOCK:
            await anyio.sleep(seconds)
            return
        halt = threading.Event()
        finished = threading.Event()

        def wait() -> None:
            try:
                self._clock.sleep(seconds, halt)
            finally:
                finished.set()

        thread = threading.Thread(target=wait, name=f"reflector-{self.name}-clock-wait",
                                  daemon=True)
        thread.start()
        try:
            while not finished.is_set():
                await anyio.sleep(0.001)
        finally:
            halt.set()
            thread.join()

    # -- list ------------------------------------------------------------------------------------

    async def _list_all(self, rv: str) -> tuple[ListResult, bool]:
        pager = ListPager(_no_sync_list, self._page_size_for(rv))  # driven by alist()
        list_func = self.list_watch.list
        self.metrics.lists_total += 1
        try:
            return await pager.alist(list_func, self.list_options(rv, None))
        except Exception as exc:
            if not self.list_retry_at_latest(rv, exc):
                raise
            return await pager.alist(list_func,
                                     self.list_options(self.relist_resource_version(), None))

    async def _step_list(self) -> ReflectorState:
        rv = self.relist_resource_version()
        with list_section(self.memory_tuning):
            try:
                result, paginated = await self._list_all(rv)
            except Exception as exc:
                return self.list_failed(exc)
            state = self.apply_list(result, rv, paginated)
        if state is ReflectorState.WATCH:
            self._start_cycle()
        return state

    # -- watch -----------------------------------------------------------------------------------

    async def _step_watch(self) -> ReflectorState:
        start = self._clock.now()
        propagate = True
        stream, self._pending = self._pending, None
        if stream is None:
            options, propagate = self.watch_options(None)
            try:
                stream = await self.list_watch.watch(options)
            except Exception as exc:
                return self.watch_open_failed(exc)
        self._stream = stream
        try:
            err = await self._consume(stream, self.consumer(self.store, start, propagate))
        finally:
            self._stream = None
            await stream.aclose()
        resync_error, self._resync_error = self._resync_error, None
        if resync_error is not None:
            self._handle_error(resync_error)
            return ReflectorState.BACKOFF_RELIST
        return self.watch_ended(err)

    async def _consume(self, stream: Any, consumer: WatchConsumer) -> BaseException | None:
        """Feed the stream's events to ``consumer`` until it ends or the consumer says stop;
        the watch's error (``None``: a normal end)."""
        feed = consumer.feed
        it = stream.__aiter__()
        fed = 0
        while True:
            try:
                event = await it.__anext__()
            except StopAsyncIteration:
                break
            except WatchDecodeError as exc:
                consumer.decode_failed(exc)
                return exc
            except Exception as exc:  # the stream broke: a normal end, like EOF
                self.stream_broke(exc)
                break
            if feed(event):
                return consumer.error
            fed += 1
            if fed % YIELD_EVERY:
                await anyio.lowlevel.checkpoint_if_cancelled()
            else:
                # let the handlers' tasks run: a burst read from a full socket buffer never
                # waits, and every update queued for a handler keeps its old object alive
                # beside the cached new one, which has the cyclic GC walk the cache over and
                # over (the threaded ProcessorListener yields for the same reason)
                await anyio.lowlevel.checkpoint()
                backlog = self.handler_backlog
                if backlog is not None:
                    tries = 1
                    while 0 < backlog() < YIELD_MAX_BACKLOG and tries < YIELD_TRIES:
                        await anyio.lowlevel.checkpoint()
                        tries += 1
        return consumer.finish(self._clock.now(), False)

    # -- streaming list --------------------------------------------------------------------------

    async def _step_stream(self) -> ReflectorState:
        options = self.stream_options(None)
        start = self._clock.now()
        try:
            stream = await self.list_watch.watch(options)
        except Exception as exc:
            return self.stream_failed(exc)
        temp = self.temp_store()
        keep = False
        self._stream = stream
        try:
            with list_section(self.memory_tuning):
                consumer = self.consumer(temp, start, False, exit_on_end=True)
                err = await self._consume(stream, consumer)
                if err is None and consumer.end_seen:
                    if not self.apply_stream(temp, consumer.last_rv):
                        return ReflectorState.BACKOFF_RELIST
                    keep = True
        finally:
            self._stream = None
            if not keep:
                await stream.aclose()
        if keep:
            self._pending = stream
            self._start_cycle()
            return ReflectorState.WATCH
        if err is None:
            return self.stream_incomplete()
        return self.stream_failed(err)

    # -- resync ----------------------------------------------------------------------------------

    def _start_cycle(self) -> None:
        if self.resync_period <= 0 or self._resync_scope is not None or self._task_group is None:
            return
        scope = anyio.CancelScope()
        self._resync_scope = scope
        self._task_group.start_soon(self._resync_loop, scope)

    def _end_cycle(self) -> None:
        scope, self._resync_scope = self._resync_scope, None
        if scope is not None:
            scope.cancel()

    async def _resync_loop(self, scope: anyio.CancelScope) -> None:
        with scope:
            while True:
                await self._sleep(self.resync_period)
                exc = self.resync_once()
                if exc is not None:
                    self._resync_error = exc
                    stream = self._stream
                    if stream is not None:
                        await stream.aclose()  # ends the watch; the cycle ends with the error
                    return


def _no_sync_list(options: Any) -> ListResult:
    raise TypeError("the async reflector lists through ListPager.alist()")
