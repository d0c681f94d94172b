"""The compact cache: objects kept as JSON bytes (informers.object_codec, Indexer(codec=...),
SharedIndexInformer(compact=True)) behave as the plain cache does for every documented use."""

from __future__ import annotations

import copy
import json
import math
import sys
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from informers import ResourceEventHandlerFuncs, SharedInformerFactory
from informers.client.list_decoder import ListDecoder
from informers.indexer import Indexer
from informers.keys import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_index_func,
    meta_namespace_key_func,
)
from informers.list_watch import ListResult, ListWatch
from informers.listers import Lister
from informers.object_codec import (
    JSON_CODEC,
    Encoded,
    JsonCodec,
    compact_index_func,
    compact_key_func,
    decoded,
    item_encoder,
)
from informers.resources import lookup
from informers.shared_informer import SharedIndexInformer, strip_managed_fields
from informers.testing import ApiServer
from informers.wait import wait_for_cache_sync

WAIT = 10.0

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def pod(name: str, rv: str = "1", ns: str = "ns", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv,
                         "labels": dict(labels)},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}


# -- the codec ----------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_decoded_json_round_trips_with_its_key_order(value: Any) -> None:
    for codec in (JsonCodec(), JSON_CODEC):
        back = codec.decode(codec.encode(value))
        assert back == value
        assert json.dumps(back) == json.dumps(value)  # key order included


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_each_decode_is_a_fresh_copy_that_may_be_mutated(value: dict[str, Any]) -> None:
    stored = JSON_CODEC.encode(value)
    first = JSON_CODEC.decode(stored)
    first["mutated"] = [1]
    assert JSON_CODEC.decode(stored) == value


@pytest.mark.parametrize("value", [
    (1, 2), {"a": (1,)}, 2**64, {"n": float("nan")}, {"inf": math.inf}, {1: "int key"},
    b"raw bytes", {"s": type("S", (str,), {})("sub")}, object(),
])
def test_what_is_not_plain_json_is_kept_as_is(value: Any) -> None:
    codec = JsonCodec()
    assert codec.decode(codec.encode(value)) is value


def test_the_informer_codec_keeps_what_the_encoder_refuses() -> None:
    for value in (2**64, {"big": -(2**70)}, {1: "x"}, b"raw", object()):
        assert JSON_CODEC.decode(JSON_CODEC.encode(value)) is value


def test_encoded_equality_is_by_json_and_repr_names_the_key() -> None:
    a = Encoded("ns/a", b'{"x":1}')
    assert a == Encoded("ns/other", b'{"x":1}')
    assert a != Encoded("ns/a", b'{"x":2}')
    assert a != {"x": 1}
    assert hash(a) == hash(Encoded("k", b'{"x":1}'))
    assert repr(a) == "Encoded('ns/a', 7 bytes)"
    assert a.decode() == {"x": 1}
    assert JSON_CODEC.encode(a) is a.data


def test_item_encoder_transforms_keys_and_encodes() -> None:
    obj = pod("a")
    obj["metadata"]["managedFields"] = [{"manager": "m"}]
    hook = item_encoder(deletion_handling_meta_namespace_key_func, strip_managed_fields)
    out = hook(obj)
    assert out.__class__ is Encoded
    assert out.key == "ns/a"
    assert json.loads(out.data) == pod("a")
    assert hook(out) is out  # already encoded: left alone
    assert hook(["not", "a", "dict"]) == ["not", "a", "dict"]


def test_item_encoder_leaves_what_it_cannot_key_or_transform() -> None:
    unkeyed = {"metadata": "not a dict"}
    assert item_encoder(meta_namespace_key_func, None)(unkeyed) is unkeyed

    def boom(obj: Any) -> Any:
        raise RuntimeError("transform failed")

    failing = pod("b")
    assert item_encoder(meta_namespace_key_func, boom)(failing) is failing


