"""Tests for informers.client.decoder: bytes in, dicts out, watch lines validated."""

from __future__ import annotations

import json

import pytest

from informers.client import decoder
from informers.client.decoder import decode, decode_event
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


# -- drop_managed_fields: managedFields cut out of the bytes, never decoded ----------------------

import logging  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from informers.client.decoder import strip_managed_fields_bytes  # noqa: E402

FALLBACK = "decoding it as it is"


def dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def without_managed_fields(data: bytes, *, items: bool = True):
    """The reference: a plain decode, then metadata.managedFields deleted where the informer's
    transform deletes it (the document, and each item of a list)."""
    doc = json.loads(data)
    objects = [doc] + (doc["items"] if items and isinstance(doc.get("items"), list) else [])
    for obj in objects:
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            obj["metadata"].pop("managedFields", None)
    return doc


def entry(manager: str = "kubelet", **fields) -> dict:
    tree = {"f:status": {"f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:status": {}}}},
            "f:metadata": {"f:finalizers": {'v:"example.com/x"': {}}}}
    tree.update(fields)
    return {"manager": manager, "operation": "Update", "apiVersion": "v1",
            "time": "2026-01-10T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": tree}


def obj(name: str, managed: object = None, **meta) -> dict:
    metadata = {"name": name, "namespace": "ns", "resourceVersion": "7", **meta}
    if managed is not None:
        metadata["managedFields"] = managed
    return {"kind": "Pod", "apiVersion": "v1", "metadata": metadata,
            "spec": {"containers": [{"name": "c", "image": "nginx", "args": ["a", "b"]}]}}


def event(o: dict, etype: str = "MODIFIED") -> bytes:
    return dumps({"type": etype, "object": o})


def pod_list(*items: dict) -> bytes:
    return dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"},
                  "items": list(items)})


def check(data: bytes, caplog, *, fallback: bool) -> None:
    """decode / decode_event with drop_managed_fields equal the reference, through the fast
    path or (``fallback``) through an exact decode of the original bytes."""
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="informers.client.decoder"):
        doc = json.loads(data)
        if "type" in doc:
            assert decode_event(data, drop_managed_fields=True) == (
                doc["type"], without_managed_fields(dumps(doc["object"]), items=False))
        else:
            assert decode(data, drop_managed_fields=True) == without_managed_fields(data)
            assert decode(bytearray(data), drop_managed_fields=True) == without_managed_fields(
                data)
    fell_back = [r for r in caplog.records if FALLBACK in r.getMessage()]
    assert len(fell_back) == (2 if fallback and "type" not in doc else int(fallback))


def test_strip_replaces_each_member_by_the_placeholder():
    o = obj("a", [entry()], labels={"app": "web"})
    data = event(o)
    stripped, count = strip_managed_fields_bytes(data)
    assert count == 1
    mf = dumps([entry()])
    assert stripped == data.replace(b'"managedFields":' + mf, b'"\\u0001":0')
    assert json.loads(stripped)["object"]["metadata"] == {
        "name": "a", "namespace": "ns", "resourceVersion": "7", "labels": {"app": "web"},
        "\x01": 0}


def test_strip_returns_the_same_bytes_when_nothing_is_cut():
    for data in (event(obj("a")), event(obj("a", []))):  # none, or already empty
        stripped, count = strip_managed_fields_bytes(data)
        assert stripped is data and count == 0


def test_strip_limit_and_every_item_of_a_list():
    data = pod_list(obj("a", [entry()]), obj("b", [entry(), entry("kcm")]), obj("c"))
    stripped, count = strip_managed_fields_bytes(data)
    assert count == 2
    assert [i["metadata"].get("\x01") for i in json.loads(stripped)["items"]] == [0, 0, None]
    first, count = strip_managed_fields_bytes(data, 1)
    assert count == 1
    assert [i["metadata"].get("\x01") for i in json.loads(first)["items"]] == [0, None, None]


def test_realistic_pods_take_the_fast_path(caplog):
    pods = pytest.importorskip("benchmarks.pods")
    items = [pods.make_pod(i, f"ns{i % 3}") for i in range(40)]
    check(pod_list(*items), caplog, fallback=False)
    for item in items[:10]:
        check(event(item), caplog, fallback=False)
    assert strip_managed_fields_bytes(pod_list(*items))[1] == 40


