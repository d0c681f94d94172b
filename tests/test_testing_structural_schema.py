"""Structural schema pruning and defaulting (informers.testing.structural_schema), ported from
k8s.io/apiextensions-apiserver@v0.36.3 ``pkg/apiserver/schema/pruning/algorithm_test.go``
``TestPrune`` and ``pkg/apiserver/schema/defaulting/algorithm_test.go`` ``TestDefault`` (the
cases that a JSON ``openAPIV3Schema`` can express; the Go ``Structural`` values are written as
the JSON schema they come from). The end-to-end behaviour is held to kube-apiserver in
tests/test_testing_crds.py.
"""

from __future__ import annotations

import json

import pytest

from informers.testing.structural_schema import apply_defaults, prune_value


def _d(value: object) -> dict:
    return {"default": value}


@pytest.mark.parametrize(("name", "document", "schema", "expected"), [
    ("empty", "null", None, "null"),
    ("scalar", "4", _d("foo"), "4"),
    ("scalar array", "[1,2]", {"items": _d("foo")}, "[1,2]"),
    ("object array", '[{"a":1},{"b":1},{"c":1}]',
     {"items": {"properties": {"a": _d("A"), "b": _d("B"), "c": _d("C")}}},
     '[{"a":1,"b":"B","c":"C"},{"a":"A","b":1,"c":"C"},{"a":"A","b":"B","c":1}]'),
    ("object array object",
     '{"array":[{"a":1},{"b":2}],"object":{"a":1},'
     '"additionalProperties":{"x":{"a":1},"y":{"b":2}}}',
     {"properties": {
         "array": {"items": {"properties": {"a": _d("A"), "b": _d("B")}}},
         "object": {"properties": {"a": _d("N"), "b": _d("O")}},
         "additionalProperties": {"additionalProperties": {
             "properties": {"a": _d("alpha"), "b": _d("beta")}}},
         "foo": _d("bar")}},
     '{"array":[{"a":1,"b":"B"},{"a":"A","b":2}],"object":{"a":1,"b":"O"},'
     '"additionalProperties":{"x":{"a":1,"b":"beta"},"y":{"a":"alpha","b":2}},"foo":"bar"}'),
    ("empty and null", '[{},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":null},{"a":[]},{"a":{}}]',
     {"items": {"properties": {"a": _d("A")}}},
     '[{"a":"A"},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":"A"},{"a":[]},{"a":{}}]'),
    ("null in nullable list", "[null]",
     {"nullable": True, "items": {"properties": {"a": _d("A")}}}, "[null]"),
    ("null in non-nullable list", "[null]", {"items": _d("A")}, '["A"]'),
    ("null in nullable object", '{"a": null}',
     {"properties": {"a": {"nullable": True, "default": "A"}}}, '{"a": null}'),
    ("null in non-nullable object", '{"a": null}', {"properties": {"a": _d("A")}},
     '{"a": "A"}'),
    ("null in nullable object with additionalProperties", '{"a": null}',
     {"additionalProperties": {"nullable": True, "default": "A"}}, '{"a": null}'),
    ("null in non-nullable object with additionalProperties", '{"a": null}',
     {"additionalProperties": _d("A")}, '{"a": "A"}'),
    ("null unknown field", '{"a": null}', {"additionalProperties": True}, '{"a": null}'),
])
def test_default(name, document, schema, expected):
    """``TestDefault``."""
    value = json.loads(document)
    apply_defaults(value, schema)
    assert value == json.loads(expected)


@pytest.mark.parametrize(("name", "document", "schema", "expected"), [
    ("empty", "null", None, "null"),
    ("scalar", "4", {}, "4"),
    ("scalar array", "[1,2]", {"items": {}}, "[1,2]"),
    ("object array", '[{"a":1},{"b":1},{"a":1,"b":2,"c":3}]',
     {"items": {"properties": {"a": {}, "c": {}}}}, '[{"a":1},{},{"a":1,"c":3}]'),
    ("object array with nil schema", '[{"a":1},{"b":1},{"a":1,"b":2,"c":3}]', None,
     "[{},{},{}]"),
    ("object array object",
     '{"array":[{"a":1},{"b":1},{"a":1,"b":2,"c":3}],"unspecified":{"a":1},'
     '"specified":{"a":1,"b":2,"c":3}}',
     {"properties": {"array": {"items": {"properties": {"a": {}, "c": {}}}},
                     "specified": {"properties": {"a": {}, "c": {}}}}},
     '{"array":[{"a":1},{},{"a":1,"c":3}],"specified":{"a":1,"c":3}}'),
    ("additionalProperties with schema", '{"a":1,"b":1,"c":{"a":1,"b":2,"c":{"a":1}}}',
     {"properties": {"a": {}, "c": {"additionalProperties": {"type": "integer"}}}},
     '{"a":1,"c":{"a":1,"b":2,"c":{}}}'),
])
def test_prune(name, document, schema, expected):
    """``TestPrune`` (the pruned object; the list of pruned paths is not kept here)."""
    value = json.loads(document)
    prune_value(value, schema)
    assert value == json.loads(expected)
