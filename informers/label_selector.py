"""Matches labels against label selectors: validated requirements and their AND.

What a label selector *is*, apart from its text: :class:`Requirement` (a key, an operator and a
set of values), :class:`Selector` (requirements ANDed, in key order), the validation of label
keys and values, the matching rules and the canonical string. They follow
``k8s.io/apimachinery/pkg/labels/selector.go`` (``NewRequirement``, ``Requirement.Matches``,
``Requirement.String``, ``internalSelector``) and ``pkg/api/validate/content/kube.go``
(``IsLabelKey``, ``IsLabelValue``). Every error is a :class:`~informers.errors.SelectorError`
naming the offending key or value.

Users import these names from :mod:`informers.labels`, which also parses selector text and
builds selectors from label sets and ``LabelSelector`` objects.

Deliberate difference from Go, which does not change what a valid selector means: requirement
values are kept sorted and without duplicates (Go keeps the slice it was given and only sorts
it when printing).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Final

from informers.errors import SelectorError
from informers.name_validation import DNS1123_SUBDOMAIN_MAX_LENGTH, DNS1123_SUBDOMAIN_RE

__all__ = [
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "DOES_NOT_EXIST",
    "DOUBLE_EQUALS",
    "EQUALS",
    "EVERYTHING",
    "EXISTS",
    "GREATER_THAN",
    "IN",
    "LABEL_NAME_MAX_LENGTH",
    "LABEL_VALUE_MAX_LENGTH",
    "LESS_THAN",
    "NOTHING",
    "NOT_EQUALS",
    "NOT_IN",
    "Requirement",
    "Selector",
    "everything",
    "label_key_errors",
    "label_value_errors",
    "matches_nothing",
    "nothing",
]


# Operator names, as apimachinery pkg/selection/operator.go spells them.
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
NOT_EQUALS: Final = "!="
IN: Final = "in"
NOT_IN: Final = "notin"
EXISTS: Final = "exists"
DOES_NOT_EXIST: Final = "!"
GREATER_THAN: Final = "gt"
LESS_THAN: Final = "lt"

# How each operator matches: a value set (in, =, ==), its complement (notin, !=), presence,
# absence, and the two integer comparisons.
_MATCH_IN, _MATCH_NOT_IN, _MATCH_EXISTS, _MATCH_ABSENT, _MATCH_GT, _MATCH_LT = range(6)
# Accepted spelling -> (operator, how it matches); ">" and "<" are accepted for gt and lt.
_OPERATORS: Final[dict[str, tuple[str, int]]] = {
    EQUALS: (EQUALS, _MATCH_IN), DOUBLE_EQUALS: (DOUBLE_EQUALS, _MATCH_IN), IN: (IN, _MATCH_IN),
    NOT_EQUALS: (NOT_EQUALS, _MATCH_NOT_IN), NOT_IN: (NOT_IN, _MATCH_NOT_IN),
    EXISTS: (EXISTS, _MATCH_EXISTS), DOES_NOT_EXIST: (DOES_NOT_EXIST, _MATCH_ABSENT),
    GREATER_THAN: (GREATER_THAN, _MATCH_GT), ">": (GREATER_THAN, _MATCH_GT),
    LESS_THAN: (LESS_THAN, _MATCH_LT), "<": (LESS_THAN, _MATCH_LT),
}

# Limits and formats from apimachinery pkg/api/validate/content (kube.go, dns.go).
LABEL_NAME_MAX_LENGTH: Final = 63
LABEL_VALUE_MAX_LENGTH: Final = 63
_NAME_RE = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN_RE = DNS1123_SUBDOMAIN_RE
_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)
_VALUE_MSG = (
    "must be empty or consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
# strconv.ParseInt(s, 10, 64), used by the gt/lt operators.
_INT_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _quote(text: object) -> str:
    """Render ``text`` for an error message, like Go's ``%q``."""
    if isinstance(text, str):
        return json.dumps(text, ensure_ascii=False)
    return repr(text)


