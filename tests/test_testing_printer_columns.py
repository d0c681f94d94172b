"""The cells of custom resources' printer columns, ported from
``apiextensions-apiserver@v0.36.3/pkg/registry/customresource/tableconvertor/
tableconvertor_test.go`` (the Table responses themselves run on both servers in
``tests/test_testing_tables_parity.py``)."""

from __future__ import annotations

import datetime

import pytest

from informers.testing.printer_columns import _go_float, cell_for_json_value, custom_printer
from informers.testing.tables import _since

NOW = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.timezone.utc)


def rfc3339(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("kind,value,want", [
    ("integer", 42, 42), ("integer", 3.14, 3), ("integer", True, None), ("integer", "foo", None),
    ("number", 42, 42.0), ("number", 3.14, 3.14), ("number", True, None), ("number", "foo", None),
    ("boolean", 42, None), ("boolean", 3.14, None), ("boolean", True, True),
    ("boolean", "foo", None),
    ("string", 42, None), ("string", 3.14, None), ("string", True, None),
    ("string", "foo", "foo"),
    ("date", 42, None), ("date", 3.14, None), ("date", True, None),
    ("date", rfc3339(NOW - datetime.timedelta(hours=12, minutes=30)), "12h"),
    ("date", rfc3339(NOW + datetime.timedelta(hours=12, minutes=30)), "<invalid>"),
    ("date", "", "<unknown>"),
    ("unknown", "foo", None),
])
def test_cellForJSONValue(kind, value, want):
    got = cell_for_json_value(kind, value, NOW, _since)
    assert (got, type(got)) == (want, type(want))


def test_convertor_ConvertToTable_multiple_string_values():
    """"Return table with additional column containing multiple string values": a string
    column prints the first result, lists as JSON."""
    headers, printer = custom_printer((
        {"name": "valueOnly", "type": "string", "jsonPath": ".spec.servers[0].hosts[0]"},
        {"name": "single1", "type": "string", "jsonPath": ".spec.servers[0].hosts"},
        {"name": "single2", "type": "string", "jsonPath": ".spec.servers[1].hosts"},
        {"name": "multi", "type": "string", "jsonPath": ".spec.servers[*].hosts"},
    ), _since)
    obj = {"apiVersion": "example.istio.io/v1alpha1", "kind": "Blah",
           "metadata": {"name": "blah"},
           "spec": {"servers": [{"hosts": ["foo"]}, {"hosts": ["bar", "baz"]}]}}
    assert [h["name"] for h in headers] == ["Name", "valueOnly", "single1", "single2", "multi"]
    assert printer(obj, NOW, True) == ["blah", "foo", '["foo"]', '["bar","baz"]', '["foo"]']


def test_string_columns_print_as_kubectl_jsonpath_does():
    _, printer = custom_printer((
        {"name": "n", "type": "string", "jsonPath": ".a"},
        {"name": "b", "type": "string", "jsonPath": ".b"},
        {"name": "m", "type": "string", "jsonPath": ".m"},
        {"name": "k", "type": "string", "jsonPath": "['x.y']"},
        {"name": "last", "type": "string", "jsonPath": ".l[-1]"},
        {"name": "none", "type": "string", "jsonPath": ".spec[?(@.a)]"},
    ), _since)
    obj = {"metadata": {"name": "o"}, "a": 1.5, "b": True, "m": {"z": "<&>", "a": 1},
           "x.y": "dotted", "l": [1, 2]}
    assert printer(obj, NOW, True) == [
        "o", "1.5", "true", '{"a":1,"z":"\\u003c\\u0026\\u003e"}', "dotted", "2", None]


@pytest.mark.parametrize("value,text", [
    (2.0, "2"), (1.5, "1.5"), (1e6, "1e+06"), (123456.0, "123456"), (1234567.0, "1.234567e+06"),
    (0.0001, "0.0001"), (0.00001, "1e-05"), (-3.25, "-3.25"), (0.0, "0"),
])
def test_floats_print_as_go_fmt(value, text):
    assert _go_float(value) == text
