"""Python types to OpenAPI v3 structural schemas, as controller-gen's ``pkg/crd/schema.go``.

What each annotation becomes (the ``TypedDict`` and dataclass fields, recursively):

=============================================  =============================================
``str`` / ``int`` / ``float`` / ``bool``        ``type: string`` / ``integer`` / ``number`` /
                                                ``boolean``
``bytes``                                       ``type: string, format: byte``
``datetime.datetime`` / ``datetime.date``       ``type: string, format: date-time`` / ``date``
``Literal["a", "b"]``, an ``enum.Enum``         the values' type with ``enum``
``list[X]`` (``Sequence[X]``)                   ``type: array, items: <X>``
``dict[str, X]`` (``Mapping[str, X]``)          ``type: object, additionalProperties: <X>``
``dict[str, Any]``, ``Any``                     ``x-kubernetes-preserve-unknown-fields: true``
                                                (``type: object`` for the dict)
``int | str``                                   int-or-string (:class:`~.markers.IntOrString`)
``X | None``                                    ``<X>``, and the field is optional
a ``TypedDict`` or a dataclass                  ``type: object`` with ``properties`` and
                                                ``required``
``Annotated[X, *markers]``                      ``<X>`` with the markers' keywords
=============================================  =============================================

Which fields are required: a ``TypedDict``'s required keys (``total``, ``Required``,
``NotRequired``); a dataclass's fields without a default that are not ``| None``; the
:class:`~.markers.Required` and :class:`~.markers.Optional` markers override, and a field with
a :class:`~.markers.Default` is optional. A dataclass field's default value (not a
``default_factory``, not ``None``) becomes the schema's ``default``. A dataclass field's JSON
name is its name in lower camel case (``min_replicas`` -> ``minReplicas``) unless a
:class:`~.markers.JSONName` says otherwise.

Descriptions come from :class:`~.markers.Description`, else the field's attribute docstring
(a string literal right after the field, read from the class's source), else the field's
type's docstring. Anything else (``set``, ``tuple``, other unions, classes that are neither
``TypedDict`` nor dataclass) raises :class:`~.errors.SchemaError` naming the field.

Every ``x-kubernetes-validations`` rule (and message expression) is parsed with the
``common-expression-language`` package (the ``cel`` extra) when it is installed, as
kube-apiserver compiles them when the CRD is written; a rule that does not parse raises
:class:`~.errors.RuleCompileError`. That package neither type-checks nor estimates cost:
a rule naming a field that does not exist, or one kube-apiserver estimates over its cost
budget (``apiextensions-apiserver`` ``schema/cel/compilation.go``: unbounded strings and
lists; add ``MaxLength``/``MaxItems``), is refused only when the CRD is created.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import enum
import importlib
import inspect
import itertools
import re
import sys
import textwrap
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union

from informers.crdgen import markers as m
from informers.crdgen.errors import RuleCompileError, SchemaError

__all__ = ["apply_markers", "field_docstrings", "is_object_type", "json_name", "object_schema",
           "type_doc", "type_schema"]

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    bytes: {"type": "string", "format": "byte"},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
}

_NUMERIC = ("integer", "number")


def _wrappers() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``Required`` and ``NotRequired`` from ``typing`` (Python 3.11+) and from
    ``typing_extensions`` (where Python 3.10 code gets them), whichever exist."""
    required: list[Any] = []
    not_required: list[Any] = []
    for name in ("typing", "typing_extensions"):
        try:
            module = importlib.import_module(name)
        except ImportError:  # pragma: no cover - typing_extensions is optional
            continue
        for attr, into in (("Required", required), ("NotRequired", not_required)):
            if hasattr(module, attr):
                into.append(getattr(module, attr))
    return tuple(required), tuple(not_required)


_REQUIRED, _NOT_REQUIRED = _wrappers()


def _typeddict_checks() -> tuple[Any, ...]:
    """``is_typeddict`` of ``typing`` and of ``typing_extensions``: a
    ``typing_extensions.TypedDict`` (what Python 3.10 code uses for ``NotRequired``, and a
    class of its own on later Pythons too) is not a ``typing`` one."""
    checks: list[Any] = [typing.is_typeddict]
    try:
        extensions = importlib.import_module("typing_extensions")
    except ImportError:  # pragma: no cover - typing_extensions is optional
        return tuple(checks)
    if getattr(extensions, "is_typeddict", typing.is_typeddict) is not typing.is_typeddict:
        checks.append(extensions.is_typeddict)
    return tuple(checks)


_IS_TYPEDDICT = _typeddict_checks()


def is_typeddict(tp: Any) -> bool:
    """Whether ``tp`` is a ``TypedDict`` class (of ``typing`` or ``typing_extensions``)."""
    return any(check(tp) for check in _IS_TYPEDDICT)


