"""Decodes a list response's items while the response is still arriving.

Why: kube-apiserver streams a large list (its JSON encoder writes item after item), and a
10,000-pod list takes it about a second to produce. Reading the whole body and only then
decoding it puts our decode (over half a second for such a list, with orjson) after the
server's work; feeding the bytes to :class:`ListDecoder` as they arrive decodes each item while
the server is still encoding the next ones, so most of the decode is hidden behind the wait.
The result is the same as decoding the whole body (:func:`informers.client.decoder.decode`),
byte for byte; only the moment the work is done changes.

How items are found without a JSON parser of our own: the list's items are the members of the
array after its top-level ``"items":[``. Each item of an API server list starts with the same
key (a typed list's items start with ``{"metadata":``, Go encodes struct fields in order; an
unstructured list's with ``{"apiVersion":``, map keys are sorted), so the bytes
``},{"<that key>":`` are the candidates for the end of one item and the start of the next. The
bytes from the first undecoded item to the last candidate that has arrived are decoded at once,
as the elements of one JSON array; that succeeds exactly when the candidate is an item's end: a
candidate inside a nested value leaves brackets unclosed and fails to decode (a candidate
cannot lie inside a string, whose quotes are escaped), so a wrong one is never accepted. When
the run fails, the candidates are tried one item at a time, in order; after
:data:`MAX_MISSES` consecutive misses the decoder stops looking and decodes the rest at the
end. (Decoding a run of items at once, rather than each item alone, costs one copy of the bytes
per read instead of one per item, and a buffer that size goes back to the system when freed
instead of leaving holes in the heap among the cached objects.) The end itself (the last item,
the closing ``]``, and whatever members follow the array) is decoded as ``<prefix>`` +
``<rest>``: the document with the already decoded items left out, which is valid JSON exactly
when the whole body is.

Each item's large dicts are rebuilt right after it is decoded (:func:`compacted`): the items
of a list are what an informer keeps, and orjson leaves their large dicts in oversized tables.

Thread safety: none; one reader feeds one decoder. :func:`list_result` reads the decoded
document into a :class:`~informers.list_watch.ListResult`, for the threaded and the async list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from informers.client.decoder import decode
from informers.errors import ResponseDecodeError, StatusError
from informers.list_watch import ListResult

__all__ = ["COMPACT_DEPTH", "COMPACT_MIN_KEYS", "MAX_MISSES", "MAX_PREFIX", "ListDecoder",
           "compacted", "list_result"]

_ITEMS = b'"items":['

MAX_PREFIX = 1 << 16
"""Bytes searched for the top-level ``"items":[`` before the decoder gives up streaming and
decodes the whole body at the end (a list's metadata before its items is a few hundred
bytes: kind, apiVersion, resourceVersion, a continue token)."""

MAX_MISSES = 8
"""Consecutive candidates that fail to decode before the decoder stops looking for item
boundaries (each miss re-reads the bytes since the last item, so this bounds the cost for
items that contain the candidate pattern in nested values)."""


COMPACT_MIN_KEYS = 9
"""Dicts with at least this many keys are rebuilt by :func:`compacted`. orjson grows a dict
key by key, which leaves a 9- to 10-key dict in a 352-byte table and an 11- to 21-key one in a
632-byte table; rebuilt in one go they take 272 and 464 bytes (CPython 3.11's
``sys.getsizeof``). Smaller dicts come out the same either way."""

COMPACT_DEPTH = 3
"""Levels of an item that :func:`compacted` rebuilds: the item, its members (``metadata``,
``spec``, ``status``) and theirs (``containers[i]``, ``containerStatuses[i]``, ``labels``),
where a pod's large dicts are: for a typical 7 KB pod about half a kilobyte less cache memory,
for about 10 us of decode."""


def compacted(obj: dict[str, Any], depth: int = COMPACT_DEPTH) -> dict[str, Any]:
    """``obj`` with its dicts of :data:`COMPACT_MIN_KEYS` keys or more, down to ``depth``
    levels (elements of lists included), rebuilt into right-sized tables. Equal to ``obj``;
    changes ``obj`` in place and may return a new dict for it."""
    if depth > 1:
        for key, value in obj.items():
            if value.__class__ is dict:
                obj[key] = compacted(value, depth - 1)
            elif value.__class__ is list:
                for i, element in enumerate(value):
                    if element.__class__ is dict:
                        value[i] = compacted(element, depth - 1)
    return {k: v for k, v in obj.items()} if len(obj) >= COMPACT_MIN_KEYS else obj


def _kept(item: Any) -> Any:
    """A decoded item as the decoder keeps it: compacted if it is an object."""
    return compacted(item) if item.__class__ is dict else item


class ListDecoder:
    """Feed it a list response's bytes in order with :meth:`feed`; :meth:`finish` returns the
    decoded document, equal to ``decode(body, drop_managed_fields=...)`` of the whole body.

    Raises ``ValueError`` from :meth:`finish` when the body is not valid JSON (never from
    :meth:`feed`: an item that does not decode is simply left for the end).
    """

    __slots__ = ("_buf", "_drop", "_items", "_keep", "_misses", "_prefix", "_scan", "_sep",
                 "_start", "_streaming")

    def __init__(self, *, drop_managed_fields: bool = False,
                 item_hook: Callable[[Any], Any] | None = None) -> None:
        """``item_hook``, if given, is applied to each item as soon as it is decoded (instead
        of :func:`compacted`); the document's ``items`` are what it returned."""
        self._drop = drop_managed_fields
        self._keep = item_hook or _kept
        self._buf = bytearray()
        self._items: list[Any] = []
        self._prefix: bytes | None = None  # the body up to and including its items' "["
        self._sep: bytes | None = None  # b'},{"<first key>":'
        self._start = 0  # offset in _buf of the first byte not yet decoded (an item's "{")
        self._scan = 0  # offset in _buf from which to look for the next separator
        self._misses = 0
        self._streaming = True

    @property
    def items_decoded(self) -> int:
        """Items decoded so far (before :meth:`finish`)."""
        return len(self._items)

    def feed(self, data: bytes | bytearray) -> None:
        """Add the next bytes of the body and decode every item they complete."""
        buf = self._buf
        buf += data
        if not self._streaming:
            return
        if self._prefix is None and not self._find_items():
            return
        if self._sep is None and not self._find_separator():
            return
        sep = self._sep
        assert sep is not None
        last = buf.rfind(sep, self._scan)
        if last >= 0 and not self._decode_run(last + 1):
            self._decode_each(sep)
        else:
            self._scan = max(self._start, len(buf) - len(sep) + 1)
        if self._start > len(buf) // 2:  # drop the decoded bytes (a small memmove)
            del buf[:self._start]
            self._scan -= self._start
            self._start = 0

    def _decode_run(self, end: int) -> bool:
        """Decode the items from ``_start`` to ``end`` (just after a candidate's ``}``) as one
        array; ``False`` if they are not one (the candidate is inside an item)."""
        run = bytearray(b"[")
        with memoryview(self._buf) as view:
            run += view[self._start:end]
        run += b"]"
        try:
            items = decode(run, drop_managed_fields=self._drop)
        except ValueError:
            return False
        self._items.extend(map(self._keep, items))
        self._misses = 0
        self._start = self._scan = end + 1  # past the ","
        return True

    def _decode_each(self, sep: bytes) -> None:
        """Try the candidates in order, one item at a time."""
        buf = self._buf
        while True:
            at = buf.find(sep, self._scan)
            if at < 0:
                self._scan = max(self._start, len(buf) - len(sep) + 1)
                return
            end = at + 1  # just after the item's "}"
            try:
                item = decode(buf[self._start:end], drop_managed_fields=self._drop)
            except ValueError:
                self._misses += 1
                if self._misses > MAX_MISSES:
                    self._streaming = False
                    return
                self._scan = end
                continue
            self._items.append(self._keep(item))
            self._misses = 0
            self._start = self._scan = end + 1

    def _find_items(self) -> bool:
        buf = self._buf
        at = buf.find(_ITEMS, 0, MAX_PREFIX)
        if at < 0:
            if len(buf) >= MAX_PREFIX:
                self._streaming = False
            return False
        prefix = bytes(buf[:at + len(_ITEMS)])
        try:
            head = decode(prefix + b"]}")
        except ValueError:
            head = None
        if not (isinstance(head, dict) and head.get("items") == []):  # not the top-level one
            self._streaming = False
            return False
        self._prefix = prefix
        self._start = self._scan = len(prefix)
        return True

    def _find_separator(self) -> bool:
        buf = self._buf
        start = self._start
        if buf[start:start + 2] != b'{"':  # no items, or not yet here
            if len(buf) > start + 1:
                self._streaming = False  # "]" (no items, nothing to stream) or odd spacing
            return False
        close = buf.find(b'"', start + 2)
        if close < 0 or buf[close + 1:close + 2] != b":":
            if close >= 0 or len(buf) - start > MAX_PREFIX:
                self._streaming = False
            return False
        self._sep = b"}," + bytes(buf[start:close + 2])
        return True

    def finish(self) -> Any:
        """Decode what is left and return the whole document.

        Raises:
            ValueError: the body is not valid JSON.
        """
        if self._prefix is None:
            doc = decode(self._buf, drop_managed_fields=self._drop)
        else:
            doc = decode(self._prefix + self._buf[self._start:], drop_managed_fields=self._drop)
        if isinstance(doc, dict):
            rest = doc.get("items")
            if isinstance(rest, list):
                self._items.extend(map(self._keep, rest))
                doc["items"] = self._items
        self._buf = bytearray()
        self._items = []
        return doc


def list_result(doc: Any, what: str) -> ListResult:
    """The :class:`~informers.list_watch.ListResult` of a decoded list response ``doc`` (what
    :meth:`ListDecoder.finish` or :func:`~informers.client.decoder.decode` returned): its
    items, ``metadata.resourceVersion``, ``continue``, ``remainingItemCount`` and
    ``shardInfo``. The one reading of a list answer for the threaded
    (:class:`~informers.client.list_watch_client.ClientListWatch`) and the async
    (:class:`informers.aio.transport.AsyncListWatch`) list; ``what`` names the request in
    errors. Pure.

    Raises:
        StatusError: ``doc`` is a Status other than Success (client-go ``rest.Result.Into``:
            a 200 whose body is such a Status "is considered an error").
        ResponseDecodeError: ``doc`` is not an object, is a Table, or its ``items`` is not
            a list.
    """
    if not isinstance(doc, dict):
        raise ResponseDecodeError(f"{what}: list response is not a JSON object")
    if doc.get("kind") == "Status" and doc.get("status") != "Success":
        # client-go rest.Result.Into: a 200 whose body decodes as a Status "besides
        # StatusSuccess is considered an error" (errors.FromObject: the Status as it is). A
        # broken proxy answers so; taken as a list it would be an empty one.
        raise StatusError(doc)
    if doc.get("kind") == "Table":
        raise ResponseDecodeError(
            f"{what}: unsupported list gvk {doc.get('apiVersion')}, Kind=Table"
        )
    items = doc.get("items")
    if items is None:
        items = []
    elif not isinstance(items, list):
        raise ResponseDecodeError(f"{what}: list response 'items' is not a list")
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    remaining = meta.get("remainingItemCount")
    shard_info = meta.get("shardInfo")
    return ListResult(
        items=items,
        resource_version=str(meta.get("resourceVersion") or ""),
        continue_=meta.get("continue") or None,
        remaining_item_count=remaining if isinstance(remaining, int) else None,
        shard_info=shard_info if isinstance(shard_info, dict) else None,
    )
