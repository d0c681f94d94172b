"""The ``fieldValidation`` of writes: unknown and duplicate fields, reported as kube-apiserver does.

Every create, update and patch takes ``?fieldValidation=`` (the ``CreateOptions``,
``UpdateOptions`` and ``PatchOptions`` field, GA since Kubernetes 1.27):

* ``Ignore``: unknown fields are dropped silently, the last of duplicate fields wins;
* ``Warn`` (the default, also for an absent or empty value): the same, plus one
  ``Warning: 299 - "unknown field \\"spec.foo\\""`` (or ``duplicate field``) response header
  per field;
* ``Strict``: the request fails: 400 ``BadRequest`` ``Pod in version "v1" cannot be handled as
  a Pod: strict decoding error: unknown field "spec.foo", duplicate field "metadata.labels"``
  for a create or update, 422 ``Invalid`` (field ``patch``) for a patch;
* anything else: 422 ``Invalid`` ``CreateOptions.meta.k8s.io "" is invalid: fieldValidation:
  Unsupported value: ...``.

Messages, order and status shapes are those of kube-apiserver v1.36.3 (observed; the decoder is
``sigs.k8s.io/json``'s strict mode, fields named by their JSON path, list elements as
``containers[0]``): built-in kinds report fields in document order, and a duplicate object
merges into the first as Go's decoder fills the same struct twice; custom resources report
duplicates first, then unknown fields (pruning runs after decoding), and the last duplicate
wins. Unknown fields come from the Go field tables (:mod:`informers.testing.schemas`); custom
resources keep unknown fields everywhere but in ``metadata``. Duplicate fields are found in
JSON bodies only (a YAML body's are not reported; kubectl sends JSON); protobuf bodies have no
unknown or duplicate fields.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Callable, Iterable
from typing import Any

from informers.errors import StatusError
from informers.testing import status
from informers.testing.endpoints import decode_body
from informers.testing.resources import ResourceType
from informers.testing.schemas import Fields, Schemas
from informers.testing.strategy import JSON_PATCH, STRATEGIC_MERGE_PATCH

__all__ = ["IGNORE", "STRICT", "WARN", "FieldValidator", "directive", "warning_header"]

IGNORE, WARN, STRICT = "Ignore", "Warn", "Strict"
_OPTIONS = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}


def directive(query: dict[str, str], verb: str) -> str:
    """The request's ``fieldValidation``: ``Warn`` when absent or empty (the server default
    since 1.27).

    Raises:
        StatusError: 422 for a value other than ``""``, ``Ignore``, ``Warn`` or ``Strict``
            (case matters, as on kube-apiserver).
    """
    value = query.get("fieldValidation", "")
    if value in ("", WARN):
        return WARN
    if value in (IGNORE, STRICT):
        return value
    raise status.invalid(_OPTIONS.get(verb, "CreateOptions"), "meta.k8s.io", "", [(
        "FieldValueNotSupported", "fieldValidation",
        f'Unsupported value: "{value}": supported values: "", "Ignore", "Strict", "Warn"')])


def warning_header(message: str) -> tuple[str, str]:
    """``("Warning", '299 - "unknown field \\"x\\""')``: an RFC 7234 warning with code 299 and
    agent ``-``, as kube-apiserver's warning recorder writes it."""
    return "Warning", f"299 - {json.dumps(message)}"


class _Pairs(list[tuple[str, Any]]):
    """A JSON object's members in document order (the ``object_pairs_hook`` result)."""

    __slots__ = ()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def _parse_checked(raw: bytes) -> tuple[Any, bool]:
    """``raw`` decoded, and whether some object has a duplicate field."""
    duplicated: list[bool] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):
            duplicated.append(True)
        return result

    try:
        return json.loads(raw, object_pairs_hook=hook, parse_constant=_reject_constant), bool(
            duplicated)
    except (ValueError, RecursionError):
        return decode_body(raw, "application/json"), False


