"""``x-kubernetes-validations``: the CEL rules of a CRD schema, compiled and evaluated.

kube-apiserver compiles every rule when a CRD is written (a rule that does not compile makes
the CRD invalid: ``apiextensions/validation/validation.go``) and evaluates them on every
write of a custom resource (``apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go``
``Validator.Validate``): ``self`` is the value at the schema node that declares the rule,
``oldSelf`` the value the previous version had there (a rule naming ``oldSelf`` is a
*transition rule*, evaluated only on updates where an old value exists). A rule that
evaluates to false is a cause ``<path>: Invalid value: <message>`` (with the value before
the message when it is a scalar: ``Invalid value: 4: may only grow``; the rule's
``message``, else ``failed rule: <rule>``), with the rule's ``reason`` and ``fieldPath``
when given.

The CEL implementation is the ``common-expression-language`` package (PyPI, the ``cel``
extra; the Rust ``cel-interpreter``; imported only when a schema has rules). What it
covers: the CEL standard library (operators, ``size``,
``has``, the macros ``all``, ``exists``, ``exists_one``, ``map``, ``filter``, ``matches``,
``startsWith``, ``endsWith``, ``contains``, the conversions ``int``, ``uint``, ``double``,
``string``, ``bytes``, ``duration``, ``timestamp``, ``type``). Not covered: the Kubernetes
CEL libraries (``lowerAscii``, ``split``, ``isSorted``, ``sum``, quantities, URLs, IPs and
CIDRs, ``format``...), whose calls fail at evaluation with an ``Invalid value`` cause
naming the missing function, and cost estimation (no rule is refused for its cost).
Expressions are parsed when the CRD is written, so syntax errors refuse the CRD as
kube-apiserver does; undeclared functions are found only at evaluation (this package does
not type-check).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from informers.testing import status
from informers.testing.structural_schema import _go_value
from informers.testing.validation import Cause

__all__ = ["CompiledRule", "compile_errors", "compile_schema", "evaluate"]

_KEY = "x-kubernetes-validations"


def _cel() -> Any:
    """The ``cel`` module, imported on first use: it is the ``cel`` extra
    (``pip install kube-informers[cel]``), needed only by CRDs with rules.

    Raises:
        StatusError: 500, naming the missing package, when it is not installed.
    """
    try:
        return importlib.import_module("cel")
    except ImportError:
        raise status.internal_error(
            "x-kubernetes-validations rules need the common-expression-language package "
            "(pip install 'kube-informers[cel]')") from None


@dataclass(frozen=True)
class CompiledRule:
    """One rule of a schema node at ``path`` (object keys; ``None`` is every list item)."""

    path: tuple[str | None, ...]
    rule: str
    program: Any
    message: str
    reason: str
    field_path: str
    schema_type: str
    transition: bool


def _walk(schema: Any, path: tuple[str | None, ...], field: str) -> list[
        tuple[tuple[str | None, ...], str, dict[str, Any]]]:
    """Every schema node with its value path and its CRD field path."""
    if not isinstance(schema, dict):
        return []
    found = [(path, field, schema)]
    for name, sub in (schema.get("properties") or {}).items():
        found.extend(_walk(sub, (*path, name), f"{field}.properties[{name}]"))
    items = schema.get("items")
    if isinstance(items, dict):
        found.extend(_walk(items, (*path, None), f"{field}.items"))
    return found


def compile_errors(schema: Any, field: str) -> list[Cause]:
    """The causes for the rules of ``schema`` (at CRD field path ``field``) that do not
    compile."""
    causes: list[Cause] = []
    for _, node_field, node in _walk(schema, (), field):
        for index, rule in enumerate(node.get(_KEY) or []):
            text = rule.get("rule", "") if isinstance(rule, dict) else ""
            where = f"{node_field}.{_KEY}[{index}].rule"
            if not text:
                causes.append(("FieldValueRequired", where, "Required value"))
                continue
            try:
                _cel().compile(text)
            except (ValueError, RuntimeError) as err:
                detail = str(err).removeprefix(f"Failed to parse expression '{text}': ")
                causes.append(("FieldValueInvalid", where,
                               f'Invalid value: "{text}": compilation failed: {detail}'))
    return causes


def compile_schema(schema: dict[str, Any]) -> tuple[CompiledRule, ...]:
    """The compiled rules of a (valid) schema, outermost first."""
    rules = []
    for path, _, node in _walk(schema, (), ""):
        for rule in node.get(_KEY) or []:
            text = rule["rule"]
            rules.append(CompiledRule(
                path, text, _cel().compile(text), rule.get("message") or "",
                rule.get("reason") or "FieldValueInvalid", rule.get("fieldPath") or "",
                node.get("type") or "object", "oldSelf" in text))
    return tuple(rules)


def _values(value: Any, path: tuple[str | None, ...], field: str,
            old: Any) -> list[tuple[str, Any, Any]]:
    """The values at ``path`` under ``value``, with their field paths and old values (old
    values are correlated through object keys only, as list items without map keys are)."""
    if not path:
        return [(field, value, old)]
    head, rest = path[0], path[1:]
    if head is None:
        if not isinstance(value, list):
            return []
        return [v for index, item in enumerate(value)
                for v in _values(item, rest, f"{field}[{index}]", None)]
    if not isinstance(value, dict) or head not in value:
        return []
    old_child = old.get(head) if isinstance(old, dict) else None
    return _values(value[head], rest, f"{field}.{head}" if field else head, old_child)


_REASON_BODY = {"FieldValueInvalid": "Invalid value", "FieldValueForbidden": "Forbidden",
                "FieldValueRequired": "Required value", "FieldValueDuplicate": "Duplicate value"}


def evaluate(rules: tuple[CompiledRule, ...], obj: dict[str, Any],
             old: dict[str, Any] | None) -> list[Cause]:
    """The causes of the rules that ``obj`` breaks (``old``: the stored version on an
    update)."""
    causes: list[Cause] = []
    for rule in rules:
        for field, value, old_value in _values(obj, rule.path, "", old):
            if rule.transition and old_value is None:
                continue
            context = {"self": value}
            if rule.transition:
                context["oldSelf"] = old_value
            try:
                ok = rule.program.execute(_cel().Context(context))
            except (ValueError, RuntimeError, TypeError) as err:
                causes.append(("FieldValueInvalid", field or "<nil>",
                               f'Invalid value: "{rule.schema_type}": {err}'))
                continue
            if ok is True:
                continue
            where = field + rule.field_path if rule.field_path else field
            message = rule.message or f"failed rule: {rule.rule}"
            body = _REASON_BODY.get(rule.reason, "Invalid value")
            if rule.reason == "FieldValueInvalid" and isinstance(value, (bool, int, float, str)):
                text = f"{body}: {_go_value(value)}: {message}"
            else:  # objects and lists: field.Invalid without its value (omitValue)
                text = f"{body}: {message}"
            causes.append((rule.reason, where or "<nil>", text))
    return causes
