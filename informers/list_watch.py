"""The list-and-watch protocol between a reflector and an API server (client-go
``cache.ListWatch``, ``tools/cache/listwatch.go``), and its types.

* :class:`ListOptions`, :class:`ListResult`, :class:`WatchEvent`, the :class:`WatchStream`
  protocol and :class:`CancelToken` are the types shared by the reflector and every ListWatch;
* :class:`ListWatch` wraps a list function and a watch function (hand-made ones in tests);
* :class:`ListPager` gathers a paginated list (client-go ``tools/pager``).

This module knows no HTTP: the ListWatch that talks to an API server is
:func:`informers.client.list_watch_from_client` (or
:func:`~informers.client.list_watch_for_resource`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Awaitable, Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from informers.errors import is_expired
from informers.resources import Resource

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_LIST_READ_TIMEOUT",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_WATCH_READ_TIMEOUT",
    "UNBOOKMARKED_WATCH_READ_TIMEOUT",
    "WATCH_EVENT_TYPES",
    "WATCH_READ_TIMEOUT_MARGIN",
    "CancelToken",
    "ListOptions",
    "ListPager",
    "ListResult",
    "ListWatch",
    "WatchEvent",
    "WatchStream",
    "watch_read_timeout",
]

logger = logging.getLogger(__name__)

DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds to establish a connection: client-go's dialer timeout (``transport/cache.go``,
``net.Dialer{Timeout: 30 * time.Second}``)."""

DEFAULT_LIST_READ_TIMEOUT = 120.0
"""Seconds a list may wait for the next bytes: twice kube-apiserver's default
``--request-timeout`` (1 min), after which the server itself gives up on a list."""

DEFAULT_WATCH_READ_TIMEOUT = 150.0
"""Seconds a watch that asks for bookmarks (``allowWatchBookmarks``, as every reflector's
does) may stay silent before its connection is taken as dead and the watch ends (the reflector
then re-watches from its last version, on a new connection).

Why two and a half minutes: kube-apiserver's watch cache sends every watcher that allows
bookmarks a BOOKMARK "roughly every minute" even when nothing changes (``k8s.io/apiserver``
``pkg/storage/cacher/cacher.go`` ``defaultBookmarkFrequency = time.Minute``;
``cache_watcher.go`` ``nextBookmarkTime``, on a dispatch tick of about a second), and one 2 s
before the watch's deadline; but a watcher is sent only bookmarks newer than the version it
started from (``cache_watcher.go`` ``process``), so a tick can pass without one: on a
resource nobody writes, kube-apiserver 1.36 sends a new watch its first bookmark about 120 s
after it starts, then one every 60 s. Silence for two bookmark periods and a margin means the
path is dead (a proxy or NAT that stopped forwarding without closing). Where a resource's
cache does not move for longer (no writes, and etcd's progress notifications, every 10 min by
default) or is off (``--watch-cache=false``), a healthy quiet watch is re-opened every 150 s:
one request from the last version, no relist, nothing lost.

client-go has no read timeout on watches: over HTTP/2 its transport's health check pings an
idle connection after 30 s and drops it when no answer comes within 15 s
(``k8s.io/apimachinery`` ``pkg/util/net/http.go`` ``readIdleTimeoutSeconds``,
``pingTimeoutSeconds``), about 45 s in all. This library speaks HTTP/1.1, where a read timeout
is the only way to notice. ``ReflectorOptions.read_timeout`` (or ``ListOptions.read_timeout``)
overrides it."""

WATCH_READ_TIMEOUT_MARGIN = 30.0
"""Seconds added to ``timeoutSeconds`` for the read timeout of a watch that does not ask for
bookmarks: the server may then send nothing until it closes the watch after
``timeoutSeconds``, so only silence beyond that means a dead connection."""

UNBOOKMARKED_WATCH_READ_TIMEOUT = 3600.0 + WATCH_READ_TIMEOUT_MARGIN
"""Read timeout of a watch without bookmarks and without ``timeoutSeconds``: the server then
picks a timeout in ``[--min-request-timeout, 2x)`` = [30 min, 60 min) (kube-apiserver
defaults), plus the margin."""


