"""Reads a watch response incrementally and yields its events (:class:`HttpWatchStream`).

The watch half of :mod:`informers.client.list_watch_client`, which sends the request and hands the
response over; this module reads it: newline-delimited JSON in chunks, decoded straight to dicts
(:func:`informers.client.decoder.decode_event`), bad lines logged and skipped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from informers.client.connection import connection_error, shutdown_response
from informers.client.decoder import decode_event
from informers.errors import ApiConnectionError, WatchDecodeError
from informers.list_watch import WATCH_EVENT_TYPES, WatchEvent

__all__ = ["HttpWatchStream"]

logger = logging.getLogger(__name__)

_LINE_PREFIX = 120  # bytes of an offending line shown in logs


class HttpWatchStream:
    """Reads a watch response incrementally and yields its events.

    The body is newline-delimited JSON sent in HTTP chunks that need not align with lines:
    partial lines are kept until their newline arrives. A line that does not decode, or an
    event of an unknown type, is logged (with the stream's description and the line's first
    bytes) and skipped; the next line is read as usual.

    The stream ends when the server closes it, when the connection breaks or the read timeout
    expires (``error`` then holds an :class:`ApiConnectionError`; this is a normal end for the
    reflector, which re-watches from its last version), or when :meth:`close` is called.

    Thread safety: iterate from one thread; :meth:`close` from any thread. ``iter()`` always
    returns the same iterator, so iteration can be resumed.

    Args:
        response: a urllib3 response with status 200 whose body was not read yet.
        description: what is watched, for logs and errors.
        release: called once with ``reuse`` (the body ended cleanly) to hand the connection
            back; default: the response's own ``close``/``release_conn``.
        drop_managed_fields: decode each event's object without ``metadata.managedFields``
            (:func:`informers.client.decoder.decode_event`).

    Attributes:
        description: what is watched, for logs.
        error: why the stream ended early, or ``None``.
        events: events yielded so far.
        decode_errors: undecodable lines skipped.
        unknown_events: events of unknown types skipped.
    """

    def __init__(self, response: Any, description: str = "watch", *,
                 release: Callable[[bool], None] | None = None,
                 drop_managed_fields: bool = False) -> None:
        self._resp = response
        self._drop_managed_fields = drop_managed_fields
        self._release_fn = release
        self.description = description
        self._lock = threading.Lock()
        self._closed = False
        self._reading = False
        self._released = False
        self.error: ApiConnectionError | None = None
        self.events = 0
        self.decode_errors = 0
        self.unknown_events = 0
        self._iterator: Iterator[WatchEvent] | None = None

    def __iter__(self) -> Iterator[WatchEvent]:
        # One iterator per stream: a second iter() continues where the first stopped (the
        # reflector reads a streaming list's initial events, then keeps watching).
        if self._iterator is None:
            self._iterator = self._events()
        return self._iterator

    def __enter__(self) -> HttpWatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Release the connection; a blocked reader wakes up and its iteration ends."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            reading = self._reading
        if reading:
            shutdown_response(self._resp)  # the reader releases the response on its way out
        else:
            self._release(reuse=False)

    def _release(self, reuse: bool) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        if self._release_fn is not None:
            self._release_fn(reuse)
            return
        resp = self._resp
        try:
            if not reuse:
                resp.close()  # closes the connection: never reuse a half-read stream
            resp.release_conn()
        except Exception:  # releasing must never raise into the caller
            logger.debug("%s: error releasing the connection", self.description, exc_info=True)

    def _chunks(self) -> Iterator[bytes]:
        resp = self._resp
        if getattr(resp, "chunked", False) and resp.supports_chunked_reads():
            yield from resp.read_chunked(None, decode_content=True)
            return
        while True:
            data = resp.read1(65536)
            if not data:
                return
            yield data

    def _event(self, line: bytes) -> WatchEvent | None:
        try:
            etype, obj = decode_event(line, drop_managed_fields=self._drop_managed_fields)
        except WatchDecodeError as exc:
            self.decode_errors += 1
            logger.warning("%s: skipping undecodable watch line (%d bytes, starts %r): %s",
                           self.description, len(line), exc.line_prefix, exc)
            return None
        if etype not in WATCH_EVENT_TYPES:
            self.unknown_events += 1
            logger.warning("%s: skipping watch event of unknown type %r (line starts %r)",
                           self.description, etype, bytes(line[:_LINE_PREFIX]))
            return None
        self.events += 1
        return WatchEvent(etype, obj)

    def _events(self) -> Iterator[WatchEvent]:
        import urllib3

        with self._lock:
            if self._closed:
                return
            self._reading = True
        reuse = False
        pending: list[bytes] = []
        event: WatchEvent | None
        try:
            for chunk in self._chunks():
                pos = 0
                nl = chunk.find(b"\n")
                while nl >= 0:
                    if pending:  # the line began in earlier chunks
                        pending.append(chunk[pos:nl])
                        line = b"".join(pending)
                        pending = []
                    else:
                        line = chunk[pos:nl]
                    if line.strip():
                        event = self._event(line)
                        if event is not None:
                            yield event
                            if self._closed:
                                return
                    pos = nl + 1
                    nl = chunk.find(b"\n", pos)
                if pos < len(chunk):
                    pending.append(chunk[pos:])
            tail = b"".join(pending)
            if tail.strip() and not self._closed:
                event = self._event(tail)  # a last line without its newline
                if event is not None:
                    yield event
            reuse = not self._closed
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
            # ValueError/AttributeError: reading a response another thread just closed.
            if not self._closed:
                self.error = connection_error(exc, self.description)
                logger.info("%s: watch stream ended: %s", self.description, exc)
        finally:
            with self._lock:
                self._reading = False
                self._closed = True
            self._release(reuse=reuse)
