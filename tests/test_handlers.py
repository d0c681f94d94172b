"""Tests for informers.handlers: the protocol, the function adapter and the filtering handler."""

from __future__ import annotations

import functools

from informers.handlers import (
    FilteringResourceEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
)
from informers.keys import DeletedFinalStateUnknown


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def on_add(self, obj, is_in_initial_list):
        self.events.append(("add", obj, is_in_initial_list))

    def on_update(self, old, new):
        self.events.append(("update", old, new))

    def on_delete(self, obj):
        self.events.append(("delete", obj))


def test_recorder_and_funcs_satisfy_the_protocol() -> None:
    assert isinstance(Recorder(), ResourceEventHandler)
    assert isinstance(ResourceEventHandlerFuncs(), ResourceEventHandler)
    assert isinstance(FilteringResourceEventHandler(bool, Recorder()), ResourceEventHandler)
    assert not isinstance(object(), ResourceEventHandler)


def test_funcs_missing_functions_are_noops() -> None:
    h = ResourceEventHandlerFuncs()
    assert h.on_add({"a": 1}, True) is None
    assert h.on_update(1, 2) is None
    assert h.on_delete(3) is None


def test_funcs_on_add_with_one_parameter_gets_only_the_object() -> None:
    got: list[tuple] = []
    h = ResourceEventHandlerFuncs(on_add=lambda obj: got.append((obj,)))
    h.on_add("x", True)
    assert got == [("x",)]


def test_funcs_on_add_with_two_parameters_gets_the_flag() -> None:
    got: list[tuple] = []

    def add(obj, is_in_initial_list):
        got.append((obj, is_in_initial_list))

    h = ResourceEventHandlerFuncs(on_add=add)
    h.on_add("x", True)
    h.on_add("y", False)
    assert got == [("x", True), ("y", False)]


def test_funcs_on_add_signature_variants() -> None:
    got: list[tuple] = []

    def star(*args):
        got.append(("star", *args))

    def defaulted(obj, flag=None):
        got.append(("defaulted", obj, flag))

    def kwonly(obj, *, flag=None):
        got.append(("kwonly", obj, flag))

    class Bound:
        def add(self, obj):
            got.append(("bound", obj))

    partial = functools.partial(lambda prefix, obj: got.append((prefix, obj)), "partial")
    for fn in (star, defaulted, kwonly, Bound().add, partial):
        ResourceEventHandlerFuncs(on_add=fn).on_add("o", True)
    # A builtin taking one argument is called with the object only.
    ResourceEventHandlerFuncs(on_add=got.append).on_add("builtin", True)
    assert got == [
        ("star", "o", True),
        ("defaulted", "o", True),
        ("kwonly", "o", None),
        ("bound", "o"),
        ("partial", "o"),
        "builtin",
    ]


def test_funcs_update_and_delete() -> None:
    got: list[tuple] = []
    h = ResourceEventHandlerFuncs(
        on_update=lambda old, new: got.append(("u", old, new)),
        on_delete=lambda obj: got.append(("d", obj)),
    )
    tomb = DeletedFinalStateUnknown("ns/a", None)
    h.on_update(1, 2)
    h.on_delete(tomb)
    assert got == [("u", 1, 2), ("d", tomb)]
    assert "on_update=" in repr(h) and "on_add" not in repr(h)


def _pod(name: str, app: str) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "labels": {"app": app}}}


def _is_web(obj) -> bool:
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    return obj is not None and obj["metadata"]["labels"].get("app") == "web"


def test_filtering_handler_transitions() -> None:
    inner = Recorder()
    h = FilteringResourceEventHandler(_is_web, inner)
    web1, web2 = _pod("a", "web"), _pod("a", "web")
    db1, db2 = _pod("a", "db"), _pod("a", "db")

    h.on_add(web1, True)
    h.on_add(db1, True)
    h.on_update(web1, web2)  # both pass -> update
    h.on_update(db1, web1)  # only new passes -> add(new, False)
    h.on_update(web2, db2)  # only old passes -> delete(old)
    h.on_update(db1, db2)  # neither -> nothing
    h.on_delete(web1)
    h.on_delete(db1)
    tomb = DeletedFinalStateUnknown("ns/a", web2)
    h.on_delete(tomb)
    h.on_delete(DeletedFinalStateUnknown("ns/a", None))

    assert inner.events == [
        ("add", web1, True),
        ("update", web1, web2),
        ("add", web1, False),
        ("delete", web2),
        ("delete", web1),
        ("delete", tomb),
    ]
