"""The markers: what a field or a type says about its CRD schema, in ``typing.Annotated``.

Each marker is the Python spelling of a kubebuilder marker of controller-tools
(``sigs.k8s.io/controller-tools/pkg/crd/markers``: ``validation.go``, ``topology.go``,
``crd.go``); the name of each class is the marker's last word. A field takes them in
``Annotated``::

    replicas: Annotated[int, Minimum(0), Maximum(10), Default(1)]
    mode: Annotated[Literal["fast", "safe"], Description("How to copy.")]

and a type (a ``TypedDict`` or a dataclass) takes them with the :func:`schema` decorator,
which is how a rule over several fields is written (``+kubebuilder:validation:XValidation``
on a struct)::

    @schema(XValidation("self.min <= self.max", message="min must not exceed max"))
    class Range(TypedDict): ...

Markers are immutable values and carry no behaviour: :mod:`informers.crdgen.schema` turns
them into schema keywords (each class's docstring names the keyword it sets).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

__all__ = [
    "Default", "Description", "EmbeddedResource", "Enum", "ExclusiveMaximum",
    "ExclusiveMinimum", "Format", "IntOrString", "JSONName", "ListMapKeys", "ListType",
    "MapType", "Marker", "MaxItems", "MaxLength", "MaxProperties", "Maximum", "MinItems",
    "MinLength", "MinProperties", "Minimum", "Nullable", "Optional", "Pattern",
    "PreserveUnknownFields", "Required", "UniqueItems", "XValidation", "schema",
    "type_markers",
]


class Marker:
    """The base class of every marker (so ``Annotated`` metadata that is not one is
    ignored, as controller-gen ignores comments that are not markers)."""


@dataclass(frozen=True)
class Description(Marker):
    """``description`` (controller-gen takes it from the Go doc comment; here a field's
    attribute docstring or a type's docstring give it too, and this marker wins)."""

    text: str


@dataclass(frozen=True)
class Default(Marker):
    """``default`` (``+default`` / ``+kubebuilder:default``): kube-apiserver fills it in when
    the field is absent. A field with a default is optional."""

    value: Any


@dataclass(frozen=True)
class Enum(Marker):
    """``enum`` (``+kubebuilder:validation:Enum``). ``Literal[...]`` and ``enum.Enum``
    types give it without this marker."""

    values: tuple[Any, ...]

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", values)


@dataclass(frozen=True)
class Minimum(Marker):
    """``minimum`` (``+kubebuilder:validation:Minimum``)."""

    value: int | float


@dataclass(frozen=True)
class Maximum(Marker):
    """``maximum`` (``+kubebuilder:validation:Maximum``)."""

    value: int | float


@dataclass(frozen=True)
class ExclusiveMinimum(Marker):
    """``exclusiveMinimum: true`` (``+kubebuilder:validation:ExclusiveMinimum``); needs
    :class:`Minimum`."""


@dataclass(frozen=True)
class ExclusiveMaximum(Marker):
    """``exclusiveMaximum: true`` (``+kubebuilder:validation:ExclusiveMaximum``); needs
    :class:`Maximum`."""


@dataclass(frozen=True)
class MinLength(Marker):
    """``minLength`` (``+kubebuilder:validation:MinLength``)."""

    value: int


@dataclass(frozen=True)
class MaxLength(Marker):
    """``maxLength`` (``+kubebuilder:validation:MaxLength``)."""

    value: int


@dataclass(frozen=True)
class Pattern(Marker):
    """``pattern`` (``+kubebuilder:validation:Pattern``): an ECMA-262 regular expression."""

    regex: str


@dataclass(frozen=True)
class Format(Marker):
    """``format`` (``+kubebuilder:validation:Format``), e.g. ``"date-time"``, ``"uri"``;
    kube-apiserver validates the formats of ``apiextensions-apiserver`` ``schema/validation``
    and keeps the others as documentation."""

    name: str


@dataclass(frozen=True)
class MinItems(Marker):
    """``minItems`` (``+kubebuilder:validation:MinItems``)."""

    value: int


@dataclass(frozen=True)
class MaxItems(Marker):
    """``maxItems`` (``+kubebuilder:validation:MaxItems``)."""

    value: int


@dataclass(frozen=True)
class MinProperties(Marker):
    """``minProperties`` (``+kubebuilder:validation:MinProperties``)."""

    value: int


@dataclass(frozen=True)
class MaxProperties(Marker):
    """``maxProperties`` (``+kubebuilder:validation:MaxProperties``)."""

    value: int


@dataclass(frozen=True)
class UniqueItems(Marker):
    """Items must be unique: ``x-kubernetes-list-type: set``. kube-apiserver refuses
    ``uniqueItems: true`` in a CRD ("uniqueItems cannot be set to true since the runtime
    complexity becomes quadratic", ``apiextensions/validation/validation.go``); a set list
    is its structural equivalent (duplicates are refused with ``Duplicate value``)."""


@dataclass(frozen=True)
class Nullable(Marker):
    """``nullable: true`` (``+nullable``): ``null`` is kept instead of pruned."""


@dataclass(frozen=True)
class IntOrString(Marker):
    """``x-kubernetes-int-or-string: true`` with ``anyOf: [{type: integer}, {type:
    string}]``, as controller-gen writes ``intstr.IntOrString``. ``int | str`` gives it
    without this marker."""


@dataclass(frozen=True)
class PreserveUnknownFields(Marker):
    """``x-kubernetes-preserve-unknown-fields: true``
    (``+kubebuilder:pruning:PreserveUnknownFields``): unknown fields are kept."""


@dataclass(frozen=True)
class EmbeddedResource(Marker):
    """``x-kubernetes-embedded-resource: true`` (``+kubebuilder:validation:EmbeddedResource``):
    the value is an object with ``apiVersion``, ``kind`` and ``metadata``, validated as
    such. On a ``dict[str, Any]`` field it also preserves unknown fields."""


@dataclass(frozen=True)
class ListType(Marker):
    """``x-kubernetes-list-type`` (``+listType``): ``"atomic"``, ``"set"`` or ``"map"``."""

    value: Literal["atomic", "set", "map"]


@dataclass(frozen=True)
class ListMapKeys(Marker):
    """``x-kubernetes-list-map-keys`` (``+listMapKey``): the keys of a ``map`` list; a key
    must be a required scalar field of the items (or have a default)."""

    keys: tuple[str, ...]

    def __init__(self, *keys: str) -> None:
        object.__setattr__(self, "keys", keys)


@dataclass(frozen=True)
class MapType(Marker):
    """``x-kubernetes-map-type`` (``+mapType``): ``"granular"`` or ``"atomic"``."""

    value: Literal["granular", "atomic"]


@dataclass(frozen=True)
class XValidation(Marker):
    """One ``x-kubernetes-validations`` rule (``+kubebuilder:validation:XValidation``): a CEL
    expression over ``self`` (and ``oldSelf`` for a transition rule) that must be true.

    Attributes:
        rule: the CEL expression.
        message: the error message (default kube-apiserver's ``failed rule: <rule>``).
        message_expression: a CEL expression giving the message (``messageExpression``).
        reason: ``FieldValueInvalid`` (kube-apiserver's default), ``FieldValueForbidden``,
            ``FieldValueRequired`` or ``FieldValueDuplicate``.
        field_path: the path the error names, relative to the node (``fieldPath``, e.g.
            ``".max"``).
        optional_old_self: let a transition rule run on create too, with ``oldSelf`` an
            optional (``optionalOldSelf``).
    """

    rule: str
    message: str | None = None
    message_expression: str | None = None
    reason: Literal["FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired",
                    "FieldValueDuplicate"] | None = None
    field_path: str | None = None
    optional_old_self: bool | None = None

    def to_json(self) -> dict[str, Any]:
        """The rule as kube-apiserver's ``ValidationRule`` JSON."""
        out: dict[str, Any] = {"rule": self.rule}
        for key, value in (("message", self.message),
                           ("messageExpression", self.message_expression),
                           ("reason", self.reason), ("fieldPath", self.field_path),
                           ("optionalOldSelf", self.optional_old_self)):
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class Required(Marker):
    """The field is required (``+required``) though it has a default value in Python (a
    dataclass field with ``field(default=...)`` or ``| None``)."""


@dataclass(frozen=True)
class Optional(Marker):
    """The field is optional (``+optional``) though Python calls it required (a dataclass
    field without a default, a key of a ``total`` TypedDict)."""


@dataclass(frozen=True)
class JSONName(Marker):
    """The field's name in JSON (Go's ``json:"name"`` tag). A dataclass field
    ``min_replicas`` is ``minReplicas`` without it (the Kubernetes API conventions' lower
    camel case); a TypedDict key is its own JSON name."""

    name: str


_MARKERS_ATTR = "__crd_markers__"

T = TypeVar("T")


def schema(*markers: Marker) -> Callable[[T], T]:
    """Give a ``TypedDict`` or dataclass ``markers`` that apply wherever the type is used,
    e.g. an :class:`XValidation` rule over several of its fields (a kubebuilder marker on a
    Go type). Stacks; the markers keep their order."""

    def decorate(cls: T) -> T:
        previous: tuple[Marker, ...] = getattr(cls, _MARKERS_ATTR, ())
        setattr(cls, _MARKERS_ATTR, previous + tuple(markers))
        return cls

    return decorate


def type_markers(cls: Any) -> tuple[Marker, ...]:
    """The markers :func:`schema` gave ``cls`` (its own, not inherited)."""
    found = vars(cls).get(_MARKERS_ATTR, ()) if isinstance(cls, type) else ()
    return tuple(found)
