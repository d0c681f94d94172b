"""KEP-5866 sharded list and watch (``shardSelector``), on the embedded server and on the real
kube-apiserver v1.36.3 started with ``--feature-gates=ShardedListAndWatch=true``: the same test,
the same expected values (tests/conftest.py ``any_api_server``).

Which objects a range selects is computed with :mod:`informers.sharding` from the UIDs the
server gave, so the tests hold the server to the client library's hash as well.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest
import wire

from informers import sharding
from informers.testing import ApiServer

HALF = "0x8000000000000000"
LOW = f"shardRange(object.metadata.uid, '0x0000000000000000', '{HALF}')"
HIGH = f"shardRange(object.metadata.uid, '{HALF}', '0x10000000000000000')"


def make_config_maps(server, count: int = 8) -> dict[str, str]:
    """At least ``count`` ConfigMaps in the test's namespace, and more until each half of the
    hash space holds two (UIDs are random): name -> the hash of its UID."""
    hashes: dict[str, str] = {}
    while len(hashes) < count or min(
            len(in_range(hashes, "0x0000000000000000", HALF)),
            len(in_range(hashes, HALF, sharding.HASH_SPACE_END))) < 2:
        assert len(hashes) < 40, hashes
        made = server.create({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": f"cm-{len(hashes)}"}})
        hashes[made["metadata"]["name"]] = "0x" + sharding.hash_field(made["metadata"]["uid"])
    return hashes


def in_range(hashes: dict[str, str], start: str, end: str) -> list[str]:
    return sorted(n for n, h in hashes.items()
                  if not sharding.hex_less(h, start) and sharding.hex_less(h, end))


def list_path(server, selector: str | None, extra: str = "") -> str:
    path = f"/api/v1/namespaces/{server.namespace}/configmaps?"
    if selector is not None:
        path += "shardSelector=" + quote(selector, safe="")
    return path + extra


def names(body: dict) -> list[str]:
    return sorted(item["metadata"]["name"] for item in body["items"])


def watch_events(server, path: str) -> list[tuple[str, str]]:
    """Every event of a 1-second watch on ``path``: (type, name)."""
    code, text = wire.call(server, "GET", path + "&watch=1&timeoutSeconds=1")
    assert code == 200, text
    lines = text.splitlines() if isinstance(text, str) else [json.dumps(text)]
    events = [json.loads(line) for line in lines if line.strip()]
    return [(e["type"], e["object"]["metadata"]["name"]) for e in events]


def test_a_list_by_uid_ranges_partitions_the_collection(any_api_server):
    server = any_api_server
    hashes = make_config_maps(server)
    low = in_range(hashes, "0x0000000000000000", HALF)
    high = in_range(hashes, HALF, sharding.HASH_SPACE_END)

    code, body = wire.call(server, "GET", list_path(server, LOW))
    assert code == 200, body
    assert (names(body), body["metadata"]["shardInfo"]) == (low, {"selector": LOW})
    code, body = wire.call(server, "GET", list_path(server, HIGH))
    assert (names(body), body["metadata"]["shardInfo"]) == (high, {"selector": HIGH})
    assert sorted(low + high) == sorted(hashes)

    # Without the parameter (or with it empty): everything, and no shardInfo.
    for path in (list_path(server, None), list_path(server, "")):
        code, body = wire.call(server, "GET", path)
        assert (names(body), "shardInfo" in body["metadata"]) == (sorted(hashes), False)


def test_or_ed_ranges_and_the_echo_in_canonical_form(any_api_server):
    server = any_api_server
    hashes = make_config_maps(server)
    ordered = sorted(hashes.values())
    # Two ranges that each hold exactly one object: the lowest and the highest hash.
    first = f"shardRange(object.metadata.uid, '{ordered[0]}', '{ordered[1]}')"
    last = f"shardRange(object.metadata.uid, '{ordered[-1]}', '0x10000000000000000')"
    written = f"  {first.replace(', ', ',')}||{last}  "  # spacing as a client may send it

    code, body = wire.call(server, "GET", list_path(server, written))
    assert code == 200, body
    by_hash = {h: n for n, h in hashes.items()}
    assert names(body) == sorted([by_hash[ordered[0]], by_hash[ordered[-1]]])
    assert body["metadata"]["shardInfo"] == {"selector": f"{first} || {last}"}


def test_the_namespace_key_hashes_the_namespace(any_api_server):
    server = any_api_server
    hashes = make_config_maps(server, 2)
    ns_hash = "0x" + sharding.hash_field(server.namespace)
    after = sharding.format_bound(int(ns_hash, 16) + 1)
    inside = f"shardRange(object.metadata.namespace, '{ns_hash}', '{after}')"
    below = f"shardRange(object.metadata.namespace, '0x0000000000000000', '{ns_hash}')"

    code, body = wire.call(server, "GET", list_path(server, inside))
    assert (code, names(body)) == (200, sorted(hashes))
    code, body = wire.call(server, "GET", list_path(server, below))
    assert (code, names(body), body["metadata"]["shardInfo"]) == (
        200, [], {"selector": below})
    code, body = wire.call(server, "GET", list_path(server, f"{below} || {inside}"))
    assert (code, names(body)) == (200, sorted(hashes))


def test_a_paginated_shard_list(any_api_server):
    server = any_api_server
    hashes = make_config_maps(server, 6)
    low = in_range(hashes, "0x0000000000000000", HALF)
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        extra = "&limit=1" + (f"&continue={quote(token)}" if token else "")
        code, body = wire.call(server, "GET", list_path(server, LOW, extra))
        assert code == 200, body
        pages += 1
        seen += names(body)
        assert body["metadata"]["shardInfo"] == {"selector": LOW}
        token = body["metadata"].get("continue", "")
        if not token:
            break
        # The watch cache counts the items left in range, matching the selector or not.
        assert body["metadata"]["remainingItemCount"] >= 1
    assert seen == low
    assert pages >= len(low)


def test_a_watch_with_a_shard_selector(any_api_server):
    server = any_api_server
    start = server.resource_version
    hashes = make_config_maps(server, 6)
    low = in_range(hashes, "0x0000000000000000", HALF)
    high = in_range(hashes, HALF, sharding.HASH_SPACE_END)
    mark = f"&resourceVersion={start}"
    # Changes to an object outside the shard are not seen; inside, they are.
    target = high[0]
    server.patch("configmaps", server.namespace, target, {"data": {"k": "v"}})
    server.delete("configmaps", server.namespace, target)
    with ThreadPoolExecutor(3) as pool:  # three 1-second watches at once
        low_events, both_events, high_events = pool.map(
            lambda selector: watch_events(server, list_path(server, selector, mark)),
            [LOW, f"{LOW} || {HIGH}", HIGH])
    assert sorted(low_events) == [("ADDED", n) for n in low]
    assert sorted(e for e in both_events if e[0] == "ADDED") == [
        ("ADDED", n) for n in sorted(low + high)]
    assert [e for e in high_events if e[1] == target] == [
        ("ADDED", target), ("MODIFIED", target), ("DELETED", target)]
    assert sorted(e for e in high_events if e[1] != target) == [
        ("ADDED", n) for n in high[1:]]


INVALID = [
    ("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
     'invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" '
     '(did you mean "0x0000000000000000"?)'),
    ("shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
     'invalid shard selector: unsupported field path "object.metadata.name"; supported: '
     'object.metadata.uid, object.metadata.namespace'),
    ("foo(1)", 'invalid shard selector: unsupported function "foo"; only shardRange() and || '
     'are allowed'),
    ("shardRange(object.metadata.uid, '0x0000000000000000'",
     "invalid shard selector: CEL parse error: Syntax error: missing ')' at '<EOF>'"),
    ("   ", "invalid shard selector: empty shard selector is not allowed; omit the parameter "
     "for unfiltered lists"),
]


@pytest.mark.parametrize("selector,message", INVALID)
def test_an_invalid_shard_selector_is_a_500(any_api_server, selector, message):
    # registry/generic/registry/store.go returns the parse error unwrapped: a plain error,
    # which the handlers answer 500 with no reason.
    server = any_api_server
    expected = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "code": 500}
    assert wire.call(server, "GET", list_path(server, selector)) == (500, expected)
    assert wire.call(server, "GET", list_path(server, selector, "&watch=1")) == (500, expected)


def test_a_server_without_the_feature_ignores_the_selector():
    # What kube-apiserver v1.36.3 does without --feature-gates=ShardedListAndWatch=true
    # (checked by hand: it parses no selector, valid or not, and answers no shardInfo).
    with ApiServer(feature_gates={"ShardedListAndWatch": False}) as server:
        for i in range(4):
            server.create({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": f"cm-{i}", "namespace": "default"}})
        api = server.api_client()
        try:
            for selector in (LOW, "foo(1)"):
                resp = api.call_api(
                    "GET", f"{server.url}/api/v1/namespaces/default/configmaps?shardSelector="
                    + quote(selector, safe=""),
                    header_params={"Authorization": f"Bearer {server.token}"})
                resp.read()
                body = json.loads(resp.data)
                assert resp.status == 200
                assert (sorted(i["metadata"]["name"] for i in body["items"]),
                        "shardInfo" in body["metadata"]) == (
                            ["cm-0", "cm-1", "cm-2", "cm-3"], False)
        finally:
            api.close()


def test_unknown_feature_gates_are_refused():
    with pytest.raises(ValueError, match=r"^unrecognized feature gate: NoSuchGate$"):
        ApiServer(feature_gates={"NoSuchGate": True})


def test_custom_resources_are_filtered_without_shard_info(any_api_server):
    # kube-apiserver filters custom resources too, but its UnstructuredList does not implement
    # metav1.ShardedListInterface: no shardInfo in their lists.
    from informers.testing.crd_installer import install_crds, uninstall_crds

    server = any_api_server
    group = f"{server.namespace}.shard.example.com"  # unique on the shared control plane
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"widgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                        "openAPIV3Schema": {"type": "object",
                                            "x-kubernetes-preserve-unknown-fields": True}}}]}}
    api = server.api_client()
    try:
        install_crds(api, crds=[crd])
        base = f"/apis/{group}/v1/namespaces/{server.namespace}/widgets"
        hashes = {}
        while min(len(in_range(hashes, "0x0000000000000000", HALF)),
                  len(in_range(hashes, HALF, sharding.HASH_SPACE_END))) < 1:
            assert len(hashes) < 40
            code, made = wire.call(server, "POST", base, {
                "apiVersion": f"{group}/v1", "kind": "Widget",
                "metadata": {"name": f"w-{len(hashes)}"}})
            assert code == 201, made
            hashes[made["metadata"]["name"]] = "0x" + sharding.hash_field(
                made["metadata"]["uid"])
        code, body = wire.call(server, "GET", base + "?shardSelector=" + quote(LOW, safe=""))
        assert (code, names(body)) == (200, in_range(hashes, "0x0000000000000000", HALF))
        assert "shardInfo" not in body["metadata"]
        code, body = wire.call(server, "GET", base + "?shardSelector=foo(1)")
        assert code == 500
    finally:
        uninstall_crds(api, [crd])
        api.close()


def test_deletecollection_honours_the_shard_selector(any_api_server):
    # store.go DeleteCollection lists with the request's ListOptions, shardSelector included.
    server = any_api_server
    hashes = make_config_maps(server, 4)
    code, body = wire.call(server, "DELETE", list_path(server, LOW))
    assert code == 200, body
    assert names(body) == in_range(hashes, "0x0000000000000000", HALF)
    assert [o["metadata"]["name"] for o in server.list("configmaps", server.namespace)] == (
        in_range(hashes, HALF, sharding.HASH_SPACE_END))
