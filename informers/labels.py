"""Builds label selectors: parses their text and converts label sets and LabelSelector objects.

The public face of label selectors (``from informers import labels``): it re-exports
:class:`Requirement`, :class:`Selector`, the operator names and the key and value checks of
:mod:`informers.label_selector`, and adds the constructors of apimachinery ``pkg/labels``
(``Parse``, ``SelectorFromSet``, ``SelectorFromValidatedSet``) and ``pkg/apis/meta/v1/helpers.go``
(``LabelSelectorAsSelector``). The grammar of :func:`parse` follows
``k8s.io/apimachinery/pkg/labels/selector.go``::

    <selector>    ::= <requirement> | <requirement> "," <selector>
    <requirement> ::= ["!"] KEY [ ("in" | "notin") "(" VALUE {"," VALUE} ")"
                                | ("=" | "==" | "!=" | ">" | "<") VALUE ]

Whitespace (space, tab, CR, LF) separates tokens; ``in``/``notin`` are operators only where an
operator is expected (``in in (in)`` is the key ``in`` with the value ``in``); empty values are
allowed (``x=``, ``x in ()``, ``x in (a,,b)``). Every error is a
:class:`~informers.errors.SelectorError` naming the offending token (with its position) or the
offending key or value.

Deliberate differences from Go, none of which changes what a valid selector means:

* A NUL character is an ordinary (invalid) character here; Go's lexer treats it as the end of
  the input and silently ignores the rest.
* Requirement values are kept sorted and without duplicates (Go keeps the slice it was given and
  only sorts it when printing).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Final

from informers.errors import SelectorError

# The three "X as X" imports keep the validation limits importable from here, as before
# the split (they are not in ``__all__``).
from informers.label_selector import (
    DNS1123_SUBDOMAIN_MAX_LENGTH as DNS1123_SUBDOMAIN_MAX_LENGTH,
)
from informers.label_selector import (
    DOES_NOT_EXIST,
    DOUBLE_EQUALS,
    EQUALS,
    EVERYTHING,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    NOT_EQUALS,
    NOT_IN,
    NOTHING,
    Requirement,
    Selector,
    _quote,
    everything,
    label_key_errors,
    label_value_errors,
    matches_nothing,
    nothing,
)
from informers.label_selector import LABEL_NAME_MAX_LENGTH as LABEL_NAME_MAX_LENGTH
from informers.label_selector import LABEL_VALUE_MAX_LENGTH as LABEL_VALUE_MAX_LENGTH

__all__ = [
    "DOES_NOT_EXIST",
    "DOUBLE_EQUALS",
    "EQUALS",
    "EVERYTHING",
    "EXISTS",
    "GREATER_THAN",
    "IN",
    "LESS_THAN",
    "NOTHING",
    "NOT_EQUALS",
    "NOT_IN",
    "Requirement",
    "Selector",
    "everything",
    "format_labels",
    "label_key_errors",
    "label_value_errors",
    "matches_nothing",
    "nothing",
    "parse",
    "selector_from_label_selector",
    "selector_from_set",
    "selector_from_validated_set",
]

# --- Parsing -------------------------------------------------------------------------------------

# One token per match: whitespace (skipped), an operator symbol (longest first, as the Go
# lexer's scanSpecialSymbol), or an identifier (every run of other characters).
_TOKEN_RE = re.compile(r"[ \t\r\n]+|(!=|==|[=!(),<>])|([^ \t\r\n=!(),<>]+)")
_IDENT: Final = "identifier"
_END: Final = ""
_SYMBOL_OPERATORS: Final[dict[str, str]] = {
    "=": EQUALS, "==": DOUBLE_EQUALS, "!=": NOT_EQUALS, ">": GREATER_THAN, "<": LESS_THAN,
}
_WORD_OPERATORS: Final[dict[str, str]] = {"in": IN, "notin": NOT_IN}

_Token = tuple[str, str, int]  # (kind, literal, position); kind is _IDENT, _END or the symbol


class _Parser:
    """Recursive descent over the token list, mirroring apimachinery's ``Parser``."""

    __slots__ = ("_index", "_text", "_tokens")

    def __init__(self, text: str) -> None:
        self._text = text
        tokens: list[_Token] = []
        for match in _TOKEN_RE.finditer(text):
            symbol, ident = match.group(1), match.group(2)
            if symbol is not None:
                tokens.append((symbol, symbol, match.start()))
            elif ident is not None:
                tokens.append((_IDENT, ident, match.start()))
        tokens.append((_END, "", len(text)))
        self._tokens = tokens
        self._index = 0

    def _peek(self) -> _Token:
        return self._tokens[self._index]

    def _next(self) -> _Token:
        token = self._tokens[self._index]
        if token[0] != _END:
            self._index += 1
        return token

    def _error(self, detail: str) -> SelectorError:
        return SelectorError(f"unable to parse label selector {_quote(self._text)}: {detail}")

    def _unexpected(self, token: _Token, expected: str) -> SelectorError:
        kind, literal, position = token
        found = "end of string" if kind == _END else f"'{literal}'"
        return self._error(f"found {found} at position {position}, expected {expected}")

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        kind = self._peek()[0]
        if kind == _END:
            return requirements
        if kind not in (_IDENT, "!"):
            raise self._unexpected(self._peek(), "'!', identifier or end of string")
        while True:
            requirements.append(self._requirement())
            token = self._next()
            if token[0] == _END:
                return requirements
            if token[0] != ",":
                raise self._unexpected(token, "',' or end of string")
            if self._peek()[0] not in (_IDENT, "!"):
                raise self._unexpected(self._peek(), "'!' or identifier after ','")

    def _requirement(self) -> Requirement:
        token = self._next()
        negated = token[0] == "!"
        if negated:
            token = self._next()
        if token[0] != _IDENT:
            raise self._unexpected(token, "identifier")
        key = token[1]
        key_errors = label_key_errors(key)
        if key_errors:
            raise self._error(f"invalid label key {_quote(key)}: {'; '.join(key_errors)}")
        if negated or self._peek()[0] in (_END, ","):
            # "!key=value" is rejected by the caller at the "=" (as in Go).
            return Requirement._trusted(key, DOES_NOT_EXIST if negated else EXISTS, ())
        token = self._next()
        if token[0] == _IDENT and token[1] in _WORD_OPERATORS:
            op = _WORD_OPERATORS[token[1]]
            values = self._value_set()
        elif token[0] in _SYMBOL_OPERATORS:
            op = _SYMBOL_OPERATORS[token[0]]
            values = [self._exact_value()]
        else:
            raise self._unexpected(token, "one of in, notin, =, ==, !=, >, <")
        try:
            return Requirement(key, op, values)
        except SelectorError as err:
            raise self._error(str(err)) from None

    def _value_set(self) -> list[str]:
        token = self._next()
        if token[0] != "(":
            raise self._unexpected(token, "'('")
        kind = self._peek()[0]
        if kind == ")":
            self._next()
            return [""]
        if kind not in (_IDENT, ","):
            raise self._unexpected(self._peek(), "',', ')' or identifier")
        values: list[str] = []
        while True:
            token = self._next()
            if token[0] == _IDENT:
                values.append(token[1])
                following = self._peek()
                if following[0] == ")":
                    break
                if following[0] != ",":
                    raise self._unexpected(following, "',' or ')'")
            elif token[0] == ",":
                # Empty values: "(,a)", "(a,,b)" and "(a,)" each contribute "".
                if not values:
                    values.append("")
                following = self._peek()
                if following[0] in (")", ","):
                    values.append("")
                    if following[0] == ")":
                        break
            else:
                raise self._unexpected(token, "',' or identifier")
        self._next()  # the ")"
        return values

    def _exact_value(self) -> str:
        if self._peek()[0] in (_END, ","):
            return ""
        token = self._next()
        if token[0] != _IDENT:
            raise self._unexpected(token, "identifier")
        return token[1]