DEFAULT_PAGE_SIZE = 500
"""client-go ``tools/pager`` ``defaultPageSize``."""

WATCH_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})
"""The event types of ``metav1.WatchEvent``. client-go's ``rest/watch`` ``Decoder`` rejects any
other ("got invalid watch event type"), which ends an HTTP watch with an ERROR event
(:class:`~informers.client.watch_stream.HttpWatchStream`); the reflector logs and skips one
from any other stream (``reflector.go`` ``handleAnyWatch``: "Unknown watch event")."""


@dataclass
class ListOptions:
    """Query options of one list or watch request (client-go ``metav1.ListOptions``).

    ``None``, ``""``, ``0`` and ``False`` values are not sent. Three fields are client-side
    only: ``read_timeout``, the socket read timeout for this request (``None``: the
    ListWatch's default); ``cancel``, a :class:`CancelToken` that aborts the request when
    cancelled (the role of client-go's request context; the reflector passes one with every
    list and watch and cancels it on stop, and a list or watch function that ignores it
    delays the reflector's stop until it returns); and ``progress``, which a list function
    that decodes as the answer arrives may call, from the listing thread, with the number of
    items of this request decoded so far (the reflector logs list progress from it); and
    ``item_hook``, which such a list function may apply to each item right after decoding it,
    keeping what it returns instead (a compact informer encodes each listed object at once,
    so a long list never exists as decoded objects all at once). A list function may ignore
    it: the reflector applies it afterwards to every item still a ``dict``, so the hook must
    accept an item it already returned, or a plain one, and must not raise.
    """

    resource_version: str | None = None
    resource_version_match: str | None = None  # "Exact" | "NotOlderThan"
    limit: int | None = None
    continue_: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    timeout_seconds: int | None = None
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None
    read_timeout: float | None = None
    cancel: CancelToken | None = None
    progress: Callable[[int], None] | None = None
    item_hook: Callable[[Any], Any] | None = None
    shard_selector: str | None = None  # KEP-5866 ``shardSelector`` (informers.sharding)

    def to_query(self, watch: bool = False) -> list[tuple[str, str]]:
        """The URL query parameters, in a stable order (``watch=true`` first for a watch)."""
        q: list[tuple[str, str]] = []
        if watch:
            q.append(("watch", "true"))
        if self.resource_version:
            q.append(("resourceVersion", self.resource_version))
        if self.resource_version_match:
            q.append(("resourceVersionMatch", self.resource_version_match))
        if self.limit:
            q.append(("limit", str(int(self.limit))))
        if self.continue_:
            q.append(("continue", self.continue_))
        if self.label_selector:
            q.append(("labelSelector", self.label_selector))
        if self.field_selector:
            q.append(("fieldSelector", self.field_selector))
        if self.timeout_seconds is not None:
            q.append(("timeoutSeconds", str(int(self.timeout_seconds))))
        if self.allow_watch_bookmarks:
            q.append(("allowWatchBookmarks", "true"))
        if self.send_initial_events is not None:
            q.append(("sendInitialEvents", "true" if self.send_initial_events else "false"))
        if self.shard_selector:
            q.append(("shardSelector", self.shard_selector))
        return q


def watch_read_timeout(options: ListOptions) -> float:
    """The socket read timeout of a watch with ``options``: ``options.read_timeout`` if set;
    else :data:`DEFAULT_WATCH_READ_TIMEOUT` when it asks for bookmarks; else
    ``timeoutSeconds`` + :data:`WATCH_READ_TIMEOUT_MARGIN`; else
    :data:`UNBOOKMARKED_WATCH_READ_TIMEOUT`."""
    if options.read_timeout is not None:
        return options.read_timeout
    if options.allow_watch_bookmarks:
        return DEFAULT_WATCH_READ_TIMEOUT
    if options.timeout_seconds:
        return options.timeout_seconds + WATCH_READ_TIMEOUT_MARGIN
    return UNBOOKMARKED_WATCH_READ_TIMEOUT


