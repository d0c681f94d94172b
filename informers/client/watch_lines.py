"""Turns the bytes of a watch answer into events, however they arrive (:class:`WatchLineDecoder`).

The I/O-free half of a watch stream, shared by the threaded
:class:`~informers.client.watch_stream.HttpWatchStream` and the async
:class:`informers.aio.transport.AsyncWatchStream`: the body is newline-delimited JSON in chunks
that need not align with lines; each line is decoded straight to a dict
(:func:`informers.client.decoder.decode_event`). A line that is not an event ends the watch with
an ERROR event, as apimachinery's ``watch.StreamWatcher`` does (see
:class:`~informers.client.watch_stream.HttpWatchStream` for the rules).

One reader at a time; no locks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from informers.client.decoder import decode, decode_event
from informers.client.status import client_decoding_status
from informers.errors import WatchDecodeError
from informers.list_watch import WATCH_EVENT_TYPES, WatchEvent

__all__ = ["WatchLineDecoder"]

logger = logging.getLogger("informers.client.watch_stream")

_LINE_PREFIX = 120  # bytes of an offending line shown in logs


def _bare_status(doc: Any) -> str | None:
    """The problem of a line that decoded to ``doc``, if it is a bare ``Status`` where an event
    belongs (a broken proxy): client-go's JSON serializer decodes it as a Status, not into
    the WatchEvent ("unable to decode to metav1.WatchEvent", ``rest/watch`` ``Decoder``)."""
    if isinstance(doc, dict) and doc.get("kind") == "Status":
        return ("unable to decode to metav1.WatchEvent: got a Status "
                f"({doc.get('status')}, {doc.get('code')} {doc.get('reason')}: "
                f"{doc.get('message')})")
    return None


class WatchLineDecoder:
    """Splits a watch body into lines and decodes each into a :class:`WatchEvent`.

    :meth:`feed` yields the events completed by a chunk; :meth:`finish` the event of a last
    line without its newline. After a line that is not an event, ``failed`` is set and the
    ERROR event that ends the stream is the last one yielded: the reader must stop.

    Args:
        description: what is watched, for logs.
        drop_managed_fields: decode objects without ``metadata.managedFields``.

    Attributes:
        failed: a line was not an event (the stream must end).
        events: events decoded so far.
        decode_errors: undecodable lines met (0 or 1).
        unknown_events: events of unknown types met (0 or 1).
    """

    __slots__ = ("_drop", "_pending", "decode_errors", "description", "events", "failed",
                 "unknown_events")

    def __init__(self, description: str = "watch", *, drop_managed_fields: bool = False) -> None:
        self.description = description
        self._drop = drop_managed_fields
        self._pending: list[bytes] = []
        self.failed = False
        self.events = 0
        self.decode_errors = 0
        self.unknown_events = 0

    def feed(self, chunk: bytes) -> Iterator[WatchEvent]:
        """The events of the lines ``chunk`` completes (stops after a failed line)."""
        pos = 0
        nl = chunk.find(b"\n")
        pending = self._pending
        while nl >= 0:
            if pending:  # the line began in earlier chunks
                pending.append(chunk[pos:nl])
                line = b"".join(pending)
                pending.clear()
            else:
                line = chunk[pos:nl]
            pos = nl + 1
            if line.strip():
                event = self.event(line)
                if event is not None:
                    yield event
                    if self.failed:
                        return
            nl = chunk.find(b"\n", pos)
        if pos < len(chunk):
            pending.append(chunk[pos:])

    def finish(self) -> WatchEvent | None:
        """The body ended: the event of a last line without its newline, if any."""
        tail = b"".join(self._pending)
        self._pending.clear()
        if not tail.strip() or self.failed:
            return None
        return self.event(tail, last=True)

    def event(self, line: bytes, last: bool = False) -> WatchEvent | None:
        """The event of ``line``; for a line that is not one, the ERROR event that ends the
        stream (``failed`` is then set); ``None`` for the unterminated ``last`` line of a body
        that ended inside an event."""
        try:
            etype, obj = decode_event(line, drop_managed_fields=self._drop)
        except WatchDecodeError as exc:
            try:
                problem = _bare_status(decode(line)) or str(exc)
            except ValueError:  # not JSON
                if last:
                    # apimachinery StreamWatcher.receive: io.ErrUnexpectedEOF ends the watch
                    # without an error; the next watch from the last version sends it again.
                    logger.info("%s: watch stream ended inside an event (%d bytes)",
                                self.description, len(line))
                    return None
                problem = str(exc)
            self.decode_errors += 1
            logger.warning("%s: undecodable watch line (%d bytes, starts %r): %s; ending the "
                           "watch", self.description, len(line), exc.line_prefix, problem)
            return self._fail(problem)
        if etype not in WATCH_EVENT_TYPES:
            self.unknown_events += 1
            logger.warning("%s: watch event of unknown type %r (line starts %r); ending the "
                           "watch", self.description, etype, bytes(line[:_LINE_PREFIX]))
            return self._fail(f"got invalid watch event type: {etype}")
        self.events += 1
        return WatchEvent(etype, obj)

    def _fail(self, problem: str) -> WatchEvent:
        self.failed = True
        return WatchEvent("ERROR", client_decoding_status(problem))
