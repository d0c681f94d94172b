"""The ``Table`` columns of custom resources: a CRD version's ``additionalPrinterColumns``.

As ``apiextensions-apiserver/pkg/registry/customresource/tableconvertor/tableconvertor.go``
(``New``, ``ConvertToTable``, ``cellForJSONValue``) renders them:

* the columns are ``Name`` (format ``name``) then the CRD's, each with its ``type``,
  ``format``, ``priority`` and ``description`` (default: ``Custom resource definition column
  (in JSONPath format): <jsonPath>``); a version without columns gets ``Age``
  (``.metadata.creationTimestamp``, type ``date``:
  ``apiserver/customresource_handler.go`` ``serveDefaultColumnsIfEmpty``). Every column is
  sent; ``kubectl`` shows ``priority > 0`` ones only with ``-o wide``;
* a cell is the first result of the column's JSONPath (missing keys allowed: ``None``);
  ``string`` columns print it as kubectl's JSONPath does (strings as they are, maps and lists
  as compact JSON, numbers and booleans with Go's ``fmt``); ``integer``, ``number`` and
  ``boolean`` cells are the JSON value when of that type (an integer column truncates a
  float), else ``None``; ``date`` cells are the age (``HumanDuration``), ``<invalid>`` for
  an unparsable time.

The JSONPath subset understood is what printer columns use: ``.a.b``, ``['a.b']`` /
``["a"]``, ``[n]`` (negative from the end) and ``[*]`` (every element); a path outside it
gives empty cells.
"""

from __future__ import annotations

import datetime
import decimal
import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["AGE_COLUMN", "cell_for_json_value", "custom_printer", "evaluate"]

_NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")
"""``metav1.ObjectMeta{}.SwaggerDoc()["name"]``."""

_CREATION_TIMESTAMP_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata")
"""``metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]``."""

AGE_COLUMN: dict[str, Any] = {"name": "Age", "type": "date",
                              "description": _CREATION_TIMESTAMP_DESCRIPTION,
                              "jsonPath": ".metadata.creationTimestamp"}
"""The column of a CRD version that declares none."""

_STEP = re.compile(r"""\.([^.\[\]]+)|\[\s*(-?\d+|\*|'[^']*'|"[^"]*")\s*\]""")

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")

Printer = Callable[[dict[str, Any], datetime.datetime, bool], list[Any]]


def _parse(path: str) -> list[str | int] | None:
    """``.a[0]['b.c'][*]`` as steps (``"*"``: every element), or ``None`` outside the
    subset."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    steps: list[str | int] = []
    pos = 0
    while pos < len(text):
        match = _STEP.match(text, pos)
        if match is None:
            return None
        if match.group(1) is not None:
            steps.append(match.group(1))
        else:
            token = match.group(2)
            if token == "*":
                steps.append("*")
            elif token[0] in "'\"":
                steps.append(token[1:-1])
            else:
                steps.append(int(token))
        pos = match.end()
    return steps


def evaluate(obj: Any, path: str) -> list[Any]:
    """Every value ``path`` reaches in ``obj`` (missing keys: no value)."""
    steps = _parse(path)
    if steps is None:
        return []
    values = [obj]
    for step in steps:
        found: list[Any] = []
        for value in values:
            if step == "*":
                if isinstance(value, list):
                    found.extend(value)
                elif isinstance(value, dict):
                    found.extend(value[k] for k in sorted(value))
            elif isinstance(step, int):
                if isinstance(value, list) and -len(value) <= step < len(value):
                    found.append(value[step])
            elif isinstance(value, dict) and step in value:
                found.append(value[step])
        values = found
    return values


def _go_text(value: Any) -> str | None:
    """JSONPath ``PrintResults`` of one value: JSON for maps and lists, Go's ``fmt``
    otherwise; ``None`` for a JSON null (``can't print type``)."""
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


def _go_float(value: float) -> str:
    """Go's ``fmt.Sprint`` of a float64 (``strconv.FormatFloat(v, 'g', -1, 64)``: the
    shortest digits, in exponent form when the exponent is < -4 or >= 6... as ``%e``)."""
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[repr(value)]
    if value == 0:
        return "0"
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exponent)  # digits before the decimal point
    exp = point - 1
    prefix = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def cell_for_json_value(kind: str, value: Any, now: datetime.datetime,
                        since: Callable[[Any, datetime.datetime], str]) -> Any:
    """``cellForJSONValue``: the cell of a non-``string`` column (``string`` columns print
    through the JSONPath printer instead); ``None`` when the value is not of the type."""
    if value is None or (isinstance(value, bool) and kind != "boolean"):
        return None
    if kind == "integer" and isinstance(value, (int, float)):
        return int(value)
    if kind == "number" and isinstance(value, (int, float)):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "date" and isinstance(value, str):
        if not value:  # a zero metav1.Time
            return "<unknown>"
        if not _RFC3339.fullmatch(value):  # metav1.Time UnmarshalQueryParameter
            return "<invalid>"
        try:
            return since(value, now)
        except ValueError:
            return "<invalid>"
    return None


def custom_printer(columns: tuple[dict[str, Any], ...],
                   since: Callable[[Any, datetime.datetime], str]
                   ) -> tuple[list[dict[str, Any]], Printer]:
    """The column definitions and the row printer for a CRD version's printer ``columns``
    (empty: the ``Age`` column). ``since`` renders a timestamp's age (raises ``ValueError``
    for an invalid one)."""
    columns = columns or (AGE_COLUMN,)
    headers = [{"name": "Name", "type": "string", "format": "name",
                "description": _NAME_DESCRIPTION, "priority": 0}]
    for column in columns:
        path = column.get("jsonPath", "")
        headers.append({
            "name": column.get("name", ""), "type": column.get("type", ""),
            "format": column.get("format", ""),
            "description": column.get("description")
            or f"Custom resource definition column (in JSONPath format): {path}",
            "priority": int(column.get("priority") or 0)})

    def printer(obj: dict[str, Any], now: datetime.datetime, wide: bool) -> list[Any]:
        cells: list[Any] = [str((obj.get("metadata") or {}).get("name", ""))]
        for column in columns:
            results = evaluate(obj, column.get("jsonPath", ""))
            kind = column.get("type", "")
            if not results:
                cells.append(None)
            elif kind == "string":
                cells.append(_go_text(results[0]))
            else:
                cells.append(cell_for_json_value(kind, results[0], now, since))
        return cells

    return headers, printer
