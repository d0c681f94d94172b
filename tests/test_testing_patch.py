"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) of the embedded API server
(informers/testing/patch.py): the RFCs' own examples as pure functions, then through the
official client's patch calls."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from informers.testing.errors import PatchError
from informers.testing.patch import apply_json_patch, apply_merge_patch

# RFC 7386 Appendix A: (target, patch, result)
MERGE_CASES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "result"), MERGE_CASES)
def test_rfc7386_examples(target, patch, result):
    before = json.dumps(target)
    assert apply_merge_patch(target, patch) == result
    assert json.dumps(target) == before  # inputs are never mutated


# RFC 6902 Appendix A (A.1-A.10, A.14, A.16)
JSON_PATCH_CASES = [
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}],
     {"baz": "qux", "foo": "bar"}),
    ({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}],
     {"foo": ["bar", "qux", "baz"]}),
    ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}],
     {"foo": ["bar", "baz"]}),
    ({"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}],
     {"baz": "boo", "foo": "bar"}),
    ({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
     [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
     {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}),
    ({"foo": ["all", "grass", "cows", "eat"]},
     [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
     {"foo": ["all", "cows", "eat", "grass"]}),
    ({"baz": "qux", "foo": ["a", 2, "c"]},
     [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1",
                                                      "value": 2}],
     {"baz": "qux", "foo": ["a", 2, "c"]}),
    ({"foo": "bar"}, [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
     {"foo": "bar", "child": {"grandchild": {}}}),
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
    ({"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
     {"foo": ["bar", ["abc", "def"]]}),
    ({"a": {"b": 1}}, [{"op": "copy", "from": "/a", "path": "/c"}],
     {"a": {"b": 1}, "c": {"b": 1}}),
]


@pytest.mark.parametrize(("target", "ops", "result"), JSON_PATCH_CASES)
def test_rfc6902_examples(target, ops, result):
    before = json.dumps(target)
    assert apply_json_patch(target, ops) == result
    assert json.dumps(target) == before


@pytest.mark.parametrize(("target", "ops", "message"), [
    ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}],
     "test operation failed: value at path \"/baz\" is 'qux', expected 'bar'"),
    ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}],
     'add operation: path "/baz/bat" does not exist'),
    ({"a": 1}, [{"op": "test", "path": "/a", "value": True}],
     "test operation failed: value at path \"/a\" is 1, expected True"),
    ({"a": [1]}, [{"op": "remove", "path": "/a/5"}],
     'remove operation: array index 5 out of bounds in path "/a/5"'),
    ({"a": [1]}, [{"op": "add", "path": "/a/01", "value": 2}],
     'add operation: invalid array index "01" in path "/a/01"'),
    ({}, [{"op": "frobnicate", "path": "/a"}], "unknown JSON patch operation 'frobnicate'"),
    ({}, {"op": "add"}, "a JSON patch must be a list of operations"),
    ({"a": {}}, [{"op": "move", "from": "/a", "path": "/a/b"}],
     'move operation: cannot move "/a" into its own child'),
])
def test_rfc6902_errors(target, ops, message):
    with pytest.raises(PatchError) as info:
        apply_json_patch(target, ops)
    assert str(info.value) == message


@pytest.fixture
def core(api_server: Any, api_client: Any) -> client.CoreV1Api:
    api_server.create({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}},
                       "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    return client.CoreV1Api(api_client)


def test_strategic_merge_patch_is_served_as_a_merge_patch(core):
    # The client sends application/strategic-merge-patch+json for an object patch.
    patched = core.patch_namespaced_pod("p", "default", {
        "metadata": {"labels": {"a": None, "c": "3"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}})
    assert patched.metadata.labels == {"b": "2", "c": "3"}
    assert [c.image for c in patched.spec.containers] == ["nginx:2"]


def test_json_patch_through_the_client(core):
    patched = core.patch_namespaced_pod("p", "default", [
        {"op": "test", "path": "/metadata/labels/a", "value": "1"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "9"},
        {"op": "add", "path": "/metadata/annotations", "value": {"x": "y"}}])
    assert (patched.metadata.labels, patched.metadata.annotations) == ({"a": "9", "b": "2"},
                                                                       {"x": "y"})


def test_merge_patch_content_type_and_resource_version_precondition(core):
    current = core.read_namespaced_pod("p", "default")
    patched = core.patch_namespaced_pod(
        "p", "default", {"metadata": {"labels": {"d": "4"},
                                      "resourceVersion": current.metadata.resource_version}},
        _content_type="application/merge-patch+json")
    assert patched.metadata.labels == {"a": "1", "b": "2", "d": "4"}
    with pytest.raises(ApiException) as info:  # the now stale version is a precondition
        core.patch_namespaced_pod("p", "default", {"metadata": {
            "resourceVersion": current.metadata.resource_version}})
    assert info.value.status == 409


def test_failed_json_patch_is_422_and_changes_nothing(core, api_server):
    before = api_server.resource_version
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod("p", "default", [
            {"op": "replace", "path": "/metadata/labels/a", "value": "9"},
            {"op": "test", "path": "/metadata/labels/b", "value": "nope"}])
    status = json.loads(info.value.body)
    assert (info.value.status, status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"][0]["field"] == "patch"
    assert api_server.resource_version == before
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod("missing", "default", {"metadata": {"labels": {"x": "y"}}})
    assert info.value.status == 404