@functools.lru_cache(maxsize=1024)
def _parse_cached(text: str) -> Selector:
    requirements = _Parser(text).parse()
    if not requirements:
        return EVERYTHING
    return Selector(requirements)


def parse(text: str) -> Selector:
    """Parse label selector text (apimachinery ``labels.Parse``); ``""`` gives :data:`EVERYTHING`.

    Results are cached (selectors are immutable), so parsing the same query string on every
    list or watch request costs one dictionary lookup.

    Raises:
        SelectorError: naming the unexpected token and its position, or the invalid key/value.
    """
    if not isinstance(text, str):
        raise TypeError(f"label selector must be a string, not {type(text).__name__}")
    return _parse_cached(text)


# --- Other constructors --------------------------------------------------------------------------


def selector_from_set(labels: Mapping[str, str] | None) -> Selector:
    """A selector requiring every ``key=value`` of ``labels`` (``ValidatedSelectorFromSet``).

    ``None`` and ``{}`` give :data:`EVERYTHING` (as in apimachinery: a Service's empty selector
    selects all pods; only a *missing* selector selects none, which callers decide).

    Raises:
        SelectorError: naming the first invalid key or value.
    """
    if not labels:
        return EVERYTHING
    requirements = []
    for key, value in labels.items():
        try:
            requirements.append(Requirement(key, EQUALS, (value,)))
        except SelectorError as err:
            raise SelectorError(f"invalid label set: {err}") from None
    return Selector(requirements)


