"""Shard selectors of sharded list and watch (KEP-5866): the hash, the ``shardRange`` syntax.

Kubernetes v1.36 (alpha, feature gate ``ShardedListAndWatch``) lets a list or watch carry a
``shardSelector`` query parameter such as::

    shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
    shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000')
        || shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')

An object matches when the 64-bit FNV-1a hash of the named field (its UID, or its namespace)
lies in one of the OR-ed half-open ranges ``[start, end)``. The server echoes the selector it
applied in the list's ``metadata.shardInfo.selector`` (:meth:`ShardSelector.__str__`'s text);
a server without the feature ignores the parameter and answers no ``shardInfo``.

This module is the client and server side of that contract, ported from
``k8s.io/apimachinery/pkg/sharding`` (``hash.go`` ``HashField``, ``selector.go``,
``accessor.go``) and ``k8s.io/apiserver/pkg/sharding/parser.go`` ``Parse`` at v0.36.3, with
the same error messages. Upstream parses the expression with the CEL parser and walks the AST;
:func:`parse` walks the AST :mod:`informers.cel_syntax` reads, so an expression upstream
accepts is accepted here with the same requirements, and the semantic errors (an unsupported
function or field, a malformed bound, mixed keys) carry upstream's exact text; CEL syntax
errors are worded as cel-go words the common ones.

Everything here is a pure function or an immutable value: safe from any thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from informers.cel_syntax import (
    CALL,
    IDENT,
    LITERAL,
    SELECT,
    CELSyntaxError,
    Expr,
    parse_expression,
)

__all__ = [
    "HASH_SPACE_END",
    "NAMESPACE_KEY",
    "SUPPORTED_KEYS",
    "UID_KEY",
    "ShardRange",
    "ShardSelector",
    "ShardSelectorError",
    "even_split",
    "everything",
    "fnv1a_64",
    "format_bound",
    "hash_field",
    "hex_less",
    "parse",
    "resolve_field_value",
]

UID_KEY = "object.metadata.uid"
NAMESPACE_KEY = "object.metadata.namespace"
SUPPORTED_KEYS = (UID_KEY, NAMESPACE_KEY)
"""The fields a shard range may hash (``parser.go`` ``parseShardRangeCall``)."""

HASH_SPACE_END = "0x10000000000000000"
"""2**64, the exclusive upper bound of the last range (the only 17-digit bound allowed)."""

_FNV64_OFFSET = 0xCBF29CE484222325  # Go hash/fnv offset64
_FNV64_PRIME = 0x100000001B3  # Go hash/fnv prime64
_MASK64 = (1 << 64) - 1


class ShardSelectorError(ValueError):
    """An expression :func:`parse` refuses, or an object a selector cannot hash; the message
    is upstream's (the server answers it after ``invalid shard selector: ``)."""


def fnv1a_64(data: bytes) -> int:
    """The 64-bit FNV-1a hash of ``data`` (Go's ``hash/fnv.New64a``)."""
    value = _FNV64_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV64_PRIME) & _MASK64
    return value


def hash_field(value: str) -> str:
    """The hash of a field's UTF-8 bytes as 16 lowercase hex digits, no ``0x``
    (``HashField``); ``"0x" + hash_field(v)`` compares with a range's bounds."""
    return f"{fnv1a_64(value.encode('utf-8')):016x}"


def hex_less(a: str, b: str) -> bool:
    """``a < b`` for ``0x``-prefixed lowercase hex of 16 digits (or :data:`HASH_SPACE_END`):
    the longer is larger, else the strings compare (``HexLess``)."""
    if len(a) != len(b):
        return len(a) < len(b)
    return a < b


