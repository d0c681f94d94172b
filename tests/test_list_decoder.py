"""Tests for informers.client.list_decoder: items decoded as the bytes arrive, same result as a
whole decode for every way the body can be cut."""

from __future__ import annotations

import json
import random

import pytest

from informers.client.decoder import decode
from informers.client.list_decoder import MAX_MISSES, MAX_PREFIX, ListDecoder


def pod(i: int, **extra: object) -> dict:
    return {
        "metadata": {
            "name": f"p{i}", "namespace": "default", "resourceVersion": str(100 + i),
            "labels": {"app": "web", "note": '},{"metadata":'},
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:metadata": {}}}],
        },
        "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]},
        **extra,
    }


def body(items: list, rv: str = "7", head: dict | None = None) -> bytes:
    doc = head if head is not None else {"kind": "PodList", "apiVersion": "v1",
                                          "metadata": {"resourceVersion": rv}}
    doc = {**doc, "items": items}
    return json.dumps(doc, separators=(",", ":")).encode()


def feed_in_pieces(data: bytes, sizes: list[int], drop: bool = False) -> tuple[object, int]:
    decoder = ListDecoder(drop_managed_fields=drop)
    pos = 0
    for size in sizes:
        decoder.feed(data[pos:pos + size])
        pos += size
    decoder.feed(data[pos:])
    decoded = decoder.items_decoded
    return decoder.finish(), decoded


@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_any_cut_gives_the_whole_decode(seed: int, drop: bool) -> None:
    rng = random.Random(seed)
    data = body([pod(i) for i in range(40)])
    sizes = [rng.choice([1, 2, 7, 64, 500, 4096]) for _ in range(200)]
    doc, _ = feed_in_pieces(data, sizes, drop)
    assert doc == decode(data, drop_managed_fields=drop)
    assert len(doc["items"]) == 40
    assert ("managedFields" in doc["items"][0]["metadata"]) is not drop


def test_items_are_decoded_before_the_body_ends() -> None:
    data = body([pod(i) for i in range(10)])
    half = len(data) // 2
    decoder = ListDecoder()
    decoder.feed(data[:half])
    assert 3 <= decoder.items_decoded <= 5  # every item complete in the first half
    decoder.feed(data[half:])
    assert decoder.items_decoded == 9  # the last one is decoded with the end of the list
    doc = decoder.finish()
    assert [p["metadata"]["name"] for p in doc["items"]] == [f"p{i}" for i in range(10)]
    assert doc["metadata"] == {"resourceVersion": "7"}


def test_members_after_the_items_are_kept() -> None:
    # An unstructured list: keys sorted, so kind and metadata come after the items.
    items = [{"apiVersion": "x.io/v1", "kind": "Foo", "metadata": {"name": f"f{i}"}}
             for i in range(5)]
    data = json.dumps({"apiVersion": "x.io/v1", "items": items, "kind": "FooList",
                       "metadata": {"continue": "abc", "resourceVersion": "9"}},
                      separators=(",", ":")).encode()
    doc, decoded = feed_in_pieces(data, [30] * 10)
    assert decoded == 4
    assert doc == json.loads(data)


def test_nested_candidates_are_rejected_and_the_item_kept_whole() -> None:
    nested = {"templates": [{"metadata": {"name": "t1"}}, {"metadata": {"name": "t2"}}]}
    items = [pod(0, spec=nested), pod(1, spec=nested), pod(2)]
    data = body(items)
    doc, decoded = feed_in_pieces(data, [len(data) - 1])
    assert decoded == 2
    assert doc == json.loads(data)


def test_too_many_misses_stop_the_streaming_but_not_the_decode() -> None:
    nested = {"templates": [{"metadata": {"name": f"t{i}"}} for i in range(MAX_MISSES + 3)]}
    items = [pod(0), pod(1, spec=nested), pod(2), pod(3)]
    data = body(items)
    cut = data.index(b'{"metadata":{"name":"p2"') - 2  # inside p1's last "}}"
    decoder = ListDecoder()
    decoder.feed(data[:cut])  # the last candidate is p1's last template: one item at a time
    assert decoder.items_decoded == 1  # p0; p1's nested candidates exhausted the misses
    decoder.feed(data[cut:-1])
    assert decoder.items_decoded == 1  # no longer looking
    decoder.feed(data[-1:])
    assert decoder.finish() == json.loads(data)


