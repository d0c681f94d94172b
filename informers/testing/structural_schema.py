"""A CRD's structural schema, applied to custom resources as kube-apiserver applies it.

A schema is the ``openAPIV3Schema`` of a ``CustomResourceDefinition`` version, as JSON
(``JSONSchemaProps``). This module does four things with one:

* :func:`structural_errors`: the CRD-side check that it is *structural*
  (``k8s.io/apiextensions-apiserver/pkg/apiserver/schema/validation.go``
  ``ValidateStructural``): every specified field has a ``type`` (unless
  ``x-kubernetes-int-or-string`` or ``x-kubernetes-preserve-unknown-fields``), the root is an
  object; ``x-kubernetes-list-type: map`` needs ``x-kubernetes-list-map-keys``;
* :func:`prune`: drops the fields the schema does not specify (``schema/pruning/algorithm.go``
  ``PruneWithOptions``), keeping everything under ``x-kubernetes-preserve-unknown-fields``
  and, at the root, ``apiVersion``, ``kind`` and ``metadata``;
* :func:`apply_defaults`: fills ``default`` values of absent fields
  (``schema/defaulting/algorithm.go`` ``Default``), also on read;
* :func:`validate`: the value checks of kube-openapi's validator (``pkg/validation/validate``)
  reported as ``kubeOpenAPIResultToFieldErrors`` turns them into field errors
  (``apiserver/validation/validation.go``): type, ``nullable``, ``int-or-string``, ``enum``,
  ``required``, ``format`` (the formats of ``apiserver/validation/formats.go`` that this
  module checks: see :data:`FORMATS`), string lengths, ``pattern``, number bounds,
  ``multipleOf``, item and property counts, then the list types
  (``schema/listtype/validation.go``: duplicates in ``set`` and ``map`` lists).

All functions are pure; a schema is never mutated.
"""

from __future__ import annotations

import base64
import copy
import datetime
import ipaddress
import json
import re
import uuid
from collections.abc import Callable
from typing import Any

from informers.testing.validation import Cause

__all__ = ["FORMATS", "apply_defaults", "prune", "prune_value", "published_schema",
           "structural_errors", "validate"]

Schema = dict[str, Any]

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_INT_OR_STRING = "x-kubernetes-int-or-string"
_EMBEDDED = "x-kubernetes-embedded-resource"


