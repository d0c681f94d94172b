"""How a compact cache keeps its objects: encoded as JSON bytes, decoded on every read.

A decoded pod is about fifty small dicts and two hundred strings: in CPython that is 15-20 KB
per cached pod, against the 4 KB of its JSON (managedFields stripped) and the ~11 KB client-go's
Go structs take. :class:`JsonCodec` keeps each cached object as its compact JSON instead (one
``bytes`` object, a few dozen bytes of overhead) and decodes it again on each read. The cyclic
garbage collector, which walks every container object on the heap, then has one object per
cached item to look at instead of hundreds.

Contract:

* **Round trip.** ``decode(encode(obj)) == obj`` for every object that is valid decoded JSON
  (dicts with ``str`` keys, lists, ``str``, ``bool``, ``None``, finite floats and integers that
  fit in 64 bits), key order included. Anything else (a tuple, a custom class, an integer
  beyond 64 bits, a NaN) is stored as is, unencoded, and read back as the very same object: it
  costs what it costs today, and nothing is changed or lost.
* **Fresh objects.** Each :meth:`JsonCodec.decode` of an encoded item returns new containers:
  a caller may mutate what it got without affecting the cache or any other reader, so the
  cache cannot be corrupted by a caller (client-go's "do not mutate cached objects" rule is
  then advice, not a hazard). Objects stored as is (above) are shared as before.
* **Cost.** A read decodes: with orjson (the ``fast`` extra) about 6 us for a 4 KB pod, against
  a dict lookup before; ``lister.list`` over N objects decodes N. A write encodes (about 3 us).
* **Thread safety.** Stateless; safe from any thread.

orjson is used when it is installed (as :mod:`informers.client.decoder` does), else the
standard library's ``json`` with compact separators (same round trip, slower).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, Protocol

from informers.keys import DeletedFinalStateUnknown, IndexFunc, KeyFunc, meta_namespace_index_func
from informers.label_selector import DOUBLE_EQUALS, EQUALS, EXISTS, IN, Selector

__all__ = [
    "JSON_CODEC",
    "Encoded",
    "JsonCodec",
    "ObjectCodec",
    "compact_index_func",
    "compact_key_func",
    "decoded",
    "item_encoder",
    "label_prefilter",
]


class ObjectCodec(Protocol):
    """What a cache stores for an object, and how it gets the object back.

    ``decode(encode(obj))`` must equal ``obj``; ``decode`` must accept whatever ``encode``
    returned, including an object it chose to keep as is."""

    def encode(self, obj: Any) -> Any: ...

    def decode(self, stored: Any) -> Any: ...


try:  # pragma: no branch - which one depends on the environment
    import orjson

    _dumps: Any = orjson.dumps
    _loads: Any = orjson.loads
    _ENCODE_ERRORS: tuple[type[Exception], ...] = (TypeError, orjson.JSONEncodeError)
except ImportError:  # pragma: no cover - exercised without the fast extra
    _encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)

    def _dumps(obj: Any) -> bytes:
        return _encoder.encode(obj).encode("utf-8")

    _loads = json.loads
    _ENCODE_ERRORS = (TypeError, ValueError)


def _plain_json(obj: Any) -> bool:
    """Whether ``obj`` is exactly what decoding its JSON gives back (no tuples, no subclasses,
    no big integers, no NaN)."""
    cls = obj.__class__
    if cls is dict:
        for key, value in obj.items():
            if key.__class__ is not str or not _plain_json(value):
                return False
        return True
    if cls is list:
        return all(_plain_json(v) for v in obj)
    if cls is str or cls is bool or obj is None:
        return True
    if cls is int:
        return -(1 << 63) <= obj < (1 << 64)
    if cls is float:
        return obj == obj and obj not in (float("inf"), float("-inf"))
    return False


class JsonCodec:
    """Compact JSON bytes per object (see the module docstring).

    Args:
        verify: check before encoding that the object is plain decoded JSON and store it as
            is when it is not (a walk of the object, about as costly as the encode). Off,
            only what the encoder refuses is kept as is; an object the encoder accepts but
            changes (a tuple becomes a list, a ``str`` subclass a ``str``) is then read back
            changed. The informer's objects come straight from a JSON decoder, so it turns
            this off for them.
    """

    __slots__ = ("_verify",)

    def __init__(self, *, verify: bool = True) -> None:
        self._verify = verify

    def encode(self, obj: Any) -> Any:
        """``obj``'s compact JSON as ``bytes``, or ``obj`` itself when it cannot round-trip;
        an :class:`Encoded` object's JSON as it is."""
        if obj.__class__ is Encoded:
            return obj.data
        if self._verify and not _plain_json(obj):
            return _AsIs(obj) if obj.__class__ is bytes else obj
        try:
            data = _dumps(obj)
        except _ENCODE_ERRORS:
            return _AsIs(obj) if obj.__class__ is bytes else obj
        return data

    def decode(self, stored: Any) -> Any:
        """A fresh object equal to the one encoded (or the object kept as is)."""
        cls = stored.__class__
        if cls is bytes:
            return _loads(stored)
        if cls is _AsIs:
            return stored.obj
        return stored


class _AsIs:
    """Holds a ``bytes`` object kept as is, so that it is not taken for encoded JSON."""

    __slots__ = ("obj",)

    def __init__(self, obj: bytes) -> None:
        self.obj = obj


