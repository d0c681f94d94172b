"""Decode ``application/vnd.kubernetes.protobuf`` request bodies into JSON-shaped dicts.

client-go's typed clients (``kubectl create configmap``, ``create secret``, ``create
namespace``, ``create service``, ``create deployment``...) send built-in kinds as protobuf: the
magic ``k8s\\x00`` and a ``runtime.Unknown`` message (``typeMeta`` = 1 with ``apiVersion`` = 1
and ``kind`` = 2, ``raw`` = 2 holding the object's own message, ``contentEncoding`` = 3,
``contentType`` = 4). :func:`decode_object` reads it with a small wire-format reader and builds
the dict that the same object's JSON decodes to: the dict Go's ``encoding/json`` would write for
the Go struct ``Unmarshal`` fills (``omitempty`` drops zero scalars and nil or empty slices and
maps, never a struct; a pointer present on the wire is kept even when zero; ``metav1.Time`` is an
RFC 3339 string or ``null``...). The field table is ``api_schema.json`` beside this module,
written by ``tools/api-schema/generate.sh`` from the Go types; it is loaded once, on first use.

Errors are 400 ``BadRequest`` statuses worded as kube-apiserver's create handler words them
(``transformDecodeError`` in ``apiserver/pkg/endpoints/handlers/rest.go`` around the protobuf
serializer's and gogo-protobuf's messages). Thread-safe: the only shared state is the schema,
built once under a lock and never mutated.
"""

from __future__ import annotations

import base64
import codecs
import json
import math
import re
import struct
import threading
from collections.abc import Collection
from pathlib import Path
from typing import Any

from informers.testing import status

__all__ = [
    "CONTENT_TYPE", "MAGIC", "ProtobufError", "decode_object", "iter_fields", "read_varint",
    "schema",
]

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
"""``runtime/serializer/protobuf``: the prefix of every protobuf-encoded object."""

_SCHEMA_PATH = Path(__file__).with_name("api_schema.json")
_SCHEME = "pkg/runtime/scheme.go:111"  # where kube-apiserver v1.36's scheme was created
_ZERO_TIME_SECONDS = -62135596800  # time.Time{}.Unix(): January 1, year 1, 00:00:00 UTC
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_WIRE = {"varint": _VARINT, "zigzag32": _VARINT, "zigzag64": _VARINT, "fixed64": _FIXED64,
         "bytes": _BYTES, "fixed32": _FIXED32}
_SCALAR_WIRE = {"bool": _VARINT, "int32": _VARINT, "int64": _VARINT, "uint32": _VARINT,
                "uint64": _VARINT, "float32": _FIXED32, "float64": _FIXED64}
_ZERO: dict[str, Any] = {"string": "", "bool": False, "int32": 0, "int64": 0, "uint32": 0,
                         "uint64": 0, "float32": 0, "float64": 0}
# resource.ParseQuantity's grammar: a signed decimal number, then a binary or decimal SI suffix
# or a decimal exponent (k8s.io/apimachinery/pkg/api/resource/quantity.go).
_QUANTITY = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
                       r"(?:[KMGTPE]i|[numkMGTPE]?|[eE][+-]?[0-9]+)")
