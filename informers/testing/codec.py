"""JSON encoding for the embedded API server: orjson when importable, else the standard library.

Both encoders produce compact JSON (no spaces) and UTF-8 bytes, like kube-apiserver's encoder.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["HAVE_ORJSON", "JSONDecodeError", "dumps", "loads"]

try:  # the ``fast`` extra
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without the extra
    _orjson = None  # type: ignore[assignment]

HAVE_ORJSON = _orjson is not None

JSONDecodeError: tuple[type[Exception], ...]

if _orjson is not None:
    JSONDecodeError = (_orjson.JSONDecodeError, UnicodeDecodeError)

    def dumps(obj: Any) -> bytes:
        """Encode ``obj`` as compact UTF-8 JSON bytes."""
        return _orjson.dumps(obj)

    def loads(data: bytes | str) -> Any:
        """Decode JSON bytes or text."""
        return _orjson.loads(data)

else:  # pragma: no cover - exercised only without the extra
    JSONDecodeError = (json.JSONDecodeError, UnicodeDecodeError)

    def dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()

    def loads(data: bytes | str) -> Any:
        return json.loads(data)
