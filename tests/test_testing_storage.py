"""Storage of the embedded API server (informers/testing/storage.py): one resourceVersion
counter, state reconstruction at any retained version, bounded history and compaction,
observed through the official client."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from informers.testing import ApiServer


def cm(name: str, value: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"v": value}}


def test_every_retained_version_lists_exactly_its_state():
    rng = random.Random(7)
    with ApiServer() as server:
        core = client.CoreV1Api(server.api_client())
        history: list[tuple[str, dict[str, str]]] = []
        for step in range(40):
            names = [c["metadata"]["name"] for c in server.list("configmaps", "default")]
            choice = rng.random()
            if not names or choice < 0.4:
                server.create(cm(f"c{rng.randrange(100):02d}-{step}", str(step)))
            elif choice < 0.75:
                name = rng.choice(names)
                server.patch("configmaps", "default", name, {"data": {"v": str(step)}})
            else:
                server.delete("configmaps", "default", rng.choice(names))
            state = {c["metadata"]["name"]: c["data"]["v"]
                     for c in server.list("configmaps", "default")}
            history.append((server.resource_version, state))
        for rv, state in history:
            listed = core.list_namespaced_config_map("default", resource_version=rv,
                                                     resource_version_match="Exact")
            assert listed.metadata.resource_version == rv
            assert {c.metadata.name: c.data["v"] for c in listed.items} == state
            assert [c.metadata.name for c in listed.items] == sorted(state)


def test_objects_keep_the_version_of_their_last_write():
    with ApiServer() as server:
        core = client.CoreV1Api(server.api_client())
        a = server.create(cm("a", "1"))
        b = server.create(cm("b", "1"))
        a2 = server.patch("configmaps", "default", "a", {"data": {"v": "2"}})
        listed = core.list_namespaced_config_map("default")
        versions = {c.metadata.name: c.metadata.resource_version for c in listed.items}
        assert versions == {"a": a2["metadata"]["resourceVersion"],
                            "b": b["metadata"]["resourceVersion"]}
        assert int(a["metadata"]["resourceVersion"]) < int(b["metadata"]["resourceVersion"]) \
            < int(a2["metadata"]["resourceVersion"]) == int(listed.metadata.resource_version)


def test_history_limit_bounds_each_resource_separately():
    with ApiServer(history_limit=3) as server:
        core = client.CoreV1Api(server.api_client())
        start = server.resource_version
        versions = [server.create(cm(f"c{i}", "x"))["metadata"]["resourceVersion"]
                    for i in range(5)]
        server.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
        # Changes c3, c4 and c5 are retained: lists from versions[1] on can be rebuilt.
        ok = core.list_namespaced_config_map("default", resource_version=versions[1],
                                             resource_version_match="Exact")
        assert [c.metadata.name for c in ok.items] == ["c0", "c1"]
        with pytest.raises(ApiException) as info:
            core.list_namespaced_config_map("default", resource_version=versions[0],
                                            resource_version_match="Exact")
        assert info.value.status == 410
        # The watch window of configmaps starts after the last dropped change (c1).
        resp = core.list_namespaced_config_map("default", watch=True, resource_version=start,
                                               _preload_content=False, _request_timeout=10)
        error = json.loads(resp.data.splitlines()[0])
        assert error["object"]["message"] == (
            f"too old resource version: {start} ({versions[1]})")
        # Secrets had one change only: their history still reaches back to the start.
        secrets = client.CoreV1Api(server.api_client()).list_namespaced_secret(
            "default", resource_version=start, resource_version_match="Exact")
        assert secrets.items == []


def test_compaction_keeps_the_current_version_servable():
    with ApiServer() as server:
        core = client.CoreV1Api(server.api_client())
        server.create(cm("a", "1"))
        at = server.compact()
        assert at == server.resource_version
        listed = core.list_namespaced_config_map("default", resource_version=at,
                                                 resource_version_match="Exact")
        assert [c.metadata.name for c in listed.items] == ["a"]
        after = server.create(cm("b", "1"))
        resp = core.list_namespaced_config_map("default", watch=True, resource_version=at,
                                               timeout_seconds=1, _preload_content=False,
                                               _request_timeout=10)
        events = [json.loads(line) for line in resp.data.splitlines()]
        assert [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in events] == [
            ("ADDED", after["metadata"]["resourceVersion"])]