def test_a_failed_run_falls_back_to_single_items() -> None:
    nested = {"templates": [{"metadata": {"name": "t1"}}, {"metadata": {"name": "t2"}}]}
    items = [pod(0), pod(1), pod(2, spec=nested), pod(3)]
    data = body(items)
    cut = data.index(b'{"metadata":{"name":"p3"') - 2  # inside p2's last "}}"
    decoder = ListDecoder()
    decoder.feed(data[:cut])
    assert decoder.items_decoded == 2  # p0 and p1, found one at a time
    decoder.feed(data[cut:])
    assert decoder.items_decoded == 3
    assert decoder.finish() == json.loads(data)


def test_items_with_different_first_keys_are_decoded_in_runs() -> None:
    items = [{"metadata": {"name": "a"}}, {"kind": "Pod", "metadata": {"name": "b"}},
             {"metadata": {"name": "c"}}]
    data = body(items)
    doc, decoded = feed_in_pieces(data, [len(data) - 1])
    assert decoded == 2  # a and b, up to the candidate before c
    assert doc == json.loads(data)


@pytest.mark.parametrize("data", [
    b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"3"},"items":[]}',
    b'{"kind":"PodList","metadata":{},"items":null}',
    b'{"kind":"Table","rows":[{"cells":[1]}]}',
    b'{"metadata":{"items":[1]},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}',
    b'[1,2]',
])
def test_documents_without_streamable_items_decode_whole(data: bytes) -> None:
    doc, decoded = feed_in_pieces(data, [5] * (len(data) // 5))
    assert decoded == 0
    assert doc == json.loads(data)


def test_items_far_into_the_body_are_not_searched_for() -> None:
    head = {"kind": "PodList", "metadata": {"resourceVersion": "1", "pad": "x" * MAX_PREFIX}}
    data = body([pod(0), pod(1)], head=head)
    doc, decoded = feed_in_pieces(data, [1000] * (len(data) // 1000))
    assert decoded == 0
    assert doc == json.loads(data)


@pytest.mark.parametrize("cut", ["truncated", "bad item", "bad tail"])
def test_invalid_bodies_fail_in_finish(cut: str) -> None:
    data = body([pod(i) for i in range(5)])
    if cut == "truncated":
        data = data[:-10]
    elif cut == "bad item":
        data = data.replace(b'"p1"', b'"p1', 1)
    else:
        data = data[:-1] + b"x}"
    decoder = ListDecoder()
    decoder.feed(data)
    with pytest.raises(ValueError):
        decoder.finish()


def test_items_come_out_compacted() -> None:
    import sys

    spec = {f"k{i}": i for i in range(12)}
    item = {"metadata": {"name": "a"}, "spec": {**spec, "containers": [dict(spec)]}}
    data = body([item, item, item])
    grown = decode(data)["items"][0]  # orjson grows dicts key by key
    right_size = sys.getsizeof(dict(grown["spec"].items()))
    assert sys.getsizeof(grown["spec"]) > right_size  # 632 > 464 bytes on CPython 3.11
    doc, _ = feed_in_pieces(data, [len(data) // 2])
    assert doc == json.loads(data)
    for decoded in doc["items"]:
        assert sys.getsizeof(decoded["spec"]) == right_size
        assert sys.getsizeof(decoded["spec"]["containers"][0]) == right_size


def test_compacted_stops_at_its_depth_and_keeps_small_dicts() -> None:
    import sys

    from informers.client.list_decoder import compacted

    deep = decode(json.dumps({"a": {"b": {"c": {f"k{i}": i for i in range(12)}}}}).encode())
    small = decode(b'{"x":1}')
    grown = sys.getsizeof(deep["a"]["b"]["c"])
    out = compacted(deep)
    assert out is deep  # one key: kept
    assert sys.getsizeof(out["a"]["b"]["c"]) == grown  # level 4: left alone
    assert grown > sys.getsizeof(dict(out["a"]["b"]["c"].items()))
    assert compacted(small) is small
