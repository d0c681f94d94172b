"""JSON codec of the embedded API server (informers/testing/codec.py)."""

from __future__ import annotations

import pytest

from informers.testing import codec


def test_compact_utf8_round_trip():
    obj = {"metadata": {"name": "é", "labels": {"a": "b"}}, "n": [1, 2.5, None, True]}
    data = codec.dumps(obj)
    assert data == '{"metadata":{"name":"é","labels":{"a":"b"}},"n":[1,2.5,null,true]}'.encode()
    assert codec.loads(data) == obj
    assert codec.loads(data.decode()) == obj


def test_decode_errors_are_value_errors():
    for bad in (b"{", b"\xff"):
        with pytest.raises(ValueError):
            codec.loads(bad)