def is_object_type(tp: Any) -> bool:
    """Whether ``tp`` is a ``TypedDict`` or a dataclass (a schema with properties)."""
    return isinstance(tp, type) and (is_typeddict(tp) or dataclasses.is_dataclass(tp))


def json_name(name: str) -> str:
    """A Python field name in the API conventions' lower camel case: ``min_replicas`` ->
    ``minReplicas`` (a name without ``_`` is unchanged)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def type_doc(tp: Any) -> str | None:
    """The docstring of a class (cleaned), ``None`` without one (the signature a dataclass
    gets as its ``__doc__`` does not count)."""
    doc = vars(tp).get("__doc__") if isinstance(tp, type) else None
    if not isinstance(doc, str) or not doc.strip():
        return None
    if dataclasses.is_dataclass(tp) and doc.startswith(f"{getattr(tp, '__name__', '')}("):
        return None  # the signature dataclasses writes when there is no docstring
    return inspect.cleandoc(doc)


def field_docstrings(cls: type) -> dict[str, str]:
    """The attribute docstrings of ``cls``'s fields: a string literal right after an
    annotated field in the class body (PEP 257's "attribute docstrings"), its bases' too
    (named in the class statement: Python 3.11's TypedDicts keep no reference to them);
    none where the source is not available."""
    node = _class_def(cls)
    if node is None:
        return {}
    found: dict[str, str] = {}
    namespace = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
    for base in node.bases:
        resolved = namespace.get(base.id) if isinstance(base, ast.Name) else None
        if isinstance(resolved, type) and resolved is not cls and is_object_type(resolved):
            found.update(field_docstrings(resolved))
    for here, after in itertools.pairwise(node.body):
        if (isinstance(here, ast.AnnAssign) and isinstance(here.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            found[here.target.id] = inspect.cleandoc(after.value.value)
    return found


def _class_def(cls: type) -> ast.ClassDef | None:
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            return node
    return None


def _split(tp: Any) -> tuple[Any, list[m.Marker]]:
    """``Annotated[X, *markers]`` (nested ones too) -> ``(X, markers)``."""
    found: list[m.Marker] = []
    while typing.get_origin(tp) is Annotated:
        found = [x for x in tp.__metadata__ if isinstance(x, m.Marker)] + found
        tp = tp.__origin__
    return tp, found


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _unwrap_optional(tp: Any) -> tuple[Any, bool, list[m.Marker]]:
    """``X | None`` -> ``(X, True, X's markers)``; anything else -> ``(tp, False, markers)``."""
    tp, found = _split(tp)
    if _is_union(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) < len(typing.get_args(tp)):
            inner = args[0] if len(args) == 1 else Union[tuple(args)]  # noqa: UP007
            inner, more = _split(inner)
            return inner, True, found + more
    return tp, False, found


def _enum_schema(values: Sequence[Any], where: str) -> dict[str, Any]:
    values = [v.value if isinstance(v, enum.Enum) else v for v in values]
    kinds = {type(v) for v in values}
    if kinds <= {str}:
        base = "string"
    elif kinds <= {bool}:
        base = "boolean"
    elif kinds <= {int}:
        base = "integer"
    elif kinds <= {int, float}:
        base = "number"
    else:
        raise SchemaError(f"{where}: enum values must be all strings, all integers or all "
                          f"numbers, got {list(values)!r}")
    return {"type": base, "enum": list(values)}


def type_schema(tp: Any, where: str, *, doc: str | None = None,
                _within: tuple[type, ...] = ()) -> dict[str, Any]:
    """The schema of annotation ``tp`` at ``where`` (``Kind.spec.field``, for errors).

    Raises:
        SchemaError: an unsupported annotation, a recursive type or a marker that does not
            fit the type.
    """
    inner, _, found = _unwrap_optional(tp)
    schema = _base_schema(inner, where, _within)
    if doc is None and is_object_type(inner):
        doc = type_doc(inner)
    if doc:
        schema = {"description": doc, **schema}
    if is_object_type(inner):
        found = list(m.type_markers(inner)) + found
    return apply_markers(schema, found, where)


def _base_schema(tp: Any, where: str, within: tuple[type, ...]) -> dict[str, Any]:
    if tp is Any:
        return {"x-kubernetes-preserve-unknown-fields": True}
    if tp in _SCALARS:
        return dict(_SCALARS[tp])
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema(list(tp), where)
    if is_object_type(tp):
        if tp in within:
            raise SchemaError(f"{where}: {tp.__name__} contains itself: a structural schema "
                              "cannot be recursive (use dict[str, Any] at the recursion)")
        return object_schema(tp, where, _within=within)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return _enum_schema(args, where)
    if _is_union(tp):
        if set(args) == {int, str}:
            return apply_markers({}, [m.IntOrString()], where)
        raise SchemaError(f"{where}: unsupported type annotation {_name(tp)}: a union other "
                          "than 'X | None' or 'int | str' has no structural schema")
    if origin in (list, Sequence) and len(args) == 1:
        return {"type": "array", "items": type_schema(args[0], f"{where}[]", _within=within)}
    if origin in (dict, Mapping) and len(args) == 2:
        if args[0] is not str:
            raise SchemaError(f"{where}: unsupported type annotation {_name(tp)}: "
                              "object keys are strings")
        if args[1] is Any:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return {"type": "object",
                "additionalProperties": type_schema(args[1], f"{where}{{}}", _within=within)}
    raise SchemaError(f"{where}: unsupported type annotation {_name(tp)}")


def _name(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) and not typing.get_args(tp) else repr(tp)


def _fields(cls: type, where: str) -> list[tuple[str, str, Any, bool, Any]]:
    """``(python name, json name, annotation, required, default)`` of each field."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except (NameError, TypeError) as err:
        raise SchemaError(f"{where}: cannot resolve the annotations of {cls.__name__}: "
                          f"{err}") from None
    out = []
    if is_typeddict(cls):
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        for name, tp in hints.items():
            # With string annotations (``from __future__ import annotations``) Python
            # 3.11's TypedDict cannot see Required/NotRequired: the resolved hint decides.
            required = name in required_keys
            while typing.get_origin(tp) in _REQUIRED + _NOT_REQUIRED:
                required = typing.get_origin(tp) in _REQUIRED
                tp = typing.get_args(tp)[0]
            out.append((name, name, tp, required, dataclasses.MISSING))
        return out
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        _, optional, _ = _unwrap_optional(tp)
        has_default = (f.default is not dataclasses.MISSING
                       or f.default_factory is not dataclasses.MISSING)
        out.append((f.name, json_name(f.name), tp, not has_default and not optional, f.default))
    return out


def object_schema(cls: type, where: str, *, _within: tuple[type, ...] = ()
                  ) -> dict[str, Any]:
    """``type: object`` with the properties and required fields of a ``TypedDict`` or
    dataclass."""
    docs = field_docstrings(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, key, tp, is_required, default in _fields(cls, where):
        _, _, found = _unwrap_optional(tp)
        for marker in found:
            if isinstance(marker, m.JSONName):
                key = marker.name
        path = f"{where}.{key}"
        doc = next((x.text for x in found if isinstance(x, m.Description)), docs.get(name))
        schema = type_schema(tp, path, doc=doc, _within=(*_within, cls))
        if default is not dataclasses.MISSING and default is not None and "default" not in schema:
            schema["default"] = default.value if isinstance(default, enum.Enum) else default
        if any(isinstance(x, m.Default) for x in found):
            is_required = False
        if any(isinstance(x, m.Optional) for x in found):
            is_required = False
        if any(isinstance(x, m.Required) for x in found):
            is_required = True
        properties[key] = schema
        if is_required:
            required.append(key)
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = sorted(required)
    return out


def _need(schema: dict[str, Any], kinds: tuple[str, ...], marker: m.Marker,
          where: str) -> None:
    if schema.get("type") not in kinds:
        raise SchemaError(f"{where}: {type(marker).__name__} applies to "
                          f"{' or '.join(kinds)} fields, not {schema.get('type', 'untyped')}")


def apply_markers(schema: dict[str, Any], found: Sequence[m.Marker],
                  where: str) -> dict[str, Any]:
    """``schema`` with the keywords of ``found`` (later markers win)."""
    out = dict(schema)
    rules: list[dict[str, Any]] = list(out.pop("x-kubernetes-validations", []))
    for marker in found:
        if isinstance(marker, m.Description):
            out["description"] = marker.text
        elif isinstance(marker, m.Default):
            value = marker.value
            out["default"] = value.value if isinstance(value, enum.Enum) else value
        elif isinstance(marker, m.Enum):
            out["enum"] = [v.value if isinstance(v, enum.Enum) else v for v in marker.values]
        elif isinstance(marker, (m.Minimum, m.Maximum)):
            _need(out, _NUMERIC, marker, where)
            out["minimum" if isinstance(marker, m.Minimum) else "maximum"] = marker.value
        elif isinstance(marker, (m.ExclusiveMinimum, m.ExclusiveMaximum)):
            _need(out, _NUMERIC, marker, where)
            low = isinstance(marker, m.ExclusiveMinimum)
            if ("minimum" if low else "maximum") not in out:
                raise SchemaError(f"{where}: {type(marker).__name__} needs "
                                  f"{'Minimum' if low else 'Maximum'} before it")
            out["exclusiveMinimum" if low else "exclusiveMaximum"] = True
        elif isinstance(marker, (m.MinLength, m.MaxLength, m.Pattern)):
            _need(out, ("string",), marker, where)
            if isinstance(marker, m.Pattern):
                out["pattern"] = marker.regex
            else:
                out["minLength" if isinstance(marker, m.MinLength) else "maxLength"] = (
                    marker.value)
        elif isinstance(marker, m.Format):
            out["format"] = marker.name
        elif isinstance(marker, (m.MinItems, m.MaxItems)):
            _need(out, ("array",), marker, where)
            out["minItems" if isinstance(marker, m.MinItems) else "maxItems"] = marker.value
        elif isinstance(marker, (m.MinProperties, m.MaxProperties)):
            _need(out, ("object",), marker, where)
            key = "minProperties" if isinstance(marker, m.MinProperties) else "maxProperties"
            out[key] = marker.value
        elif isinstance(marker, m.UniqueItems):
            _need(out, ("array",), marker, where)
            out["x-kubernetes-list-type"] = "set"
        elif isinstance(marker, m.Nullable):
            out["nullable"] = True
        elif isinstance(marker, m.IntOrString):
            out.pop("type", None)
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
            out["x-kubernetes-int-or-string"] = True
        elif isinstance(marker, m.PreserveUnknownFields):
            out["x-kubernetes-preserve-unknown-fields"] = True
        elif isinstance(marker, m.EmbeddedResource):
            if out.get("type") not in ("object", None):
                raise SchemaError(f"{where}: EmbeddedResource applies to object fields, "
                                  f"not {out['type']}")
            out["type"] = "object"
            out["x-kubernetes-embedded-resource"] = True
            if "properties" not in out:
                out["x-kubernetes-preserve-unknown-fields"] = True
        elif isinstance(marker, m.ListType):
            _need(out, ("array",), marker, where)
            out["x-kubernetes-list-type"] = marker.value
        elif isinstance(marker, m.ListMapKeys):
            _need(out, ("array",), marker, where)
            out["x-kubernetes-list-map-keys"] = list(marker.keys)
        elif isinstance(marker, m.MapType):
            _need(out, ("object",), marker, where)
            out["x-kubernetes-map-type"] = marker.value
        elif isinstance(marker, m.XValidation):
            _compile(marker, where)
            rules.append(marker.to_json())
    keys = out.get("x-kubernetes-list-map-keys")
    if keys is not None and out.get("x-kubernetes-list-type") != "map":
        raise SchemaError(f'{where}: ListMapKeys needs ListType("map")')
    if out.get("x-kubernetes-list-type") == "map":
        _check_map_keys(out, keys, where)
    if out.get("x-kubernetes-list-type") == "set":
        _check_set_items(out, where)
    if rules:
        out["x-kubernetes-validations"] = rules
    return out


def _check_map_keys(schema: dict[str, Any], keys: list[str] | None, where: str) -> None:
    """kube-apiserver's rule (``validation.go``): a map list has keys, its items are objects
    and every key is a required (or defaulted) scalar property."""
    if not keys:
        raise SchemaError(f'{where}: ListType("map") needs ListMapKeys')
    items = schema.get("items") or {}
    props = items.get("properties") or {}
    for key in keys:
        prop = props.get(key)
        if prop is None or prop.get("type") not in ("string", "integer", "number", "boolean"):
            raise SchemaError(f"{where}: map key {key!r} must be a scalar field of the items")
        if key not in (items.get("required") or []) and "default" not in prop:
            raise SchemaError(f"{where}: map key {key!r} must be required or have a default")


def _check_set_items(schema: dict[str, Any], where: str) -> None:
    """kube-apiserver's rule (``validation.go``, ``requireAtomicSetType``): the items of a
    ``set`` list are scalars, atomic lists or atomic maps."""
    items = schema.get("items") or {}
    if items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
        raise SchemaError(f"{where}: the items of a set list (UniqueItems, ListType(\"set\")) "
                          "must be scalars or atomic: add MapType(\"atomic\") to the item type")
    if items.get("type") == "array" and items.get("x-kubernetes-list-type", "atomic") != "atomic":
        raise SchemaError(f"{where}: the items of a set list must be scalars or atomic lists")


def _compile(rule: m.XValidation, where: str) -> None:
    try:
        cel = importlib.import_module("cel")
    except ImportError:  # pragma: no cover - the test extra installs it
        return
    for what, text in (("rule", rule.rule), ("messageExpression", rule.message_expression)):
        if text is None:
            continue
        if not text.strip():
            raise RuleCompileError(f"{where}: an XValidation {what} is empty")
        try:
            cel.compile(text)
        except (ValueError, RuntimeError) as err:
            detail = re.sub(r"^Failed to parse expression '.*?': ", "", str(err), flags=re.S)
            raise RuleCompileError(f"{where}: XValidation {what} {text!r} does not compile: "
                                   f"{detail}") from None