@pytest.mark.parametrize(("managed", "fallback"), [
    ([entry()], False),  # k:{\"type\":\"Ready\"} keys and v:\"...\" set elements
    ([entry(**{'v:"x"': {}, 'k:{"ip":"[::1]"}': {}})], False),  # "]" in strings: stepped over
    ([entry(**{"f:a": {}, 'v:"}],"': {}})], True),  # "}]," in a string: that cut breaks the JSON
    ([entry("m}]}")], True),
    ([entry(**{'v:"\\\\"': {}, 'v:"\\\\\\"]"': {}})], False),  # escaped backslashes and quotes
    ([entry(**{'v:"a\\"]"': {}})], False),  # an escaped quote before a "]" in a string
    ([{"a": [{"b": 1}], "c": 2}], True),  # a nested array of objects: the cut breaks the JSON
    ([[1, 2], {"x": "]"}], True),
    ([1], False),  # not objects: the first "]" is outside strings, the cut is exact
    ([], False),  # empty: left as it is (no cut), deleted after the decode
    (["]"] * 20, False),  # more "]" in strings than are stepped over: left as it is
])
def test_managed_fields_contents(managed, fallback, caplog):
    o = obj("a", managed, labels={"app": "web"})
    o["status"] = {"conditions": [{"type": "Ready"}], "x": [{"y": "]"}]}
    check(event(o), caplog, fallback=fallback)
    check(pod_list(o, obj("b", [entry()])), caplog, fallback=fallback)


def test_the_member_text_inside_labels_annotations_and_keys_is_not_cut(caplog):
    text = '"managedFields":[{"manager":"x"}],"y":['
    o = obj("a", [entry()], labels={"l": "]"}, annotations={"note": text, text: "}]"})
    data = event(o)
    assert strip_managed_fields_bytes(data)[1] == 1
    check(data, caplog, fallback=False)
    odd = {"kind": "X", 'a"managedFields': [entry()], "metadata": {"name": "a"}}
    data = event(odd)  # the key a"managedFields: its quote is escaped, the match skipped
    assert strip_managed_fields_bytes(data)[1] == 0
    check(data, caplog, fallback=False)


def test_nested_managed_fields_are_kept(caplog):
    template = {"metadata": {"labels": {"a": "b"}, "managedFields": [entry("template")]}}
    after = obj("a", [entry()])  # the object's own managedFields come first (Go field order)
    after["spec"]["template"] = template
    before = {"kind": "X", "data": template, "metadata": {"name": "a",
                                                          "managedFields": [entry()]}}
    # A watch line cuts one member: after the object's own, the template's is never reached.
    check(event(after), caplog, fallback=False)
    assert decode_event(event(after), drop_managed_fields=True)[1]["spec"]["template"] == template
    check(event(before), caplog, fallback=True)  # the first cut is the nested one
    # A list cuts them all: one in a template makes it decode the original bytes.
    check(pod_list(after, obj("b", [entry()])), caplog, fallback=True)
    assert decode(pod_list(after), drop_managed_fields=True)["items"][0]["spec"]["template"] == (
        template)


def test_two_members_in_one_metadata(caplog):
    twice = b'"metadata":{"managedFields":[' + dumps(entry("first")) + b"],"
    data = event(obj("a", [entry()])).replace(b'"metadata":{', twice, 1)
    assert json.loads(data)["object"]["metadata"]["managedFields"] == [entry()]  # last wins
    check(data, caplog, fallback=False)  # a watch line cuts one: the first
    data = pod_list(obj("a", [entry()])).replace(b'"metadata":{"name"', twice + b'"name"', 1)
    assert strip_managed_fields_bytes(data)[1] == 2
    check(data, caplog, fallback=True)  # two placeholders decode as one key


