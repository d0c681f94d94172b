"""Keeps a store equal to the API server's contents of one resource by listing and watching.

client-go ``tools/cache/reflector.go``, written as an explicit state machine: :meth:`Reflector.step`
takes the current :class:`ReflectorState`, does one thing (a list, one watch connection, one
backoff wait) and returns the next state. ``run`` is the loop around it. The decisions (which
version, which options, what an event does, which state a failure leads to) are
:class:`~informers.reflector_rules.ReflectorRules`', shared with the async driver
(:mod:`informers.aio.reflector`); this module is the threaded I/O around them. The states:

``LIST``
    Entered at start (unless streaming), after ``BACKOFF_RELIST``, and when a streaming list
    fails. Lists page by page (:class:`~informers.list_watch.ListPager`) at
    :meth:`~Reflector.relist_resource_version` ("0" first, then the last synced version, ""
    only after a list answered 410 Expired/Gone or "too large resource version"; on such an
    answer the list is retried at once at ""), calls ``store.replace(items, rv)`` (never
    per-item adds) and then records ``rv``. Left for ``WATCH`` on success, for
    ``BACKOFF_RELIST`` on error.
``STREAM``
    Only with ``use_watch_list``: the streaming list (``sendInitialEvents=true``). Events go
    into a temporary store until the ``k8s.io/initial-events-end`` bookmark; then
    ``store.replace(temp, bookmark_rv)`` and the same stream is handed to ``WATCH``. Left for
    ``BACKOFF_STREAM`` on connection refused / 429, for ``STREAM`` (at rv "") after 410 or
    "too large", for ``STREAM`` when the stream ended before the bookmark, and for ``LIST``
    (the fallback) on any other error.
``WATCH``
    One watch connection at the last synced version (``allowWatchBookmarks``, randomised
    ``timeoutSeconds``), consumed until it ends. A normal end (server timeout, EOF, dropped or
    timed-out connection) re-enters ``WATCH`` at once, from the last version, without a
    relist. Connection refused and 429 (status or ERROR event) go to ``BACKOFF_WATCH``.
    Everything else -- 410 as status or ERROR event, other errors, a "very short watch"
    (closed within 1 s without events) -- goes to ``BACKOFF_RELIST``; the relist then uses the
    last synced version, not "" (client-go: "LIST call with ResourceVersion=RV already has a
    semantic that it returns data at least as fresh as provided RV").
``BACKOFF_WATCH`` / ``BACKOFF_STREAM`` / ``BACKOFF_RELIST``
    Wait the next :class:`~informers.backoff.Backoff` delay (at least the server's
    ``Retry-After``), then go to ``WATCH``, ``STREAM`` or ``LIST``/``STREAM`` respectively.
    Entering ``BACKOFF_RELIST`` ends a list-and-watch cycle (client-go's ``ListAndWatch``
    returned): client-go waits a backoff step after *every* such return, successful or not.
``STOPPED``
    The reflector was halted; the worker ends.

Threads: the thread that calls ``run(stop)`` only waits for ``stop``: it is the one thread that
waits on the caller's event, so a BaseException that interrupts it (KeyboardInterrupt) leaves
nothing behind. The states run on a worker thread (``reflector-<name>``), which waits only on
the reflector's own events; while watching, a resync thread (``reflector-<name>-resync``) calls
``store.resync()`` every ``resync_period``. When ``run``'s wait ends, it halts the worker in
this order: set the halt event (backoff waits end), cancel the :class:`CancelToken` passed with
every list and watch request (a request waiting for its answer or reading it is aborted), close
the open watch stream, halt the resync thread; then it joins the worker, which joins the resync
thread. So ``run`` returns only when every thread it started has ended, within the time a
store call in progress takes, or at worst a connect timeout (30 s by default) if a connection
is being established (see :mod:`informers.client.transport`). A list or watch function that
ignores its ``cancel`` token delays this until it returns.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from informers.clock import REAL_CLOCK, Clock
from informers.errors import WatchDecodeError
from informers.list_progress import ListProgress
from informers.list_watch import (
    CancelToken,
    ListPager,
    ListResult,
    ListWatch,
    WatchEvent,
    WatchStream,
)
from informers.memory import MemoryTuning, list_section
from informers.reflector_options import (
    DEFAULT_MIN_WATCH_TIMEOUT,
    ReflectorOptions,
)
from informers.reflector_rules import (
    INITIAL_EVENTS_ANNOTATION,
    VERY_SHORT_WATCH,
    ReflectorMetrics,
    ReflectorRules,
    ReflectorState,
    StoreLike,
    default_watch_error_handler,
)

__all__ = [
    "DEFAULT_MIN_WATCH_TIMEOUT",
    "INITIAL_EVENTS_ANNOTATION",
    "VERY_SHORT_WATCH",
    "Reflector",
    "ReflectorMetrics",
    "ReflectorState",
    "StoreLike",
    "default_watch_error_handler",
]

logger = logging.getLogger(__name__)


class Reflector(ReflectorRules):
    """Lists and watches one resource into ``store``, following client-go's rules.

    Contract:

    * **One writer.** The reflector is the only writer of ``store`` while it runs; it calls
      ``replace`` after every (re)list, and ``add``/``update``/``delete(obj)`` for ADDED,
      MODIFIED and DELETED events, in the order the server sent them. Bookmarks never reach
      the store. ``resync()`` is called from the resync thread.
    * **Versions.** :meth:`last_sync_resource_version` is "" before the first sync, then the
      version of the last list or event applied; it never goes back except to restart from a
      list. It is thread-safe.
    * ``run(stop)`` blocks until ``stop`` is set, then stops and joins every thread it
      started (see the module docstring) before it returns. Errors go to
      ``watch_error_handler`` (list-and-watch failures) or the log (watch ends); an
      unexpected Exception is logged and followed by a relist. It raises only a
      BaseException: one interrupting its wait (after the same clean-up), or one that ended
      the worker thread (logged at once, raised when ``stop`` is set).
    * One ``run`` at a time.

    Args:
        list_watch: the ListWatch to use.
        store: see :class:`StoreLike`.
        options: page size, watch timeouts, error handler, backoff, streaming list, read
            timeout: see :class:`~informers.reflector_options.ReflectorOptions` (default: all
            client-go's defaults).
        name: for logs; default the resource's name.
        expected_kind: watch objects with a different ``kind`` are dropped and logged
            (objects without ``kind`` pass). Default ``list_watch.resource.kind``.
        resync_period: seconds between resync checks while watching; ``0`` disables.
        should_resync: asked before each resync; ``None`` means always.
        clock: every wait goes through it (use FakeClock in tests).
        memory_tuning: with ``pause_gc_while_listing``, each list is decoded and stored with
            the cyclic GC paused (:mod:`informers.memory`); ``None`` (default) touches no GC.
        list_item_hook: applied to each listed object as it is decoded (passed to the list
            function as ``ListOptions.item_hook``, applied afterwards to any item still a
            ``dict``, and to each object of a streaming list) and to each ADDED or MODIFIED
            watch object; the store gets what it returns. A compact informer encodes objects
            with it, so that no decoded object waits in its queue. ``None``: none.

    Attributes:
        name: for logs and thread names.
        metrics: :class:`ReflectorMetrics` counters.
        backoff: the :class:`~informers.backoff.Backoff` in use.
        last_backoff: the last delay waited, in seconds (``None`` before any).
    """

    def __init__(
        self,
        list_watch: ListWatch,
        store: StoreLike,
        options: ReflectorOptions | None = None,
        *,
        name: str | None = None,
        expected_kind: str | None = None,
        resync_period: float = 0.0,
        should_resync: Callable[[], bool] | None = None,
        clock: Clock = REAL_CLOCK,
        memory_tuning: MemoryTuning | None = None,
        list_item_hook: Callable[[Any], Any] | None = None,
    ) -> None:
        super().__init__(list_watch, store, options, name=name, expected_kind=expected_kind,
                         resync_period=resync_period, should_resync=should_resync,
                         clock=clock, memory_tuning=memory_tuning,
                         list_item_hook=list_item_hook)
        self._lock = threading.Lock()  # guards the fields below (shared with run()'s thread)
        self._halt = threading.Event()  # set when run() stops the worker
        self._cancel = CancelToken()  # passed with every request; cancelled with _halt
        self._fatal: BaseException | None = None
        self._stream: WatchStream | None = None
        self._cycle_halt: threading.Event | None = None
        self._resync_thread: threading.Thread | None = None
        self._resync_error: BaseException | None = None
        self._pending_stream: tuple[WatchStream, Iterator[WatchEvent]] | None = None

    # -- running ---------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """List and watch until ``stop`` is set; stop and join every thread; return.

        The calling thread only waits for ``stop``; the work runs on a worker thread. See the
        class contract for what it raises.
        """
        if stop.is_set():
            return
        halt = threading.Event()
        cancel = CancelToken()
        with self._lock:
            self._halt = halt
            self._cancel = cancel
            self._fatal = None
        logger.debug("%s: starting reflector for %s (resync %.3gs)", self.name,
                     self.type_description, self.resync_period)
        worker = threading.Thread(target=self._work, args=(halt,), name=f"reflector-{self.name}",
                                  daemon=True)
        try:
            worker.start()
            self._clock.wait_event(stop, None)
        finally:
            self._halt_worker(halt, cancel)
            try:
                worker.join()
            except RuntimeError:  # interrupted before it started: it exits at once
                pass
            logger.debug("%s: stopped reflector for %s", self.name, self.type_description)
        fatal, self._fatal = self._fatal, None
        if fatal is not None:
            raise fatal

    def _work(self, halt: threading.Event) -> None:
        """The worker thread: run the states until halted."""
        state = self.initial_state()
        try:
            while state is not ReflectorState.STOPPED and not halt.is_set():
                try:
                    state = self.step(state)
                except Exception as exc:  # a bug or a misbehaving store/ListWatch: keep going
                    logger.exception("%s: unexpected error in state %s", self.name, state.name)
                    self._note_error(exc)
                    state = ReflectorState.BACKOFF_RELIST
        except BaseException as exc:  # not ours to swallow: run() raises it once stopped
            logger.critical("%s: reflector of %s stopped by %r; it does nothing more until "
                            "stopped", self.name, self.type_description, exc, exc_info=True)
            self._fatal = exc
        finally:
            self._end_cycle()
            with self._lock:
                stream, self._stream = self._stream, None
                pending, self._pending_stream = self._pending_stream, None
            for s in (stream, pending[0] if pending else None):
                if s is not None:
                    s.close()

    def _halt_worker(self, halt: threading.Event, cancel: CancelToken) -> None:
        """Make the worker stop soon: end its waits, abort its request, close its stream."""
        halt.set()
        cancel.cancel()
        with self._lock:
            stream = self._stream
            pending = self._pending_stream
            cycle_halt = self._cycle_halt
        if cycle_halt is not None:
            cycle_halt.set()
        for s in (stream, pending[0] if pending else None):
            if s is not None:
                s.close()

    def step(self, state: ReflectorState) -> ReflectorState:
        """Do the work of ``state`` once and return the next state."""
        if self._halt.is_set():
            return ReflectorState.STOPPED
        if state is ReflectorState.LIST:
            return self._step_list()
        if state is ReflectorState.WATCH:
            return self._step_watch()
        if state is ReflectorState.STREAM:
            return self._step_stream()
        if state in (ReflectorState.BACKOFF_WATCH, ReflectorState.BACKOFF_STREAM,
                     ReflectorState.BACKOFF_RELIST):
            if state is ReflectorState.BACKOFF_RELIST:
                self._end_cycle()
            if self._clock.sleep(self.backoff_delay(), self._halt):
                return ReflectorState.STOPPED
            return self.after_backoff(state)
        return ReflectorState.STOPPED

    # -- list ------------------------------------------------------------------------------------

    def _list_all(self, rv: str) -> tuple[ListResult, bool]:
        progress = ListProgress(self.name, self._clock)
        pager = ListPager(progress.wrap(self.list_watch.list), self._page_size_for(rv))
        self.metrics.lists_total += 1
        try:
            result = pager.list(self.list_options(rv, self._cancel))
        except Exception as exc:
            if not self.list_retry_at_latest(rv, exc):
                raise
            result = pager.list(self.list_options(self.relist_resource_version(),
                                                  self._cancel))
        progress.finish(len(result[0].items))
        return result

    def _step_list(self) -> ReflectorState:
        rv = self.relist_resource_version()
        with list_section(self.memory_tuning):
            try:
                result, paginated = self._list_all(rv)
            except Exception as exc:
                if self._halt.is_set():  # aborted by run() (or failed just as it stopped)
                    return ReflectorState.STOPPED
                return self.list_failed(exc)
            if self._halt.is_set():  # a list that ended as run() stopped is not applied
                return ReflectorState.STOPPED
            state = self.apply_list(result, rv, paginated)
        if state is ReflectorState.WATCH:
            self._start_cycle()
        return state

    # -- watch -----------------------------------------------------------------------------------

    def _set_stream(self, stream: WatchStream | None) -> bool:
        """Register the open stream for run()'s thread; False (and close it) if halted."""
        with self._lock:
            self._stream = stream
        if stream is not None and self._halt.is_set():
            stream.close()
            return False
        return True

    def _step_watch(self) -> ReflectorState:
        with self._lock:
            pending, self._pending_stream = self._pending_stream, None
        start = self._clock.now()
        propagate = True
        if pending is not None:
            stream, it = pending
        else:
            options, propagate = self.watch_options(self._cancel)
            try:
                stream = self.list_watch.watch(options)
            except Exception as exc:
                if self._halt.is_set():
                    return ReflectorState.STOPPED
                return self.watch_open_failed(exc)
            if not self._set_stream(stream):
                return ReflectorState.STOPPED
            it = iter(stream)
        try:
            consumer = self.consumer(self.store, start, propagate)
            err = self._consume(it, consumer)
        finally:
            self._set_stream(None)
            stream.close()
        if self._halt.is_set():
            return ReflectorState.STOPPED
        with self._lock:
            resync_error, self._resync_error = self._resync_error, None
        if resync_error is not None:
            self._handle_error(resync_error)
            return ReflectorState.BACKOFF_RELIST
        return self.watch_ended(err)

    def _consume(self, it: Iterator[WatchEvent], consumer: Any) -> BaseException | None:
        """Feed a stream's events to ``consumer`` (a
        :class:`~informers.reflector_rules.WatchConsumer`) until it ends or the consumer
        says stop; the watch's error (``None``: a normal end)."""
        stop = self._halt
        feed = consumer.feed
        while True:
            try:
                event = next(it)
            except StopIteration:
                break
            except WatchDecodeError as exc:
                consumer.decode_failed(exc)
                return exc
            except Exception as exc:  # the stream broke: a normal end, like EOF
                if not stop.is_set():
                    self.stream_broke(exc)
                break
            if stop.is_set():
                break
            if feed(event):
                return consumer.error
        return consumer.finish(self._clock.now(), stop.is_set())

    # -- streaming list --------------------------------------------------------------------------

    def _step_stream(self) -> ReflectorState:
        options = self.stream_options(self._cancel)
        start = self._clock.now()
        try:
            stream = self.list_watch.watch(options)
        except Exception as exc:
            return self._stream_failed(exc)
        if not self._set_stream(stream):
            return ReflectorState.STOPPED
        temp = self.temp_store()
        keep = False
        it = iter(stream)
        try:
            with list_section(self.memory_tuning):
                consumer = self.consumer(temp, start, False, exit_on_end=True)
                err = self._consume(it, consumer)
                if self._halt.is_set():
                    return ReflectorState.STOPPED
                if err is None and consumer.end_seen:
                    if not self.apply_stream(temp, consumer.last_rv):
                        return ReflectorState.BACKOFF_RELIST
                    keep = True
        finally:
            if not keep:
                self._set_stream(None)
                stream.close()
        if keep:
            with self._lock:
                self._pending_stream = (stream, it)
            self._start_cycle()
            return ReflectorState.WATCH
        if err is None:
            return self.stream_incomplete()
        return self._stream_failed(err)

    def _stream_failed(self, exc: BaseException) -> ReflectorState:
        if self._halt.is_set():
            return ReflectorState.STOPPED
        return self.stream_failed(exc)

    # -- resync ----------------------------------------------------------------------------------

    def _start_cycle(self) -> None:
        """A list succeeded: start the resync timer for this list-and-watch cycle."""
        if self.resync_period <= 0 or self._resync_thread is not None:
            return
        halt = threading.Event()
        thread = threading.Thread(target=self._resync_loop, args=(halt,),
                                  name=f"reflector-{self.name}-resync", daemon=True)
        with self._lock:
            self._cycle_halt = halt
            self._resync_thread = thread
        if self._halt.is_set():
            halt.set()
        thread.start()

    def _end_cycle(self) -> None:
        with self._lock:
            halt, self._cycle_halt = self._cycle_halt, None
            thread, self._resync_thread = self._resync_thread, None
        if halt is not None:
            halt.set()
        if thread is not None:
            thread.join()

    def _resync_loop(self, halt: threading.Event) -> None:
        while not self._clock.sleep(self.resync_period, halt):
            exc = self.resync_once()
            if exc is not None:
                with self._lock:
                    self._resync_error = exc
                    stream = self._stream
                if stream is not None:
                    stream.close()  # ends the watch; the cycle ends with the error
                return