@dataclass
class ListResult:
    """One list answer (or several pages gathered by :class:`ListPager`).

    ``items`` are the decoded objects; list items usually lack ``kind``/``apiVersion``.
    ``shard_info`` is the list metadata's ``shardInfo`` (KEP-5866: the server applied the
    ``shardSelector`` it echoes), ``None`` when absent (no selector sent, or a server that
    ignored it).
    """

    items: list[dict[str, Any]]
    resource_version: str
    continue_: str | None = None
    remaining_item_count: int | None = None
    shard_info: dict[str, Any] | None = None


@dataclass(slots=True)
class WatchEvent:
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.

    For ERROR the object is the ``metav1.Status`` dict.
    """

    type: str
    object: dict[str, Any]


class WatchStream(Protocol):
    """An iterator of :class:`WatchEvent` that owns an HTTP response.

    Iterate it once, from one thread. ``close()`` may be called from any thread, any number of
    times: it releases the connection and makes a blocked iteration end (without error).
    """

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


class CancelToken:
    """Lets one thread abort another thread's blocking request (Go's context cancellation,
    narrowed to what a ListWatch needs).

    The thread making a request registers, with :meth:`on_cancel`, a callback that aborts it
    (typically: shut its socket down, so a blocked read returns at once) and removes it when
    the request is over. :meth:`cancel` marks the token and calls each registered callback
    once, on the cancelling thread; a callback registered after :meth:`cancel` is called at
    once, on the registering thread. A token is never reset.

    Thread-safe. Callbacks must be quick and must not block; one that raises is logged.
    """

    __slots__ = ("_callbacks", "_cancelled", "_lock", "_next")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next = 0

    def is_cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Mark the token cancelled and call every registered callback (idempotent)."""
        with self._lock:
            self._cancelled = True
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            _call(callback)

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], bool]:
        """Register ``callback``; return a function that unregisters it.

        The returned function returns ``True`` if the callback was removed before being
        called, ``False`` if it has been called (or is being called right now, on another
        thread): then whatever it aborts must not be reused.
        """
        with self._lock:
            if not self._cancelled:
                key = self._next
                self._next += 1
                self._callbacks[key] = callback

                def remove() -> bool:
                    with self._lock:
                        return self._callbacks.pop(key, None) is not None

                return remove
        _call(callback)
        return _already_called


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:
        logger.exception("cancel callback %r failed", callback)


def _already_called() -> bool:
    return False


ListFunc = Callable[[ListOptions], ListResult]
WatchFunc = Callable[[ListOptions], WatchStream]
TweakFunc = Callable[[ListOptions], None]


class ListWatch:
    """A list function and a watch function for one resource (client-go ``cache.ListWatch``).

    Thread-safe as far as its functions are. A subclass may override :meth:`list` and
    :meth:`watch` instead and pass ``None`` for both functions
    (:class:`informers.client.ClientListWatch` does).

    Attributes:
        resource: what it lists, or ``None`` for a hand-made ListWatch.
    """

    def __init__(
        self,
        list_func: ListFunc | None,
        watch_func: WatchFunc | None,
        *,
        resource: Resource | None = None,
    ) -> None:
        self._list_func = list_func
        self._watch_func = watch_func
        self.resource = resource

    @property
    def drop_managed_fields(self) -> bool:
        """Whether listed and watched objects come without ``metadata.managedFields``, never
        decoded. Always ``False`` for a hand-made ListWatch."""
        return False

    @property
    def supports_drop_managed_fields(self) -> bool:
        """Whether :meth:`with_drop_managed_fields` can switch the option on: only a ListWatch
        that decodes the bytes itself can (:class:`informers.client.ClientListWatch`)."""
        return False

    def with_drop_managed_fields(self, drop: bool = True) -> ListWatch:
        """A copy of this ListWatch with the ``drop_managed_fields`` option set.

        Raises:
            ValueError: ``drop`` for a ListWatch that decodes no bytes (see
                :attr:`supports_drop_managed_fields`).
        """
        if drop:
            raise ValueError(f"{self!r} decodes no bytes: it cannot drop managedFields")
        return self

    def list(self, options: ListOptions) -> ListResult:
        """One list request. Raises StatusError or ApiConnectionError."""
        if self._list_func is None:
            raise NotImplementedError(f"{self!r} has no list function")
        return self._list_func(options)

    def watch(self, options: ListOptions) -> WatchStream:
        """Open one watch. Raises StatusError or ApiConnectionError if it cannot be opened."""
        if self._watch_func is None:
            raise NotImplementedError(f"{self!r} has no watch function")
        return self._watch_func(options)

    def __repr__(self) -> str:
        return f"ListWatch({self.resource or 'custom'})"