def format_bound(value: int) -> str:
    """A range bound as the wire writes it: ``0x`` and 16 hex digits, or
    :data:`HASH_SPACE_END` for 2**64.

    Raises:
        ValueError: ``value`` is outside ``[0, 2**64]``.
    """
    if not 0 <= value <= 1 << 64:
        raise ValueError(f"a shard bound must be in [0, 2**64], got {value}")
    return HASH_SPACE_END if value == 1 << 64 else f"0x{value:016x}"


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the strings these messages quote."""
    return json.dumps(text, ensure_ascii=False)


def resolve_field_value(obj: Mapping[str, Any], key: str) -> str:
    """The value a range of ``key`` hashes: the object's ``metadata.uid`` or
    ``metadata.namespace`` (empty when absent), as ``ResolveFieldValue``.

    Raises:
        ShardSelectorError: ``key`` is not one of :data:`SUPPORTED_KEYS`.
    """
    meta = obj.get("metadata") or {}
    if key == UID_KEY:
        return str(meta.get("uid") or "")
    if key == NAMESPACE_KEY:
        return str(meta.get("namespace") or "")
    raise ShardSelectorError(f"unsupported field path: {_go_quote(key)}")


@dataclass(frozen=True)
class ShardRange:
    """One ``shardRange(key, start, end)``: objects whose ``key`` hashes into
    ``[start, end)`` (``ShardRangeRequirement``). Bounds are ``0x``-prefixed lowercase hex as
    written on the wire."""

    key: str
    start: str
    end: str

    def __str__(self) -> str:
        return f"shardRange({self.key}, '{self.start}', '{self.end}')"


class ShardSelector:
    """OR-ed :class:`ShardRange` requirements of one key (``sharding.Selector``); no
    requirements selects everything. Immutable; compare by :meth:`__str__`.

    Build one with :func:`parse` (from the wire) or ``ShardSelector(ranges)``; the ranges of
    one selector must share their key (:func:`parse` enforces it, :meth:`matches` checks it).
    """

    __slots__ = ("_requirements",)

    def __init__(self, requirements: tuple[ShardRange, ...] | list[ShardRange] = ()) -> None:
        self._requirements = tuple(requirements)

    @property
    def requirements(self) -> tuple[ShardRange, ...]:
        return self._requirements

    def empty(self) -> bool:
        """True when it selects everything (no requirement)."""
        return not self._requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` (an object as a dict) falls in one of the ranges.

        Raises:
            ShardSelectorError: the ranges name different keys (``inconsistent shard keys``).
        """
        if not self._requirements:
            return True
        key = self._requirements[0].key
        for req in self._requirements[1:]:
            if req.key != key:
                raise ShardSelectorError(
                    f"inconsistent shard keys: {_go_quote(key)} vs {_go_quote(req.key)}")
        return self.matches_hash("0x" + hash_field(resolve_field_value(obj, key)))

    def matches_hash(self, hashed: str) -> bool:
        """Whether a ``0x``-prefixed 16-digit hash falls in one of the ranges."""
        if not self._requirements:
            return True
        return any(not hex_less(hashed, r.start) and hex_less(hashed, r.end)
                   for r in self._requirements)

    def __str__(self) -> str:
        """The wire form, ranges joined by `` || `` (what ``shardInfo.selector`` echoes)."""
        return " || ".join(str(r) for r in self._requirements)

    def __repr__(self) -> str:
        return f"ShardSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShardSelector) and self._requirements == other._requirements

    def __hash__(self) -> int:
        return hash(self._requirements)


def everything() -> ShardSelector:
    """The selector that matches every object (``Everything``)."""
    return ShardSelector()


