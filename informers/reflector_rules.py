"""The reflector's rules without its I/O: one set of decisions for the threaded
:class:`~informers.reflector.Reflector` and the async :class:`informers.aio.AsyncReflector`.

client-go ``tools/cache/reflector.go`` decides, at every step of list-and-watch, which version
to ask for, how to page, how long a watch may last, what an event does to the store, and which
state a failure leads to. :class:`ReflectorRules` holds those decisions and the reflector's
bookkeeping (versions, metrics, backoff); it never sends a request, reads a socket, sleeps or
starts a thread. A driver owns the I/O: it asks the rules for the options of the next request,
makes it in its own way (a thread blocking on urllib3, a task awaiting httpx), hands the outcome
back and gets the next :class:`ReflectorState`. :class:`WatchConsumer` applies one stream's
events to a store, one event at a time, however the events arrive.

The states and their transitions are documented in :mod:`informers.reflector`.

Thread safety: one driver runs the rules at a time;
:meth:`ReflectorRules.last_sync_resource_version` may be read from any thread. Log records go
to the ``informers.reflector`` logger, whichever driver runs.
"""

from __future__ import annotations

import enum
import logging
import random
import threading
from collections.abc import Callable
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
from informers.list_watch import (
    DEFAULT_PAGE_SIZE,
    CancelToken,
    ListOptions,
    ListResult,
    WatchEvent,
)
from informers.memory import MemoryTuning
from informers.reflector_options import DEFAULT_MIN_WATCH_TIMEOUT, ReflectorOptions

__all__ = [
    "INITIAL_EVENTS_ANNOTATION",
    "VERY_SHORT_WATCH",
    "ReflectorMetrics",
    "ReflectorRules",
    "ReflectorState",
    "StoreLike",
    "TempStore",
    "WatchConsumer",
    "default_watch_error_handler",
]

logger = logging.getLogger("informers.reflector")

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
    """The states of a reflector (see :mod:`informers.reflector`)."""

    LIST = "list"
    STREAM = "stream"
    WATCH = "watch"
    BACKOFF_WATCH = "backoff_watch"
    BACKOFF_STREAM = "backoff_stream"
    BACKOFF_RELIST = "backoff_relist"
    STOPPED = "stopped"


@dataclass
class ReflectorMetrics:
    """Counters of one reflector, written by its driver only (reads may be a moment stale).

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


def default_watch_error_handler(reflector: Any, err: BaseException) -> None:
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


class TempStore:
    """The streaming list's temporary store: key -> object, insertion-ordered, one driver.
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


def _key_of(obj: Any) -> str:
    try:
        return deletion_handling_meta_namespace_key_func(obj)
    except Exception:
        return "<no key>"