def test_compact_handlers_each_get_their_own_copy_of_a_watch_object() -> None:
    """Two handlers of a compact informer, one of which mutates what it gets: the other's
    object and the cache's stay as the server sent them."""
    with ApiServer() as server:
        server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
        server.create({**pod("a", app="a"), "apiVersion": "v1", "kind": "Pod"}, namespace="ns")
        api = server.api_client()
        factory = SharedInformerFactory(api, compact=True)
        try:
            informer = factory.core().v1().pods().informer()
            got: dict[str, list[Any]] = {"mutator": [], "reader": []}
            cond = threading.Condition()

            def on_update(who: str, old: Any, new: Any) -> None:
                if who == "mutator":
                    new["metadata"]["labels"]["app"] = "mutated"
                    new["spec"].clear()
                with cond:
                    got[who].append(new)
                    cond.notify_all()

            def handler(who: str) -> ResourceEventHandlerFuncs:
                return ResourceEventHandlerFuncs(
                    on_update=lambda old, new: on_update(who, old, new))

            for who in got:
                informer.add_event_handler(handler(who))
            factory.start()
            assert wait_for_cache_sync(threading.Event(), informer.has_synced, timeout=WAIT)
            server.patch("pods", "ns", "a", {"metadata": {"labels": {"app": "b"}}})
            with cond:
                assert cond.wait_for(lambda: all(got.values()), WAIT), got
            mutated, read = got["mutator"][0], got["reader"][0]
            assert mutated is not read
            assert read["metadata"]["labels"] == {"app": "b"}
            assert read["spec"]["containers"][0]["name"] == "c"
            cached = factory.core().v1().pods().lister().pods("ns").get("a")
            assert cached == read and cached is not read
        finally:
            factory.shutdown()
            api.close()


def test_compact_key_func_keys_encoded_objects_by_their_key() -> None:
    key = compact_key_func(meta_namespace_key_func)
    assert key(Encoded("ns/a", b"{}")) == "ns/a"
    assert key(pod("b")) == "ns/b"


def test_compact_namespace_index_reads_the_key_and_interns() -> None:
    index = compact_index_func(meta_namespace_index_func)
    ns = "".join(["tenant", "-1"])  # a string that is not interned yet
    assert index(Encoded(f"{ns}/a", b"{}")) == ["tenant-1"]
    assert index(Encoded(f"{ns}/a", b"{}"))[0] is sys.intern("tenant-1")
    assert index(Encoded("cluster-scoped", b"{}")) == [""]
    assert index(pod("a", ns="x")) == ["x"]


def test_other_index_functions_see_the_decoded_object() -> None:
    index = compact_index_func(lambda obj: [obj["spec"]["containers"][0]["image"]])
    assert index(Encoded("ns/a", json.dumps(pod("a")).encode())) == ["i"]


def test_decoded_decodes_each_side_once_and_unwraps_tombstones() -> None:
    e = Encoded("ns/a", b'{"v":1}')
    old, new = decoded(e, e)
    assert old == {"v": 1} and old is new
    tomb, none = decoded(DeletedFinalStateUnknown("ns/a", e), None)
    assert tomb == DeletedFinalStateUnknown("ns/a", {"v": 1}) and none is None
    plain = {"v": 2}
    assert decoded(plain, True) == (plain, True)


# -- the indexer with a codec -------------------------------------------------------------------


def _indexer() -> Indexer:
    return Indexer(compact_key_func(deletion_handling_meta_namespace_key_func),
                   {NAMESPACE_INDEX: compact_index_func(meta_namespace_index_func)},
                   codec=JSON_CODEC)


def test_compact_indexer_reads_are_equal_fresh_copies() -> None:
    idx = _indexer()
    idx.add(pod("a", app="x"))
    got = idx.get_by_key("ns/a")
    assert got == pod("a", app="x")
    got["metadata"]["labels"]["app"] = "mutated"
    assert idx.get_by_key("ns/a") == pod("a", app="x")
    assert idx.get_by_key("ns/a") is not idx.get_by_key("ns/a")
    assert idx.list() == [pod("a", app="x")]
    assert idx.by_index(NAMESPACE_INDEX, "ns") == [pod("a", app="x")]
    assert idx.index(NAMESPACE_INDEX, pod("zzz")) == [pod("a", app="x")]
    assert idx.last_store_sync_resource_version() == "1"


def test_compact_indexer_replace_takes_encoded_items_and_lazy_reads_hand_them_out() -> None:
    idx = _indexer()
    hook = item_encoder(meta_namespace_key_func, None)
    items = [hook(pod("a", "5")), hook(pod("b", "6", ns="other"))]
    idx.replace(items, "7", keys=["ns/a", "other/b"])
    assert idx.get_by_key("other/b") == pod("b", "6", ns="other")
    assert idx.index_keys(NAMESPACE_INDEX, "other") == ["other/b"]
    assert idx.last_store_sync_resource_version() == "7"
    lazy = idx.get_lazy_by_key("ns/a")
    assert lazy.__class__ is Encoded and lazy.key == "ns/a" and lazy.decode() == pod("a", "5")
    assert sorted(e.key for e in idx.list_lazy()) == ["ns/a", "other/b"]
    assert idx.get_lazy_by_key("ns/missing") is None


