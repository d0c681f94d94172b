"""Sets of hash ranges and the assignment of the hash space to a ring's members.

KEP-5866's server hashes a field with 64-bit FNV-1a (:func:`informers.sharding.fnv1a_64`) and
selects half-open ranges ``[start, end)`` of ``[0, 2**64)``. A :class:`RangeSet` is a union of
such ranges, normalised (sorted, disjoint, adjacent ranges merged), so two sets that cover the
same hashes are equal.

**Assignment** (:func:`assign`): the members are sorted by name and member ``i`` of ``n`` owns
the contiguous range ``[i * 2**64 // n, (i + 1) * 2**64 // n)``, the split
:func:`informers.sharding.even_split` gives and the ``shardSelector`` field documents
(``apimachinery/pkg/apis/meta/v1/types.go``). Every member computes the same answer from the
same set of names: no member is in charge. Stability: a split into contiguous equal ranges
moves, when one member joins or leaves among ``n``, the hashes between the old and new
boundaries: at least ``1/(n+1)`` of the space, at most about a half (when the change is at the
start of the sorted order); the members whose position does not change keep the overlap of
their old and new ranges. This is as stable as contiguous equal ranges allow (consistent
hashing with virtual nodes moves less, but gives each member many ranges: longer selectors).

Everything here is an immutable value or a pure function: safe from any thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from informers.sharding import (
    NAMESPACE_KEY,
    UID_KEY,
    ShardRange,
    ShardSelector,
    fnv1a_64,
    format_bound,
    resolve_field_value,
)

__all__ = ["SPACE", "RangeSet", "assign", "key_hash", "selector_for", "view_id"]

SPACE = 1 << 64
"""The size of the hash space: hashes are in ``[0, SPACE)``."""


class RangeSet:
    """A union of half-open ranges ``[start, end)`` of ``[0, 2**64)``; immutable."""

    __slots__ = ("_ranges",)

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        spans = sorted((int(s), int(e)) for s, e in ranges if int(e) > int(s))
        merged: list[tuple[int, int]] = []
        for start, end in spans:
            if start < 0 or end > SPACE:
                raise ValueError(f"range [{start}, {end}) is outside [0, 2**64)")
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        self._ranges = tuple(merged)

    @classmethod
    def full(cls) -> RangeSet:
        return cls([(0, SPACE)])

    @property
    def ranges(self) -> tuple[tuple[int, int], ...]:
        return self._ranges

    def __bool__(self) -> bool:
        return bool(self._ranges)

    def __contains__(self, hashed: object) -> bool:
        if not isinstance(hashed, int):
            return False
        return any(start <= hashed < end for start, end in self._ranges)

    def __or__(self, other: RangeSet) -> RangeSet:
        return RangeSet(self._ranges + other._ranges)

    def __and__(self, other: RangeSet) -> RangeSet:
        out: list[tuple[int, int]] = []
        i = j = 0
        a, b = self._ranges, other._ranges
        while i < len(a) and j < len(b):
            start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
            if start < end:
                out.append((start, end))
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return RangeSet(out)

    def __sub__(self, other: RangeSet) -> RangeSet:
        complement: list[tuple[int, int]] = []
        cursor = 0
        for start, end in other._ranges:
            if start > cursor:
                complement.append((cursor, start))
            cursor = end
        if cursor < SPACE:
            complement.append((cursor, SPACE))
        return self & RangeSet(complement)

    def size(self) -> int:
        """How many hashes it holds."""
        return sum(end - start for start, end in self._ranges)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RangeSet) and self._ranges == other._ranges

    def __hash__(self) -> int:
        return hash(self._ranges)

    def __repr__(self) -> str:
        inner = ", ".join(f"[{format_bound(s)}, {format_bound(e)})" for s, e in self._ranges)
        return f"RangeSet({inner})"


def assign(members: Iterable[str]) -> dict[str, RangeSet]:
    """Each member's range: the members sorted (duplicates dropped), member ``i`` of ``n``
    owning ``[i * 2**64 // n, (i + 1) * 2**64 // n)``. No member: an empty mapping."""
    names = sorted(set(members))
    n = len(names)
    return {name: RangeSet([(i * SPACE // n, (i + 1) * SPACE // n)])
            for i, name in enumerate(names)}


def view_id(members: Iterable[str]) -> str:
    """A short name of a set of members (16 hex digits of the FNV-1a hash of the sorted,
    newline-joined names): what a member acknowledges (see :mod:`informers.shard.handover`)."""
    return f"{fnv1a_64(chr(10).join(sorted(set(members))).encode('utf-8')):016x}"


def selector_for(ranges: RangeSet, key: str) -> ShardSelector:
    """The ``shardSelector`` of ``ranges`` on ``key`` (``object.metadata.namespace`` or
    ``object.metadata.uid``): one ``shardRange`` per range, OR-ed. An empty set has no
    selector form (a selector without ranges selects everything): the caller must not list.

    Raises:
        ValueError: ``ranges`` is empty, or ``key`` is not a supported key.
    """
    if key not in (NAMESPACE_KEY, UID_KEY):
        raise ValueError(f"unsupported shard key {key!r}")
    if not ranges:
        raise ValueError("an empty range set has no shard selector")
    return ShardSelector([ShardRange(key, format_bound(s), format_bound(e))
                          for s, e in ranges.ranges])


def key_hash(obj: Mapping[str, Any], key: str) -> int:
    """The hash of ``obj``'s ``key`` field as the server computes it (``HashField``)."""
    return fnv1a_64(resolve_field_value(obj, key).encode("utf-8"))
