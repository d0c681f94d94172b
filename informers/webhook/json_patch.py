"""Computes the RFC 6902 JSON patch that turns one JSON document into another.

What controller-runtime's defaulting webhook sends back (``admission.PatchResponseFromRaw``,
which calls ``gomodules.xyz/jsonpatch/v2`` ``CreatePatch``): the operations, applied in order by
kube-apiserver, that take the object it sent to the object the defaulter made.

The diff walks both documents together:

* objects: a key only in the new document is ``add``; only in the old, ``remove``; in both,
  compared recursively;
* arrays: the common prefix of indices is compared element by element; extra new elements are
  ``add`` ed at their index in order; surplus old elements are ``remove`` d from the last one
  back, so each index is valid when its operation applies;
* anything else that differs (a scalar, or a value whose JSON type changed) is ``replace``.

Keys are escaped in the JSON pointer as RFC 6901 says (``~`` as ``~0``, ``/`` as ``~1``).
``True`` and ``1`` differ (JSON booleans are not numbers); ``1`` and ``1.0`` are equal.
Pure functions; the inputs are not modified, the values in the operations are deep copies.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["create_patch", "escape_token"]


def escape_token(token: str) -> str:
    """One reference token of a JSON pointer (RFC 6901 section 3): ``~`` -> ``~0``, then
    ``/`` -> ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def create_patch(original: Any, modified: Any) -> list[dict[str, Any]]:
    """The JSON patch operations (``[{"op": ..., "path": ..., "value": ...}]``) that turn
    ``original`` into ``modified``; ``[]`` when they are equal."""
    operations: list[dict[str, Any]] = []
    _diff(original, modified, "", operations)
    return operations


def _diff(old: Any, new: Any, path: str, out: list[dict[str, Any]]) -> None:
    if _equal(old, new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                out.append({"op": "remove", "path": f"{path}/{escape_token(key)}"})
        for key, value in new.items():
            child = f"{path}/{escape_token(key)}"
            if key in old:
                _diff(old[key], value, child, out)
            else:
                out.append({"op": "add", "path": child, "value": copy.deepcopy(value)})
        return
    if isinstance(old, list) and isinstance(new, list):
        common = min(len(old), len(new))
        for i in range(common):
            _diff(old[i], new[i], f"{path}/{i}", out)
        for i in range(common, len(new)):
            out.append({"op": "add", "path": f"{path}/{i}", "value": copy.deepcopy(new[i])})
        for i in range(len(old) - 1, common - 1, -1):
            out.append({"op": "remove", "path": f"{path}/{i}"})
        return
    out.append({"op": "replace", "path": path, "value": copy.deepcopy(new)})
