"""Decodes API server JSON from bytes straight to plain dicts, with orjson when it is installed.

The hot path of every informer is "bytes from the socket -> dict in the cache". Measured on the
project's 2-core machines (reference/perf-anchors.md sections 2 and 3): ``orjson.loads(bytes)``
decodes a 7 KB pod in 50-65 us, the standard library's ``json.loads`` in 115-145 us, and a
bytes->str step first costs another ~10 %. So this module:

* uses ``orjson`` when importable (``pip install kube-informers[fast]``), the standard library
  otherwise (``json.loads`` accepts bytes and detects UTF-8 itself);
* never turns bytes into ``str`` first and never re-encodes;
* builds no model objects.

Both decoders produce the same dicts for any JSON the API server sends.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from informers.errors import WatchDecodeError

__all__ = ["DECODER", "decode", "decode_event"]

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


def decode(data: bytes | bytearray) -> Any:
    """Decode one JSON document from bytes.

    Raises:
        ValueError: the bytes are not valid JSON (``orjson.JSONDecodeError`` and
            ``json.JSONDecodeError`` are both ``ValueError``).
    """
    return _loads(data)


def decode_event(line: bytes | bytearray) -> tuple[str, dict[str, Any]]:
    """Decode one line of a watch stream into ``(type, object)``.

    A watch stream is newline-delimited JSON, one ``{"type": ..., "object": {...}}`` per line
    (apimachinery ``metav1.WatchEvent``). The event type is returned as sent; callers decide
    what to do with types they do not know.

    Raises:
        WatchDecodeError: the line is not JSON, or not an object with a string ``type`` and a
            dict ``object``. ``line_prefix`` holds the line's first bytes.
    """
    try:
        event = _loads(line)
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
