"""Encode a Swagger 2.0 document as gnostic's ``openapi.v2.Document`` protobuf message.

kube-apiserver serves ``/openapi/v2`` as ``application/com.github.proto-openapi.spec.v2@v1.0
+protobuf`` and kubectl asks for nothing else: it reads it to validate manifests on the client
(``kind: List`` manifests always, as no ``fieldValidation`` support is declared for ``v1/List``)
and as the fallback for patch computation. The message numbers are those of
``github.com/google/gnostic-models`` ``openapiv2/OpenAPIv2.proto``; only what
:mod:`informers.testing.openapi` writes is encoded: document, info, paths and their operations
(parameters, responses), definitions (schemas with ``$ref``, type, format, description,
required, properties, additionalProperties, items, allOf), security and vendor extensions
(``x-...``; their values travel as YAML text, which JSON is).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["CONTENT_TYPE", "encode_document"]

CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
"""The Content-Type kube-apiserver answers (the ``@`` of the Accept value becomes ``.``)."""

_OPERATIONS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _string(number: int, text: str) -> bytes:
    return _bytes(number, text.encode()) if text else b""


def _strings(number: int, texts: list[str]) -> bytes:
    return b"".join(_bytes(number, t.encode()) for t in texts)


def _bool(number: int, value: bool) -> bytes:
    return _varint(number << 3) + b"\x01" if value else b""


def _extensions(number: int, node: dict[str, Any]) -> bytes:
    """``repeated NamedAny vendor_extension``: name and ``Any{yaml = 2}``."""
    return b"".join(
        _bytes(number, _string(1, key) + _bytes(2, _string(2, json.dumps(value))))
        for key, value in node.items() if key.startswith("x-"))


def _schema(node: dict[str, Any]) -> bytes:
    out = [_string(1, node.get("$ref", "")), _string(2, node.get("format", "")),
           _string(4, node.get("description", "")), _strings(19, node.get("required", []))]
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out.append(_bytes(21, _bytes(1, _schema(extra))))
    elif isinstance(extra, bool):
        out.append(_bytes(21, _bool(2, extra) or b"\x10\x00"))
    kind = node.get("type")
    if kind:
        out.append(_bytes(22, _strings(1, [kind] if isinstance(kind, str) else list(kind))))
    if "items" in node:
        out.append(_bytes(23, _bytes(1, _schema(node["items"]))))
    out += [_bytes(24, _schema(part)) for part in node.get("allOf", [])]
    if "properties" in node:
        out.append(_bytes(25, b"".join(
            _bytes(1, _string(1, name) + _bytes(2, _schema(value)))
            for name, value in node["properties"].items())))
    out.append(_extensions(31, node))
    return b"".join(out)


def _parameter(node: dict[str, Any]) -> bytes:
    """A ``ParametersItem``: a body parameter, or a query or path ``NonBodyParameter``."""
    if node.get("in") == "body":
        body = (_string(1, node.get("description", "")) + _string(2, node["name"])
                + _string(3, "body") + _bool(4, node.get("required", False))
                + _bytes(5, _schema(node["schema"])))
        return _bytes(1, _bytes(1, body))
    where = node.get("in", "query")
    common = (_bool(1, node.get("required", False)) + _string(2, where)
              + _string(3, node.get("description", "")) + _string(4, node["name"]))
    if where == "path":  # PathParameterSubSchema: type = 5, unique_items = 19
        sub = _bytes(4, common + _string(5, node.get("type", ""))
                     + _bool(19, node.get("uniqueItems", False)))
    else:  # QueryParameterSubSchema: type = 6, unique_items = 20
        sub = _bytes(3, common + _string(6, node.get("type", ""))
                     + _bool(20, node.get("uniqueItems", False)))
    return _bytes(1, _bytes(2, sub))


def _operation(node: dict[str, Any]) -> bytes:
    responses = b"".join(
        _bytes(1, _string(1, code) + _bytes(2, _bytes(1, _string(1, value["description"]) + (
            _bytes(2, _bytes(1, _schema(value["schema"]))) if "schema" in value else b""))))
        for code, value in node.get("responses", {}).items())
    return b"".join([
        _strings(1, node.get("tags", [])), _string(3, node.get("description", "")),
        _string(5, node.get("operationId", "")), _strings(6, node.get("produces", [])),
        _strings(7, node.get("consumes", [])),
        b"".join(_bytes(8, _parameter(p)) for p in node.get("parameters", [])),
        _bytes(9, responses), _strings(10, node.get("schemes", [])),
        _extensions(13, node)])


def _path_item(node: dict[str, Any]) -> bytes:
    out = [_bytes(number, _operation(node[method]))
           for method, number in _OPERATIONS.items() if method in node]
    out += [_bytes(9, _parameter(p)) for p in node.get("parameters", [])]
    out.append(_extensions(10, node))
    return b"".join(out)


def encode_document(document: dict[str, Any]) -> bytes:
    """``document`` (Swagger 2.0, as decoded JSON) as an ``openapi.v2.Document``."""
    info = document.get("info", {})
    paths = b"".join(_bytes(2, _string(1, path) + _bytes(2, _path_item(item)))
                     for path, item in document.get("paths", {}).items())
    definitions = b"".join(_bytes(1, _string(1, name) + _bytes(2, _schema(schema)))
                           for name, schema in document.get("definitions", {}).items())
    security = b"".join(_bytes(12, b"".join(
        _bytes(1, _string(1, name) + _bytes(2, _strings(1, scopes)))
        for name, scopes in requirement.items())) for requirement in document.get(
        "security", []))
    schemes = b"".join(
        _bytes(1, _string(1, name) + _bytes(2, _bytes(2, _string(1, item.get("type", ""))
                                                      + _string(2, item.get("name", ""))
                                                      + _string(3, item.get("in", ""))
                                                      + _string(4, item.get("description", "")))))
        for name, item in document.get("securityDefinitions", {}).items())
    return b"".join([
        _string(1, document.get("swagger", "2.0")),
        _bytes(2, _string(1, info.get("title", "")) + _string(2, info.get("version", ""))),
        _bytes(8, paths), _bytes(9, definitions), security,
        _bytes(13, schemes) if schemes else b"",
        _extensions(16, document)])
