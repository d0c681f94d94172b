"""Strategic merge patch over HTTP on both servers (the embedded one held to kube-apiserver
v1.36.3): lists merge by the schemas' merge keys, the ``$patch``,
``$deleteFromPrimitiveList`` and ``$setElementOrder`` directives, and the errors."""

from __future__ import annotations

from wire import call

SMP = "application/strategic-merge-patch+json"


def deployment(name: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "finalizers": ["example.com/a", "example.com/b"]},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}}, "spec": {"containers": [
                {"name": "a", "image": "registry.invalid/a:1",
                 "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}],
                 "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                {"name": "b", "image": "registry.invalid/b:1"}]}}}}


def spec(containers: object, **fields: object) -> dict:
    return {"spec": {"template": {"spec": {"containers": containers, **fields}}}}


def patch(server, name: str, body) -> tuple[int, dict]:
    return call(server, "PATCH",
                f"/apis/apps/v1/namespaces/{server.namespace}/deployments/{name}", body,
                content_type=SMP)


def names(items: list[dict]) -> list:
    return [item.get("name", item.get("containerPort")) for item in items]


def finish(server, name: str) -> None:
    patch(server, name, {"metadata": {"finalizers": None}})


def test_a_strategic_merge_patch_merges_containers_by_name(any_api_server):
    s = any_api_server
    s.create(deployment("p"))
    try:
        code, got = patch(s, "p", spec([
            {"name": "b", "image": "registry.invalid/b:2"},
            {"name": "a", "env": [{"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}]}]))
        assert code == 200, got
        containers = got["spec"]["template"]["spec"]["containers"]
        # the patch's items first, in its order (upstream normalizeElementOrder)
        assert names(containers) == ["b", "a"]
        assert [c["image"] for c in containers] == ["registry.invalid/b:2", "registry.invalid/a:1"]
        assert [(e["name"], e["value"]) for e in containers[1]["env"]] == [
            ("X", "1"), ("Y", "3"), ("Z", "4")]
        assert names(containers[1]["ports"]) == [80, 53]
    finally:
        finish(s, "p")


def test_strategic_merge_patch_directives(any_api_server):
    s = any_api_server
    s.create(deployment("p"))
    try:
        code, got = patch(s, "p", {
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]},
            **spec([{"name": "a", "env": [{"name": "X", "$patch": "delete"}]}])})
        assert code == 200, got
        assert got["metadata"]["finalizers"] == ["example.com/b"]
        containers = got["spec"]["template"]["spec"]["containers"]
        assert [e["name"] for e in containers[0]["env"]] == ["Y"]
        code, got = patch(s, "p", {"metadata": {"finalizers": ["example.com/c"]}})
        assert got["metadata"]["finalizers"] == ["example.com/c", "example.com/b"]
        body = spec([{"name": "a", "image": "registry.invalid/a:2"}])
        body["spec"]["template"]["spec"]["$setElementOrder/containers"] = [
            {"name": "b"}, {"name": "a"}]
        code, got = patch(s, "p", body)
        assert code == 200, got
        assert names(got["spec"]["template"]["spec"]["containers"]) == ["b", "a"]
        patch(s, "p", {"metadata": {"labels": {"a": "1"}}})
        code, got = patch(s, "p", {"metadata": {"labels": {"$patch": "replace", "k": "v"}}})
        assert (code, got["metadata"]["labels"]) == (200, {"k": "v"})
    finally:
        finish(s, "p")


def test_strategic_merge_patch_errors(any_api_server):
    s = any_api_server
    s.create(deployment("p"))
    try:
        code, got = patch(s, "p", spec([{"image": "registry.invalid/x"}]))
        assert (code, got.get("reason"), got.get("message")) == (
            500, None, "map: map[image:registry.invalid/x] does not contain declared merge "
            "key: name")
        code, got = patch(s, "p", {"metadata": {"$deleteFromPrimitiveListfinalizers": ["x"]}})
        assert (code, got.get("reason"), got.get("message")) == (
            400, "BadRequest", "invalid patch format of primitive list")
        patch(s, "p", {"metadata": {"labels": {"a": "1"}}})
        code, got = patch(s, "p", {"metadata": {"labels": {"$patch": "bogus"}}})
        assert (code, got.get("reason"), got.get("message")) == (
            500, None, "unknown patch type: bogus in map: map[$patch:bogus]")
    finally:
        finish(s, "p")