JSON_CODEC = JsonCodec(verify=False)
"""The codec informers use for their compact cache: their objects are decoded JSON already."""


class Encoded:
    """An object of a compact informer on its way to the cache: its key and its JSON.

    The compact informer's list decoding turns each listed object into one of these as soon
    as it is decoded (:func:`item_encoder`), so a list of 100,000 objects never exists as
    dicts all at once; the queue keys it by :attr:`key` (:func:`compact_key_func`), the cache
    stores :attr:`data`, and a handler never sees one: each listener decodes it just before
    the call (:func:`decoded`). Reads of a compact cache that feed notifications
    (:meth:`~informers.indexer.Indexer.get_lazy_by_key`, ``list_lazy``) hand these out too.
    Immutable by convention; equal when the JSON is."""

    __slots__ = ("data", "key", "rv")

    def __init__(self, key: str, data: bytes, rv: str = "") -> None:
        self.key = key
        self.data = data
        self.rv = rv  # the object's metadata.resourceVersion, for the cache's own

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Encoded) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.data)

    def __repr__(self) -> str:
        return f"Encoded({self.key!r}, {len(self.data)} bytes)"

    def decode(self) -> Any:
        """A fresh decoded copy of the object."""
        return _loads(self.data)


def item_encoder(key_func: KeyFunc, transform: Callable[[Any], Any] | None
                 ) -> Callable[[Any], Any]:
    """The reflector's object hook of a compact informer (each listed object as it is decoded,
    each ADDED or MODIFIED watch object as it arrives): ``transform`` the freshly
    decoded object (the informer's transform, which then runs here instead of in the queue),
    key it and encode it as an :class:`Encoded`. An object that cannot be keyed or encoded is
    returned as it is (transformed), so the queue reports it as it would any other; the hook
    itself never raises."""
    intern = sys.intern

    def encode(obj: Any) -> Any:
        if obj.__class__ is not dict:
            return obj
        if transform is not None:
            try:
                obj = transform(obj)
            except Exception:
                return obj  # the queue's own transform call raises and reports it
        try:
            key = key_func(obj)
            data = _dumps(obj)
        except Exception:
            return obj
        meta = obj.get("metadata")
        rv = meta.get("resourceVersion", "") if meta.__class__ is dict else ""
        return Encoded(intern(key) if len(key) < 64 else key, data,
                       rv if rv.__class__ is str else str(rv))

    return encode


def compact_key_func(key_func: KeyFunc) -> KeyFunc:
    """``key_func`` that also keys an :class:`Encoded` object (by its :attr:`~Encoded.key`)."""

    def key(obj: Any) -> str:
        if obj.__class__ is Encoded:
            return str(obj.key)
        return key_func(obj)

    return key


def compact_index_func(fn: IndexFunc) -> IndexFunc:
    """``fn`` for a compact informer's cache, which indexes :class:`Encoded` objects: the
    namespace index reads the namespace from the key (no decode) and interns it, so the
    cache keeps one string per namespace; any other index function gets the decoded object."""
    if fn is meta_namespace_index_func:
        intern = sys.intern

        def namespace(obj: Any) -> list[str]:
            if obj.__class__ is Encoded:
                ns, sep, _ = obj.key.rpartition("/")
                return [intern(ns) if sep else ""]
            return [intern(v) for v in meta_namespace_index_func(obj)]

        return namespace

    def index(obj: Any) -> list[str]:
        return fn(obj.decode() if obj.__class__ is Encoded else obj)

    return index


def decoded(a: Any, b: Any) -> tuple[Any, Any]:
    """A notification's two objects with every :class:`Encoded` one (also inside a
    :class:`~informers.keys.DeletedFinalStateUnknown`) decoded; one object given twice (the
    ``old``/``new`` of a resync) is decoded once and given twice."""
    same = a is b
    if a.__class__ is Encoded:
        a = a.decode()
    elif a.__class__ is DeletedFinalStateUnknown and a.obj.__class__ is Encoded:
        a = DeletedFinalStateUnknown(a.key, a.obj.decode())
    if same:
        return a, a
    if b.__class__ is Encoded:
        b = b.decode()
    return a, b


def label_prefilter(selector: Selector) -> Callable[[bytes], bool] | None:
    """A cheap test on an object's JSON that every object ``selector`` matches passes: for
    each ``=``/``==``/``in`` requirement one of the ``"key":"value"`` byte strings must
    occur, for each ``exists`` the ``"key":``. Objects that pass may still not match (the
    bytes may occur elsewhere in the object), so the caller filters the decoded objects
    exactly; ``None`` when the selector has no such requirement (nothing to skip).

    Label keys and values never need JSON escapes (their characters are letters, digits,
    ``-``, ``_``, ``.`` and one ``/``, which neither encoder escapes), so each appears in the
    JSON exactly as written."""
    groups: list[tuple[bytes, ...]] = []
    for req in selector.requirements():
        key = json.dumps(req.key)
        if req.operator in (EQUALS, DOUBLE_EQUALS, IN):
            groups.append(tuple(f"{key}:{json.dumps(v)}".encode() for v in req.values))
        elif req.operator == EXISTS:
            groups.append((f"{key}:".encode(),))
    if not groups:
        return None

    def passes(data: bytes) -> bool:
        for group in groups:
            for pattern in group:
                if pattern in data:
                    break
            else:
                return False
        return True

    return passes
