"""Apply JSON merge patches (RFC 7386) and JSON patches (RFC 6902) to decoded objects.

Strategic merge patch is served as a merge patch: the embedded server has no Go struct tags
to learn list merge keys from, so lists are replaced whole (documented on ``ApiServer``).
Every function returns a new value and never mutates its inputs.
"""

from __future__ import annotations

import copy
from typing import Any

from informers.testing.errors import PatchError

__all__ = ["apply_json_patch", "apply_merge_patch"]


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 ``MergePatch(target, patch)``.

    A non-object patch replaces the target; ``null`` members delete keys; nested objects merge
    recursively; everything else (lists included) is replaced.
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = apply_merge_patch(result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _parse_pointer(pointer: Any, op: str) -> list[str]:
    """RFC 6901: ``"/a/b~1c"`` -> ``["a", "b/c"]``; ``""`` is the whole document."""
    if not isinstance(pointer, str):
        raise PatchError(f"{op} operation: path must be a string, got {pointer!r}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f'{op} operation: path "{pointer}" must start with "/"')
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def _index(container: list[Any], token: str, path: str, op: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(f'{op} operation: invalid array index "{token}" in path "{path}"')
    index = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if index > limit:
        raise PatchError(f'{op} operation: array index {index} out of bounds in path "{path}"')
    return index


def _parent(doc: Any, parts: list[str], path: str, op: str) -> Any:
    node = doc
    for token in parts[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f'{op} operation: path "{path}" does not exist')
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, path, op, allow_end=False)]
        else:
            raise PatchError(f'{op} operation: path "{path}" does not exist')
    return node


def _get(doc: Any, parts: list[str], path: str, op: str) -> Any:
    if not parts:
        return doc
    parent = _parent(doc, parts, path, op)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f'{op} operation: path "{path}" does not exist')
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, path, op, allow_end=False)]
    raise PatchError(f'{op} operation: path "{path}" does not exist')


def _add(doc: Any, parts: list[str], value: Any, path: str, op: str) -> Any:
    if not parts:
        return value
    parent = _parent(doc, parts, path, op)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, op, allow_end=True), value)
    else:
        raise PatchError(f'{op} operation: path "{path}" does not exist')
    return doc


def _remove(doc: Any, parts: list[str], path: str, op: str) -> tuple[Any, Any]:
    if not parts:
        raise PatchError(f"{op} operation: cannot remove the whole document")
    parent = _parent(doc, parts, path, op)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f'{op} operation: path "{path}" does not exist')
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, path, op, allow_end=False))
    raise PatchError(f'{op} operation: path "{path}" does not exist')


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0`` but ``true != 1``, recursively."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def apply_json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902: apply ``operations`` (a list of ``{"op": ..., "path": ...}``) in order.

    Raises:
        PatchError: a malformed operation, a missing path, or a failed ``test`` (the whole
            patch is then not applied, as RFC 6902 section 5 requires).
    """
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for number, operation in enumerate(operations):
        if not isinstance(operation, dict) or "op" not in operation:
            raise PatchError(f"operation {number} is not an object with an \"op\" member")
        op = operation["op"]
        path = operation.get("path")
        parts = _parse_pointer(path, str(op))
        if op in ("add", "replace", "test") and "value" not in operation:
            raise PatchError(f'{op} operation: missing "value" for path "{path}"')
        if op == "add":
            doc = _add(doc, parts, copy.deepcopy(operation["value"]), str(path), op)
        elif op == "remove":
            doc, _ = _remove(doc, parts, str(path), op)
        elif op == "replace":
            if not parts:
                doc = copy.deepcopy(operation["value"])
                continue
            doc, _ = _remove(doc, parts, str(path), op)
            doc = _add(doc, parts, copy.deepcopy(operation["value"]), str(path), op)
        elif op in ("move", "copy"):
            source = operation.get("from")
            from_parts = _parse_pointer(source, op)
            if op == "move":
                if parts[: len(from_parts)] == from_parts and len(parts) > len(from_parts):
                    raise PatchError(f'move operation: cannot move "{source}" into its own child')
                doc, value = _remove(doc, from_parts, str(source), op)
            else:
                value = copy.deepcopy(_get(doc, from_parts, str(source), op))
            doc = _add(doc, parts, value, str(path), op)
        elif op == "test":
            actual = _get(doc, parts, str(path), op)
            if not _json_equal(actual, operation["value"]):
                raise PatchError(
                    f'test operation failed: value at path "{path}" is {actual!r}, '
                    f"expected {operation['value']!r}"
                )
        else:
            raise PatchError(f"unknown JSON patch operation {op!r}")
    return doc