def _go_value(value: Any) -> str:
    """How ``field.Error`` prints a value: strings quoted, numbers and booleans bare,
    anything else as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return repr(value)
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"))


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return ("FieldValueInvalid", path, f"Invalid value: {_go_value(value)}: {detail}")


def _type_invalid(path: str, value: Any, detail: str) -> Cause:
    return ("FieldValueTypeInvalid", path, f"Invalid value: {_go_value(value)}: {detail}")


def _required(path: str, detail: str = "") -> Cause:
    return ("FieldValueRequired", path, "Required value" + (f": {detail}" if detail else ""))


# -- the CRD side: is the schema structural? ---------------------------------------------------


def structural_errors(schema: Any, path: str) -> list[Cause]:
    """The causes that make ``schema`` (at field path ``path``) non-structural, in upstream's
    order for the cases covered: a missing ``type`` of a specified field, a root that is
    not an object, ``x-kubernetes-list-type: map`` without map keys, an unknown ``type``."""
    if not isinstance(schema, dict):
        return [_required(path, "")]
    causes: list[Cause] = []
    if schema.get("type") not in ("object", None) or (
            schema.get("type") is None and not schema.get(_PRESERVE)):
        if schema.get("type") is None:
            causes.append(_required(f"{path}.type", "must not be empty at the root"))
        else:
            causes.append(_invalid(f"{path}.type", schema["type"], "must be object at the root"))
    causes.extend(_node_errors(schema, path, root=True))
    return causes


_TYPES = ("array", "boolean", "integer", "number", "object", "string")


def _node_errors(schema: Schema, path: str, *, root: bool = False) -> list[Cause]:
    causes: list[Cause] = []
    kind = schema.get("type")
    if kind is not None and kind not in _TYPES:
        causes.append(("FieldValueNotSupported", f"{path}.type",
                       f"Unsupported value: {_go_value(kind)}: supported values: "
                       + ", ".join(f'"{t}"' for t in _TYPES)))
    if not root and kind is None and not schema.get(_INT_OR_STRING) and not schema.get(_PRESERVE):
        causes.append(_required(f"{path}.type", "must not be empty for specified "
                                + ("array items" if path.endswith(".items") else "object fields")))
    if schema.get("x-kubernetes-list-type") == "map" and not schema.get(
            "x-kubernetes-list-map-keys"):
        causes.append(_required(f"{path}.x-kubernetes-list-map-keys",
                                "must not be empty if x-kubernetes-list-type is map"))
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            causes.extend(_node_errors(sub, f"{path}.properties[{name}]"))
    items = schema.get("items")
    if isinstance(items, dict):
        causes.extend(_node_errors(items, f"{path}.items"))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        causes.extend(_node_errors(extra, f"{path}.additionalProperties"))
    return causes


# -- OpenAPI -----------------------------------------------------------------------------------


def published_schema(schema: Schema, generic: Schema) -> Schema:
    """The OpenAPI component of a CRD version (what ``kubectl explain`` reads): its schema
    with ``apiVersion``, ``kind`` and ``metadata`` taken from ``generic`` (the component of a
    custom resource without a schema), as ``controller/openapi/builder`` ``BuildOpenAPIV3``
    adds them."""
    result = copy.deepcopy(schema)
    props = result.setdefault("properties", {})
    for name in ("apiVersion", "kind", "metadata"):
        props[name] = copy.deepcopy(generic["properties"][name])
    result.setdefault("type", "object")
    return result


# -- pruning -----------------------------------------------------------------------------------


def prune(obj: dict[str, Any], schema: Schema) -> None:
    """Drop, in place, every field of a custom resource ``obj`` that ``schema`` does not
    specify. ``apiVersion``, ``kind`` and ``metadata`` stay at the root (``metadata`` is
    pruned to ``ObjectMeta`` elsewhere)."""
    for key in list(obj):
        if key in ("apiVersion", "kind", "metadata"):
            continue
        if not _prune_field(obj, key, schema):
            del obj[key]


def _prune_field(parent: dict[str, Any], key: str, schema: Schema) -> bool:
    """Prune ``parent[key]`` by ``schema``'s view of it; ``False``: drop the field."""
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    if props is not None and key in props:
        _prune_value(parent[key], props[key])
        return True
    if isinstance(extra, dict):
        _prune_value(parent[key], extra)
        return True
    return bool(extra is True or schema.get(_PRESERVE))


def prune_value(value: Any, schema: Any) -> None:
    """Prune ``value`` (not a resource root) in place by ``schema`` (``None``: everything
    goes, as for a field without a schema)."""
    if schema is None and isinstance(value, (dict, list)):
        schema = {}
    _prune_value(value, schema)


def _prune_value(value: Any, schema: Any) -> None:
    if not isinstance(schema, dict):  # no schema: objects lose every field (pruning ``prune``)
        if isinstance(value, dict):
            value.clear()
        elif isinstance(value, list):
            for item in value:
                _prune_value(item, None)
        return
    if isinstance(value, dict):
        preserve = schema.get(_PRESERVE)
        if schema.get(_EMBEDDED):
            for key in list(value):
                if key in ("apiVersion", "kind", "metadata"):
                    continue
                if not _prune_field(value, key, schema):
                    del value[key]
            return
        if not schema.get("properties") and not isinstance(
                schema.get("additionalProperties"), dict) and preserve:
            return
        for key in list(value):
            if not _prune_field(value, key, schema):
                del value[key]
    elif isinstance(value, list):
        items = schema.get("items")
        if items is None and schema.get(_PRESERVE):
            return
        for item in value:
            _prune_value(item, items)


# -- defaulting --------------------------------------------------------------------------------