_QUANTITY_ERROR = ("quantities must match the regular expression "
                   "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def _replace_each_byte(err: UnicodeError) -> tuple[str, int]:
    assert isinstance(err, UnicodeDecodeError)
    return "\ufffd" * (err.end - err.start), err.end


# encoding/json writes U+FFFD for every byte of invalid UTF-8 in a string.
codecs.register_error("informers-testing-go-json", _replace_each_byte)


def _text(data: bytes) -> str:
    """A Go string's JSON value: UTF-8, each invalid byte as U+FFFD (as encoding/json writes)."""
    return data.decode("utf-8", "informers-testing-go-json")


class ProtobufError(ValueError):
    """A malformed message; the text is gogo-protobuf's wording where it has one."""


# -- the wire format -----------------------------------------------------------------------------


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it.

    Raises:
        ProtobufError: truncated, or longer than 64 bits.
    """
    result = shift = 0
    while True:
        if shift >= 64:
            raise ProtobufError("proto: integer overflow")
        if pos >= len(data):
            raise ProtobufError("unexpected EOF")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7


def iter_fields(data: bytes, message: str = "") -> list[tuple[int, int, Any]]:
    """Every ``(number, wire type, value)`` of a message, in order: an int for varint and
    fixed fields (unsigned), bytes for length-delimited ones.

    Raises:
        ProtobufError: truncated data, a field number 0, a group or an unknown wire type.
    """
    fields: list[tuple[int, int, Any]] = []
    pos, end = 0, len(data)
    value: Any
    while pos < end:
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 4:
            raise ProtobufError(f"proto: {message}: wiretype end group for non-group")
        if number <= 0 or number > 0x7FFFFFFF:
            raise ProtobufError(f"proto: {message}: illegal tag {number} (wire type {wire})")
        if wire == _VARINT:
            value, pos = read_varint(data, pos)
        elif wire == _BYTES:
            length, pos = read_varint(data, pos)
            if length > 0x7FFFFFFFFFFFFFFF:
                raise ProtobufError("proto: negative length found during unmarshaling")
            if pos + length > end:
                raise ProtobufError("unexpected EOF")
            value, pos = data[pos:pos + length], pos + length
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
            if pos + size > end:
                raise ProtobufError("unexpected EOF")
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        else:  # 3 (start group) or 6, 7
            raise ProtobufError(f"proto: illegal wireType {wire}")
        fields.append((number, wire, value))
    return fields


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _scalar(kind: str, wire_name: str, value: int) -> Any:
    """A varint or fixed value as the Go field of ``kind`` holds it."""
    if wire_name.startswith("zigzag"):
        value = (value >> 1) ^ -(value & 1)
    if kind == "bool":
        return value != 0
    if kind == "int32":
        return _signed(value, 32)
    if kind == "int64":
        return _signed(value, 64)
    if kind == "uint32":
        return value & 0xFFFFFFFF
    if kind == "uint64":
        return value
    # Floats (no served type has one today): encoding/json writes the shortest decimal that
    # reads back as the same float32 or float64, integral ones below 1e21 without a fraction.
    single = kind == "float32"
    number = struct.unpack("<f" if single else "<d", value.to_bytes(4 if single else 8,
                                                                  "little"))[0]
    if not math.isfinite(number):
        raise ProtobufError(f"json: unsupported value: {number}")
    if single:
        for digits in range(1, 10):
            shortest = float(f"{number:.{digits}g}")
            if struct.unpack("<f", struct.pack("<f", shortest))[0] == number:
                number = shortest
                break
    return int(number) if number.is_integer() and abs(number) < 1e21 else number


# -- the schema ----------------------------------------------------------------------------------


class _Field:
    """One Go struct field (see tools/api-schema/main.go)."""

    __slots__ = ("go", "inline", "json", "last_wins", "number", "omitempty", "omitzero",
                 "pointer", "repeated", "type", "wire", "wire_name")

    def __init__(self, raw: dict[str, Any]) -> None:
        self.go: str = raw["go"]
        self.json: str = raw["json"]
        self.number: int = raw["number"]
        self.wire_name: str = raw["wire"]
        self.wire: int = _WIRE[self.wire_name]
        self.type: Any = raw["type"]
        self.pointer: bool = raw.get("pointer", False)
        self.omitempty: bool = raw.get("omitempty", False)
        self.omitzero: bool = raw.get("omitzero", False)
        self.inline: bool = raw.get("inline", False)
        self.repeated = isinstance(self.type, dict) and ("slice" in self.type or "map" in self.type)
        self.last_wins = isinstance(self.type, str) and self.type in _LAST_WINS


class _Schema:
    """``api_schema.json``, compiled: kinds by apiVersion and struct fields by number."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.source: dict[str, str] = raw["source"]
        self.kinds: dict[str, dict[str, str]] = raw["kinds"]
        self.types: dict[str, tuple[dict[int, _Field], list[_Field]]] = {}
        for name, fields in raw["types"].items():
            compiled = [_Field(f) for f in fields]
            self.types[name] = ({f.number: f for f in compiled}, compiled)

    def type_of(self, api_version: str, kind: str) -> str | None:
        if kind == "DeleteOptions":  # registered in every group version (metav1.AddToGroupVersion)
            return self.kinds["meta.k8s.io/v1"]["DeleteOptions"]
        return self.kinds.get(api_version, {}).get(kind)


_schema: _Schema | None = None
_schema_lock = threading.Lock()


def schema() -> _Schema:
    """The compiled ``api_schema.json`` (read on the first call)."""
    global _schema
    if _schema is None:
        with _schema_lock:
            if _schema is None:
                _schema = _Schema(json.loads(_SCHEMA_PATH.read_bytes()))
    return _schema


# -- Go values -> JSON values --------------------------------------------------------------------


def _go_year_and_rest(seconds: int) -> tuple[int, str]:
    """The UTC calendar year and ``-MM-DDTHH:MM:SS`` of Unix ``seconds``, for any int64
    (civil-from-days, proleptic Gregorian, as Go's time package counts)."""
    days, rem = divmod(seconds, 86400)
    days += 719468
    era = days // 146097
    doe = days - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    hour, rem = divmod(rem, 3600)
    minute, second = divmod(rem, 60)
    return year, f"-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"


def _format_time(seconds: int, micros: int | None = None) -> str:
    """``t.UTC().Format(time.RFC3339)`` (or ``RFC3339Micro`` when ``micros`` is given)."""
    year, rest = _go_year_and_rest(seconds)
    text = f"-{-year:04d}" if year < 0 else f"{year:04d}"
    text += rest
    if micros is not None:
        text += f".{micros:06d}"
    return text + "Z"


# The messages of the special types: field number -> (Go field name, wire type).
_SPECIAL_FIELDS: dict[str, dict[int, tuple[str, int]]] = {
    "Timestamp": {1: ("Seconds", _VARINT), 2: ("Nanos", _VARINT)},
    "intorstring": {1: ("Type", _VARINT), 2: ("IntVal", _VARINT), 3: ("StrVal", _BYTES)},
    "quantity": {1: ("String_", _BYTES)},
    "duration": {1: ("Duration", _VARINT)},
    "fieldsv1": {1: ("Raw", _BYTES)},
    "rawextension": {1: ("Raw", _BYTES)},
}


def _small(data: bytes, message: str) -> dict[int, Any]:
    """The fields of a special type's message by number (the last occurrence wins)."""
    known = _SPECIAL_FIELDS[message]
    values: dict[int, Any] = {}
    for number, wire, value in iter_fields(data, message):
        spec = known.get(number)
        if spec is not None:
            if wire != spec[1]:
                raise ProtobufError(f"proto: wrong wireType = {wire} for field {spec[0]}")
            values[number] = value
    return values


def _go_duration(ns: int) -> str:
    """``time.Duration(ns).String()``."""
    if ns == 0:
        return "0s"
    sign, magnitude = ("-" if ns < 0 else ""), abs(ns)

    def fraction(value: int, digits: int) -> str:
        whole, frac = divmod(value, 10 ** digits)
        tail = f"{frac:0{digits}d}".rstrip("0")
        return f"{whole}.{tail}" if tail else str(whole)

    if magnitude < 1000:
        return f"{sign}{magnitude}ns"
    if magnitude < 1_000_000:
        return f"{sign}{fraction(magnitude, 3)}µs"
    if magnitude < 1_000_000_000:
        return f"{sign}{fraction(magnitude, 6)}ms"
    seconds = magnitude // 10 ** 9
    text = fraction(seconds % 60 * 10 ** 9 + magnitude % 10 ** 9, 9) + "s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


def _special(kind: str, data: bytes) -> Any:
    """The JSON value of a type with a MarshalJSON of its own, from its message bytes."""
    if kind in ("time", "microtime"):
        if not data:  # Time.Unmarshal of nothing: the zero time
            return None
        stamp = _small(data, "Timestamp")
        seconds = _signed(stamp.get(1, 0), 64)
        if kind == "time":  # Time.Unmarshal drops the nanoseconds
            return None if seconds == _ZERO_TIME_SECONDS else _format_time(seconds)
        nanos = _signed(stamp.get(2, 0), 32)  # MicroTime truncates them to microseconds
        micros = abs(nanos) // 1000 * (1 if nanos >= 0 else -1)  # toward zero
        seconds, micros = divmod(seconds * 1_000_000 + micros, 1_000_000)
        if seconds == _ZERO_TIME_SECONDS and micros == 0:
            return None
        return _format_time(seconds, micros)
    values = _small(data, kind)
    if kind == "intorstring":
        type_ = _signed(values.get(1, 0), 64)
        if type_ == 0:
            return _signed(values.get(2, 0), 32)
        if type_ == 1:
            return _text(values.get(3, b""))
        raise ProtobufError("json: error calling MarshalJSON for type intstr.IntOrString: "
                            "impossible IntOrString.Type")
    if kind == "quantity":
        if 1 not in values:
            return "0"  # a zero Quantity marshals as "0"
        text = _text(values[1])
        if not _QUANTITY.fullmatch(text):
            raise ProtobufError(_QUANTITY_ERROR)
        return text
    if kind == "duration":
        return _go_duration(_signed(values.get(1, 0), 64))
    # fieldsv1, rawextension: {Raw = 1}, written as the raw JSON (nil: null)
    raw = values.get(1)
    if raw is None or (kind == "fieldsv1" and not raw):
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        name = "v1.FieldsV1" if kind == "fieldsv1" else "runtime.RawExtension"
        raise ProtobufError(f"json: error calling MarshalJSON for type {name}: {err}") from None


def _wire_of(type_: Any) -> int:
    """The wire type an element of ``type_`` (a slice element, a map key or value) has."""
    return _SCALAR_WIRE.get(type_, _BYTES) if isinstance(type_, str) else _BYTES


def _value(type_: Any, wire_name: str, value: Any) -> Any:
    """One wire value (present on the wire) as JSON."""
    if isinstance(type_, dict):
        if "struct" in type_:
            return _struct(type_["struct"], value)
        raise ProtobufError("nested repeated value")  # the generator rejects these
    if type_ == "string":
        return _text(value)
    if type_ == "bytes":
        return base64.b64encode(value).decode("ascii")
    if type_ in _ZERO:
        return _scalar(type_, wire_name, value)
    return _special(type_, value)


def _absent(type_: Any) -> Any:
    """The JSON of a zero non-pointer value of ``type_`` (a map entry's missing key or value)."""
    if isinstance(type_, dict):
        return _struct(type_["struct"], b"") if "struct" in type_ else None
    if type_ == "bytes":
        return ""  # gogo's map decoding starts from []byte{}, not nil
    if type_ in _ZERO:
        return _ZERO[type_]
    return _special(type_, b"")


def _map_entry(type_: Any, entry: bytes) -> tuple[str, Any]:
    value_type = type_["map"]
    key: str = ""
    value: Any = _absent(value_type)
    for number, wire, raw in iter_fields(entry, "map entry"):
        if number == 1:
            if wire != _BYTES:
                raise ProtobufError(f"proto: wrong wireType = {wire} for field key")
            key = _text(raw)
        elif number == 2:
            expected = _wire_of(value_type)
            if wire != expected:
                raise ProtobufError(f"proto: wrong wireType = {wire} for field value")
            value = _value(value_type, "bytes" if expected == _BYTES else "varint", raw)
    return key, value


def _struct(name: str, data: bytes) -> dict[str, Any]:
    """The JSON object of the Go struct ``name`` that ``data`` unmarshals into."""
    by_number, fields = schema().types[name]
    short = name.rpartition(".")[2]
    singular: dict[int, Any] = {}
    repeated: dict[int, list[Any]] = {}
    for number, wire, value in iter_fields(data, short):
        field = by_number.get(number)
        if field is None:
            continue  # an unknown field: skipped, as gogo's skipGenerated does
        if field.repeated:
            items = repeated.setdefault(number, [])
            elem = field.type.get("slice")
            if elem is not None and wire == _BYTES and _wire_of(elem) != _BYTES:
                pos = 0  # packed scalars
                while pos < len(value):
                    if _wire_of(elem) == _VARINT:
                        item, pos = read_varint(value, pos)
                    else:
                        size = 4 if _wire_of(elem) == _FIXED32 else 8
                        if pos + size > len(value):
                            raise ProtobufError("unexpected EOF")
                        item, pos = int.from_bytes(value[pos:pos + size], "little"), pos + size
                    items.append(item)
                continue
            if wire != (field.wire if elem is not None else _BYTES):
                raise ProtobufError(f"proto: wrong wireType = {wire} for field {field.go}")
            items.append(value)
            continue
        if wire != field.wire:
            raise ProtobufError(f"proto: wrong wireType = {wire} for field {field.go}")
        if field.last_wins:
            singular[number] = value
        else:  # a message seen twice merges: the concatenation of its encodings
            singular[number] = singular.get(number, b"") + value
    out: dict[str, Any] = {}
    for field in fields:
        number, type_ = field.number, field.type
        if field.repeated:
            found = repeated.get(number)
            if not found:  # nil slice or map
                if not (field.omitempty or field.omitzero):
                    out[field.json] = None
                continue
            if "slice" in type_:
                elem = type_["slice"]
                out[field.json] = [_value(elem, field.wire_name, item) for item in found]
            else:
                out[field.json] = dict(_map_entry(type_, entry) for entry in found)
            continue
        present = number in singular
        if field.pointer and not present:  # nil
            if not (field.omitempty or field.omitzero or field.inline):
                out[field.json] = None
            continue
        if present:
            value = _value(type_, field.wire_name, singular[number])
        elif type_ == "bytes":
            value = None  # nil []byte
        else:
            value = _absent(type_)
        if field.inline:
            out.update(value)
            continue
        if not field.pointer and (field.omitempty or field.omitzero):
            if field.last_wins and type_ not in ("time", "microtime"):
                if not value:
                    continue  # a zero scalar, a nil or empty []byte
            elif field.omitzero and value is None:
                continue  # a zero metav1.Time or MicroTime (their IsZero)
        out[field.json] = value
    return out


# Field types whose second occurrence replaces the first: scalars, strings and []byte as gogo's
# generated code assigns them, and metav1.Time and MicroTime, whose Unmarshal starts afresh.
_LAST_WINS = frozenset({*_ZERO, "bytes", "time", "microtime"})


# -- the envelope --------------------------------------------------------------------------------


def _summary(body: bytes) -> str:
    """``summarizeData(body, 30)`` of apiserver's handlers/rest.go."""
    if not body:
        return "<empty>"
    if body[:1] == b"{":
        text = _text(body)
        return text[:30] + " ..." if len(body) > 30 else text
    return body[:30].hex() + " ..." if len(body) > 30 else body.hex()


def _unknown(body: bytes) -> tuple[str, str, bytes]:
    """``(apiVersion, kind, raw)`` of the ``runtime.Unknown`` after the magic."""
    if not body:
        raise ProtobufError("empty data")
    if body[:4] != MAGIC:
        raise ProtobufError("provided data does not appear to be a protobuf message, "
                            "expected prefix [107 56 115 0]")
    if len(body) == 4:
        raise ProtobufError("empty body")
    api_version = kind = ""
    raw = b""
    for number, wire, value in iter_fields(body[4:], "Unknown"):
        if number in (1, 2, 3, 4) and wire != _BYTES:
            name = ("TypeMeta", "Raw", "ContentEncoding", "ContentType")[number - 1]
            raise ProtobufError(f"proto: wrong wireType = {wire} for field {name}")
        if number == 1:
            for inner, inner_wire, text in iter_fields(value, "TypeMeta"):
                if inner in (1, 2) and inner_wire != _BYTES:
                    raise ProtobufError(f"proto: wrong wireType = {inner_wire} for field "
                                        f"{'APIVersion' if inner == 1 else 'Kind'}")
                if inner == 1:
                    api_version = _text(text)
                elif inner == 2:
                    kind = _text(text)
        elif number == 2:
            raw = value
    return api_version, kind, raw


def decode_object(
    body: bytes, defaults: tuple[str, str] = ("", ""), expected_kind: str = "", *,
    registered: Collection[str] | None = None,
) -> dict[str, Any]:
    """The JSON-shaped dict of a protobuf-encoded object, ``kind`` and ``apiVersion`` first.

    Args:
        body: the request body (``k8s\\x00`` and a ``runtime.Unknown``).
        defaults: ``(apiVersion, kind)`` for what the envelope leaves empty (the protobuf
            serializer's ``copyKindDefaults``: the URL's kind on a create or update).
        expected_kind: the kind the URL serves; given, errors are worded as the create and
            update handlers word them (``... cannot be handled as a ConfigMap: ...``), else
            as the bare decoder error (a delete's options).
        registered: the kinds the decoding scheme knows (a delete's scheme knows only
            ``DeleteOptions``); ``None``: every kind of the schema.

    Raises:
        StatusError: 400 ``BadRequest`` for a malformed body or a kind that is not served.
    """
    try:
        api_version, kind, raw = _unknown(body)
    except ProtobufError as err:
        message = str(err)
        if expected_kind:
            message = (f"the object provided is unrecognized (must be of type {expected_kind}): "
                       f"{message} ({_summary(body)})")
        raise status.bad_request(message) from None
    kind = kind or defaults[1]
    api_version = api_version or defaults[0]
    version = api_version.rpartition("/")[2]
    try:
        if not kind or not api_version:  # runtime.NewMissingKindErr, NewMissingVersionErr
            missing = "Kind" if not kind else "apiVersion"
            raise ProtobufError(f"Object '{missing}' is missing in 'runtime.TypeMeta"
                                f'{{APIVersion:"{api_version}", Kind:"{kind}"}}\'')
        name = schema().type_of(api_version, kind)
        if name is None or (registered is not None and kind not in registered):
            raise ProtobufError(f'no kind "{kind}" is registered for version "{api_version}" '
                                f'in scheme "{_SCHEME}"')
        obj = _struct(name, raw)
    except ProtobufError as err:
        message = str(err)
        if expected_kind:
            message = f'{kind} in version "{version}" cannot be handled as a {expected_kind}: ' \
                      f"{message}"
        raise status.bad_request(message) from None
    except RecursionError:
        raise status.bad_request("proto: message nested too deeply") from None
    return {"kind": kind, "apiVersion": api_version, **obj}