def even_split(count: int, key: str = UID_KEY) -> list[ShardSelector]:
    """``count`` selectors splitting the hash space into equal contiguous ranges, shard ``i``
    holding ``[i * 2**64 // count, (i + 1) * 2**64 // count)``: the splits the
    ``shardSelector`` field documents (``apimachinery/pkg/apis/meta/v1/types.go``: for 2,
    ``0x0000000000000000``-``0x8000000000000000`` and ``0x8000000000000000``-
    ``0x10000000000000000``). Together they cover every hash exactly once.

    Raises:
        ValueError: ``count`` < 1, or ``key`` not in :data:`SUPPORTED_KEYS`.
    """
    if count < 1:
        raise ValueError(f"a split needs at least one shard, got {count}")
    if key not in SUPPORTED_KEYS:
        raise ValueError(f"unsupported shard key {key!r}; supported: {', '.join(SUPPORTED_KEYS)}")
    bounds = [format_bound(i * (1 << 64) // count) for i in range(count + 1)]
    return [ShardSelector([ShardRange(key, bounds[i], bounds[i + 1])]) for i in range(count)]


def parse(expr: str) -> ShardSelector:
    """Parse a ``shardSelector`` (``k8s.io/apiserver/pkg/sharding`` ``Parse``).

    Only ``shardRange(field, 'start', 'end')`` calls joined by ``||`` are allowed; ``field`` is
    ``object.metadata.uid`` or ``object.metadata.namespace``, the same in every range; the
    bounds are string literals of ``0x`` and exactly 16 lowercase hex digits (or
    :data:`HASH_SPACE_END`), ``start < end``.

    Raises:
        ShardSelectorError: with upstream's message (``empty shard selector is not allowed;
            omit the parameter for unfiltered lists`` for a blank expression).
    """
    expr = expr.strip()
    if not expr:
        raise ShardSelectorError(
            "empty shard selector is not allowed; omit the parameter for unfiltered lists")
    try:
        ast = parse_expression(expr)
    except CELSyntaxError as err:
        raise ShardSelectorError(f"CEL parse error: {err}") from None
    reqs = _walk(ast)
    for req in reqs[1:]:
        if req.key != reqs[0].key:
            raise ShardSelectorError(
                f"all shard ranges must use the same field, got {_go_quote(reqs[0].key)} and "
                f"{_go_quote(req.key)}")
    return ShardSelector(reqs)


def _walk(e: Expr) -> list[ShardRange]:
    if e.kind == CALL:
        if e.name == "_||_":
            return _walk(e.args[0]) + _walk(e.args[1])
        if e.name == "shardRange":
            return [_shard_range(e)]
        raise ShardSelectorError(
            f"unsupported function {_go_quote(e.name)}; only shardRange() and || are allowed")
    raise ShardSelectorError(
        f"unexpected expression kind {e.kind}; expected shardRange() call or || operator")


def _shard_range(call: Expr) -> ShardRange:
    args = call.args
    if len(args) != 3:
        raise ShardSelectorError(f"shardRange() requires exactly 3 arguments, got {len(args)}")
    path = _field_path(args[0])
    if path not in SUPPORTED_KEYS:
        raise ShardSelectorError(
            f"unsupported field path {_go_quote(path)}; supported: object.metadata.uid, "
            "object.metadata.namespace")
    start = _hex_literal(args[1], "hexStart")
    end = _hex_literal(args[2], "hexEnd")
    if not hex_less(start, end):
        raise ShardSelectorError(f"shard range start {start} must be less than end {end}")
    return ShardRange(path, start, end)


def _field_path(e: Expr) -> str:
    if e.kind == IDENT:
        return e.name
    if e.kind == SELECT:
        return _field_path(e.args[0]) + "." + e.name
    raise ShardSelectorError(
        "shardRange() first argument: expected field path (e.g. object.metadata.uid), got "
        f"expression kind {e.kind}")


def _hex_literal(e: Expr, name: str) -> str:
    if e.kind != LITERAL:
        raise ShardSelectorError(
            f"{name} must be a string literal (e.g. '0xff'), got expression kind {e.kind}")
    if e.go_type != "string":
        raise ShardSelectorError(f"{name} must be a string literal, got {e.go_type}")
    s: str = e.value
    if not s.startswith("0x"):
        raise ShardSelectorError(f"{name} must have '0x' prefix, got {_go_quote(s)}")
    digits = s[2:]
    if not digits:
        raise ShardSelectorError(f"{name}: hex value is required after '0x'")
    if len(digits) > 17:
        raise ShardSelectorError(
            f"{name}: hex value too long ({len(digits)} chars, max 17): {_go_quote(digits)}")
    for c in digits:
        if c not in "0123456789abcdef":
            raise ShardSelectorError(
                f"{name}: invalid hex character {_go_quote(c)} in {_go_quote(s)}")
    if len(digits) == 17:
        if s != HASH_SPACE_END:
            raise ShardSelectorError(
                f"{name}: 17-digit hex value must be '0x10000000000000000' (2^64), got "
                f"{_go_quote(s)}")
    elif len(digits) != 16:
        padded = "0x" + "0" * (16 - len(digits)) + digits
        raise ShardSelectorError(
            f"{name} must be a 0x-prefixed 16-digit hex value, got {_go_quote(s)} "
            f"(did you mean {_go_quote(padded)}?)")
    return s
