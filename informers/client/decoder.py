"""Decodes API server JSON from bytes straight to plain dicts, with orjson when it is installed.

The hot path of every informer is "bytes from the socket -> dict in the cache" (where its time
goes: the docs' performance page, ``docs/performance.md``). So this module:

* uses ``orjson`` when importable (``pip install kube-informers[fast]``; it decodes a pod in
  about half the time of the standard library), the standard library otherwise (``json.loads``
  accepts bytes and detects UTF-8 itself);
* never turns bytes into ``str`` first and never re-encodes;
* builds no model objects;
* can leave ``metadata.managedFields`` out (``drop_managed_fields=True``) without decoding it:
  the members are cut out of the bytes first (:func:`strip_managed_fields_bytes`), and the
  result is checked to equal what decoding everything and deleting them would give. A typical
  pod is about 40 % managedFields, none of which is then decoded, allocated or kept.

Both decoders produce the same dicts for any JSON the API server sends.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from informers.errors import WatchDecodeError

__all__ = ["DECODER", "decode", "decode_event", "strip_managed_fields_bytes"]

logger = logging.getLogger(__name__)

_loads: Callable[[bytes | bytearray], Any]
try:  # pragma: no cover - which branch runs depends on the environment
    import orjson

    _loads = orjson.loads
    DECODER = "orjson"
except ImportError:  # pragma: no cover
    _loads = json.loads
    DECODER = "json"
"""Name of the decoder in use: ``"orjson"`` or ``"json"``."""

# How many bytes of an undecodable line go into errors and logs.
_PREFIX = 120

_KEY = b'"managedFields":['
_MEMBER_START = frozenset(b"{,")  # what precedes a member's key in compact JSON
_PLACEHOLDER = b'"\\u0001":0'
_PLACEHOLDER_KEY = "\x01"
_PLACEHOLDER_ESCAPE = b"\\u0001"  # the only spelling of U+0001 in a JSON string
_MAX_CLOSERS = 16
"""``]`` bytes inside strings of one managedFields array that are stepped over before the
member is left as it is (the decode then handles it)."""


def _unescaped_quotes(data: bytes | bytearray, start: int, end: int) -> int:
    """The number of ``"`` in ``data[start:end]`` that open or close a string.

    Exact when ``data`` is valid JSON and no run of backslashes crosses ``start`` or ``end``
    (the caller's boundaries follow a ``[`` or a ``]``). Outside strings valid JSON has no
    backslash, and inside one every backslash starts an escape, so pairing the backslashes of
    each run from its left (two of them are one escaped backslash) leaves a lone backslash
    exactly before each escaped quote.
    """
    quotes = data.count(b'"', start, end)
    if not quotes:
        return 0
    backslashes = data.count(b"\\", start, end)
    if not backslashes:
        return quotes
    escaped = data.count(b'\\"', start, end)
    if escaped == backslashes:  # every backslash precedes a quote: none is an escaped one
        return quotes - escaped
    return quotes - data[start:end].replace(b"\\\\", b"").count(b'\\"')


def _array_end(data: bytes | bytearray, start: int) -> int:
    """End (exclusive) of the ``]`` that ends the cut of the array at ``data[start] == "["``,
    or -1.

    The first ``]`` after ``start`` when it looks like the end of a managedFields array (after
    a ``}``, before ``,`` or ``}``) or when an even number of unescaped quotes lies between
    (it is outside strings); else the next ``]`` outside strings, within :data:`_MAX_CLOSERS`.
    Either way no ``]`` outside strings lies between ``start`` and the result.
    """
    close = data.find(b"]", start + 1)
    if close < 0:
        return -1
    if data[close - 1] == 0x7D and data[close + 1:close + 2] in (b",", b"}"):  # "}]," "}]}"
        return close + 1
    pos = start + 1
    quotes = 0
    for _ in range(_MAX_CLOSERS):
        quotes += _unescaped_quotes(data, pos, close)
        if not quotes & 1:
            return close + 1
        pos = close + 1
        close = data.find(b"]", pos)
        if close < 0:
            return -1
    return -1


def strip_managed_fields_bytes(
    data: bytes | bytearray, limit: int = -1
) -> tuple[bytes | bytearray, int]:
    """Replace ``"managedFields":[...]`` members in JSON bytes by a placeholder, cheaply.

    This is how :func:`decode` and :func:`decode_event` skip managedFields without decoding
    them; use those unless you check the result the same way.

    Contract: returns ``(result, count)``. For each occurrence, left to right, of the bytes
    ``"managedFields":[`` preceded by ``{`` or ``,`` (a member of an object, in compact JSON as
    the API server sends it), at most ``limit`` of them (``-1``: all), whose array is not
    ``[]``: the array is taken to end at the first ``]`` after its ``[`` if that one follows a
    ``}`` and precedes ``,`` or ``}`` (the usual end of a managedFields array), else at the
    first ``]`` preceded by an even number of unescaped quotes since the ``[`` (escapes counted
    exactly; 16 candidates at most, or the member is left as it is). The member, from its
    key's opening quote to that ``]``, is replaced by the 10 bytes ``"\\u0001":0``: a member
    whose key is the one-character string U+0001. ``count`` members were replaced; all other
    bytes are copied unchanged, and ``data`` itself is returned when ``count`` is 0. Nothing is
    replaced (``count`` 0) when the bytes left contain ``\\u0001`` (the only spelling of
    U+0001 in JSON), so in a result a U+0001 key is always a placeholder. Members at any depth
    are replaced: ``metadata.managedFields`` of a list's items or of a watch event's object,
    but also of an embedded ObjectMeta (a pod template's) or any member of that name.

    Why a wrong cut cannot pass silently, for ``data`` that is valid JSON:

    * The matched bytes are a real member: a ``"`` preceded by ``{`` or ``,`` is not escaped
      and cannot close a string (the letters after it would be outside any string), so it
      opens the string ``managedFields``, which the ``:`` makes a key whose value is an array.
      Such text inside a string value (a label, an annotation) cannot match: its quotes are
      escaped (``\\"``).
    * No ``]`` outside strings lies between the ``[`` and the chosen ``]`` (the chosen one is the
      first ``]`` at all, or the first outside strings), so the cut never runs past the
      array's own ``]``.
    * If the chosen ``]`` is inside a string, the replaced bytes hold an odd number of unescaped
      quotes, the placeholder two, and the escape status of every other quote is unchanged
      (the cut's edges are ``{``/``,`` and ``]``, never a backslash): the result has an odd
      number of string delimiters and is not valid JSON.
    * If it is outside strings but closes an array nested in this one, the replaced bytes open
      more brackets than they close: the result has more closing brackets than opening ones
      and is not valid JSON.

    So the result either fails to decode or decodes to ``data``'s value with each replaced
    member swapped for a ``"\\x01": 0`` member in the same object (where two placeholders in
    one object decode as one key). :func:`decode` then checks that every placeholder is in a
    top-level ``metadata``, one per object, and otherwise decodes ``data`` itself. For invalid
    JSON nothing is promised: the result may decode if the only defect was in a replaced array.
    """
    at = data.find(_KEY)
    if at < 0:
        return data, 0
    view = memoryview(data)
    parts: list[Any] = []
    pos = 0
    count = 0
    while at >= 0 and count != limit:
        start = at + len(_KEY) - 1  # the "["
        end = -1
        if at > 0 and data[at - 1] in _MEMBER_START and data[start + 1:start + 2] != b"]":
            end = _array_end(data, start)
        if end > 0:
            if _has_placeholder_escape(data, pos, at):
                return data, 0
            parts.append(view[pos:at])
            parts.append(_PLACEHOLDER)
            pos = end
            count += 1
            at = data.find(_KEY, end) if count != limit else -1  # no search past the limit
        else:
            at = data.find(_KEY, start)
    if not count or _has_placeholder_escape(data, pos, len(data)):
        return data, 0
    parts.append(view[pos:])
    return b"".join(parts), count


def _has_placeholder_escape(data: bytes | bytearray, start: int, end: int) -> bool:
    # A backslash is rare outside managedFields: look for one first (memchr), then for the
    # escape. The range's edges are never inside an escape (see the caller).
    return data.find(b"\\", start, end) >= 0 and data.find(_PLACEHOLDER_ESCAPE, start, end) >= 0


def _drop_managed_fields(objects: Iterable[Any], placeholders: bool) -> int:
    """Delete ``metadata.managedFields`` of each object, and with ``placeholders`` the
    placeholder member too; return how many placeholders were deleted."""
    found = 0
    for obj in objects:
        if obj.__class__ is dict:
            meta = obj.get("metadata")
            if meta.__class__ is dict:
                if placeholders and _PLACEHOLDER_KEY in meta:
                    del meta[_PLACEHOLDER_KEY]
                    found += 1
                if "managedFields" in meta:
                    del meta["managedFields"]
    return found


def _objects(doc: Any) -> Iterable[Any]:
    """``doc`` and, if it has an ``items`` list (a list response), each of its items; the
    elements of ``doc`` if it is an array (a run of a list's items)."""
    if doc.__class__ is list:
        return doc
    items = doc.get("items") if doc.__class__ is dict else None
    return (doc, *items) if items.__class__ is list else (doc,)


def decode(data: bytes | bytearray, *, drop_managed_fields: bool = False) -> Any:
    """Decode one JSON document from bytes.

    Args:
        data: the document.
        drop_managed_fields: return ``decode(data)`` with ``metadata.managedFields`` deleted
            from the document and from each object of its ``items`` list (a list response)
            or, for an array, from each of its elements,
            without decoding those arrays where possible. The members are replaced in the
            bytes first (:func:`strip_managed_fields_bytes`); the decode of the result is kept
            only if it succeeds and each placeholder is in one of those ``metadata`` objects,
            one per object (then they are deleted). Otherwise (a placeholder elsewhere, such as
            a pod template's ``metadata``, or a cut that broke the JSON) ``data`` itself is
            decoded and the members deleted from that. The result is the same either way.

    Raises:
        ValueError: the bytes are not valid JSON (``orjson.JSONDecodeError`` and
            ``json.JSONDecodeError`` are both ``ValueError``).
    """
    if not drop_managed_fields:
        return _loads(data)
    stripped, replaced = strip_managed_fields_bytes(data)
    if replaced:
        try:
            doc = _loads(stripped)
        except ValueError:
            pass
        else:
            if _drop_managed_fields(_objects(doc), True) == replaced:
                return doc
        logger.debug("managedFields stripped from a %d-byte document in an unexpected place; "
                     "decoding it as it is", len(data))
    doc = _loads(data)
    _drop_managed_fields(_objects(doc), False)
    return doc


def _event(data: bytes | bytearray, line: bytes | bytearray) -> tuple[str, dict[str, Any]]:
    try:
        event = _loads(data)
    except ValueError as exc:
        raise WatchDecodeError(f"watch line is not JSON: {exc}", bytes(line[:_PREFIX])) from None
    if not isinstance(event, dict):
        raise WatchDecodeError("watch line is not a JSON object", bytes(line[:_PREFIX]))
    etype = event.get("type")
    obj = event.get("object")
    if not isinstance(etype, str) or not isinstance(obj, dict):
        raise WatchDecodeError(
            "watch event without a string 'type' and an object 'object'", bytes(line[:_PREFIX])
        )
    return etype, obj


def decode_event(
    line: bytes | bytearray, *, drop_managed_fields: bool = False
) -> tuple[str, dict[str, Any]]:
    """Decode one line of a watch stream into ``(type, object)``.

    A watch stream is newline-delimited JSON, one ``{"type": ..., "object": {...}}`` per line
    (apimachinery ``metav1.WatchEvent``). The event type is returned as sent; callers decide
    what to do with types they do not know.

    Args:
        line: the line, without its newline.
        drop_managed_fields: delete the object's ``metadata.managedFields``, without decoding
            it where possible; the result is the same as deleting it after a plain decode (the
            same check and fallback as :func:`decode`).

    Raises:
        WatchDecodeError: the line is not JSON, or not an object with a string ``type`` and a
            dict ``object``. ``line_prefix`` holds the line's first bytes.
    """
    if not drop_managed_fields:
        return _event(line, line)
    stripped, replaced = strip_managed_fields_bytes(line, 1)
    if replaced:
        try:
            etype, obj = _event(stripped, line)
        except WatchDecodeError:
            pass
        else:
            if _drop_managed_fields((obj,), True) == replaced:
                return etype, obj
        logger.debug("managedFields stripped from a %d-byte watch line in an unexpected "
                     "place; decoding it as it is", len(line))
    etype, obj = _event(line, line)
    _drop_managed_fields((obj,), False)
    return etype, obj