def apply_defaults(value: Any, schema: Any) -> None:
    """Set, in place, the ``default`` of every absent property (and of ``null`` values of
    non-nullable ones), from the root down, as ``defaulting.Default`` does."""
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if not isinstance(sub, dict) or "default" not in sub:
                continue
            if name not in value or (value[name] is None and not sub.get("nullable")):
                value[name] = copy.deepcopy(sub["default"])
        for name, sub in (schema.get("properties") or {}).items():
            if name in value:
                apply_defaults(value[name], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name, item in value.items():
                if name in (schema.get("properties") or {}):
                    continue
                if item is None and "default" in extra and not extra.get("nullable"):
                    value[name] = item = copy.deepcopy(extra["default"])
                apply_defaults(item, extra)
    elif isinstance(value, list):
        items = schema.get("items")
        for index, item in enumerate(value):
            if (item is None and isinstance(items, dict) and "default" in items
                    and not items.get("nullable")):
                value[index] = item = copy.deepcopy(items["default"])
            apply_defaults(item, items)


# -- validation --------------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    """kube-openapi's ``schemaInfoForType`` type of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _matches_type(value: Any, kind: str) -> bool:
    actual = _type_name(value)
    if actual == kind:
        return True
    if kind == "number" and actual == "integer":
        return True
    return kind == "integer" and actual == "number" and float(value).is_integer()


def _rfc3339(text: str) -> bool:
    try:
        datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in text.upper()


def _date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _ip(version: int) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            return ipaddress.ip_address(text).version == version
        except ValueError:
            return False
    return check


def _cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return len(text) == 36


def _byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return False
    return True


_HOSTNAME = re.compile(
    r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")

FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": _rfc3339,
    "datetime": _rfc3339,
    "date": _date,
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "uuid": _uuid,
    "byte": _byte,
    "hostname": lambda text: bool(_HOSTNAME.match(text)) and len(text) <= 255,
    "email": lambda text: bool(_EMAIL.match(text)),
    "mac": lambda text: bool(_MAC.match(text)),
}
"""The string formats checked (``apiserver/validation/formats.go`` ``supportedFormats``;
formats it lists that are not here are accepted unchecked, as are unknown ones)."""


def _number(value: float) -> str:
    """Go's ``%v`` of a bound (``float64``)."""
    return str(int(value)) if float(value).is_integer() else repr(value)


def validate(value: Any, schema: Any, path: str) -> list[Cause]:
    """The schema errors of ``value`` at ``path`` (``spec.replicas``), in kube-openapi's
    order: type (with ``nullable``), then ``format`` and the string, number, ``enum``, array
    and object checks, then ``required``, then the properties' own errors, then the list
    types."""
    if not isinstance(schema, dict):
        return []
    causes: list[Cause] = []
    kind = schema.get("type")
    if value is None:
        if kind and not schema.get("nullable"):
            return [_type_invalid(path, "null", f'{path} in body must be of type {kind}: "null"')]
        return []
    if schema.get(_INT_OR_STRING):
        if _type_name(value) not in ("integer", "string"):
            return [_type_invalid(path, _type_name(value),
                                  f'{path} in body must be of type integer,string: '
                                  f'"{_type_name(value)}"')]
    elif kind and not _matches_type(value, kind):
        return [_type_invalid(path, _type_name(value),
                              f'{path} in body must be of type {kind}: "{_type_name(value)}"')]
    if isinstance(value, str):
        causes.extend(_string_errors(value, schema, path))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        causes.extend(_number_errors(value, schema, path))
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        shown = ", ".join(json.dumps(e if isinstance(e, str) else json.dumps(e)) for e in enum)
        causes.append(("FieldValueNotSupported", path,
                       f"Unsupported value: {_go_value(value)}: supported values: {shown}"))
    if isinstance(value, list):
        causes.extend(_array_errors(value, schema, path))
    elif isinstance(value, dict):
        causes.extend(_object_errors(value, schema, path))
    return causes


def _string_errors(value: str, schema: Schema, path: str) -> list[Cause]:
    causes: list[Cause] = []
    fmt = schema.get("format")
    check = FORMATS.get(fmt or "")
    if check is not None and not check(value):
        causes.append(_type_invalid(path, value, f'{path} in body must be of type {fmt}: '
                                    f'{_go_value(value)}'))
    max_length = schema.get("maxLength")
    if max_length is not None and len(value) > max_length:
        causes.append(("FieldValueTooLong", path,
                       f"Too long: may not be more than {max_length} bytes"))
    min_length = schema.get("minLength")
    if min_length is not None and len(value) < min_length:
        causes.append(_invalid(path, value,
                               f"{path} in body should be at least {min_length} chars long"))
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        causes.append(_invalid(path, value, f"{path} in body should match '{pattern}'"))
    return causes


def _number_errors(value: float, schema: Schema, path: str) -> list[Cause]:
    causes: list[Cause] = []
    maximum = schema.get("maximum")
    if maximum is not None:
        if schema.get("exclusiveMaximum") and value >= maximum:
            causes.append(_invalid(path, value,
                                   f"{path} in body should be less than {_number(maximum)}"))
        elif value > maximum:
            causes.append(_invalid(path, value, f"{path} in body should be less than or equal "
                                   f"to {_number(maximum)}"))
    minimum = schema.get("minimum")
    if minimum is not None:
        if schema.get("exclusiveMinimum") and value <= minimum:
            causes.append(_invalid(path, value,
                                   f"{path} in body should be greater than {_number(minimum)}"))
        elif value < minimum:
            causes.append(_invalid(path, value, f"{path} in body should be greater than or "
                                   f"equal to {_number(minimum)}"))
    multiple = schema.get("multipleOf")
    if multiple and (value / multiple) != int(value / multiple):
        causes.append(_invalid(path, value,
                               f"{path} in body should be a multiple of {_number(multiple)}"))
    return causes


def _array_errors(value: list[Any], schema: Schema, path: str) -> list[Cause]:
    causes: list[Cause] = []
    max_items = schema.get("maxItems")
    if max_items is not None and len(value) > max_items:
        causes.append(("FieldValueTooMany", path,
                       f"Too many: {len(value)}: must have at most {max_items} items"))
    min_items = schema.get("minItems")
    if min_items is not None and len(value) < min_items:
        causes.append(_invalid(path, "",
                               f"{path} in body should have at least {min_items} items"))
    items = schema.get("items")
    for index, item in enumerate(value):
        causes.extend(validate(item, items, f"{path}[{index}]"))
    causes.extend(_list_type_errors(value, schema, path))
    return causes


def _list_type_errors(value: list[Any], schema: Schema, path: str) -> list[Cause]:
    """``listtype.ValidateListSetsAndMaps``: duplicates in ``set`` and ``map`` lists."""
    list_type = schema.get("x-kubernetes-list-type")
    causes: list[Cause] = []
    seen: list[Any] = []
    if list_type == "set":
        for index, item in enumerate(value):
            if item in seen:
                causes.append(("FieldValueDuplicate", f"{path}[{index}]",
                               f"Duplicate value: {_go_value(item)}"))
            else:
                seen.append(item)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = {k: item.get(k) for k in keys if k in item}
            if key in seen:
                causes.append(("FieldValueDuplicate", f"{path}[{index}]",
                               f"Duplicate value: {_go_value(key)}"))
            else:
                seen.append(key)
    return causes


def _object_errors(value: dict[str, Any], schema: Schema, path: str) -> list[Cause]:
    causes: list[Cause] = []
    max_props = schema.get("maxProperties")
    if max_props is not None and len(value) > max_props:
        causes.append(("FieldValueTooMany", path,
                       f"Too many: {len(value)}: must have at most {max_props} items"))
    min_props = schema.get("minProperties")
    if min_props is not None and len(value) < min_props:
        causes.append(_invalid(path, "",
                               f"{path} in body should have at least {min_props} properties"))
    for name in schema.get("required") or []:
        if name not in value:
            causes.append(_required(f"{path}.{name}" if path else name))
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        child = f"{path}.{name}" if path else name
        if name in props:
            causes.extend(validate(item, props[name], child))
        elif isinstance(extra, dict):
            causes.extend(validate(item, extra, child))
    return causes
