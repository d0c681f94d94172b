"""Tests of informers.indexer.Indexer (ports of client-go store_test.go, index_test.go and
thread_safe_store_test.go, plus a model-based property test)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from informers import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    InformersError,
    meta_namespace_index_func,
    meta_namespace_key_func,
)
from informers.errors import IndexConflictError, IndexFuncError, IndexNotFoundError, KeyFuncError


def pod(name, namespace="default", labels=None, annotations=None, rv="1"):
    meta = {"name": name, "namespace": namespace, "resourceVersion": rv}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def names(objs):
    return sorted(o["metadata"]["name"] for o in objs)


def by_label_foo(o):
    return [o["metadata"]["labels"]["foo"]]


def by_users(o):
    users = o["metadata"].get("annotations", {}).get("users", "")
    return users.split(",") if users else []


# -- the Store interface (client-go doTestStore) ----------------------------------------------


def test_store_add_get_update_delete_list_replace():
    s = Indexer()
    s.add(pod("foo", labels={"v": "bar"}))
    assert s.get(pod("foo"))["metadata"]["labels"] == {"v": "bar"}
    s.update(pod("foo", labels={"v": "baz"}))
    assert s.get_by_key("default/foo")["metadata"]["labels"] == {"v": "baz"}
    s.delete(pod("foo"))
    assert s.get(pod("foo")) is None
    assert s.get_by_key("default/foo") is None

    s.add(pod("a"))
    s.add(pod("c"))
    s.add(pod("e"))
    assert names(s.list()) == ["a", "c", "e"]
    assert sorted(s.list_keys()) == ["default/a", "default/c", "default/e"]
    assert len(s) == 3
    assert "default/a" in s
    assert "default/foo" not in s

    s.replace([pod("foo"), pod("bar")], "7")
    assert names(s.list()) == ["bar", "foo"]
    assert len(s) == 2
    assert s.last_store_sync_resource_version() == "7"


def test_add_is_update_and_objects_are_shared_not_copied():
    s = Indexer()
    o = pod("a")
    s.add(o)
    assert s.get_by_key("default/a") is o
    o2 = pod("a", rv="2")
    s.add(o2)
    assert s.get_by_key("default/a") is o2
    assert len(s) == 1


def test_delete_absent_key_is_a_noop_and_tombstones_delete_by_key():
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    s.delete(pod("missing"))
    s.add(pod("a", "ns1"))
    s.delete(DeletedFinalStateUnknown("ns1/a", None))
    assert s.list() == []
    assert s.list_index_func_values(NAMESPACE_INDEX) == []


def test_cluster_scoped_keys():
    s = Indexer()
    s.add({"metadata": {"name": "node-1"}})
    assert s.list_keys() == ["node-1"]


def test_resync_is_a_noop():
    s = Indexer()
    s.add(pod("a"))
    s.resync()
    assert s.list_keys() == ["default/a"]


def test_last_store_sync_resource_version_follows_every_write():
    s = Indexer()
    assert s.last_store_sync_resource_version() == ""
    s.add(pod("a", rv="10"))
    assert s.last_store_sync_resource_version() == "10"
    s.replace([], "11")
    assert s.last_store_sync_resource_version() == "11"


# -- indices ----------------------------------------------------------------------------------


def test_index_by_value_client_go_do_test_index():
    def by_val(o):
        return [o["metadata"]["labels"]["val"]]

    s = Indexer(indexers={"by_val": by_val})
    s.add(pod("a", labels={"val": "b"}))
    s.add(pod("c", labels={"val": "b"}))
    s.add(pod("e", labels={"val": "f"}))
    s.add(pod("g", labels={"val": "h"}))
    expected = {"b": ["a", "c"], "f": ["e"], "h": ["g"]}
    for value, want in expected.items():
        assert names(s.index("by_val", pod("", labels={"val": value}))) == want
        assert names(s.by_index("by_val", value)) == want
        assert s.index_keys("by_val", value) == [f"default/{n}" for n in want]
    assert sorted(s.list_index_func_values("by_val")) == ["b", "f", "h"]


def test_list_index_func_values_client_go():
    s = Indexer(meta_namespace_key_func, {"testmodes": by_label_foo})
    s.add(pod("one", labels={"foo": "bar"}))
    s.add(pod("two", labels={"foo": "bar"}))
    s.add(pod("tre", labels={"foo": "biz"}))
    assert sorted(s.list_index_func_values("testmodes")) == ["bar", "biz"]


def test_multi_index_keys_client_go():
    s = Indexer(meta_namespace_key_func, {"byUser": by_users})
    pod1 = pod("one", annotations={"users": "ernie,bert"})
    pod2 = pod("two", annotations={"users": "bert,oscar"})
    pod3 = pod("tre", annotations={"users": "ernie,elmo"})
    for p in (pod1, pod2, pod3):
        s.add(p)
    expected = {"ernie": ["one", "tre"], "bert": ["one", "two"], "elmo": ["tre"],
                "oscar": ["two"], "elmo1": []}
    for user, want in expected.items():
        assert names(s.by_index("byUser", user)) == want

    s.delete(pod3)
    assert names(s.by_index("byUser", "ernie")) == ["one"]
    assert s.by_index("byUser", "elmo") == []

    s.update(pod("two", annotations={"users": "oscar"}))
    assert names(s.by_index("byUser", "bert")) == ["one"]
    assert names(s.by_index("byUser", "oscar")) == ["two"]
    assert sorted(s.list_index_func_values("byUser")) == ["bert", "ernie", "oscar"]


def test_index_returns_union_of_values_deduplicated():
    s = Indexer(meta_namespace_key_func, {"byUser": by_users})
    s.add(pod("one", annotations={"users": "ernie,bert"}))
    s.add(pod("two", annotations={"users": "bert,oscar"}))
    s.add(pod("tre", annotations={"users": "elmo"}))
    got = s.index("byUser", pod("q", annotations={"users": "bert,ernie,oscar"}))
    assert names(got) == ["one", "two"]  # "one" matches twice, returned once
    assert s.index("byUser", pod("q", annotations={"users": "nobody"})) == []
    assert s.index("byUser", pod("q")) == []  # no values: nothing


def test_multi_valued_index_maintenance_client_go():
    """client-go TestThreadSafeStoreIndexingFunctionsWithMultipleValues, with exact key lists."""

    def split(o):
        return o["metadata"]["labels"]["v"].split(",")

    s = Indexer(meta_namespace_key_func, {"t": split})

    def mk(name, v):
        return pod(name, labels={"v": v})

    def keys(value):
        return [k.split("/")[1] for k in s.index_keys("t", value)]

    s.add(mk("key1", "foo"))
    s.add(mk("key2", "bar"))
    assert (keys("foo"), keys("bar")) == (["key1"], ["key2"])
    s.update(mk("key2", "foo,bar"))
    assert (keys("foo"), keys("bar")) == (["key1", "key2"], ["key2"])
    s.update(mk("key1", "foo,bar"))
    assert (keys("foo"), keys("bar")) == (["key1", "key2"], ["key1", "key2"])
    s.add(mk("key3", "foo,bar,baz"))
    assert (keys("foo"), keys("bar"), keys("baz")) == (
        ["key1", "key2", "key3"], ["key1", "key2", "key3"], ["key3"])
    s.update(mk("key1", "foo"))
    assert (keys("foo"), keys("bar"), keys("baz")) == (
        ["key1", "key2", "key3"], ["key2", "key3"], ["key3"])
    s.update(mk("key2", "bar"))
    assert (keys("foo"), keys("bar"), keys("baz")) == (
        ["key1", "key3"], ["key2", "key3"], ["key3"])
    s.delete(mk("key1", ""))
    assert (keys("foo"), keys("bar"), keys("baz")) == (["key3"], ["key2", "key3"], ["key3"])
    s.delete(mk("key3", ""))
    assert (keys("foo"), keys("bar"), keys("baz")) == ([], ["key2"], [])
    # Empty value sets are dropped, not kept around (kubernetes issue #84959).
    assert s.list_index_func_values("t") == ["bar"]


def test_empty_value_set_dropped_but_shared_one_kept():
    s = Indexer(meta_namespace_key_func, {"const": lambda o: ["x"]})
    s.add(pod("retain"))
    s.add(pod("delete"))
    s.delete(pod("delete"))
    assert s.index_keys("const", "x") == ["default/retain"]
    s.delete(pod("retain"))
    assert s.list_index_func_values("const") == []


def test_namespace_index_moves_on_namespace_change_and_empty_values_unindexed():
    s = Indexer(lambda o: o["metadata"]["name"], {NAMESPACE_INDEX: meta_namespace_index_func,
                                                 "none": lambda o: []})
    s.add(pod("a", "ns1"))
    s.add(pod("a", "ns2"))
    assert s.index_keys(NAMESPACE_INDEX, "ns1") == []
    assert s.index_keys(NAMESPACE_INDEX, "ns2") == ["a"]
    assert s.list_index_func_values(NAMESPACE_INDEX) == ["ns2"]
    assert s.list_index_func_values("none") == []


def test_index_values_may_be_tuples_or_duplicated():
    s = Indexer(meta_namespace_key_func, {"t": lambda o: tuple(o["metadata"]["labels"]["v"])})
    s.add(pod("a", labels={"v": "xxy"}))
    assert sorted(s.list_index_func_values("t")) == ["x", "y"]
    s.update(pod("a", labels={"v": "x"}))
    assert s.list_index_func_values("t") == ["x"]
    s.delete(pod("a"))
    assert s.list_index_func_values("t") == []


def test_index_entries_removed_even_if_cached_object_was_mutated():
    s = Indexer(meta_namespace_key_func, {"foo": by_label_foo})
    o = pod("a", labels={"foo": "old"})
    s.add(o)
    o["metadata"]["labels"]["foo"] = "mutated"  # a caller breaking the contract
    s.update(pod("a", labels={"foo": "new"}))
    assert s.list_index_func_values("foo") == ["new"]
    s.delete(pod("a"))
    assert s.list_index_func_values("foo") == []


def test_unknown_index_name_raises():
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    s.add(pod("a"))
    for call in (
        lambda: s.index("nope", pod("a")),
        lambda: s.index_keys("nope", "x"),
        lambda: s.by_index("nope", "x"),
        lambda: s.list_index_func_values("nope"),
    ):
        with pytest.raises(IndexNotFoundError) as info:
            call()
        assert str(info.value) == "Index with name nope does not exist"
        assert isinstance(info.value, KeyError)


def test_index_function_failure_names_key_and_index_and_changes_nothing():
    def picky(o):
        if o["metadata"]["name"] == "bad":
            raise RuntimeError("boom")
        return ["ok"]

    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func, "picky": picky})
    s.add(pod("good"))
    with pytest.raises(IndexFuncError) as info:
        s.add(pod("bad"))
    assert str(info.value) == (
        "unable to calculate an index entry for key 'default/bad' on index 'picky': boom"
    )
    assert isinstance(info.value.__cause__, RuntimeError)
    assert isinstance(info.value, InformersError)
    assert s.list_keys() == ["default/good"]
    assert s.index_keys(NAMESPACE_INDEX, "default") == ["default/good"]

    with pytest.raises(IndexFuncError, match="on index 'picky'"):
        s.replace([pod("x"), pod("bad")], "5")
    assert s.list_keys() == ["default/good"]
    assert s.last_store_sync_resource_version() == "1"  # still good's

    with pytest.raises(IndexFuncError, match="query object on index 'picky': boom"):
        s.index("picky", pod("bad"))


def test_index_function_returning_a_string_is_rejected():
    s = Indexer(indexers={"bad": lambda o: o["metadata"]["name"]})
    with pytest.raises(IndexFuncError) as info:
        s.add(pod("abc"))
    assert str(info.value) == (
        "unable to calculate an index entry for key 'default/abc' on index 'bad': "
        "the index function returned str, expected a list of str"
    )
    assert len(s) == 0


def test_key_function_failures():
    s = Indexer()
    with pytest.raises(KeyFuncError, match="'metadata' is missing"):
        s.add({"kind": "Pod"})
    with pytest.raises(KeyFuncError, match="expected a dict, got str"):
        s.get("default/a")
    with pytest.raises(KeyFuncError):
        s.replace([pod("a"), {"metadata": {"name": "x/y"}}])
    assert len(s) == 0

    def broken(o):
        raise LookupError("nope")

    s2 = Indexer(key_func=broken)
    with pytest.raises(KeyFuncError) as info:
        s2.add(pod("a"))
    assert str(info.value) == "couldn't create key for object: nope"
    assert isinstance(info.value.__cause__, LookupError)


def test_add_indexers_indexes_existing_items_and_rejects_conflicts():
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    s.add(pod("a", "ns1", labels={"foo": "x"}))
    s.add(pod("b", "ns2", labels={"foo": "y"}))
    s.add_indexers({"foo": by_label_foo})
    assert s.index_keys("foo", "x") == ["ns1/a"]
    assert sorted(s.get_indexers()) == ["foo", NAMESPACE_INDEX]

    with pytest.raises(IndexConflictError) as info:
        s.add_indexers({"foo": by_label_foo, "other": by_label_foo, NAMESPACE_INDEX: by_label_foo})
    assert str(info.value) == "indexer conflict: ['foo', 'namespace']"
    assert isinstance(info.value, ValueError)
    assert sorted(s.get_indexers()) == ["foo", NAMESPACE_INDEX]

    # New items are indexed on the new index too.
    s.add(pod("c", "ns1", labels={"foo": "x"}))
    assert s.index_keys("foo", "x") == ["ns1/a", "ns1/c"]


def test_add_indexers_then_update_and_delete_maintain_every_index():
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    s.add(pod("a", "ns1", labels={"foo": "x"}))
    s.add_indexers({})  # nothing to add: a no-op
    s.add_indexers({"foo": by_label_foo})
    s.add_indexers({"users": by_users})
    s.update(pod("a", "ns1", labels={"foo": "y"}, annotations={"users": "bert"}))
    assert s.list_index_func_values(NAMESPACE_INDEX) == ["ns1"]
    assert s.list_index_func_values("foo") == ["y"]
    assert s.index_keys("users", "bert") == ["ns1/a"]
    s.delete(pod("a", "ns1"))
    for name in (NAMESPACE_INDEX, "foo", "users"):
        assert s.list_index_func_values(name) == []


def test_add_indexers_on_a_store_without_indices():
    s = Indexer()
    s.add(pod("a", "ns1", labels={"foo": "x"}))
    s.add_indexers({"foo": by_label_foo})
    s.update(pod("a", "ns1", labels={"foo": "z"}))
    assert s.list_index_func_values("foo") == ["z"]


def test_add_indexers_failure_adds_nothing():
    s = Indexer()
    s.add(pod("a"))
    with pytest.raises(IndexFuncError, match="key 'default/a' on index 'foo'"):
        s.add_indexers({"foo": by_label_foo})  # pod has no labels: KeyError inside
    assert s.get_indexers() == {}
    with pytest.raises(IndexNotFoundError):
        s.index_keys("foo", "x")


def test_get_indexers_returns_a_copy():
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    got = s.get_indexers()
    assert got == {NAMESPACE_INDEX: meta_namespace_index_func}
    got["x"] = by_label_foo
    assert list(s.get_indexers()) == [NAMESPACE_INDEX]


def test_replace_rebuilds_indices_and_later_duplicates_win():
    s = Indexer(indexers={"foo": by_label_foo})
    s.add(pod("old", labels={"foo": "gone"}))
    s.replace(
        [pod("a", labels={"foo": "x"}), pod("b", labels={"foo": "y"}),
         pod("a", labels={"foo": "z"})],
        "42",
    )
    assert sorted(s.list_keys()) == ["default/a", "default/b"]
    assert sorted(s.list_index_func_values("foo")) == ["y", "z"]
    assert s.index_keys("foo", "gone") == []
    assert s.get_by_key("default/a")["metadata"]["labels"] == {"foo": "z"}
    # Updates after a replace maintain the rebuilt indices.
    s.update(pod("b", labels={"foo": "z"}))
    assert s.index_keys("foo", "z") == ["default/a", "default/b"]
    assert s.list_index_func_values("foo") == ["z"]


# -- concurrency ------------------------------------------------------------------------------


def test_concurrent_writers_and_readers_leave_consistent_indices():
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func, "foo": by_label_foo})
    errors = []

    def writer(w):
        try:
            for i in range(300):
                name = f"p{i % 50}"
                s.update(pod(name, f"ns{w}", labels={"foo": str(i % 7)}))
                if i % 11 == 0:
                    s.delete(pod(name, f"ns{w}"))
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    def reader():
        try:
            for _ in range(300):
                for o in s.by_index(NAMESPACE_INDEX, "ns0"):
                    assert o["metadata"]["namespace"] == "ns0"
                s.list()
        except Exception as err:  # pragma: no cover
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    objs = s.list()
    expected_foo = {}
    for o in objs:
        expected_foo.setdefault(o["metadata"]["labels"]["foo"], set()).add(
            meta_namespace_key_func(o))
    assert {v: set(s.index_keys("foo", v)) for v in s.list_index_func_values("foo")} == expected_foo


def test_update_racing_add_indexers_recomputes_values():
    """Index values are computed outside the lock; an add_indexers landing in between must
    be noticed (deterministic: the index function itself adds the indexer, once)."""
    fired = []

    def racing_ns(o):
        if o["metadata"]["name"] == "b" and not fired:
            fired.append(True)
            s.add_indexers({"foo": by_label_foo})
        return meta_namespace_index_func(o)

    s = Indexer(meta_namespace_key_func, {"ns": racing_ns})
    s.add(pod("a", labels={"foo": "x"}))
    s.add(pod("b", labels={"foo": "y"}))  # add_indexers runs while b's values are computed
    assert fired == [True]
    assert s.index_keys("foo", "y") == ["default/b"]
    assert s.index_keys("foo", "x") == ["default/a"]
    s.update(pod("b", labels={"foo": "x"}))
    assert s.index_keys("foo", "x") == ["default/a", "default/b"]
    assert s.list_index_func_values("foo") == ["x"]


def test_replace_racing_add_indexers_rebuilds_with_every_index():
    fired = []

    def racing(o):
        if not fired:
            fired.append(True)
            s.add_indexers({"foo": by_label_foo})
        return [o["metadata"]["name"]]

    s = Indexer(meta_namespace_key_func, {"name": racing})
    s.replace([pod("a", labels={"foo": "x"}), pod("b", labels={"foo": "y"})], "3")
    assert fired == [True]
    assert s.index_keys("foo", "x") == ["default/a"]
    assert sorted(s.list_index_func_values("name")) == ["a", "b"]
    assert s.last_store_sync_resource_version() == "3"


# -- what is remembered per key ---------------------------------------------------------------


def test_one_index_with_one_string_value_remembers_the_objects_own_string():
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    o = pod("a", "ns1")
    s.add(o)
    assert s._key_values == {"ns1/a": "ns1"}
    assert s._key_values["ns1/a"] is o["metadata"]["namespace"]  # no list per key
    s.replace([pod("b", "ns2")], "2")
    assert s._key_values == {"ns2/b": "ns2"}


def test_several_or_non_string_values_are_remembered_as_returned():
    tags = ["x", "y"]
    s = Indexer(indexers={"tags": lambda o: tags})
    s.add(pod("a"))
    assert s._key_values == {"default/a": [["x", "y"]]}
    s2 = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func, "foo": by_label_foo})
    s2.add(pod("a", "ns1", labels={"foo": "x"}))
    assert s2._key_values == {"ns1/a": [["ns1"], ["x"]]}


def test_one_index_values_move_between_one_several_none_and_non_string():
    s = Indexer(indexers={"t": lambda o: o["metadata"]["labels"]["t"]})
    s.add(pod("a", labels={"t": ["x"]}))
    s.add(pod("b", labels={"t": ["x"]}))
    assert s.index_keys("t", "x") == ["default/a", "default/b"]
    s.update(pod("a", labels={"t": ["x", "y"]}))
    assert (s.index_keys("t", "x"), s.index_keys("t", "y")) == (["default/a", "default/b"],
                                                                ["default/a"])
    s.update(pod("a", labels={"t": ["y"]}))
    assert (s.index_keys("t", "x"), s.index_keys("t", "y")) == (["default/b"], ["default/a"])
    s.update(pod("a", labels={"t": []}))
    assert sorted(s.list_index_func_values("t")) == ["x"]
    s.update(pod("a", labels={"t": [7]}))
    assert s.index_keys("t", 7) == ["default/a"]
    s.update(pod("a", labels={"t": ["z"]}))
    assert sorted(s.list_index_func_values("t")) == ["x", "z"]
    s.delete(pod("a"))
    s.delete(pod("b"))
    assert s.list_index_func_values("t") == []


def test_add_indexers_after_remembered_strings_then_move_both_indices():
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    s.add(pod("a", "ns1", labels={"foo": "x"}))
    s.add_indexers({"foo": by_label_foo})
    assert s._key_values == {"ns1/a": [["ns1"], ["x"]]}
    s.update(pod("a", "ns1", labels={"foo": "y"}))
    assert (s.list_index_func_values(NAMESPACE_INDEX), s.list_index_func_values("foo")) == (
        ["ns1"], ["y"])
    s.delete(pod("a", "ns1"))
    assert (s.list_index_func_values(NAMESPACE_INDEX), s.list_index_func_values("foo")) == (
        [], [])


def test_update_with_a_key_stores_that_very_string_for_a_new_key():
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    key = "/".join(["default", "a"])  # built at run time: not an interned constant
    s.update(pod("a"), key=key)
    assert s.list_keys()[0] is key
    again = "/".join(["default", "a"])
    s.add(pod("a", rv="2"), key=again)  # an existing key keeps its first string
    assert s.list_keys()[0] is key
    assert s.get_by_key("default/a")["metadata"]["resourceVersion"] == "2"
    assert s.index_keys(NAMESPACE_INDEX, "default") == ["default/a"]


# -- model-based property test ----------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "c", "d"])
_NAMESPACES = st.sampled_from(["", "ns1", "ns2"])
_TAGS = st.lists(st.sampled_from(["x", "y", "z"]), max_size=3)


def _obj(name, namespace, tags):
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"tags": tags}}}


def _tags(o):
    return list(o["metadata"]["labels"]["tags"])


_INDEXERS = {NAMESPACE_INDEX: meta_namespace_index_func, "tags": _tags}


class IndexerMachine(RuleBasedStateMachine):
    """Random operations against a dict, with indices recomputed from scratch each time."""

    indexers = _INDEXERS

    def __init__(self):
        super().__init__()
        self.store = Indexer(indexers=dict(self.indexers))
        self.model = {}

    @rule(name=_NAMES, ns=_NAMESPACES, tags=_TAGS)
    def update(self, name, ns, tags):
        o = _obj(name, ns, tags)
        self.store.update(o)
        self.model[meta_namespace_key_func(o)] = o

    @rule(name=_NAMES, ns=_NAMESPACES)
    def delete(self, name, ns):
        o = _obj(name, ns, [])
        self.store.delete(o)
        self.model.pop(meta_namespace_key_func(o), None)

    @rule(objs=st.lists(st.tuples(_NAMES, _NAMESPACES, _TAGS), max_size=5),
          rv=st.sampled_from(["1", "2"]))
    def replace(self, objs, rv):
        built = [_obj(*t) for t in objs]
        self.store.replace(built, rv)
        self.model = {meta_namespace_key_func(o): o for o in built}

    @invariant()
    def matches_model(self):
        assert sorted(self.store.list_keys()) == sorted(self.model)
        for key, o in self.model.items():
            assert self.store.get_by_key(key) is o
        for name, fn in self.indexers.items():
            expected = {}
            for key, o in self.model.items():
                for v in fn(o):
                    expected.setdefault(v, set()).add(key)
            assert sorted(self.store.list_index_func_values(name)) == sorted(expected)
            for v, keys in expected.items():
                assert self.store.index_keys(name, v) == sorted(keys)
                assert sorted(map(meta_namespace_key_func, self.store.by_index(name, v))) == \
                    sorted(keys)


TestIndexerModel = IndexerMachine.TestCase
TestIndexerModel.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)


class OneIndexMachine(IndexerMachine):
    """The same with one index, whose values are remembered as a bare string when single."""

    indexers = {"tags": _tags}


TestOneIndexModel = OneIndexMachine.TestCase
TestOneIndexModel.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)


@given(st.lists(st.tuples(_NAMES, _NAMESPACES, _TAGS), max_size=8), _TAGS)
def test_index_query_matches_model(objs, query_tags):
    s = Indexer(indexers={"tags": _tags})
    model = {}
    for t in objs:
        o = _obj(*t)
        s.add(o)
        model[meta_namespace_key_func(o)] = o
    want = sorted(k for k, o in model.items() if set(_tags(o)) & set(query_tags))
    got = s.index("tags", _obj("q", "", query_tags))
    assert sorted(map(meta_namespace_key_func, got)) == want


# -- the resourceVersion of the last write (client-go v0.36 thread_safe_store_test.go) ----------


def _rv_obj(key, rv):
    return {"metadata": {"name": key, "resourceVersion": rv}}


def _rv_key(obj):
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return obj if isinstance(obj, str) else obj["metadata"]["name"]


def test_ThreadSafeStoreRV_initial_state():
    assert Indexer().last_store_sync_resource_version() == ""


def test_ThreadSafeStoreRV_add_update_and_delete():
    store = Indexer(_rv_key)
    store.add(_rv_obj("key1", "10"))
    assert store.last_store_sync_resource_version() == "10"
    store.add(_rv_obj("key3", "10"))
    assert store.last_store_sync_resource_version() == "10"
    store.add(_rv_obj("key4", "20"))
    assert store.last_store_sync_resource_version() == "20"
    store.delete(_rv_obj("key4", "30"))  # an earlier object deleted at a newer RV
    assert store.last_store_sync_resource_version() == "30"
    store.add("just a string")  # non-meta object: unchanged
    assert store.last_store_sync_resource_version() == "30"
    store.add(_rv_obj("key6", "40"))
    assert store.last_store_sync_resource_version() == "40"
    store.delete(DeletedFinalStateUnknown("key6", None))  # no object: unchanged
    assert store.last_store_sync_resource_version() == "40"


def test_ThreadSafeStoreRV_replace():
    store = Indexer(_rv_key)
    store.add(_rv_obj("key1", "10"))
    assert store.last_store_sync_resource_version() == "10"
    store.replace([_rv_obj("key3", "40"), _rv_obj("key2", "30")], "50")
    assert store.last_store_sync_resource_version() == "50"


def test_ThreadSafeStoreRV_delete():
    store = Indexer(_rv_key)
    store.add(_rv_obj("key1", "10"))
    store.delete(_rv_obj("key1", "20"))
    assert store.last_store_sync_resource_version() == "20"


def test_store_rv_with_indices_and_bookmark():
    def by(obj):
        if "bad" in obj:
            raise RuntimeError("bad object")
        return [obj["metadata"]["resourceVersion"]]

    store = Indexer(_rv_key, {"by": by})
    store.update(_rv_obj("a", "7"))
    assert store.last_store_sync_resource_version() == "7"
    store.bookmark("9")
    assert store.last_store_sync_resource_version() == "9"
    with pytest.raises(IndexFuncError):
        store.update({**_rv_obj("b", "11"), "bad": True})  # nothing changed, RV included
    assert store.last_store_sync_resource_version() == "9"
