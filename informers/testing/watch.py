"""One watch stream of the embedded API server, with the watch cache's semantics.

A :class:`WatchStream` decides where a watch starts (replay from a version, or the current
state as synthetic ADDED events), converts each stored change for its selectors (ADDED when an
object starts matching, DELETED when it stops, as ``cacheWatcher.convertToWatchEvent`` does),
sends periodic BOOKMARKs, ends cleanly at ``timeoutSeconds``, and reports a compacted start or
a compaction that overtakes it with an ``ERROR`` event carrying a 410 ``Expired`` Status.

References: kube-apiserver ``staging/src/k8s.io/apiserver/pkg/storage/cacher`` (``cacher.go``,
``cache_watcher.go``, ``watch_cache.go``) and the "Efficient detection of changes" and "Watch
bookmarks" sections of the Kubernetes API Concepts page.
"""

from __future__ import annotations

import random
import select
import socket
import threading
from typing import Protocol

from informers.clock import Clock
from informers.errors import StatusError
from informers.testing import status
from informers.testing.codec import dumps
from informers.testing.faults import Faults
from informers.testing.options import ListOptions, Predicate
from informers.testing.resources import ResourceType
from informers.testing.storage import (
    ADDED,
    DELETED,
    Change,
    Collection,
    Entry,
    Storage,
    watch_line,
)

__all__ = [
    "EVENT_TYPES",
    "INITIAL_EVENTS_END",
    "MALFORMED_LINE",
    "ChunkWriter",
    "WatchHandle",
    "WatchStream",
    "bookmark_line",
    "error_line",
]

MALFORMED_LINE = b'{"type":"MODIFIED","object":{this is not JSON\n'
"""What ``inject_malformed_watch_line`` writes."""

EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED")
"""The event types a garble may target (``BOOKMARK`` and ``ERROR`` lines are never cut)."""

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
"""``metav1.InitialEventsAnnotationKey``: marks the bookmark that ends the initial events."""

_PRE_TIMEOUT_BOOKMARK = 2.0  # cache_watcher.go nextBookmarkTime: "at least 2s before the deadline"
_CHUNK_BYTES = 1 << 20  # coalesce queued events into writes of about 1 MiB


class ChunkWriter(Protocol):
    """The HTTP side of a watch: one chunk per ``write``."""

    def write(self, data: bytes) -> None:
        """Send ``data`` as one chunk. Raises ``OSError`` when the client is gone."""

    def finish(self) -> None:
        """End the chunked body cleanly (the zero-length chunk)."""

    def abort(self) -> None:
        """Drop the connection without ending the body (a broken connection)."""