def test_compact_indexer_add_indexers_indexes_the_stored_objects() -> None:
    idx = _indexer()
    idx.add(pod("a", app="x"))
    idx.add(pod("b", app="y"))
    idx.add_indexers({"app": compact_index_func(lambda o: [o["metadata"]["labels"]["app"]])})
    assert idx.index_keys("app", "y") == ["ns/b"]
    assert idx.by_index("app", "x") == [pod("a", app="x")]


def test_plain_indexer_lazy_reads_are_the_shared_objects() -> None:
    idx = Indexer()
    obj = pod("a")
    idx.add(obj)
    assert idx.get_lazy_by_key("ns/a") is obj
    assert idx.list_lazy() == [obj] and idx.list_lazy()[0] is obj


def test_list_decoder_applies_the_item_hook_to_every_item() -> None:
    body = json.dumps({"kind": "PodList", "metadata": {"resourceVersion": "9"},
                       "items": [pod(f"p{i}") for i in range(40)]}).encode()
    hook = item_encoder(meta_namespace_key_func, None)
    decoder = ListDecoder(item_hook=hook)
    for at in range(0, len(body), 97):
        decoder.feed(body[at:at + 97])
    doc = decoder.finish()
    assert [e.key for e in doc["items"]] == [f"ns/p{i}" for i in range(40)]
    assert [e.decode() for e in doc["items"]] == [pod(f"p{i}") for i in range(40)]
    assert doc["metadata"] == {"resourceVersion": "9"}


# -- the informer -------------------------------------------------------------------------------


