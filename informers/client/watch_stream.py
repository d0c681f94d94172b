"""Reads a watch response incrementally and yields its events (:class:`HttpWatchStream`).

The watch half of :mod:`informers.client.list_watch_client`, which sends the request and hands the
response over; this module reads it: newline-delimited JSON in chunks, decoded straight to dicts
(:func:`informers.client.decoder.decode_event`). A line that is not an event ends the watch with
an ERROR event, as apimachinery's ``watch.StreamWatcher`` does, so that the reflector relists
instead of moving its version past a change it never saw.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from informers.client.connection import connection_error, shutdown_response
from informers.client.watch_lines import WatchLineDecoder
from informers.errors import ApiConnectionError
from informers.list_watch import WatchEvent

__all__ = ["HttpWatchStream"]

logger = logging.getLogger(__name__)

class HttpWatchStream:
    """Reads a watch response incrementally and yields its events.

    The body is newline-delimited JSON sent in HTTP chunks that need not align with lines:
    partial lines are kept until their newline arrives.

    A line that does not decode, that is not a ``WatchEvent`` (a bare ``Status`` from a broken
    proxy), or an event of a type other than ADDED, MODIFIED, DELETED, BOOKMARK and ERROR, is
    logged (with the stream's description and the line's first bytes) and ends the stream with
    one last ERROR event: apimachinery ``watch.StreamWatcher.receive`` reports the decode
    failure through client-go's ``NewClientErrorReporter(500, "GET", "ClientWatchDecoding")``,
    so the event's object is a 500 ``InternalError`` Status (see
    :func:`informers.client.status.client_decoding_status`; the ``rest/watch`` ``Decoder``
    rejects unknown types with "got invalid watch event type"). Nothing after it is read: the
    reflector relists at its last version, which restores whatever the lost event changed.
    A last line cut by the end of the body is no error (``io.ErrUnexpectedEOF`` in
    ``StreamWatcher``): the stream just ends, and the next watch from the last version sends
    that event again.

    The stream ends when the server closes it, when the connection breaks or the read timeout
    expires (``error`` then holds an :class:`ApiConnectionError`; this is a normal end for the
    reflector, which re-watches from its last version), after an undecodable line (above), or
    when :meth:`close` is called.

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
        decode_errors: undecodable lines met (0 or 1: the first ends the stream).
        unknown_events: events of unknown types met (0 or 1, likewise).
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
        self._lines = WatchLineDecoder(description, drop_managed_fields=drop_managed_fields)
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
    def events(self) -> int:
        return self._lines.events

    @property
    def decode_errors(self) -> int:
        return self._lines.decode_errors

    @property
    def unknown_events(self) -> int:
        return self._lines.unknown_events

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Release the connection; a blocked reader wakes up and its iteration ends."""
        with self._lock:
            # A suspended iterator refers back to this stream: break the cycle, so that a
            # stream dropped unfinished is freed by reference counting (even after a
            # gc.freeze(), which would make the cycle immortal). Dropped below, outside the
            # lock: finalizing it runs its clean-up, which takes the lock.
            iterator, self._iterator = self._iterator, None
            was_closed = self._closed
            self._closed = True
            reading = self._reading
        if not was_closed:
            if reading:
                shutdown_response(self._resp)  # the reader releases it on its way out
            else:
                self._release(reuse=False)
        del iterator

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

    def _events(self) -> Iterator[WatchEvent]:
        import urllib3

        with self._lock:
            if self._closed:
                return
            self._reading = True
        reuse = False
        lines = self._lines
        try:
            for chunk in self._chunks():
                for event in lines.feed(chunk):
                    if lines.failed:  # nothing more is read: free the connection now
                        self._finish(reuse=False)
                    yield event
                    if self._closed:
                        return
            if not self._closed:
                last = lines.finish()  # a last line without its newline
                if last is not None:
                    if lines.failed:
                        self._finish(reuse=False)
                    yield last
            reuse = not (self._closed or lines.failed)
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
            # ValueError/AttributeError: reading a response another thread just closed.
            if not self._closed:
                self.error = connection_error(exc, self.description)
                logger.info("%s: watch stream ended: %s", self.description, exc)
        finally:
            self._finish(reuse)

    def _finish(self, reuse: bool) -> None:
        """The reading ended: mark the stream closed and hand the connection back."""
        with self._lock:
            self._reading = False
            self._closed = True
        self._release(reuse=reuse)
