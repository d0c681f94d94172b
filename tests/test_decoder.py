"""Tests for informers.decoder: bytes in, dicts out, watch lines validated."""

from __future__ import annotations

import json

import pytest

from informers import decoder
from informers.decoder import decode, decode_event
from informers.errors import WatchDecodeError


def test_uses_orjson_when_installed():
    pytest.importorskip("orjson")
    assert decoder.DECODER == "orjson"


def test_decode_bytes_to_plain_dicts():
    doc = {"kind": "Pod", "metadata": {"name": "a", "labels": {"x": "é"}}, "spec": [1, 2.5]}
    raw = json.dumps(doc, ensure_ascii=False).encode()
    out = decode(raw)
    assert out == doc
    assert type(out) is dict and type(out["metadata"]) is dict and type(out["spec"]) is list
    assert decode(bytearray(raw)) == doc


def test_decode_same_as_stdlib():
    raw = b'{"a":[1,-2,3.5e2,true,false,null],"b":"\\u00e9\\n","c":{}}'
    assert decode(raw) == json.loads(raw)


def test_decode_invalid_raises_value_error():
    with pytest.raises(ValueError):
        decode(b'{"a":')


def test_decode_event():
    line = b'{"type":"ADDED","object":{"metadata":{"name":"p","resourceVersion":"7"}}}'
    assert decode_event(line) == ("ADDED", {"metadata": {"name": "p", "resourceVersion": "7"}})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"not json at all", "watch line is not JSON"),
        (b'["ADDED"]', "watch line is not a JSON object"),
        (b'{"object":{}}', "without a string 'type'"),
        (b'{"type":"ADDED"}', "without a string 'type' and an object 'object'"),
        (b'{"type":"ADDED","object":"x"}', "object 'object'"),
    ],
)
def test_decode_event_errors(line, message):
    with pytest.raises(WatchDecodeError, match=message) as info:
        decode_event(line)
    assert info.value.line_prefix == line[:120]
    assert isinstance(info.value, ValueError)


def test_decode_event_prefix_is_bounded():
    line = b"x" * 1000
    with pytest.raises(WatchDecodeError) as info:
        decode_event(line)
    assert info.value.line_prefix == b"x" * 120