def test_a_u0001_anywhere_else_disables_the_cut(caplog):
    o = obj("a", [entry()], labels={"x\x01": "y"}, annotations={"\x01": "kept"})
    data = event(o)
    assert b"\\u0001" in data
    assert strip_managed_fields_bytes(data) == (data, 0)
    check(data, caplog, fallback=False)
    assert decode_event(data, drop_managed_fields=True)[1]["metadata"]["annotations"] == {
        "\x01": "kept"}
    inside = event(obj("a", [entry(**{"v:\"\x01\"": {}})]))  # only in the managedFields
    assert strip_managed_fields_bytes(inside)[1] == 1
    check(inside, caplog, fallback=False)


def test_pretty_json_is_decoded_as_it_is(caplog):
    o = obj("a", [entry()])
    data = json.dumps({"kind": "PodList", "items": [o]}, indent=2).encode()
    assert strip_managed_fields_bytes(data)[1] == 0
    check(data, caplog, fallback=False)


def test_invalid_json_still_fails():
    for bad in (pod_list(obj("a", [entry()]))[:-1], b'{"metadata":{"managedFields":[',
                b'{"metadata":{"managedFields":[{"a":"]"'):
        with pytest.raises(ValueError):
            decode(bad, drop_managed_fields=True)
    line = event(obj("a", [entry()]))
    for bad in (line[:-1], line[:40], b'{"type":"ADDED"}', b"[1]"):
        with pytest.raises(WatchDecodeError) as info:
            decode_event(bad, drop_managed_fields=True)
        assert info.value.line_prefix == bad[:120]


def test_error_and_bookmark_events_and_odd_shapes():
    status = {"kind": "Status", "code": 410, "reason": "Expired"}
    assert decode_event(event(status, "ERROR"), drop_managed_fields=True) == ("ERROR", status)
    bookmark = {"kind": "Pod", "metadata": {"resourceVersion": "12"}}
    assert decode_event(event(bookmark, "BOOKMARK"), drop_managed_fields=True) == (
        "BOOKMARK", bookmark)
    assert decode(b'[1,{"metadata":{"managedFields":[{"a":1}]}}]', drop_managed_fields=True) == [
        1, {"metadata": {}}]  # an array's elements are objects too (a run of a list's items)
    assert decode(b'[[{"metadata":{"managedFields":[{"a":1}]}}]]', drop_managed_fields=True) == [
        [{"metadata": {"managedFields": [{"a": 1}]}}]]  # but not deeper ones
    odd = {"items": [1, {"metadata": "x"}, {"metadata": {"managedFields": [{"a": 1}]}}],
           "metadata": {"managedFields": [{"b": 2}]}}
    assert decode(dumps(odd), drop_managed_fields=True) == {
        "items": [1, {"metadata": "x"}, {"metadata": {}}], "metadata": {}}


# Strings with the characters that matter to the cut, escapes included, among plain ones.
_plain = st.text(alphabet="abxyz", max_size=4)
_tricky = st.text(alphabet='ab"\\]}[{,: é', max_size=6)
_strings = st.one_of(_plain, _plain, _plain, _tricky,
                     st.sampled_from(["", '"managedFields":[', "]", "\x01"]))
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | _strings,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_strings, inner, max_size=3),
    max_leaves=12,
)


@st.composite
def _objects(draw):
    entries = st.lists(st.dictionaries(_strings, _json, min_size=1, max_size=3), min_size=1,
                       max_size=3)
    managed = draw(st.one_of(entries, entries, entries, _json))
    meta = draw(st.dictionaries(_plain, _strings, max_size=2))
    meta["name"] = "a"
    if draw(st.sampled_from([True, True, True, False])):
        meta["managedFields"] = managed
    others = draw(st.dictionaries(st.sampled_from(["spec", "status", "data"]),
                                  st.one_of(_json, _json, st.just({"managedFields": managed})),
                                  max_size=2))
    if draw(st.booleans()):  # a nested member before the object's own
        return {**others, "metadata": meta}
    return {"metadata": meta, **others}


@settings(max_examples=150, deadline=None)
@given(st.lists(_objects(), min_size=1, max_size=3))
def test_any_json_decodes_as_a_plain_decode_then_delete(objects):
    data = pod_list(*objects)
    assert decode(data, drop_managed_fields=True) == without_managed_fields(data)
    line = event(objects[0])
    assert decode_event(line, drop_managed_fields=True) == (
        "MODIFIED", without_managed_fields(dumps(objects[0]), items=False))