# -- pagination ------------------------------------------------------------------------------------


class ListPager:
    """Gathers a list page by page (client-go ``tools/pager.ListPager``).

    * The first request carries the caller's options, with ``limit`` defaulting to
      ``page_size`` (``0`` or ``None`` = unpaginated).
    * Later pages send ``continue`` with ``resourceVersion`` and ``resourceVersionMatch``
      cleared ("specifying resource version is not allowed when using continue"); the list's
      version is the first page's.
    * A 410 Expired on page 2 or later (the continue token fell out of etcd's compaction
      window) triggers one full list: ``limit`` unset, no ``continue``, the original version and
      match (``FullListIfExpired``). A 410 on the first page is raised to the caller.
    """

    def __init__(self, list_func: ListFunc, page_size: int | None = DEFAULT_PAGE_SIZE,
                 full_list_if_expired: bool = True) -> None:
        self.list_func = list_func
        self.page_size = page_size or 0
        self.full_list_if_expired = full_list_if_expired

    def list(self, options: ListOptions) -> tuple[ListResult, bool]:
        """Return the whole list and whether it came back paginated (more than one page)."""
        plan = self.plan(options)
        opts = next(plan)
        while True:
            try:
                page = self.list_func(opts)
            except Exception as exc:
                try:
                    opts = plan.throw(exc)
                except StopIteration as done:
                    return done.value
                continue
            try:
                opts = plan.send(page)
            except StopIteration as done:
                return done.value

    async def alist(
        self, list_func: Callable[[ListOptions], Awaitable[ListResult]], options: ListOptions,
    ) -> tuple[ListResult, bool]:
        """:meth:`list` with an async list function (the async reflector's)."""
        plan = self.plan(options)
        opts = next(plan)
        while True:
            try:
                page = await list_func(opts)
            except Exception as exc:
                try:
                    opts = plan.throw(exc)
                except StopIteration as done:
                    return done.value
                continue
            try:
                opts = plan.send(page)
            except StopIteration as done:
                return done.value

    def plan(
        self, options: ListOptions,
    ) -> Generator[ListOptions, ListResult, tuple[ListResult, bool]]:
        """The pager's rules without I/O: yields the options of each request, is sent each
        page (or thrown the request's exception) and returns ``(list, paginated)``."""
        opts = dataclasses.replace(options)
        if not opts.limit and self.page_size:
            opts.limit = self.page_size
        requested_rv = opts.resource_version
        requested_match = opts.resource_version_match
        items: list[dict[str, Any]] | None = None
        list_rv = ""
        paginated = False
        while True:
            try:
                page = yield opts
            except Exception as exc:
                if not (is_expired(exc) and self.full_list_if_expired and opts.continue_):
                    raise
                logger.info("continue token expired after %d items; listing in full at rv=%r",
                            len(items or ()), requested_rv)
                full = dataclasses.replace(
                    opts, limit=None, continue_=None, resource_version=requested_rv,
                    resource_version_match=requested_match,
                )
                return (yield full), paginated
            if items is None:
                if not page.continue_:
                    return page, paginated
                items = page.items
                list_rv = page.resource_version
            else:
                items.extend(page.items)
            if not page.continue_:
                return ListResult(items, list_rv, None, None, page.shard_info), paginated
            paginated = True
            opts = dataclasses.replace(
                opts, continue_=page.continue_, resource_version=None,
                resource_version_match=None,
            )