class WatchConsumer:
    """Applies one watch stream's events to a store (client-go ``handleAnyWatch``), one
    :meth:`feed` at a time; the driver reads the events however it reads them.

    ``feed`` returns ``True`` when the driver must stop reading: an ERROR event (``error`` is
    its StatusError) or, with ``exit_on_end``, the initial-events-end bookmark (the stream
    stays open for the watch). :meth:`decode_failed` records a
    :class:`~informers.errors.WatchDecodeError` the stream raised (it ends the watch, as
    apimachinery's ``StreamWatcher`` does). :meth:`finish` is called once the stream ended by
    itself: a watch that ended within :data:`VERY_SHORT_WATCH` without an event is an error.
    Versions go to the reflector only when ``store`` is its own store, and only once an event
    other than ADDED arrived unless ``propagate`` (a watch from ""/"0" starts with synthetic
    ADDED events in no version order: client-go v0.36).
    """

    __slots__ = ("_add", "_delete", "_hook", "_own", "_propagate", "_rules", "_store",
                 "_update", "besides_added", "count", "end_seen", "error", "exit_on_end",
                 "last_rv", "start")

    def __init__(self, rules: ReflectorRules, store: Any, start: float, propagate: bool,
                 exit_on_end: bool) -> None:
        self._rules = rules
        self._store = store
        self._own = store is rules.store
        self._add, self._update, self._delete = store.add, store.update, store.delete
        # ADDED and MODIFIED objects go to the store as the hook makes them (a compact
        # informer's: encoded); a temporary store applies the hook itself.
        self._hook = rules.list_item_hook if self._own else None
        self._propagate = propagate
        self.exit_on_end = exit_on_end
        self.start = start
        self.besides_added = False
        self.end_seen = False
        self.last_rv = ""
        self.count = 0
        self.error: BaseException | None = None

    def feed(self, event: WatchEvent) -> bool:
        """Apply ``event``; ``True`` if reading must stop (see the class docstring)."""
        rules = self._rules
        etype = event.type
        obj = event.object
        if etype == "ERROR":
            self.error = StatusError(obj if isinstance(obj, dict) else {})
            rules.metrics.events_total += self.count
            self.count = 0
            return True
        if not isinstance(obj, dict):
            logger.error("%s: unable to understand watch event %s: object is a %s",
                         rules.name, etype, type(obj).__name__)
            return False
        expected_kind = rules.expected_kind
        if expected_kind:
            kind = obj.get("kind")
            if kind and kind != expected_kind:
                logger.error("%s: unexpected watch event object kind %r (expected %r)",
                             rules.name, kind, expected_kind)
                return False
        meta = obj.get("metadata")
        rv = meta.get("resourceVersion", "") if isinstance(meta, dict) else ""
        try:
            if etype == "ADDED":
                self._add(obj if self._hook is None else self._hook(obj))
            elif etype == "MODIFIED":
                self.besides_added = True
                self._update(obj if self._hook is None else self._hook(obj))
            elif etype == "DELETED":
                self.besides_added = True
                self._delete(obj)
            elif etype == "BOOKMARK":
                self.besides_added = True
                annotations = meta.get("annotations") if isinstance(meta, dict) else None
                if (isinstance(annotations, dict)
                        and annotations.get(INITIAL_EVENTS_ANNOTATION) == "true"):
                    self.end_seen = True
                if self._own and rules._bookmark_hook is not None:
                    rules._bookmark_hook(rv)
            else:
                logger.error("%s: unknown watch event type %r", rules.name, etype)
        except Exception:
            logger.exception("%s: unable to apply watch event %s of %s", rules.name, etype,
                             _key_of(obj))
        if rv and (self._propagate or self.besides_added):
            self.last_rv = rv
            if self._own:
                rules._set_last_sync_rv(rv)
                if rules._update_rv_hook is not None:
                    rules._update_rv_hook(rv)
        self.count += 1
        if self.exit_on_end and self.end_seen:
            rules.metrics.events_total += self.count
            self.count = 0
            return True
        return False

    def decode_failed(self, exc: WatchDecodeError) -> None:
        """The stream could not decode its next event: the watch ends with ``exc``."""
        self.error = exc
        self._rules.metrics.events_total += self.count
        self.count = 0

    def finish(self, now: float, stopped: bool) -> BaseException | None:
        """The stream ended by itself (or the driver was ``stopped``): the watch's error,
        ``None`` for a normal end."""
        counted = self.count
        self._rules.metrics.events_total += counted
        self.count = 0
        if self.error is not None or stopped:
            return self.error
        if counted == 0 and now - self.start < VERY_SHORT_WATCH:
            return VeryShortWatchError(self._rules.name)
        return None


