"""Python types and markers to structural schemas (informers.crdgen.schema): the exact schema
of each annotation and each marker, and the errors for what has no structural schema.

The keyword each marker sets is controller-tools v0.19.0's (``pkg/crd/markers/validation.go``,
``topology.go``); ``UniqueItems`` differs on purpose (kube-apiserver refuses
``uniqueItems: true``).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

import pytest
import typing_extensions

from informers.crdgen import markers as m
from informers.crdgen.errors import RuleCompileError, SchemaError
from informers.crdgen.schema import json_name, object_schema, type_schema


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Item(TypedDict):
    name: str
    port: NotRequired[int]


@pytest.mark.parametrize(("annotation", "expected"), [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (bytes, {"type": "string", "format": "byte"}),
    (datetime.datetime, {"type": "string", "format": "date-time"}),
    (datetime.date, {"type": "string", "format": "date"}),
    (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
    (Color, {"type": "string", "enum": ["red", "blue"]}),
    (Level, {"type": "integer", "enum": [1, 2]}),
    (list[str], {"type": "array", "items": {"type": "string"}}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (dict[str, Any], {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
    (Any, {"x-kubernetes-preserve-unknown-fields": True}),
    (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}],
                 "x-kubernetes-int-or-string": True}),
    (str | None, {"type": "string"}),
    (Item, {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}),
])
def test_each_type_has_its_schema(annotation, expected):
    assert type_schema(annotation, "T.f") == expected


@pytest.mark.parametrize(("annotation", "expected"), [
    (Annotated[str, m.Description("the name")], {"type": "string", "description": "the name"}),
    (Annotated[int, m.Default(3)], {"type": "integer", "default": 3}),
    (Annotated[Color, m.Default(Color.BLUE)],
     {"type": "string", "enum": ["red", "blue"], "default": "blue"}),
    (Annotated[str, m.Enum("x", "y")], {"type": "string", "enum": ["x", "y"]}),
    (Annotated[int, m.Minimum(1), m.Maximum(9)], {"type": "integer", "minimum": 1,
                                                 "maximum": 9}),
    (Annotated[float, m.Minimum(0), m.ExclusiveMinimum(), m.Maximum(1), m.ExclusiveMaximum()],
     {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1,
      "exclusiveMaximum": True}),
    (Annotated[str, m.MinLength(1), m.MaxLength(63)],
     {"type": "string", "minLength": 1, "maxLength": 63}),
    (Annotated[str, m.Pattern("^[a-z]+$")], {"type": "string", "pattern": "^[a-z]+$"}),
    (Annotated[str, m.Format("uri")], {"type": "string", "format": "uri"}),
    (Annotated[list[int], m.MinItems(1), m.MaxItems(3)],
     {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}),
    (Annotated[dict[str, str], m.MinProperties(1), m.MaxProperties(2)],
     {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1,
      "maxProperties": 2}),
    (Annotated[list[str], m.UniqueItems()],
     {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}),
    (Annotated[str, m.Nullable()], {"type": "string", "nullable": True}),
    (Annotated[str, m.IntOrString()], {"anyOf": [{"type": "integer"}, {"type": "string"}],
                                       "x-kubernetes-int-or-string": True}),
    (Annotated[Item, m.PreserveUnknownFields()],
     {"type": "object", "required": ["name"], "x-kubernetes-preserve-unknown-fields": True,
      "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}),
    (Annotated[dict[str, Any], m.EmbeddedResource()],
     {"type": "object", "x-kubernetes-embedded-resource": True,
      "x-kubernetes-preserve-unknown-fields": True}),
    (Annotated[list[str], m.ListType("atomic")],
     {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"}),
    (Annotated[list[Item], m.ListType("map"), m.ListMapKeys("name")],
     {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
      "items": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}),
    (Annotated[dict[str, str], m.MapType("atomic")],
     {"type": "object", "additionalProperties": {"type": "string"},
      "x-kubernetes-map-type": "atomic"}),
    (Annotated[int, m.XValidation("self % 2 == 0", message="must be even",
                                  message_expression="'got ' + string(self)",
                                  reason="FieldValueForbidden", field_path=".x"),
               m.XValidation("self >= oldSelf", optional_old_self=True)],
     {"type": "integer", "x-kubernetes-validations": [
         {"rule": "self % 2 == 0", "message": "must be even",
          "messageExpression": "'got ' + string(self)", "reason": "FieldValueForbidden",
          "fieldPath": ".x"},
         {"rule": "self >= oldSelf", "optionalOldSelf": True}]}),
    (Annotated[Annotated[int, m.Minimum(1)] | None, m.Maximum(2)],
     {"type": "integer", "minimum": 1, "maximum": 2}),
])
def test_each_marker_sets_its_keyword(annotation, expected):
    assert type_schema(annotation, "T.f") == expected


@m.schema(m.XValidation("self.low <= self.high", message="low must not exceed high"))
class Range(TypedDict):
    """A range of ports."""

    low: int
    """The first port."""
    high: Annotated[int, m.Description("The last port.")]
    """Ignored: the marker wins."""


@dataclasses.dataclass
class Settings:
    """Settings of a thing."""

    min_replicas: int
    mode: Literal["fast", "safe"] = "safe"
    color: Color = Color.RED
    note: str | None = None
    tags: list[str] = dataclasses.field(default_factory=list)
    renamed: Annotated[int, m.JSONName("x-count")] = 0
    forced: Annotated[str | None, m.Required()] = None
    loose: Annotated[int, m.Optional()] = dataclasses.field(default_factory=int)


class Total(TypedDict, total=False):
    a: int
    b: Required[int]


def test_a_typeddict_with_docstrings_and_a_type_rule():
    assert type_schema(Range, "T.range") == {
        "description": "A range of ports.", "type": "object", "required": ["high", "low"],
        "properties": {"low": {"description": "The first port.", "type": "integer"},
                       "high": {"type": "integer", "description": "The last port."}},
        "x-kubernetes-validations": [{"rule": "self.low <= self.high",
                                      "message": "low must not exceed high"}]}


def test_a_dataclass_with_defaults_json_names_and_required_fields():
    assert object_schema(Settings, "T") == {
        "type": "object", "required": ["forced", "minReplicas"],
        "properties": {
            "minReplicas": {"type": "integer"},
            "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
            "note": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "x-count": {"type": "integer", "default": 0},
            "forced": {"type": "string"},
            "loose": {"type": "integer"},
        }}


def test_a_non_total_typeddict_requires_only_its_required_keys():
    assert object_schema(Total, "T") == {
        "type": "object", "required": ["b"],
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}


def test_json_name_is_lower_camel_case():
    assert [json_name(n) for n in ("replicas", "min_replicas", "a_b_c", "already")] == [
        "replicas", "minReplicas", "aBC", "already"]


class Bad(TypedDict):
    ok: int
    ports: set[int]


@pytest.mark.parametrize(("annotation", "message"), [
    (Bad, "T.spec.ports: unsupported type annotation set[int]"),
    (tuple[int, str], "T.spec: unsupported type annotation tuple[int, str]"),
    (int | float, "T.spec: unsupported type annotation int | float: a union other than "
                  "'X | None' or 'int | str' has no structural schema"),
    (dict[int, str], "T.spec: unsupported type annotation dict[int, str]: object keys are "
                     "strings"),
    (complex, "T.spec: unsupported type annotation complex"),
    (Literal["a", 1], "T.spec: enum values must be all strings, all integers or all numbers, "
                      "got ['a', 1]"),
    (Annotated[str, m.Minimum(1)], "T.spec: Minimum applies to integer or number fields, "
                                   "not string"),
    (Annotated[int, m.MaxLength(1)], "T.spec: MaxLength applies to string fields, not integer"),
    (Annotated[str, m.MinItems(1)], "T.spec: MinItems applies to array fields, not string"),
    (Annotated[int, m.ExclusiveMinimum()], "T.spec: ExclusiveMinimum needs Minimum before it"),
    (Annotated[list[Item], m.ListMapKeys("name")], 'T.spec: ListMapKeys needs ListType("map")'),
    (Annotated[list[Item], m.ListType("map")], 'T.spec: ListType("map") needs ListMapKeys'),
    (Annotated[list[Item], m.ListType("map"), m.ListMapKeys("port")],
     "T.spec: map key 'port' must be required or have a default"),
    (Annotated[list[str], m.ListType("map"), m.ListMapKeys("name")],
     "T.spec: map key 'name' must be a scalar field of the items"),
    (Annotated[list[Item], m.UniqueItems()],
     'T.spec: the items of a set list (UniqueItems, ListType("set")) must be scalars or '
     'atomic: add MapType("atomic") to the item type'),
    (Annotated[list[Annotated[list[int], m.ListType("set")]], m.ListType("set")],
     "T.spec: the items of a set list must be scalars or atomic lists"),
    (Annotated[int, m.EmbeddedResource()], "T.spec: EmbeddedResource applies to object fields, "
                                           "not integer"),
])
def test_what_has_no_structural_schema_is_an_error_naming_the_field(annotation, message):
    with pytest.raises(SchemaError) as caught:
        type_schema(annotation, "T.spec")
    assert str(caught.value) == message


def test_a_rule_that_does_not_compile_names_the_field_and_the_rule():
    with pytest.raises(RuleCompileError) as caught:
        type_schema(Annotated[int, m.XValidation("self >")], "Widget.spec.size")
    assert str(caught.value).startswith(
        "Widget.spec.size: XValidation rule 'self >' does not compile: ")
    with pytest.raises(RuleCompileError) as caught:
        type_schema(Annotated[int, m.XValidation("self > 0", message_expression="'a' +")],
                    "Widget.spec.size")
    assert str(caught.value).startswith(
        "Widget.spec.size: XValidation messageExpression \"'a' +\" does not compile: ")
    with pytest.raises(RuleCompileError) as caught:
        type_schema(Annotated[int, m.XValidation(" ")], "Widget.spec.size")
    assert str(caught.value) == "Widget.spec.size: an XValidation rule is empty"


class Tree(TypedDict):
    children: list[Tree]


def test_a_recursive_type_is_an_error():
    with pytest.raises(SchemaError) as caught:
        type_schema(Tree, "T.spec")
    assert str(caught.value) == (
        "T.spec.children[]: Tree contains itself: a structural schema cannot be recursive "
        "(use dict[str, Any] at the recursion)")


class Unresolved(TypedDict):
    x: NoSuchType  # type: ignore[name-defined]  # noqa: F821


def test_an_annotation_that_does_not_resolve_is_an_error():
    with pytest.raises(SchemaError) as caught:
        type_schema(Unresolved, "T.spec")
    assert str(caught.value) == ("T.spec: cannot resolve the annotations of Unresolved: "
                                 "name 'NoSuchType' is not defined")


class _Base(TypedDict):
    name: str
    """The name, documented in the base."""


class Derived(_Base, total=False):
    extra: int
    """Documented here."""


def test_base_class_fields_keep_their_docstrings_and_requiredness():
    assert object_schema(Derived, "T") == {
        "type": "object", "required": ["name"],
        "properties": {"name": {"description": "The name, documented in the base.",
                                "type": "string"},
                       "extra": {"description": "Documented here.", "type": "integer"}}}



class ExtensionsSpec(typing_extensions.TypedDict):
    image: str
    replicas: typing_extensions.NotRequired[int]


def test_a_typing_extensions_typeddict_is_an_object_with_its_required_keys():
    """What Python 3.10 code writes for ``NotRequired`` (``typing_extensions.TypedDict`` is a
    class of its own, not a ``typing`` TypedDict, on every Python)."""
    assert object_schema(ExtensionsSpec, "S") == {
        "type": "object", "properties": {"image": {"type": "string"},
                                         "replicas": {"type": "integer"}},
        "required": ["image"]}