class Recorder:
    """Every notification as plain data, checking that no handler ever sees an Encoded."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.cond = threading.Condition()

    def _record(self, *event: Any) -> None:
        for value in event:
            assert value.__class__ is not Encoded
            if isinstance(value, DeletedFinalStateUnknown):
                assert value.obj.__class__ is not Encoded
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def handler(self) -> ResourceEventHandlerFuncs:
        return ResourceEventHandlerFuncs(
            on_add=lambda o: self._record("add", copy.deepcopy(o)),
            on_update=lambda old, new: self._record("update", copy.deepcopy(old),
                                                    copy.deepcopy(new)),
            on_delete=lambda o: self._record("delete", copy.deepcopy(o)),
        )

    def wait_for(self, n: int) -> list[tuple[Any, ...]]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.events) >= n, WAIT), self.events
            return list(self.events)


def test_compact_and_plain_informers_deliver_the_same_notifications() -> None:
    """Side by side on one embedded server: list, watch events, a relist after a 410 that
    finds a deletion missed and an object changed: the same notifications in the same order,
    and listers that answer alike."""
    with ApiServer() as server:
        server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
        for name in ("a", "b", "c"):
            server.create({**pod(name, app=name), "apiVersion": "v1", "kind": "Pod"},
                          namespace="ns")
        api = server.api_client()
        recorders = {}
        factories = {}
        try:
            for compact in (False, True):
                factory = SharedInformerFactory(api, compact=compact)
                informer = factory.core().v1().pods().informer()
                rec = Recorder()
                informer.add_event_handler(rec.handler())
                factory.start()
                recorders[compact], factories[compact] = rec, factory
            for compact in (False, True):
                assert wait_for_cache_sync(
                    threading.Event(), factories[compact].core().v1().pods().informer().has_synced,
                    timeout=WAIT)
            server.patch("pods", "ns", "a", {"metadata": {"labels": {"app": "a2"}}})
            server.delete("pods", "ns", "c")
            for rec in recorders.values():
                rec.wait_for(6)
            listers = {c: factories[c].core().v1().pods().lister() for c in (False, True)}
            assert listers[True].list("app=a2") == listers[False].list("app=a2")
            assert listers[True].pods("ns").get("b") == listers[False].pods("ns").get("b")
            # a relist with a change and a deletion the watches missed
            server.hang_watches()
            server.delete("pods", "ns", "a")
            server.patch("pods", "ns", "b", {"metadata": {"labels": {"app": "b2"}}})
            server.compact()
            server.resume_watches()
            plain, compact = recorders[False].wait_for(8), recorders[True].wait_for(8)
            def name(obj: Any) -> str:
                return str((obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)
                           ["metadata"]["name"])

            # a pod's delete is an update (deletionTimestamp) and then the delete
            assert [(e[0], name(e[-1])) for e in plain] == [
                ("add", "a"), ("add", "b"), ("add", "c"), ("update", "a"), ("update", "c"),
                ("delete", "c"), ("delete", "a"), ("update", "b")]
            assert isinstance(plain[6][1], DeletedFinalStateUnknown)
            assert plain[7][2]["metadata"]["labels"] == {"app": "b2"}
            assert compact == plain
            late = Recorder()
            factories[True].core().v1().pods().informer().add_event_handler(late.handler())
            assert [(e[0], e[1]["metadata"]["labels"]) for e in late.wait_for(1)] == [
                ("add", {"app": "b2"})]
        finally:
            for factory in factories.values():
                factory.shutdown()
            api.close()


def test_a_list_function_that_ignores_the_item_hook_still_fills_a_compact_cache() -> None:
    items = [pod(f"p{i}", str(i + 1)) for i in range(5)]

    def list_func(options: Any) -> ListResult:
        assert options.item_hook is not None
        return ListResult([copy.deepcopy(i) for i in items], "9")

    def watch_func(options: Any) -> Any:
        options.cancel.wait(WAIT) if options.cancel is not None else None
        raise ConnectionError("closed")

    informer = SharedIndexInformer(
        ListWatch(list_func, watch_func, resource=lookup("pods")), compact=True)
    rec = Recorder()
    informer.add_event_handler(rec.handler())
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,))
    thread.start()
    try:
        assert [e[1] for e in rec.wait_for(5)] == items
        lister = Lister(informer.get_indexer(), lookup("pods"))
        assert sorted(o["metadata"]["name"] for o in lister.list()) == [f"p{i}" for i in range(5)]
        assert informer.get_indexer()._items["ns/p0"].__class__ is bytes  # stored compact
    finally:
        stop.set()
        thread.join(WAIT)
    assert not thread.is_alive()


def test_compact_needs_the_real_fifo() -> None:
    with pytest.raises(ValueError, match="the compact cache needs the RealFIFO queue"):
        SharedIndexInformer(ListWatch(lambda o: None, lambda o: None), compact=True,
                            queue="DeltaFIFO")


# -- label selectors on a compact cache -----------------------------------------------------------


def test_label_prefilter_needs_every_equality_and_existence() -> None:
    from informers.labels import parse
    from informers.object_codec import label_prefilter

    data = json.dumps(pod("a", app="web", tier="front"), separators=(",", ":")).encode()
    passes = label_prefilter(parse("app=web,tier in (back,front)"))
    assert passes is not None and passes(data) is True
    assert label_prefilter(parse("app=web,tier=back"))(data) is False  # type: ignore[misc]
    assert label_prefilter(parse("tier"))(data) is True  # type: ignore[misc]
    assert label_prefilter(parse("zone"))(data) is False  # type: ignore[misc]
    assert label_prefilter(parse("app!=web")) is None  # nothing it can skip
    assert label_prefilter(parse("!zone,app notin (x)")) is None


def test_compact_lister_selects_exactly_what_the_plain_one_does() -> None:
    from informers.listers import Lister

    decoy = pod("decoy", app="db")
    decoy["metadata"]["annotations"] = {"app": "web"}  # the bytes "app":"web" elsewhere
    objects = [pod("a", app="web"), pod("b", app="db"), pod("c", ns="other", app="web"),
               decoy, pod("e", tier="x")]
    plain, compact = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func}), _indexer()
    for obj in objects:
        plain.add(copy.deepcopy(obj))
        compact.add(copy.deepcopy(obj))
    pods = lookup("pods")
    for selector in ("app=web", "app in (db,web)", "tier", "app!=web", "", "app=none"):
        expected = sorted(json.dumps(o) for o in Lister(plain, pods).list(selector))
        assert sorted(json.dumps(o) for o in Lister(compact, pods).list(selector)) == expected
        expected_ns = sorted(json.dumps(o) for o in Lister(plain, pods).pods("ns").list(selector))
        assert sorted(json.dumps(o) for o in
                      Lister(compact, pods).pods("ns").list(selector)) == expected_ns
    assert [o["metadata"]["name"] for o in Lister(compact, pods).pods("ns").list("app=web")] \
        == ["a"]