class ReflectorRules:
    """The reflector's configuration, bookkeeping and decisions, without I/O.

    The constructor's arguments are :class:`~informers.reflector.Reflector`'s (see there).
    """

    def __init__(
        self,
        list_watch: Any,
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

    def initial_state(self) -> ReflectorState:
        """The first state of a run: ``STREAM`` with ``use_watch_list``, else ``LIST``."""
        return ReflectorState.STREAM if self.use_watch_list else ReflectorState.LIST

    # -- errors and backoff ----------------------------------------------------------------------

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

    def backoff_delay(self) -> float:
        """The next backoff wait: the backoff's next delay, at least the last error's
        ``Retry-After``. Recorded as ``last_backoff``."""
        delay = self.backoff.step()
        retry_after, self._retry_after = self._retry_after, None
        if retry_after is not None and retry_after > delay:
            delay = retry_after
        self.last_backoff = delay
        return delay

    def after_backoff(self, state: ReflectorState) -> ReflectorState:
        """The state a backoff state leads to once its wait is over."""
        if state is ReflectorState.BACKOFF_WATCH:
            return ReflectorState.WATCH
        if state is ReflectorState.BACKOFF_STREAM:
            return ReflectorState.STREAM
        return self.initial_state()

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

    def list_options(self, rv: str, cancel: CancelToken | None) -> ListOptions:
        """The options of a list at ``rv``."""
        return ListOptions(resource_version=rv or None, cancel=cancel,
                           item_hook=self.list_item_hook)

    def list_retry_at_latest(self, rv: str, exc: BaseException) -> bool:
        """A list at ``rv`` failed with ``exc``: whether to list again at once at "" (410
        Expired/Gone or "too large resource version"); the retry is counted."""
        if not (is_expired(exc) or is_too_large_resource_version(exc)):
            return False
        logger.info("%s: list at rv=%r answered %s; listing again at the latest version",
                    self.name, rv, exc)
        self._set_rv_unavailable(True)
        self.metrics.lists_total += 1
        return True

    def list_failed(self, exc: BaseException) -> ReflectorState:
        """A list failed for good: report it; back off and relist."""
        self.metrics.list_errors_total += 1
        # reflector.go list: "failed to list %v: %w", logged as "Failed to watch"
        self._handle_error(ListError(self.type_description, exc))
        return ReflectorState.BACKOFF_RELIST

    def apply_list(self, result: ListResult, rv: str, paginated: bool) -> ReflectorState:
        """A list at ``rv`` answered ``result``: replace the store's contents and record the
        version. ``WATCH`` next, or ``BACKOFF_RELIST`` if the store refused it."""
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
        logger.debug("%s: listed %d %s at rv=%s", self.name, len(result.items),
                     self.type_description, result.resource_version)
        return ReflectorState.WATCH

    # -- watch -----------------------------------------------------------------------------------

    def watch_options(self, cancel: CancelToken | None) -> tuple[ListOptions, bool]:
        """The options of the next watch, and whether its events may move the version at
        once (not for a watch from ""/"0": see :class:`WatchConsumer`). Counted."""
        rv = self.last_sync_resource_version()
        options = ListOptions(
            resource_version=rv or None,
            timeout_seconds=self._watch_timeout(),
            allow_watch_bookmarks=True,
            read_timeout=self.read_timeout,
            cancel=cancel,
        )
        self.metrics.watches_total += 1
        return options, rv not in ("", "0")

    def watch_open_failed(self, exc: BaseException) -> ReflectorState:
        """The watch request failed: back off and watch again after a refused connection or
        429, else back off and relist."""
        self.metrics.watch_errors_total += 1
        if is_connection_refused(exc) or is_too_many_requests(exc):
            logger.info("%s: watch failed (%s); backing off", self.name, exc)
            self._note_error(exc)
            return ReflectorState.BACKOFF_WATCH
        self._handle_error(exc)
        return ReflectorState.BACKOFF_RELIST

    def watch_ended(self, err: BaseException | None) -> ReflectorState:
        """A watch ended with ``err`` (``None``: a normal end, re-watched at once)."""
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

    def consumer(self, store: Any, start: float, propagate: bool,
                 exit_on_end: bool = False) -> WatchConsumer:
        """A :class:`WatchConsumer` for one stream into ``store``."""
        return WatchConsumer(self, store, start, propagate, exit_on_end)

    def stream_broke(self, exc: BaseException) -> None:
        """The stream raised something other than a decode error: a normal end, like EOF."""
        logger.info("%s: watch stream of %s failed: %s", self.name, self.type_description, exc)

    # -- streaming list --------------------------------------------------------------------------

    def stream_options(self, cancel: CancelToken | None) -> ListOptions:
        """The options of a streaming list (``sendInitialEvents``). Counted as a watch."""
        rv = self._rewatch_resource_version()
        self.metrics.watches_total += 1
        return ListOptions(
            resource_version=rv or None,
            resource_version_match="NotOlderThan",
            send_initial_events=True,
            allow_watch_bookmarks=True,
            timeout_seconds=self._watch_timeout(),
            read_timeout=self.read_timeout,
            cancel=cancel,
        )

    def temp_store(self) -> TempStore:
        """The temporary store a streaming list fills."""
        return TempStore(self.list_item_hook)

    def apply_stream(self, temp: TempStore, bookmark_rv: str) -> bool:
        """The initial-events-end bookmark arrived: replace the store's contents with
        ``temp``. ``False`` if the store refused (reported; back off and relist)."""
        self._set_rv_unavailable(False)
        try:
            self.store.replace(list(temp.items.values()), bookmark_rv)
        except Exception as exc:
            self._handle_error(exc)
            return False
        self._set_last_sync_rv(bookmark_rv)
        logger.debug("%s: streamed %d %s at rv=%s", self.name, len(temp.items),
                     self.type_description, bookmark_rv)
        return True

    def stream_incomplete(self) -> ReflectorState:
        """The stream ended before the initial-events-end bookmark: stream again."""
        logger.info("%s: stream ended before the initial-events-end bookmark; retrying",
                    self.name)
        return ReflectorState.STREAM

    def stream_failed(self, exc: BaseException) -> ReflectorState:
        """A streaming list failed with ``exc``: back off after a refused connection or 429,
        stream again at "" after 410 or "too large", else fall back to a regular list."""
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

    def resync_once(self) -> BaseException | None:
        """One resync tick: ``store.resync()`` unless ``should_resync`` declines; the error
        that must end the watch, if it failed."""
        if self.should_resync is not None and not self.should_resync():
            return None
        logger.debug("%s: forcing resync", self.name)
        try:
            self.store.resync()
        except Exception as exc:
            logger.error("%s: resync failed: %s", self.name, exc)
            return exc
        return None
