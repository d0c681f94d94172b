"""Keeps a store equal to the API server's contents of one resource by listing and watching.

client-go ``tools/cache/reflector.go``, written as an explicit state machine: :meth:`Reflector.step`
takes the current :class:`ReflectorState`, does one thing (a list, one watch connection, one
backoff wait) and returns the next state. ``run`` is the loop around it. The states:

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

import enum
import logging
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from informers.backoff import Backoff
from informers.clock import REAL_CLOCK, Clock
from informers.errors import (
    ListError,
    StatusError,
    VeryShortWatchError,
    WatchDecodeError,
    is_connection_refused,
    is_expired,
    is_too_large_resource_version,
    is_too_many_requests,
)
from informers.keys import deletion_handling_meta_namespace_key_func
from informers.list_progress import ListProgress
from informers.list_watch import (
    DEFAULT_PAGE_SIZE,
    CancelToken,
    ListOptions,
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

__all__ = [
    "DEFAULT_MIN_WATCH_TIMEOUT",
    "INITIAL_EVENTS_ANNOTATION",
    "Reflector",
    "ReflectorMetrics",
    "ReflectorState",
    "StoreLike",
    "default_watch_error_handler",
]

logger = logging.getLogger(__name__)

INITIAL_EVENTS_ANNOTATION = "k8s.io/initial-events-end"
"""metav1 ``InitialEventsAnnotationKey``: marks the bookmark that ends a streaming list."""

VERY_SHORT_WATCH = 1.0
"""client-go reflector.go ``handleAnyWatch``: a watch that ends within 1 s with no event is an
error."""


class StoreLike(Protocol):
    """What the reflector writes to: a DeltaFIFO, an Indexer or an UndeltaStore."""

    def add(self, obj: Any) -> None: ...

    def update(self, obj: Any) -> None: ...

    def delete(self, obj: Any) -> None: ...

    def replace(self, objects: list[Any], resource_version: str) -> None: ...

    def resync(self) -> None: ...


class ReflectorState(enum.Enum):
    """The states of :meth:`Reflector.step` (see the module docstring)."""

    LIST = "list"
    STREAM = "stream"
    WATCH = "watch"
    BACKOFF_WATCH = "backoff_watch"
    BACKOFF_STREAM = "backoff_stream"
    BACKOFF_RELIST = "backoff_relist"
    STOPPED = "stopped"


@dataclass
class ReflectorMetrics:
    """Counters of one reflector, written by its thread only (reads may be a moment stale).

    ``lists_total`` counts list operations (a paginated list is one; the immediate retry at
    "" after a 410 is another), ``watches_total`` watch requests (streaming ones included),
    ``events_total`` the watch events read from streams, except ERROR events and those
    skipped for a wrong kind or a non-object.
    """

    lists_total: int = 0
    list_errors_total: int = 0
    watches_total: int = 0
    watch_errors_total: int = 0
    events_total: int = 0
    last_error: BaseException | None = None


def default_watch_error_handler(reflector: Reflector, err: BaseException) -> None:
    """Log a list-and-watch failure (client-go ``DefaultWatchErrorHandler``).

    410 Expired/Gone is routine after a disconnect: logged at debug (also inside a
    :class:`~informers.errors.ListError`, as ``isExpiredError`` sees through Go's ``%w``).
    Anything else at error, "<name>: Failed to watch <type>: <err>"; a failed list reads
    "Failed to watch Pod: failed to list Pod: <err>", as client-go logs it.
    """
    if is_expired(err):
        logger.debug("%s: watch of %s closed with: %s", reflector.name,
                     reflector.type_description, err)
    else:
        logger.error("%s: Failed to watch %s: %s", reflector.name,
                     reflector.type_description, err)


class _TempStore:
    """The streaming list's temporary store: key -> object, insertion-ordered, one thread.
    Each object is kept as ``hook`` returns it (the reflector's ``list_item_hook``)."""

    def __init__(self, hook: Callable[[Any], Any] | None = None) -> None:
        self.items: dict[str, Any] = {}
        self._hook = hook

    def add(self, obj: Any) -> None:
        key = deletion_handling_meta_namespace_key_func(obj)
        self.items[key] = obj if self._hook is None else self._hook(obj)

    update = add

    def delete(self, obj: Any) -> None:
        self.items.pop(deletion_handling_meta_namespace_key_func(obj), None)


class Reflector:
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
        resource = getattr(list_watch, "resource", None)
        self.list_item_hook = list_item_hook
        self.list_watch = list_watch
        self.store = store
        self.name = name or (str(resource) if resource is not None else "reflector")
        if expected_kind is None and resource is not None and resource.kind:
            expected_kind = resource.kind
        self.expected_kind = expected_kind
        self.type_description = expected_kind or (str(resource) if resource else "<unspecified>")
        self.resync_period = resync_period
        self.should_resync = should_resync
        opts = options if options is not None else ReflectorOptions()
        self.options = opts
        self.page_size = opts.page_size or 0
        self.min_watch_timeout = max(opts.min_watch_timeout, DEFAULT_MIN_WATCH_TIMEOUT)
        self.max_watch_timeout = 2 * self.min_watch_timeout
        self.watch_error_handler = opts.watch_error_handler or default_watch_error_handler
        self.use_watch_list = opts.use_watch_list
        self.read_timeout = opts.read_timeout
        self.memory_tuning = memory_tuning
        self.metrics = ReflectorMetrics()
        self._clock = clock
        self._rng = opts.rng if opts.rng is not None else random.Random()
        self.backoff = (opts.backoff if opts.backoff is not None
                        else Backoff(clock=clock, rng=self._rng))
        self._update_rv_hook = getattr(store, "update_resource_version", None)
        self._bookmark_hook = getattr(store, "bookmark", None)

        self._rv_lock = threading.Lock()
        self._last_sync_rv = ""
        self._rv_unavailable = False
        self._paginated_result = False

        self._lock = threading.Lock()  # guards the fields below (shared with run()'s thread)
        self._halt = threading.Event()  # set when run() stops the worker
        self._cancel = CancelToken()  # passed with every request; cancelled with _halt
        self._fatal: BaseException | None = None
        self._stream: WatchStream | None = None
        self._cycle_halt: threading.Event | None = None
        self._resync_thread: threading.Thread | None = None
        self._resync_error: BaseException | None = None
        self._pending_stream: tuple[WatchStream, Iterator[WatchEvent]] | None = None
        self._retry_after: float | None = None
        self.last_backoff: float | None = None

    # -- versions --------------------------------------------------------------------------------

    def last_sync_resource_version(self) -> str:
        """The version of the last list or event applied; "" before the first sync."""
        with self._rv_lock:
            return self._last_sync_rv

    def _set_last_sync_rv(self, rv: str) -> None:
        with self._rv_lock:
            self._last_sync_rv = rv

    def relist_resource_version(self) -> str:
        """The version the next list asks for (client-go ``relistResourceVersion``).

        "" (a consistent read) while the last list answered 410 or "too large"; "0" (served
        from the watch cache) before the first sync; else the last synced version, so the
        cache never goes back in time.
        """
        with self._rv_lock:
            if self._rv_unavailable:
                return ""
            return self._last_sync_rv or "0"

    def _rewatch_resource_version(self) -> str:
        with self._rv_lock:
            return "" if self._rv_unavailable else self._last_sync_rv

    def _set_rv_unavailable(self, value: bool) -> None:
        with self._rv_lock:
            self._rv_unavailable = value

    def _watch_timeout(self) -> int:
        lo, hi = self.min_watch_timeout, self.max_watch_timeout
        return int(lo + self._rng.random() * (hi - lo))

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
        state = ReflectorState.STREAM if self.use_watch_list else ReflectorState.LIST
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
        if state is ReflectorState.BACKOFF_WATCH:
            return self._wait_backoff(ReflectorState.WATCH)
        if state is ReflectorState.BACKOFF_STREAM:
            return self._wait_backoff(ReflectorState.STREAM)
        if state is ReflectorState.BACKOFF_RELIST:
            self._end_cycle()
            nxt = ReflectorState.STREAM if self.use_watch_list else ReflectorState.LIST
            return self._wait_backoff(nxt)
        return ReflectorState.STOPPED

    def _wait_backoff(self, nxt: ReflectorState) -> ReflectorState:
        delay = self.backoff.step()
        retry_after, self._retry_after = self._retry_after, None
        if retry_after is not None and retry_after > delay:
            delay = retry_after
        self.last_backoff = delay
        if self._clock.sleep(delay, self._halt):
            return ReflectorState.STOPPED
        return nxt

    def _note_error(self, exc: BaseException) -> None:
        self.metrics.last_error = exc
        cause = exc.err if isinstance(exc, ListError) else exc
        retry_after = getattr(cause, "retry_after", None)
        if isinstance(retry_after, (int, float)):
            self._retry_after = float(retry_after)

    def _handle_error(self, exc: BaseException) -> None:
        """A list-and-watch failure: record it and call the watch error handler."""
        self._note_error(exc)
        try:
            self.watch_error_handler(self, exc)
        except Exception:
            logger.exception("%s: watch error handler failed", self.name)

    # -- list ------------------------------------------------------------------------------------

    def _page_size_for(self, rv: str) -> int:
        # client-go reflector.go list(): explicit page size, else keep paginating if the
        # initial list was paginated, else unpaginated for rv other than ""/"0" (so the watch
        # cache can serve it), else the pager's default 500.
        if self.page_size:
            return self.page_size
        if self._paginated_result:
            return DEFAULT_PAGE_SIZE
        if rv not in ("", "0"):
            return 0
        return DEFAULT_PAGE_SIZE

    def _list_all(self, rv: str) -> tuple[ListResult, bool]:
        progress = ListProgress(self.name, self._clock)
        pager = ListPager(progress.wrap(self.list_watch.list), self._page_size_for(rv))
        result = self._list_pages(pager, rv)
        progress.finish(len(result[0].items))
        return result

    def _list_pages(self, pager: ListPager, rv: str) -> tuple[ListResult, bool]:
        self.metrics.lists_total += 1
        hook = self.list_item_hook
        try:
            return pager.list(ListOptions(resource_version=rv or None, cancel=self._cancel,
                                          item_hook=hook))
        except Exception as exc:
            if not (is_expired(exc) or is_too_large_resource_version(exc)):
                raise
            logger.info("%s: list at rv=%r answered %s; listing again at the latest version",
                        self.name, rv, exc)
            self._set_rv_unavailable(True)
            self.metrics.lists_total += 1
            return pager.list(ListOptions(resource_version=self.relist_resource_version() or None,
                                          cancel=self._cancel, item_hook=hook))

    def _step_list(self) -> ReflectorState:
        rv = self.relist_resource_version()
        with list_section(self.memory_tuning):
            try:
                result, paginated = self._list_all(rv)
            except Exception as exc:
                if self._halt.is_set():  # aborted by run() (or failed just as it stopped)
                    return ReflectorState.STOPPED
                self.metrics.list_errors_total += 1
                # reflector.go list: "failed to list %v: %w", logged as "Failed to watch"
                self._handle_error(ListError(self.type_description, exc))
                return ReflectorState.BACKOFF_RELIST
            if self._halt.is_set():  # a list that ended as run() stopped is not applied
                return ReflectorState.STOPPED
            if rv == "0" and paginated:
                self._paginated_result = True
            self._set_rv_unavailable(False)
            hook = self.list_item_hook
            if hook is not None:  # for a list function that ignored the hook
                items = result.items
                for i, item in enumerate(items):
                    if item.__class__ is dict:
                        items[i] = hook(item)
            try:
                self.store.replace(result.items, result.resource_version)
            except Exception as exc:
                self._handle_error(exc)
                return ReflectorState.BACKOFF_RELIST
            self._set_last_sync_rv(result.resource_version)
            count = len(result.items)
        logger.debug("%s: listed %d %s at rv=%s", self.name, count, self.type_description,
                     self.last_sync_resource_version())
        self._start_cycle()
        return ReflectorState.WATCH

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
            rv = self.last_sync_resource_version()
            options = ListOptions(
                resource_version=rv or None,
                timeout_seconds=self._watch_timeout(),
                allow_watch_bookmarks=True,
                read_timeout=self.read_timeout,
                cancel=self._cancel,
            )
            # A watch from ""/"0" starts with synthetic ADDED events in no version order:
            # do not move the version until another kind of event arrives (client-go v0.36).
            propagate = rv not in ("", "0")
            self.metrics.watches_total += 1
            try:
                stream = self.list_watch.watch(options)
            except Exception as exc:
                if self._halt.is_set():
                    return ReflectorState.STOPPED
                self.metrics.watch_errors_total += 1
                if is_connection_refused(exc) or is_too_many_requests(exc):
                    logger.info("%s: watch failed (%s); backing off", self.name, exc)
                    self._note_error(exc)
                    return ReflectorState.BACKOFF_WATCH
                self._handle_error(exc)
                return ReflectorState.BACKOFF_RELIST
            if not self._set_stream(stream):
                return ReflectorState.STOPPED
            it = iter(stream)
        try:
            err, _, _ = self._consume(it, start, propagate, self.store, exit_on_end=False)
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
        if err is None:
            return ReflectorState.WATCH  # normal end: resume from the last version
        self.metrics.watch_errors_total += 1
        self._note_error(err)
        if is_expired(err):
            logger.debug("%s: watch of %s closed: %s", self.name, self.type_description, err)
        elif is_too_many_requests(err):
            logger.info("%s: watch returned 429; backing off", self.name)
            return ReflectorState.BACKOFF_WATCH
        else:
            logger.warning("%s: watch of %s ended with: %s", self.name,
                           self.type_description, err)
        return ReflectorState.BACKOFF_RELIST

    def _consume(
        self,
        it: Iterator[WatchEvent],
        start: float,
        propagate: bool,
        store: Any,
        exit_on_end: bool,
    ) -> tuple[BaseException | None, bool, str]:
        """Apply a stream's events to ``store`` until it ends (client-go ``handleAnyWatch``).

        Returns ``(error, initial_events_end_seen, last_rv_seen)``. ``error`` is the ERROR
        event's StatusError, the WatchDecodeError the stream raised (a decode failure ends the
        watch, as apimachinery's ``StreamWatcher`` does) or a VeryShortWatchError; ``None`` for
        a normal end. With
        ``exit_on_end`` it returns as soon as the initial-events-end bookmark arrives, leaving
        the stream open. Versions go to the reflector only when ``store`` is its own store.
        """
        own = store is self.store
        add, update, delete = store.add, store.update, store.delete
        hook = self.list_item_hook if own else None  # a temporary store applies its own
        expected_kind = self.expected_kind
        stop = self._halt
        besides_added = False
        end_seen = False
        last_rv = ""
        count = 0
        while True:
            try:
                event = next(it)
            except StopIteration:
                break
            except WatchDecodeError as exc:
                # apimachinery StreamWatcher: a decode failure ends the watch with an error
                # (the relist then restores what the lost event changed).
                self.metrics.events_total += count
                return exc, end_seen, last_rv
            except Exception as exc:  # the stream broke: a normal end, like EOF
                if not stop.is_set():
                    logger.info("%s: watch stream of %s failed: %s", self.name,
                                self.type_description, exc)
                break
            if stop.is_set():
                break
            etype = event.type
            obj = event.object
            if etype == "ERROR":
                self.metrics.events_total += count
                return StatusError(obj if isinstance(obj, dict) else {}), end_seen, last_rv
            if not isinstance(obj, dict):
                logger.error("%s: unable to understand watch event %s: object is a %s",
                             self.name, etype, type(obj).__name__)
                continue
            if expected_kind:
                kind = obj.get("kind")
                if kind and kind != expected_kind:
                    logger.error("%s: unexpected watch event object kind %r (expected %r)",
                                 self.name, kind, expected_kind)
                    continue
            meta = obj.get("metadata")
            rv = meta.get("resourceVersion", "") if isinstance(meta, dict) else ""
            try:
                if etype == "ADDED":
                    add(obj if hook is None else hook(obj))
                elif etype == "MODIFIED":
                    besides_added = True
                    update(obj if hook is None else hook(obj))
                elif etype == "DELETED":
                    besides_added = True
                    delete(obj)
                elif etype == "BOOKMARK":
                    besides_added = True
                    annotations = meta.get("annotations") if isinstance(meta, dict) else None
                    if (isinstance(annotations, dict)
                            and annotations.get(INITIAL_EVENTS_ANNOTATION) == "true"):
                        end_seen = True
                    if own and self._bookmark_hook is not None:
                        self._bookmark_hook(rv)
                else:
                    logger.error("%s: unknown watch event type %r", self.name, etype)
            except Exception:
                logger.exception("%s: unable to apply watch event %s of %s", self.name, etype,
                                 _key_of(obj))
            if rv and (propagate or besides_added):
                last_rv = rv
                if own:
                    self._set_last_sync_rv(rv)
                    if self._update_rv_hook is not None:
                        self._update_rv_hook(rv)
            count += 1
            if exit_on_end and end_seen:
                self.metrics.events_total += count
                return None, True, last_rv
        self.metrics.events_total += count
        if stop.is_set():
            return None, end_seen, last_rv
        if count == 0 and self._clock.now() - start < VERY_SHORT_WATCH:
            return VeryShortWatchError(self.name), end_seen, last_rv
        return None, end_seen, last_rv

    # -- streaming list --------------------------------------------------------------------------

    def _step_stream(self) -> ReflectorState:
        rv = self._rewatch_resource_version()
        options = ListOptions(
            resource_version=rv or None,
            resource_version_match="NotOlderThan",
            send_initial_events=True,
            allow_watch_bookmarks=True,
            timeout_seconds=self._watch_timeout(),
            read_timeout=self.read_timeout,
            cancel=self._cancel,
        )
        start = self._clock.now()
        self.metrics.watches_total += 1
        try:
            stream = self.list_watch.watch(options)
        except Exception as exc:
            return self._stream_failed(exc)
        if not self._set_stream(stream):
            return ReflectorState.STOPPED
        temp = _TempStore(self.list_item_hook)
        keep = False
        it = iter(stream)
        try:
            with list_section(self.memory_tuning):
                err, end_seen, bookmark_rv = self._consume(it, start, False, temp,
                                                           exit_on_end=True)
                if self._halt.is_set():
                    return ReflectorState.STOPPED
                if err is None and end_seen:
                    self._set_rv_unavailable(False)
                    try:
                        self.store.replace(list(temp.items.values()), bookmark_rv)
                    except Exception as exc:
                        self._handle_error(exc)
                        return ReflectorState.BACKOFF_RELIST
                    self._set_last_sync_rv(bookmark_rv)
                    keep = True
        finally:
            if not keep:
                self._set_stream(None)
                stream.close()
        if keep:
            logger.debug("%s: streamed %d %s at rv=%s", self.name, len(temp.items),
                         self.type_description, bookmark_rv)
            with self._lock:
                self._pending_stream = (stream, it)
            self._start_cycle()
            return ReflectorState.WATCH
        if err is None:
            logger.info("%s: stream ended before the initial-events-end bookmark; retrying",
                        self.name)
            return ReflectorState.STREAM
        return self._stream_failed(err)

    def _stream_failed(self, exc: BaseException) -> ReflectorState:
        if self._halt.is_set():
            return ReflectorState.STOPPED
        self.metrics.watch_errors_total += 1
        self._note_error(exc)
        if is_connection_refused(exc) or is_too_many_requests(exc):
            logger.info("%s: watch-list failed (%s); backing off", self.name, exc)
            return ReflectorState.BACKOFF_STREAM
        if is_expired(exc) or is_too_large_resource_version(exc):
            self._set_rv_unavailable(True)
            return ReflectorState.STREAM
        logger.info("%s: data couldn't be fetched in watch-list mode (%s); falling back to a "
                    "regular list", self.name, exc)
        return ReflectorState.LIST

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
            if self.should_resync is not None and not self.should_resync():
                continue
            logger.debug("%s: forcing resync", self.name)
            try:
                self.store.resync()
            except Exception as exc:
                logger.error("%s: resync failed: %s", self.name, exc)
                with self._lock:
                    self._resync_error = exc
                    stream = self._stream
                if stream is not None:
                    stream.close()  # ends the watch; the cycle ends with the error
                return


def _key_of(obj: Any) -> str:
    try:
        return deletion_handling_meta_namespace_key_func(obj)
    except Exception:
        return "<no key>"