@functools.lru_cache(maxsize=4096)
def _key_errors(key: str) -> tuple[str, ...]:
    parts = key.split("/")
    if len(parts) > 2:
        return (
            f"a valid label key {_NAME_MSG}, with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')",
        )
    errors: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        elif len(prefix) > DNS1123_SUBDOMAIN_MAX_LENGTH:
            errors.append(f"prefix part must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} bytes")
        elif not _SUBDOMAIN_RE.fullmatch(prefix):
            errors.append(f"prefix part {_SUBDOMAIN_MSG}")
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > LABEL_NAME_MAX_LENGTH:
        errors.append(f"name part must be no more than {LABEL_NAME_MAX_LENGTH} bytes")
    elif not _NAME_RE.fullmatch(name):
        errors.append(f"name part {_NAME_MSG}")
    return tuple(errors)


def label_key_errors(key: object) -> list[str]:
    """Why ``key`` is not a valid label key (apimachinery ``content.IsLabelKey``); empty if valid.

    A key is an optional DNS-1123 subdomain prefix (at most 253 characters) and ``/``, then a
    name of 1 to 63 characters from ``[A-Za-z0-9._-]`` that starts and ends alphanumeric.
    """
    if not isinstance(key, str):
        return ["must be a string"]
    return list(_key_errors(key))


def label_value_errors(value: object) -> list[str]:
    """Why ``value`` is not a valid label value (``content.IsLabelValue``); empty if valid.

    A value is empty, or 1 to 63 characters from ``[A-Za-z0-9._-]`` starting and ending
    alphanumeric.
    """
    if not isinstance(value, str):
        return ["must be a string"]
    if not value:
        return []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        return [f"must be no more than {LABEL_VALUE_MAX_LENGTH} bytes"]
    if not _NAME_RE.fullmatch(value):
        return [_VALUE_MSG]
    return []