def _parse_pairs(raw: bytes) -> Any:
    """``raw`` with objects as :class:`_Pairs`; on malformed JSON the error of
    :func:`decode_body` (what the server answered before validation existed)."""
    try:
        return json.loads(raw, object_pairs_hook=_Pairs, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return decode_body(raw, "application/json")


class _Walk:
    """One pass over a decoded body: rebuilds dicts, drops unknown fields, records
    messages."""

    def __init__(self, builtin: bool, check_unknown: bool = True) -> None:
        self.builtin = builtin
        self.check_unknown = check_unknown
        self.in_order: list[str] = []
        self.duplicates: list[str] = []
        self.unknown: list[str] = []

    @property
    def messages(self) -> list[str]:
        # Custom resources: the pruned fields sorted (the apiextensions decoder sorts them).
        return self.in_order if self.builtin else self.duplicates + sorted(self.unknown)

    def value(self, value: Any, node: Fields | None, path: str) -> Any:
        if isinstance(value, _Pairs) or (isinstance(value, dict) and node is not None):
            return self._object(value if isinstance(value, _Pairs) else value.items(), node, path)
        if isinstance(value, list) and (node is not None or any(
                isinstance(v, (_Pairs, list)) for v in value)):
            items = node.items if node is not None and not node.is_map else None
            return [self.value(v, items, f"{path}[{i}]") for i, v in enumerate(value)]
        return value

    def _object(self, members: Iterable[tuple[str, Any]], node: Fields | None,
                path: str) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, item in members:
            where = f"{path}.{key}" if path else key
            if key in result:
                self.duplicates.append(f'duplicate field "{where}"')
                self.in_order.append(self.duplicates[-1])
            child: Fields | None = None
            if node is not None:
                if node.is_map:
                    child = node.items
                elif node.fields is not None and key in node.fields:
                    child = node.fields[key]
                elif node.fields is not None and not node.preserve and self.check_unknown:
                    self.unknown.append(f'unknown field "{where}"')
                    self.in_order.append(self.unknown[-1])
                    continue
            walked = self.value(item, child, where)
            if key in result and self.builtin:
                walked = _merge(result[key], walked, child)
            result[key] = walked
        return result


def _merge(old: Any, new: Any, node: Fields | None) -> Any:
    """A duplicate field decoded into the same Go value: a struct keeps the fields the second
    object lacks, a map its other keys; anything else is replaced."""
    if node is None or not isinstance(old, dict) or not isinstance(new, dict):
        return new
    if node.is_map:
        return {**old, **new}
    if node.fields is None:
        return new
    merged = dict(old)
    for key, value in new.items():
        merged[key] = _merge(old[key], value, node.fields.get(key)) if key in old else value
    return merged


class FieldValidator:
    """Decodes write bodies under a ``fieldValidation`` directive. Thread-safe (the schemas
    are read-only once built).

    Args:
        schemas: the field trees of the served kinds.
    """

    def __init__(self, schemas: Schemas) -> None:
        self.schemas = schemas

    def decode(
        self, raw: bytes, content_type: str, rt: ResourceType, mode: str,
        fields: Fields | None = None,
    ) -> tuple[Any, list[str]]:
        """A create or update body (JSON or YAML) with unknown fields dropped, and the
        warnings to answer. ``fields``: the tree to check against instead of ``rt``'s (a
        ``Scale``).

        Raises:
            StatusError: 400 for malformed input, or for unknown or duplicate fields under
                ``Strict``.
        """
        if fields is None:
            fields = self.schemas.fields(rt)
        if content_type == "application/json" and mode != IGNORE:
            body, duplicated = _parse_checked(raw)
            if not duplicated and fields.clean(body):
                return body, []  # the common case: one parse and a quick check
            source = _parse_pairs(raw)  # again, keeping every member in document order
        else:
            source = decode_body(raw, content_type)
            if fields.clean(source):
                return source, []
        walk = _Walk(rt.builtin)
        body = walk.value(source, fields, "")
        messages = walk.messages
        if messages and mode == STRICT:
            raise status.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                f"strict decoding error: {', '.join(messages)}")
        return body, messages if mode == WARN else []

    def decode_patch(
        self, raw: bytes, content_type: str, rt: ResourceType, mode: str
    ) -> tuple[Any, list[str]]:
        """A patch body and its duplicate fields (paths within the patch; JSON patches are
        not checked)."""
        if mode == IGNORE or content_type == JSON_PATCH:
            return decode_body(raw, "application/json"), []
        patch, duplicated = _parse_checked(raw)
        if not duplicated:
            return patch, []
        walk = _Walk(rt.builtin, check_unknown=False)
        patch = walk.value(_parse_pairs(raw), None, "")
        return patch, walk.duplicates

    def patched_check(
        self, rt: ResourceType, content_type: str, patch: Any, duplicates: list[str],
        mode: str, warnings: list[str], fields: Fields | None = None,
    ) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """The check of a patch's result (with ``kind`` and ``apiVersion``), run before it is
        stored: it returns the object without unknown fields, or raises the 422 of
        ``Strict``; under ``Warn`` it appends the messages to ``warnings``. ``fields``: the
        tree to check against instead of ``rt``'s."""

        tree = self.schemas.fields(rt) if fields is None else fields

        def check(patched: dict[str, Any]) -> dict[str, Any]:
            if not duplicates and tree.clean(patched):
                return patched
            walk = _Walk(rt.builtin)
            pruned = walk.value(patched, tree, "")
            messages = duplicates + (walk.unknown if rt.builtin else sorted(walk.unknown))
            if messages and mode == STRICT:
                raise _patch_error(rt, content_type, patch, patched, messages)
            if mode == WARN:
                warnings.extend(messages)
            return dict(pruned)

        return check


