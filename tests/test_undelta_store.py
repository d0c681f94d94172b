"""Tests of informers.undelta_store.UndeltaStore (port of client-go undelta_store_test.go)."""

from __future__ import annotations

import threading

import pytest

from informers.errors import KeyFuncError
from informers.undelta_store import UndeltaStore


def mk(name, val, namespace="ns"):
    return {"metadata": {"name": name, "namespace": namespace}, "val": val}


class Recorder:
    def __init__(self):
        self.calls = []
        self.lock = threading.Lock()

    def __call__(self, objs):
        with self.lock:
            self.calls.append(objs)


def test_add_and_update_push_the_full_state():
    push = Recorder()
    u = UndeltaStore(push)
    u.add(mk("a", 2))
    u.update(mk("a", 1))
    assert push.calls == [[mk("a", 2)], [mk("a", 1)]]


def test_delete_pushes_the_full_state():
    push = Recorder()
    u = UndeltaStore(push)
    u.add(mk("a", 2))
    u.add(mk("b", 3))
    u.delete(mk("a", ""))
    assert push.calls[-1] == [mk("b", 3)]
    u.delete(mk("b", ""))
    assert push.calls[-1] == []
    assert len(push.calls) == 4


def test_delete_of_absent_object_still_pushes_once():
    push = Recorder()
    u = UndeltaStore(push)
    u.delete(mk("nope", 0))
    assert push.calls == [[]]


def test_replace_pushes_once():
    push = Recorder()
    u = UndeltaStore(push)
    u.add(mk("old", 0))
    u.replace([mk("a", 1), mk("b", 2)], "5")
    assert len(push.calls) == 2
    assert sorted(o["metadata"]["name"] for o in push.calls[-1]) == ["a", "b"]
    assert u.last_store_sync_resource_version() == "5"


def test_reads_and_resync_do_not_push():
    def push(objs):
        raise AssertionError("unexpected push")

    u = UndeltaStore(push)
    assert u.list() == []
    assert u.list_keys() == []
    assert u.get(mk("a", "")) is None
    assert u.get_by_key("ns/a") is None
    assert len(u) == 0
    assert "ns/a" not in u
    u.resync()


def test_reads_see_the_stored_objects():
    u = UndeltaStore(lambda objs: None)
    u.add(mk("a", 1))
    u.add(mk("n", 2, namespace=""))
    assert sorted(u.list_keys()) == ["n", "ns/a"]
    assert u.get(mk("a", None)) == mk("a", 1)
    assert u.get_by_key("n") == mk("n", 2, namespace="")
    assert "ns/a" in u
    assert len(u) == 2


def test_each_push_gets_a_fresh_list():
    push = Recorder()
    u = UndeltaStore(push)
    u.add(mk("a", 1))
    push.calls[0].append("garbage")
    u.add(mk("b", 1))
    assert len(push.calls[1]) == 2
    assert "garbage" not in push.calls[1]


def test_custom_key_func():
    push = Recorder()
    u = UndeltaStore(push, key_func=lambda o: o["id"])
    u.add({"id": "x", "v": 1})
    u.update({"id": "x", "v": 2})
    assert push.calls[-1] == [{"id": "x", "v": 2}]


def test_failed_write_does_not_push():
    push = Recorder()
    u = UndeltaStore(push)
    for call in (u.add, u.update, u.delete, lambda o: u.replace([mk("a", 1), o])):
        with pytest.raises(KeyFuncError):
            call({"no": "metadata"})
    assert push.calls == []
    assert u.list() == []


def test_push_exception_propagates_after_the_write():
    def push(objs):
        raise RuntimeError("consumer down")

    u = UndeltaStore(push)
    with pytest.raises(RuntimeError, match="consumer down"):
        u.add(mk("a", 1))
    assert u.list_keys() == ["ns/a"]


def test_concurrent_writers_push_once_per_write_and_last_push_is_complete():
    push = Recorder()
    u = UndeltaStore(push)
    threads_n, per_thread = 4, 50

    def writer(t):
        for i in range(per_thread):
            u.add(mk(f"t{t}-{i}", i))

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(push.calls) == threads_n * per_thread
    # Each push is a state the store really had: sizes never exceed the writes so far and
    # the largest push holds everything.
    assert max(len(c) for c in push.calls) == threads_n * per_thread
    assert all(1 <= len(c) <= threads_n * per_thread for c in push.calls)
