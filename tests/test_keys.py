"""Tests of informers.keys: object keys, tombstones, key splitting, the namespace index."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from informers import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    InformersError,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_index_func,
    meta_namespace_key_func,
    split_meta_namespace_key,
)
from informers.errors import KeyFuncError
from informers.keys import ExplicitKey


def obj(name, namespace=None):
    meta = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


# -- meta_namespace_key_func ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("o", "key"),
    [
        (obj("web", "default"), "default/web"),
        (obj("node-1"), "node-1"),
        (obj("node-1", ""), "node-1"),
        (obj("node-1", None), "node-1"),
        ({"metadata": {"name": "n", "namespace": None}}, "n"),
        (ExplicitKey("ns/explicit"), "ns/explicit"),
        (ExplicitKey("anything/at/all"), "anything/at/all"),
    ],
)
def test_meta_namespace_key_func(o, key):
    got = meta_namespace_key_func(o)
    assert got == key
    assert type(got) is str


@pytest.mark.parametrize(
    ("o", "fragment"),
    [
        (None, "expected a dict, got NoneType"),
        ("default/web", "expected a dict, got str"),
        (42, "expected a dict, got int"),
        ([obj("a")], "expected a dict, got list"),
        ({}, "'metadata' is missing"),
        ({"kind": "Pod"}, "'metadata' is missing"),
        ({"metadata": None}, "'metadata' is missing"),
        ({"metadata": "x"}, "'metadata' is a str, not a dict"),
        ({"metadata": {}}, "'metadata.name' is missing or empty"),
        ({"metadata": {"namespace": "default"}}, "'metadata.name' is missing or empty"),
        ({"metadata": {"name": ""}}, "'metadata.name' is missing or empty"),
        ({"metadata": {"name": 7}}, "'metadata.name' is a int, not a str"),
        ({"metadata": {"name": "a/b"}}, "'metadata.name' 'a/b' contains '/'"),
        ({"metadata": {"name": "a", "namespace": "x/y"}}, "'metadata.namespace' 'x/y' contains"),
        ({"metadata": {"name": "a", "namespace": 3}}, "'metadata.namespace' is a int"),
        (DeletedFinalStateUnknown("ns/a", None), "use deletion_handling_meta_namespace_key_func"),
    ],
)
def test_meta_namespace_key_func_rejects_bad_objects(o, fragment):
    with pytest.raises(KeyFuncError) as info:
        meta_namespace_key_func(o)
    assert fragment in str(info.value)
    assert str(info.value).startswith("couldn't create key for object: ")
    assert info.value.obj is o
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, InformersError)


def test_explicit_key_is_a_str():
    k = ExplicitKey("ns/name")
    assert isinstance(k, str)
    assert k == "ns/name"
    assert hash(k) == hash("ns/name")


def test_dict_subclasses_are_accepted():
    class D(dict):
        pass

    assert meta_namespace_key_func(D(metadata=D(name="n", namespace="ns"))) == "ns/n"


# -- tombstones -------------------------------------------------------------------------------


def test_deleted_final_state_unknown_is_frozen_and_compares_by_value():
    t = DeletedFinalStateUnknown("ns/a", obj("a", "ns"))
    assert t.key == "ns/a"
    assert t.obj == obj("a", "ns")
    assert t == DeletedFinalStateUnknown("ns/a", obj("a", "ns"))
    assert t != DeletedFinalStateUnknown("ns/a", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.key = "other"  # type: ignore[misc]


def test_deletion_handling_key_func_unwraps_tombstones():
    assert deletion_handling_meta_namespace_key_func(DeletedFinalStateUnknown("k", None)) == "k"
    assert deletion_handling_meta_namespace_key_func(
        DeletedFinalStateUnknown("ns/b", obj("stale", "other"))
    ) == "ns/b"
    assert deletion_handling_meta_namespace_key_func(obj("a", "ns")) == "ns/a"
    assert deletion_handling_meta_namespace_key_func(ExplicitKey("x")) == "x"
    with pytest.raises(KeyFuncError, match="'metadata' is missing"):
        deletion_handling_meta_namespace_key_func({})


# -- split_meta_namespace_key -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "parts"),
    [
        ("name", ("", "name")),
        ("ns/name", ("ns", "name")),
        ("/name", ("", "name")),  # as client-go
        (ExplicitKey("ns/n"), ("ns", "n")),
    ],
)
def test_split_meta_namespace_key(key, parts):
    assert split_meta_namespace_key(key) == parts


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("a/b/c", 'unexpected key format: "a/b/c"'),
        ("a/b/c/d", 'unexpected key format: "a/b/c/d"'),
        ("", 'unexpected key format: "" (empty name)'),
        ("ns/", 'unexpected key format: "ns/" (empty name)'),
        ("/", 'unexpected key format: "/" (empty name)'),
    ],
)
def test_split_meta_namespace_key_rejects_malformed_keys(key, message):
    with pytest.raises(ValueError) as info:
        split_meta_namespace_key(key)
    assert str(info.value) == message
    assert isinstance(info.value, KeyFuncError)


def test_split_meta_namespace_key_rejects_non_strings():
    with pytest.raises(KeyFuncError, match="is a int, not a str"):
        split_meta_namespace_key(5)  # type: ignore[arg-type]


_segment = st.text(
    alphabet=st.characters(blacklist_characters="/", blacklist_categories=("Cs",)), min_size=1
)


@given(name=_segment, namespace=st.one_of(st.just(""), _segment))
def test_key_round_trips_through_split(name, namespace):
    key = meta_namespace_key_func(obj(name, namespace))
    assert split_meta_namespace_key(key) == (namespace, name)


# -- meta_namespace_index_func ----------------------------------------------------------------


def test_namespace_index_constant():
    assert NAMESPACE_INDEX == "namespace"


@pytest.mark.parametrize(
    ("o", "values"),
    [
        (obj("a", "default"), ["default"]),
        (obj("a"), [""]),
        (obj("a", ""), [""]),
        ({"metadata": {}}, [""]),  # no name needed to know the namespace
    ],
)
def test_meta_namespace_index_func(o, values):
    assert meta_namespace_index_func(o) == values


@pytest.mark.parametrize(
    ("o", "fragment"),
    [
        (5, "object has no meta: expected a dict, got int"),
        ({}, "object has no meta: 'metadata' is missing"),
        ({"metadata": []}, "object has no meta: 'metadata' is a list, not a dict"),
        ({"metadata": {"namespace": 1}}, "'metadata.namespace' is a int, not a str"),
    ],
)
def test_meta_namespace_index_func_rejects_bad_objects(o, fragment):
    with pytest.raises(KeyFuncError) as info:
        meta_namespace_index_func(o)
    assert fragment in str(info.value)