def selector_from_validated_set(labels: Mapping[str, str] | None) -> Selector:
    """Like :func:`selector_from_set` without validation (``SelectorFromValidatedSet``).

    For label maps that the API server already validated, such as a Service's
    ``spec.selector``; an invalid key or value simply never matches.
    """
    if not labels:
        return EVERYTHING
    return Selector(Requirement._trusted(k, EQUALS, (v,)) for k, v in labels.items())


# metav1.LabelSelectorOperator -> selection.Operator (helpers.go LabelSelectorAsSelector).
_LABEL_SELECTOR_OPERATORS: Final[dict[str, str]] = {
    "In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST,
}


def selector_from_label_selector(label_selector: Mapping[str, object] | None) -> Selector:
    """Convert a ``metav1.LabelSelector`` dict (``LabelSelectorAsSelector``).

    The dict is the API's JSON form: ``{"matchLabels": {k: v}, "matchExpressions": [{"key":
    k, "operator": "In" | "NotIn" | "Exists" | "DoesNotExist", "values": [...]}]}``.

    Note the nil/empty distinction, which controllers rely on: ``None`` (a missing selector)
    gives :data:`NOTHING`, while ``{}`` (or one whose lists are empty) gives :data:`EVERYTHING`.
    A Service's ``spec.selector`` is a plain map, not a LabelSelector: use
    :func:`selector_from_set` / :func:`selector_from_validated_set` for it.

    Raises:
        SelectorError: for an unknown operator, ``In``/``NotIn`` without values,
            ``Exists``/``DoesNotExist`` with values, an invalid key or value, or a malformed
            dict (including the snake_case ``match_labels`` of ``kubernetes`` client models).
    """
    if label_selector is None:
        return NOTHING
    if not isinstance(label_selector, Mapping):
        raise SelectorError(
            f"invalid label selector: expected a mapping, got {type(label_selector).__name__}"
        )
    for snake in ("match_labels", "match_expressions"):
        if snake in label_selector:
            camel = "matchLabels" if snake == "match_labels" else "matchExpressions"
            raise SelectorError(f"invalid label selector: unknown field {snake!r} (did you mean "
                                f"{camel!r}? objects are dicts in the API's JSON form)")
    match_labels = label_selector.get("matchLabels") or {}
    expressions = label_selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping):
        raise SelectorError("invalid label selector: matchLabels must be a mapping")
    if not isinstance(expressions, (list, tuple)):
        raise SelectorError("invalid label selector: matchExpressions must be a list")
    if not match_labels and not expressions:
        return EVERYTHING
    requirements: list[Requirement] = []
    for key, value in sorted(match_labels.items(), key=lambda kv: str(kv[0])):
        try:
            requirements.append(Requirement(key, EQUALS, (value,)))
        except SelectorError as err:
            raise SelectorError(f"invalid label selector: matchLabels: {err}") from None
    for index, expr in enumerate(expressions):
        where = f"invalid label selector: matchExpressions[{index}]"
        if not isinstance(expr, Mapping):
            raise SelectorError(f"{where}: must be a mapping with key, operator and values")
        op_name = expr.get("operator")
        op = _LABEL_SELECTOR_OPERATORS.get(op_name) if isinstance(op_name, str) else None
        if op is None:
            raise SelectorError(f"{where}.operator: {_quote(op_name)} is not a valid label "
                                "selector operator (In, NotIn, Exists, DoesNotExist)")
        values = expr.get("values") or []
        if not isinstance(values, (list, tuple)):
            raise SelectorError(f"{where}.values: must be a list, got {_quote(values)}")
        try:
            requirements.append(Requirement(expr.get("key", ""), op, values))
        except SelectorError as err:
            raise SelectorError(f"{where}: {err}") from None
    return Selector(requirements)


def format_labels(labels: Mapping[str, str] | None) -> str:
    """``k=v`` pairs sorted and joined by ``,``, or ``<none>`` (apimachinery ``FormatLabels``)."""
    if not labels:
        return "<none>"
    return ",".join(sorted(f"{k}={v}" for k, v in labels.items()))