class WatchHandle:
    """An open watch as the server's switches see it. Thread-safe.

    ``drop`` cuts the connection abruptly (no terminating chunk): the client sees a broken
    stream, like a lost connection or a killed apiserver. ``inject_malformed`` makes the stream
    write one line that is not JSON before carrying on.
    """

    def __init__(self, rt: ResourceType, namespace: str, connection: socket.socket | None) -> None:
        self.rt = rt
        self.namespace = namespace
        self._connection = connection
        self._lock = threading.Lock()
        self.dropped = False
        self.ending = False
        """Set before the last chunk is written: from then on the client may send its next
        request on the connection, so readability no longer means it hung up."""
        self._malformed = 0
        self._garbles: list[str | None] = []  # event type to cut (None: any), in order

    def drop(self) -> None:
        with self._lock:
            self.dropped = True
            connection = self._connection
        if connection is not None:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def fileno(self) -> int:
        """The connection's file descriptor, -1 when there is none (or it is closed). The
        server waits for it to become readable: a watch client sends nothing while it reads
        its stream, so readability means it hung up (EOF, or over TLS a close_notify)."""
        connection = self._connection
        if connection is None:
            return -1
        try:
            return connection.fileno()
        except (OSError, ValueError):
            return -1

    def peer_closed(self) -> bool:
        """True when the client has hung up: its socket is readable now (see :meth:`fileno`)."""
        fd = self.fileno()
        if fd < 0 or self.dropped:
            return False
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))

    def inject_malformed(self) -> None:
        with self._lock:
            self._malformed += 1

    @property
    def has_malformed(self) -> bool:
        return self._malformed > 0

    def take_malformed(self) -> int:
        with self._lock:
            count, self._malformed = self._malformed, 0
            return count

    def garble(self, count: int, event_type: str | None = None) -> None:
        """Cut the next ``count`` events of ``event_type`` (one of :data:`EVENT_TYPES`;
        ``None``: of any type)."""
        with self._lock:
            self._garbles.extend([event_type] * count)

    @property
    def has_garbles(self) -> bool:
        return bool(self._garbles)

    def garbled(self, line: bytes) -> bytes:
        """``line`` (the next event line to send) with the first pending garble of its type
        applied: cut at half its length and ended with a newline (never valid JSON: the
        object's closing braces are gone). Lines of other types go out whole."""
        event_type = _event_type(line)
        if event_type not in EVENT_TYPES:
            return line
        with self._lock:
            for i, wanted in enumerate(self._garbles):
                if wanted in (None, event_type):
                    del self._garbles[i]
                    return line[:len(line) // 2] + b"\n"
        return line


def _event_type(line: bytes) -> str:
    """The ``type`` of a :func:`~informers.testing.storage.watch_line`."""
    if not line.startswith(b'{"type":"'):
        return ""
    end = line.find(b'"', 9)
    return line[9:end].decode() if end > 0 else ""


def bookmark_line(rt: ResourceType, rv: int, *, initial_events_end: bool = False) -> bytes:
    """A BOOKMARK event: an object of the kind carrying only ``metadata.resourceVersion``."""
    meta: dict[str, object] = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
    return watch_line("BOOKMARK", dumps(obj))


def error_line(err: StatusError) -> bytes:
    """An ERROR event carrying ``err``'s Status."""
    return watch_line("ERROR", dumps(err.status))


class WatchStream:
    """Serves one watch request. Use once: :meth:`prepare` (before the 200 is sent), then
    :meth:`serve` on the request's thread.

    Args:
        storage: where changes come from.
        rt: the watched resource.
        namespace: only this namespace (``None``: all).
        predicate: label and field selectors.
        opts: the validated request options.
        clock: time for bookmarks, timeouts and the wait for a future resourceVersion.
        faults: the server's fault switches (``hung``).
        bookmark_interval: seconds between BOOKMARKs when ``allowWatchBookmarks`` is set.
        min_request_timeout: without ``timeoutSeconds`` a watch lasts a random time in
            ``[t, 2t)`` (``endpoints/handlers/get.go``; kube-apiserver default 1800 s).
        fresh_wait: how long a streaming watch waits for a resourceVersion the server does not
            have yet before failing with "Too large resource version".
    """

    def __init__(
        self, *, storage: Storage, rt: ResourceType, namespace: str | None,
        predicate: Predicate, opts: ListOptions, clock: Clock, faults: Faults,
        bookmark_interval: float, min_request_timeout: float, fresh_wait: float,
    ) -> None:
        self._storage = storage
        self._rt = rt
        self._coll: Collection = storage.collection(rt)
        self._restarts = self._coll.restarts
        self._namespace = namespace
        self._predicate = predicate
        self._opts = opts
        self._clock = clock
        self._faults = faults
        self._bookmark_interval = bookmark_interval
        self._fresh_wait = fresh_wait
        timeout = float(opts.timeout_seconds or 0)
        if timeout <= 0:
            timeout = min_request_timeout * (1.0 + random.random())
        self._timeout = timeout
        self._seq = 0
        self._start_rv = 0
        self._last_rv = 0
        # Lines to send before any change: initial objects (encoded while writing) and
        # ready-made lines (the initial-events-end bookmark, an ERROR).
        self._pending: list[bytes | Entry] = []
        self._error: StatusError | None = None
        self._started: float | None = None

    # -- start ---------------------------------------------------------------------------------

    def _selected(self, entry: Entry) -> bool:
        if self._namespace is not None and entry.namespace != self._namespace:
            return False
        return self._predicate.matches(entry)

    def prepare(self) -> None:
        """Fix the starting point (so no later change is missed) and queue initial events.

        A start that cannot be served becomes an ERROR event (the real server answers 200 and
        reports it in the stream: "once we have passed authn/authz/admission, and successfully
        parsed a resource version, other errors must fail with a watch event of type ERROR",
        ``cacher.go``).
        """
        opts = self._opts
        rv_text = opts.resource_version
        storage = self._storage
        # The timeout and bookmark schedule run from here, before the server counts the
        # watch as open: a test stepping a fake clock right after wait_for_watches() must
        # reach the deadline.
        self._started = self._clock.now()
        if opts.send_initial_events is not None and rv_text not in ("", "0"):
            wanted = int(rv_text)
            if storage.rv < wanted and not storage.wait_for_rv(wanted, self._fresh_wait):
                self._error = status.too_large_resource_version(wanted, storage.rv)
                self._pending = [error_line(self._error)]
                return
        with storage.lock:
            coll = self._coll
            if opts.send_initial_events:
                snapshot_rv = storage.rv
                objects = coll.objects
                rt = self._rt
                self._pending = [
                    objects[key] for key in coll.sorted_keys() if self._selected(objects[key])
                ]
                if opts.allow_watch_bookmarks:
                    # The bookmark at the snapshot's version ends the initial events
                    # (cache_watcher.go convertToWatchEvent sets the annotation once).
                    self._pending.append(bookmark_line(rt, snapshot_rv, initial_events_end=True))
                self._seq = coll.next_seq
                self._start_rv = snapshot_rv
            elif rv_text in ("", "0"):
                # sendInitialEvents=false: start at the current version, no initial state.
                self._seq = coll.next_seq
                self._start_rv = storage.rv
            else:
                wanted = int(rv_text)
                if wanted < coll.oldest_rv:
                    # watch_cache.go getAllEventsSinceLocked
                    self._error = status.expired(
                        f"too old resource version: {wanted} ({coll.oldest_rv})"
                    )
                    self._pending = [error_line(self._error)]
                    return
                self._seq = coll.seq_after(wanted)
                self._start_rv = wanted
            self._last_rv = self._start_rv

    # -- streaming -----------------------------------------------------------------------------

    def _convert(self, change: Change) -> bytes | None:
        rt = self._rt
        if change.rv <= self._start_rv:
            return None
        if self._namespace is None and self._predicate.empty:
            return change.line(rt)
        if change.type == ADDED:
            return change.line(rt) if self._selected(change.entry) else None
        prev_ok = change.prev is not None and self._selected(change.prev)
        if change.type == DELETED:
            return change.line(rt) if prev_ok else None
        cur_ok = self._selected(change.entry)
        if cur_ok and prev_ok:
            return change.line(rt)
        if cur_ok:
            return watch_line(ADDED, change.entry.typed(rt))
        if prev_ok:
            return change.unmatched_line(rt)
        return None

    def _next_bookmark(self, now: float, deadline: float) -> float | None:
        """``cacheWatcher.nextBookmarkTime``: every interval, and at least 2 s before the
        deadline; none once that moment has passed."""
        if not self._opts.allow_watch_bookmarks:
            return None
        moment = now + self._bookmark_interval
        pre_timeout = deadline - _PRE_TIMEOUT_BOOKMARK
        if pre_timeout < moment:
            moment = pre_timeout
        return moment if moment >= now else None

    def _write_lines(
        self, writer: ChunkWriter, handle: WatchHandle, lines: list[bytes] | list[bytes | Entry]
    ) -> None:
        batch: list[bytes] = []
        size = 0
        rt = self._rt
        garbling = handle.has_garbles
        for item in lines:
            line = item if isinstance(item, bytes) else watch_line(ADDED, item.typed(rt))
            if garbling:
                line = handle.garbled(line)
            batch.append(line)
            size += len(line)
            if size >= _CHUNK_BYTES:
                writer.write(b"".join(batch))
                batch, size = [], 0
        if batch:
            writer.write(b"".join(batch))

    def serve(self, writer: ChunkWriter, handle: WatchHandle) -> None:
        """Stream until the timeout, an error, or ``handle.drop()``. Never raises ``OSError``."""
        storage, coll, clock, faults = self._storage, self._coll, self._clock, self._faults
        start = clock.now() if self._started is None else self._started
        deadline = start + self._timeout
        next_bookmark = self._next_bookmark(start, deadline)
        finishing = self._error is not None
        try:
            while True:
                changes: list[Change] = []
                expired = timed_out = False
                bookmark_rv: int | None = None
                with storage.lock:
                    while True:
                        if handle.dropped:
                            writer.abort()
                            return
                        if faults.hung:
                            clock.wait_condition(coll.cond, None)
                            continue
                        if self._pending or finishing or handle.has_malformed:
                            break
                        if coll.restarts != self._restarts:  # Collection.restart
                            timed_out = True
                            break
                        if self._seq < coll.first_seq:
                            expired = True
                            break
                        if self._seq < coll.next_seq:
                            changes = coll.history[self._seq - coll.first_seq:]
                            self._seq = coll.next_seq
                            break
                        now = clock.now()
                        if next_bookmark is not None and now >= next_bookmark:
                            # Due before the deadline by construction, so it goes first.
                            bookmark_rv = storage.rv  # caught up: nothing newer is unseen
                            next_bookmark = self._next_bookmark(now, deadline)
                            break
                        if now >= deadline:
                            timed_out = True
                            break
                        wait = deadline - now
                        if next_bookmark is not None:
                            wait = min(wait, next_bookmark - now)
                        clock.wait_condition(coll.cond, wait)
                malformed = handle.take_malformed()
                if malformed:
                    writer.write(MALFORMED_LINE * malformed)
                if self._pending:
                    pending, self._pending = self._pending, []
                    self._write_lines(writer, handle, pending)
                if finishing:
                    writer.finish()
                    return
                if expired:
                    # The history moved past this watcher before it caught up.
                    err = status.expired(
                        f"too old resource version: {self._last_rv} ({coll.oldest_rv})"
                    )
                    writer.write(error_line(err))
                    writer.finish()
                    return
                if changes:
                    lines = [line for line in map(self._convert, changes) if line is not None]
                    self._last_rv = changes[-1].rv
                    if lines:
                        self._write_lines(writer, handle, lines)
                if bookmark_rv is not None and bookmark_rv > self._start_rv:
                    writer.write(bookmark_line(self._rt, bookmark_rv))
                if timed_out:
                    writer.finish()
                    return
        except OSError:
            return

