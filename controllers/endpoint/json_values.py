"""Reads fields of decoded JSON objects defensively: a field of the wrong type reads as empty.

Shared by the controller's modules. JSON objects decode to ``dict``, so the exact-type check
comes first; the ``Mapping`` ABC check (a few times slower) is only the fallback for other
mappings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["as_map", "meta_of"]

_EMPTY: Mapping[str, Any] = {}


def as_map(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one (shared: never mutate the result)."""
    if value.__class__ is dict:
        return value
    return value if isinstance(value, Mapping) else _EMPTY


def meta_of(obj: Any) -> Mapping[str, Any]:
    """``obj["metadata"]`` if ``obj`` and it are mappings, else an empty mapping (shared)."""
    return as_map(as_map(obj).get("metadata"))
