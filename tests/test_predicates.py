"""Tests for informers.controller.predicates: which events each predicate passes."""

from __future__ import annotations

import pytest

from informers.controller import (
    And,
    AnnotationChangedPredicate,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    Not,
    Or,
    Predicate,
    PredicateFilteredHandler,
    PredicateFuncs,
    ResourceVersionChangedPredicate,
    new_predicate_funcs,
)
from informers.keys import DeletedFinalStateUnknown


def obj(name="a", generation=1, rv="10", labels=None, annotations=None, **extra):
    meta = {"name": name, "namespace": "ns", "generation": generation, "resourceVersion": rv}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta, **extra}


class Recorder:
    def __init__(self):
        self.events = []

    def on_add(self, o, is_in_initial_list):
        self.events.append(("add", o["metadata"]["name"], is_in_initial_list))

    def on_update(self, old, new):
        self.events.append(("update", old["metadata"]["name"], new["metadata"]["name"]))

    def on_delete(self, o):
        self.events.append(("delete", o))


class Const(Predicate):
    def __init__(self, value, log=None, name=""):
        self.value = value
        self.log = log if log is not None else []
        self.name = name

    def create(self, o):
        self.log.append(self.name)
        return self.value

    def update(self, old, new):
        self.log.append(self.name)
        return self.value

    def delete(self, o):
        self.log.append(self.name)
        return self.value


T, F = Const(True), Const(False)


def test_base_predicate_passes_everything():
    p = Predicate()
    assert (p.create(obj()), p.update(obj(), obj()), p.delete(obj())) == (True, True, True)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (obj(generation=1), obj(generation=2), True),
        (obj(generation=1, rv="1"), obj(generation=1, rv="2", status={"x": 1}), False),
        (obj(generation=None), obj(generation=None), False),
        ({"metadata": {"name": "a"}}, obj(generation=1), True),
        (None, obj(), False),
        (obj(), "junk", False),
    ],
)
def test_generation_changed(old, new, expected):
    p = GenerationChangedPredicate()
    assert p.update(old, new) is expected
    assert p.create(new) is True
    assert p.delete(new) is True


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (obj(rv="1"), obj(rv="2"), True),
        (obj(rv="5", generation=1), obj(rv="5", generation=2), False),  # a resync: same state
        (None, obj(), False),
    ],
)
def test_resource_version_changed(old, new, expected):
    assert ResourceVersionChangedPredicate().update(old, new) is expected


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (obj(labels={"a": "1"}), obj(labels={"a": "2"}), True),
        (obj(labels={"a": "1"}), obj(labels={"a": "1"}, generation=9), False),
        (obj(labels=None), obj(labels={}), False),
        (obj(labels=None), obj(labels={"a": "1"}), True),
        (obj(labels={"a": "1"}), obj(labels=None), True),
        (obj(), None, False),
    ],
)
def test_labels_changed(old, new, expected):
    assert LabelChangedPredicate().update(old, new) is expected


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (obj(annotations={"a": "1"}), obj(annotations={"a": "2"}), True),
        (obj(annotations={"a": "1"}, labels={"x": "1"}),
         obj(annotations={"a": "1"}, labels={"x": "2"}), False),
        (obj(annotations={}), obj(annotations=None), False),
        (obj(), {"metadata": "junk"}, False),
    ],
)
def test_annotations_changed(old, new, expected):
    assert AnnotationChangedPredicate().update(old, new) is expected


def test_and_or_not():
    o = obj()
    assert And(T, T).create(o) is True
    assert And(T, F).update(o, o) is False
    assert And().delete(o) is True
    assert Or(F, T).create(o) is True
    assert Or(F, F).update(o, o) is False
    assert Or().delete(o) is False
    assert Not(F).create(o) is True
    assert Not(T).delete(o) is False


def test_operators_compose():
    gen, labels = GenerationChangedPredicate(), LabelChangedPredicate()
    either = gen | labels
    both = gen & labels
    neither = ~either
    assert isinstance(either, Or) and isinstance(both, And) and isinstance(neither, Not)
    label_only = (obj(labels={"a": "1"}), obj(labels={"a": "2"}))
    gen_and_label = (obj(labels={"a": "1"}), obj(generation=2, labels={"a": "2"}))
    nothing = (obj(rv="1"), obj(rv="2"))
    assert [either.update(*e) for e in (label_only, gen_and_label, nothing)] == [
        True, True, False]
    assert [both.update(*e) for e in (label_only, gen_and_label, nothing)] == [
        False, True, False]
    assert [neither.update(*e) for e in (label_only, gen_and_label, nothing)] == [
        False, False, True]
    assert repr(either) == "Or(GenerationChangedPredicate(), LabelChangedPredicate())"


def test_and_short_circuits_and_or_too():
    log = []
    a, b = Const(False, log, "a"), Const(True, log, "b")
    assert And(a, b).create(obj()) is False
    assert log == ["a"]
    log.clear()
    assert Or(b, a).create(obj()) is True
    assert log == ["b"]


def test_predicate_funcs():
    p = PredicateFuncs(create=lambda o: o["metadata"]["name"] == "yes",
                       update=lambda old, new: old is not new)
    assert p.create(obj("yes")) is True
    assert p.create(obj("no")) is False
    o = obj()
    assert p.update(o, o) is False
    assert p.update(o, obj()) is True
    assert p.delete(obj("no")) is True  # no delete function: passes


def test_new_predicate_funcs_filters_every_event_on_its_object():
    seen = []

    def only_team_a(o):
        seen.append(o["metadata"]["name"])
        return (o["metadata"].get("labels") or {}).get("team") == "a"

    p = new_predicate_funcs(only_team_a)
    assert p.create(obj("x", labels={"team": "a"})) is True
    assert p.delete(obj("y", labels={"team": "b"})) is False
    assert p.update(obj("old", labels={"team": "b"}), obj("new", labels={"team": "a"})) is True
    assert seen == ["x", "y", "new"]


def test_filtered_handler():
    rec = Recorder()
    h = PredicateFilteredHandler(rec, GenerationChangedPredicate(),
                                 new_predicate_funcs(lambda o: o["metadata"]["name"] != "skip"))
    h.on_add(obj("a"), True)
    h.on_add(obj("skip"), False)
    h.on_update(obj("a", generation=1), obj("a", generation=1))  # no spec change
    h.on_update(obj("a", generation=1), obj("a", generation=2))
    h.on_update(obj("skip", generation=1), obj("skip", generation=2))
    deleted = obj("d")
    h.on_delete(deleted)
    h.on_delete(obj("skip"))
    tomb = DeletedFinalStateUnknown("ns/t", obj("t"))
    h.on_delete(tomb)
    tomb_skip = DeletedFinalStateUnknown("ns/skip", obj("skip"))
    h.on_delete(tomb_skip)
    unknown = DeletedFinalStateUnknown("ns/u", None)
    h.on_delete(unknown)
    assert rec.events == [
        ("add", "a", True),
        ("update", "a", "a"),
        ("delete", deleted),
        ("delete", tomb),  # the handler still gets the tombstone itself
        ("delete", unknown),  # nothing to judge: passed on
    ]


def test_filtered_handler_without_predicates_passes_everything():
    rec = Recorder()
    h = PredicateFilteredHandler(rec)
    h.on_add(obj("a"), False)
    h.on_update(obj("a"), obj("a"))
    assert rec.events == [("add", "a", False), ("update", "a", "a")]
    assert repr(h).startswith("PredicateFilteredHandler(")