def _parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: the integer, or ``None`` if it does not parse."""
    if not isinstance(text, str) or not _INT_RE.fullmatch(text):
        return None
    number = int(text)
    if number < _INT64_MIN or number > _INT64_MAX:
        return None
    return number


class Requirement:
    """One condition of a label selector: a key, an operator and a set of values.

    Immutable and therefore thread-safe. Operators (``pkg/selection`` names, with ``>``/``<``
    accepted for ``gt``/``lt``): ``in``, ``notin``, ``=``, ``==``, ``!=``, ``exists``, ``!``
    (does not exist), ``gt``, ``lt``. The constructor validates like apimachinery
    ``NewRequirement``: the key must be a valid label key and every value a valid label value;
    ``in``/``notin`` need at least one value, ``=``/``==``/``!=`` exactly one, ``exists``/``!``
    none, ``gt``/``lt`` exactly one that parses as a 64-bit integer. Values are stored sorted and
    de-duplicated.

    Matching (``Requirement.Matches``): ``in``/``=``/``==`` need the key present with one of
    the values; ``notin``/``!=`` match when the key is absent or its value is not among the
    values; ``gt``/``lt`` need the key present with an integer value that compares.

    Raises:
        SelectorError: for an unknown operator or an invalid key, value or value count.
    """

    __slots__ = ("_int", "_key", "_kind", "_operator", "_str", "_value_set", "_values")

    def __init__(self, key: str, operator: str, values: Iterable[str] = ()) -> None:
        if isinstance(values, str):
            raise TypeError(f"values must be an iterable of strings, not the string {values!r}")
        spec = _OPERATORS.get(operator) if isinstance(operator, str) else None
        if spec is None:
            raise SelectorError(
                f"operator {_quote(operator)} is not supported: expected one of "
                "in, notin, =, ==, !=, gt, lt, exists, !"
            )
        op = spec[0]
        raw = tuple(values)
        errors = [f"invalid label key {_quote(key)}: {e}" for e in label_key_errors(key)]
        if op in (IN, NOT_IN):
            if not raw:
                errors.append("values: for 'in', 'notin' operators, values set can't be empty")
        elif op in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
            if len(raw) != 1:
                errors.append(
                    f"values {list(raw)!r}: exact-match compatibility requires one single value"
                )
        elif op in (EXISTS, DOES_NOT_EXIST):
            if raw:
                errors.append(
                    f"values {list(raw)!r}: values set must be empty for exists and does not exist"
                )
        elif len(raw) != 1:
            errors.append(f"values {list(raw)!r}: for 'gt', 'lt' operators, exactly one value is "
                          "required")
        elif _parse_int64(raw[0]) is None:
            errors.append(f"value {_quote(raw[0])}: for 'gt', 'lt' operators, the value must be "
                          "an integer")
        for value in raw:
            errors.extend(
                f"invalid label value {_quote(value)} for key {_quote(key)}: {e}"
                for e in label_value_errors(value)
            )
        if errors:
            raise SelectorError("; ".join(errors))
        self._init(key, op, raw)

    def _init(self, key: str, op: str, values: tuple[str, ...]) -> None:
        self._key = key
        self._operator = op
        self._values = tuple(sorted(set(values)))
        self._value_set = frozenset(self._values)
        self._kind = _OPERATORS[op][1]
        self._int = _parse_int64(values[0]) if self._kind >= _MATCH_GT else None
        self._str = self._render()

    @classmethod
    def _trusted(cls, key: str, op: str, values: tuple[str, ...]) -> Requirement:
        """Build without validation, for input already validated (or known valid)."""
        req = cls.__new__(cls)
        req._init(key, op, values)
        return req

    @property
    def key(self) -> str:
        """The label key."""
        return self._key

    @property
    def operator(self) -> str:
        """The operator, one of the module's operator constants."""
        return self._operator

    @property
    def values(self) -> tuple[str, ...]:
        """The values, sorted, without duplicates (empty for ``exists`` and ``!``)."""
        return self._values

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether ``labels`` (``None`` means no labels) satisfy this requirement."""
        if labels is None:
            labels = _NO_LABELS
        kind = self._kind
        if kind == _MATCH_IN:
            value = labels.get(self._key)
            return value is not None and value in self._value_set
        if kind == _MATCH_NOT_IN:
            value = labels.get(self._key)
            return value is None or value not in self._value_set
        if kind == _MATCH_EXISTS:
            return self._key in labels
        if kind == _MATCH_ABSENT:
            return self._key not in labels
        value = labels.get(self._key)
        if value is None:
            return False
        number = _parse_int64(value)
        if number is None or self._int is None:
            return False
        return number > self._int if kind == _MATCH_GT else number < self._int

    def _render(self) -> str:
        op = self._operator
        if op == EXISTS:
            return self._key
        if op == DOES_NOT_EXIST:
            return "!" + self._key
        if op in (IN, NOT_IN):
            return f"{self._key} {op} ({','.join(self._values)})"
        symbol = ">" if op == GREATER_THAN else "<" if op == LESS_THAN else op
        return self._key + symbol + self._values[0]

    def __str__(self) -> str:
        """The canonical form: ``key=v``, ``key==v``, ``key!=v``, ``key in (a,b)``,
        ``key notin (a,b)``, ``key``, ``!key``, ``key>5``, ``key<5``."""
        return self._str

    def __repr__(self) -> str:
        return f"Requirement({self._key!r}, {self._operator!r}, {list(self._values)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirement):
            return NotImplemented
        return self._str == other._str

    def __hash__(self) -> int:
        return hash(self._str)


_NO_LABELS: Mapping[str, str] = {}


class Selector:
    """An AND of label requirements, sorted by key (apimachinery ``internalSelector``).

    Immutable and therefore thread-safe; :meth:`add` returns a new selector. Two selectors are
    equal when their canonical strings are equal, except that :data:`NOTHING` (which also prints
    as ``""``) equals only itself. Requirements with the same key keep the order in which they
    were given (Go's sort is not stable, but is in practice for the few requirements a selector
    holds). Truthiness is not defined: use :meth:`empty` or :func:`matches_nothing`.

    ``matches`` is the hot path of listers and of the embedded API server: the empty selector
    returns at once, a selector made only of single-value equalities is one C-level subset test
    of ``labels.items()``, and anything else evaluates the requirements in key order, stopping
    at the first that fails.
    """

    __slots__ = ("_equalities", "_hash", "_nothing", "_requirements", "_str")

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        reqs = tuple(requirements)
        for req in reqs:
            if not isinstance(req, Requirement):
                raise TypeError(f"expected a labels.Requirement, got {type(req).__name__}")
        self._init(tuple(sorted(reqs, key=_by_key)), nothing=False)

    def _init(self, requirements: tuple[Requirement, ...], *, nothing: bool) -> None:
        self._requirements = requirements
        self._nothing = nothing
        self._str = ",".join(req._str for req in requirements)
        self._hash = hash((nothing, self._str))
        equalities: frozenset[tuple[str, str]] | None = None
        if requirements and all(
            r._kind == _MATCH_IN and len(r._values) == 1 for r in requirements
        ):
            equalities = frozenset((r._key, r._values[0]) for r in requirements)
        self._equalities = equalities

    @classmethod
    def _nothing_selector(cls) -> Selector:
        sel = cls.__new__(cls)
        sel._init((), nothing=True)
        return sel

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether ``labels`` (``None`` means no labels) satisfy every requirement."""
        requirements = self._requirements
        if not requirements:
            return not self._nothing
        if labels is None:
            labels = _NO_LABELS
        equalities = self._equalities
        if equalities is not None:
            return labels.items() >= equalities
        for req in requirements:  # noqa: SIM110 - a plain loop is faster than all(genexpr)
            if not req.matches(labels):
                return False
        return True

    def empty(self) -> bool:
        """Whether this selector does not restrict anything (``False`` for :data:`NOTHING`)."""
        return not self._requirements and not self._nothing

    def requirements(self) -> tuple[Requirement, ...]:
        """The requirements in canonical (key) order; empty for :data:`NOTHING`."""
        return self._requirements

    def add(self, *requirements: Requirement) -> Selector:
        """A new selector with ``requirements`` added (:data:`NOTHING` stays :data:`NOTHING`)."""
        if self._nothing or not requirements:
            return self
        return Selector(self._requirements + requirements)

    def requires_exact_match(self, label: str) -> str | None:
        """The value the selector requires for ``label``, or ``None``.

        Like ``RequiresExactMatch``, only the first requirement on ``label`` is considered, and
        it must be ``=``, ``==`` or ``in`` with one value.
        """
        for req in self._requirements:
            if req._key == label:
                if req._kind == _MATCH_IN and len(req._values) == 1:
                    return req._values[0]
                return None
        return None

    def __str__(self) -> str:
        """The canonical string: requirements in key order joined by ``,`` (``""`` if none)."""
        return self._str

    def __repr__(self) -> str:
        if self._nothing:
            return "labels.NOTHING"
        return f"labels.parse({self._str!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selector):
            return NotImplemented
        return self._nothing == other._nothing and self._str == other._str

    def __hash__(self) -> int:
        return self._hash


def _by_key(req: Requirement) -> str:
    return req._key


EVERYTHING: Final[Selector] = Selector()
"""The selector that matches all labels (``labels.Everything()``); prints as ``""``."""

NOTHING: Final[Selector] = Selector._nothing_selector()
"""The selector that matches no labels (``labels.Nothing()``); also prints as ``""``."""


def everything() -> Selector:
    """The shared selector that matches everything (apimachinery ``labels.Everything``)."""
    return EVERYTHING


def nothing() -> Selector:
    """The shared selector that matches nothing (apimachinery ``labels.Nothing``)."""
    return NOTHING


def matches_nothing(selector: Selector) -> bool:
    """Whether ``selector`` is :data:`NOTHING` (``labels.MatchesNothing``); listers return early."""
    return selector is NOTHING
