"""informers.shard.list_watch on the embedded server, with the shard selector honoured
(ShardedListAndWatch on, the default) and ignored (the gate off): either way the informer's
cache holds exactly the member's share, and a change of ranges relists."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from informers.client import list_watch_from_client
from informers.list_watch import ListOptions
from informers.shard.list_watch import ShardedListWatch
from informers.shard.ranges import RangeSet, assign, key_hash
from informers.sharding import NAMESPACE_KEY, UID_KEY, fnv1a_64
from informers.shared_informer import SharedIndexInformer
from informers.testing import ApiServer

NAMESPACES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
"""Namespaces whose hashes fall on both halves: delta, echo and hotel below 2**63."""
LOWER, UPPER = assign(["a", "b"])["a"], assign(["a", "b"])["b"]


@pytest.fixture(scope="module", params=["honoured", "ignored"])
def sharded_server(request: pytest.FixtureRequest) -> Iterator[tuple[ApiServer, bool]]:
    honoured = request.param == "honoured"
    with ApiServer(feature_gates={"ShardedListAndWatch": honoured}) as srv:
        for ns in NAMESPACES:
            srv.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            for j in range(2):
                srv.create({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": f"cm-{j}", "namespace": ns}})
        yield srv, honoured


def share(ranges: RangeSet) -> set[str]:
    return {f"{ns}/cm-{j}" for ns in NAMESPACES for j in range(2)
            if fnv1a_64(ns.encode()) in ranges}


def test_the_halves_split_these_namespaces() -> None:
    # Not vacuous: both halves hold some of the test's namespaces.
    assert len(share(LOWER)) == 6 and len(share(UPPER)) == 10


def test_list_sends_the_selector_and_filters_when_the_server_ignored_it(
        sharded_server: tuple[ApiServer, bool], caplog: pytest.LogCaptureFixture) -> None:
    srv, honoured = sharded_server
    api = srv.api_client()
    try:
        lw = ShardedListWatch(list_watch_from_client(api, "configmaps"), NAMESPACE_KEY, LOWER)
        with caplog.at_level(logging.WARNING, logger="informers.shard.list_watch"):
            result = lw.list(ListOptions())
        names = {f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in result.items}
        assert names == share(LOWER)
        assert lw.server_filters is honoured
        if honoured:
            assert result.shard_info == {"selector": lw.selector()}
            assert lw.stats.filtered == 0 and lw.stats.lists_unfiltered == 0
            assert not caplog.records
        else:
            assert result.shard_info is None
            assert lw.stats.filtered == 10 and lw.stats.lists_unfiltered == 1
            assert "ignored shardSelector" in caplog.records[0].getMessage()
        assert lw.selector() == (
            "shardRange(object.metadata.namespace, '0x0000000000000000', "
            "'0x8000000000000000')")
    finally:
        api.close()


def wait_for(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_informer_holds_the_share_and_relists_when_the_ranges_change(
        sharded_server: tuple[ApiServer, bool]) -> None:
    srv, _ = sharded_server
    api = srv.api_client()
    lw = ShardedListWatch(list_watch_from_client(api, "configmaps"), NAMESPACE_KEY, LOWER)
    informer = SharedIndexInformer(lw)
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,))
    thread.start()
    try:
        wait_for(informer.has_synced)
        assert set(informer.get_store().list_keys()) == share(LOWER)
        # A watch event outside the ranges never reaches the cache.
        srv.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "late", "namespace": "delta"}})
        srv.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "late", "namespace": "alpha"}})
        late = {"delta/late", "alpha/late"}
        expected = share(LOWER) | {k for k in late
                                   if fnv1a_64(k.split("/")[0].encode()) in LOWER}
        wait_for(lambda: set(informer.get_store().list_keys()) == expected)
        assert lw.set_ranges(UPPER) is True
        assert lw.set_ranges(UPPER) is False
        expected = share(UPPER) | {k for k in late
                                   if fnv1a_64(k.split("/")[0].encode()) in UPPER}
        wait_for(lambda: set(informer.get_store().list_keys()) == expected)
    finally:
        stop.set()
        thread.join(5)
        api.close()
        for ns in ("delta", "alpha"):
            srv.delete("configmaps", ns, "late")
    assert not thread.is_alive()


def test_an_empty_range_set_holds_nothing(sharded_server: tuple[ApiServer, bool]) -> None:
    srv, _ = sharded_server
    api = srv.api_client()
    try:
        lw = ShardedListWatch(list_watch_from_client(api, "configmaps"), UID_KEY)
        assert lw.list(ListOptions()).items == []
        assert lw.selector() == (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001')")
    finally:
        api.close()


def test_key_hash_reads_namespace_or_uid() -> None:
    obj = {"metadata": {"namespace": "ns", "uid": "u-1"}}
    assert key_hash(obj, NAMESPACE_KEY) == fnv1a_64(b"ns")
    assert key_hash(obj, UID_KEY) == fnv1a_64(b"u-1")
    with pytest.raises(ValueError, match="unsupported shard key"):
        ShardedListWatch(list_watch_from_client(None, "configmaps"), "object.metadata.name")


def test_a_compact_informer_holds_the_share_too(sharded_server: tuple[ApiServer, bool]) -> None:
    srv, _ = sharded_server
    api = srv.api_client()
    lw = ShardedListWatch(list_watch_from_client(api, "configmaps"), NAMESPACE_KEY, UPPER)
    informer = SharedIndexInformer(lw, compact=True)
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,))
    thread.start()
    try:
        wait_for(informer.has_synced)
        assert set(informer.get_store().list_keys()) == share(UPPER)
    finally:
        stop.set()
        thread.join(5)
        api.close()
    assert not thread.is_alive()