def _patch_error(
    rt: ResourceType, content_type: str, patch: Any, patched: dict[str, Any],
    messages: list[str],
) -> StatusError:
    """The 422 kube-apiserver v1.36.3 answers a ``Strict`` patch with unknown or duplicate
    fields (observed): field ``patch``, no kind or name (`` "" is invalid``), the value being
    the patch as Go prints a map (strategic merge patches) or else the patched object as JSON,
    its keys sorted (custom resources are maps throughout; a built-in object's nested values
    keep the order they were stored in)."""
    if content_type == STRATEGIC_MERGE_PATCH:
        shown = _go_format(patch)
    elif rt.builtin:
        shown = json.dumps({k: patched[k] for k in sorted(patched)}, separators=(",", ":"),
                           ensure_ascii=False)
    else:
        shown = json.dumps(patched, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    body = (f"Invalid value: {json.dumps(shown, ensure_ascii=False)}: strict decoding error: "
            f"{', '.join(messages)}")
    return StatusError(status.status_dict(422, "Invalid", f' "" is invalid: patch: {body}', {
        "causes": [{"reason": "FieldValueInvalid", "message": body, "field": "patch"}]}))


def _go_format(value: Any) -> str:
    """``fmt``'s ``%v`` of a value ``k8s.io/apimachinery/pkg/util/json`` decoded: maps as
    ``map[k:v]`` with sorted keys, slices as ``[a b]``, integral numbers as int64."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, list):
        return "[" + " ".join(_go_format(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(
            f"{k}:{_go_format(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _go_float(value: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)``: the shortest digits, in exponent form when the
    exponent is below -4 or at least 6 (the ``%v`` of a float64)."""
    if value == 0:
        return "0"
    sign, digits, exponent = decimal.Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + exponent  # where the decimal point falls in ``text``
    x = point - 1
    minus = "-" if sign else ""
    if x < -4 or x >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{minus}{mantissa}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{text}"
    if point >= len(text):
        return minus + text + "0" * (point - len(text))
    return f"{minus}{text[:point]}.{text[point:]}"
