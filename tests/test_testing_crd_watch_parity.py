"""Watches of custom resources across a change of their CRD's spec, on both servers (the
embedded one held to kube-apiserver v1.36.3, whose answers these are).

kube-apiserver drops a custom resource's storage when its CRD's spec changes
(apiextensions-apiserver ``customresource_handler.go`` ``updateCustomResourceDefinition``):
the new storage's watch cache starts at the current resourceVersion, so a watch from before
the change is a 410 and never replays bodies decoded with the old schema; every event it
sends afterwards is decoded, and defaulted, with the new one. Watches open at the change end
(the old storage's watchers are terminated: the stream just ends).
"""

from __future__ import annotations

import copy
import threading
import time

from test_testing_crds import CRDS, crd_body, install, new_group, ok, uninstall
from wire import watch_lines

PLAIN: dict = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "size": {"type": "integer"}, "color": {"type": "string"}}}}}


def test_a_watch_from_before_a_schema_default_is_expired_and_later_events_are_defaulted(
        any_api_server):
    s = any_api_server
    group = new_group()
    crd = crd_body(group, schema=PLAIN)
    install(s, crd)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets"
        made = ok(s, "POST", path, {"apiVersion": f"{group}/v1", "kind": "Widget",
                                    "metadata": {"name": "w"}, "spec": {"size": 1}})
        made["spec"]["size"] = 2
        updated = ok(s, "PUT", f"{path}/w", made)
        current = ok(s, "GET", f"{CRDS}/{crd['metadata']['name']}")
        schema = copy.deepcopy(PLAIN)
        schema["properties"]["spec"]["properties"]["color"]["default"] = "red"
        current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema
        changed = ok(s, "PUT", f"{CRDS}/{crd['metadata']['name']}", current)
        deadline = time.monotonic() + 10
        while ok(s, "GET", f"{path}/w")["spec"].get("color") != "red":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        since = changed["metadata"]["resourceVersion"]
        for rv in (made, updated):
            old = rv["metadata"]["resourceVersion"]
            assert watch_lines(s, path, 1, query=[("resourceVersion", old)]) == [
                {"type": "ERROR", "object": {
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": f"too old resource version: {old} ({since})",
                    "reason": "Expired", "code": 410}}]
        [added] = watch_lines(s, path, 1, query=[("resourceVersion", "0")])
        assert (added["type"], added["object"]["spec"]) == ("ADDED", {"size": 2, "color": "red"})
        ok(s, "PATCH", f"{path}/w", {"metadata": {"labels": {"a": "b"}}},
           "application/merge-patch+json")
        [modified] = watch_lines(s, path, 1, query=[("resourceVersion", since)])
        assert (modified["type"], modified["object"]["spec"]) == (
            "MODIFIED", {"size": 2, "color": "red"})
    finally:
        uninstall(s, crd["metadata"]["name"])


def test_an_open_watch_ends_when_the_crd_spec_changes(any_api_server):
    s = any_api_server
    group = new_group()
    crd = crd_body(group, schema=PLAIN)
    install(s, crd)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets"
        ok(s, "POST", path, {"apiVersion": f"{group}/v1", "kind": "Widget",
                             "metadata": {"name": "w"}, "spec": {"size": 1}})
        seen: dict = {}

        def watch() -> None:  # up to 5 events or the 10 s timeoutSeconds of watch_lines
            seen["events"] = watch_lines(s, path, 5)
            seen["ended"] = time.monotonic()

        watcher = threading.Thread(target=watch)
        watcher.start()
        time.sleep(0.5)
        current = ok(s, "GET", f"{CRDS}/{crd['metadata']['name']}")
        current["spec"]["versions"][0]["additionalPrinterColumns"] = [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]
        ok(s, "PUT", f"{CRDS}/{crd['metadata']['name']}", current)
        changed = time.monotonic()
        watcher.join(15)
        assert [(e["type"], e["object"]["spec"]) for e in seen["events"]] == [
            ("ADDED", {"size": 1})]
        assert seen["ended"] - changed < 5  # ended by the change, not by its timeout
    finally:
        uninstall(s, crd["metadata"]["name"])
