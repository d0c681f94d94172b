"""List/watch options of the embedded API server (informers/testing/options.py): validation
(``ValidateListOptions``), selectors and query decoding, through the official client.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from informers.testing.options import decode_continue, encode_continue


@pytest.fixture
def core(api_client: Any) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


def failure(call: Any, *args: Any, **kw: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as info:
        call(*args, **kw)
    return info.value.status, json.loads(info.value.body)


@pytest.mark.parametrize(("kw", "message"), [
    ({"resource_version_match": "Exact"},
     "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
     "resourceVersion is provided"),
    ({"resource_version_match": "Exact", "resource_version": "0"},
     'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
     'resourceVersion "0"'),
    ({"resource_version_match": "Newest", "resource_version": "5"},
     'resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", '
     '"NotOlderThan", ""'),
    ({"send_initial_events": True},
     "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"),
])
def test_invalid_list_options_are_422_on_list_options(core, kw, message):
    code, status = failure(core.list_namespaced_pod, "default", **kw)
    # handlers/get.go: errors.NewInvalid(GroupKind{"meta.k8s.io", "ListOptions"}, "", errs)
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == f'ListOptions.meta.k8s.io "" is invalid: {message}'
    assert (status["details"]["group"], status["details"]["kind"]) == ("meta.k8s.io",
                                                                      "ListOptions")


@pytest.mark.parametrize(("kw", "message"), [
    ({"resource_version_match": "NotOlderThan", "resource_version": "5"},
     "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
     "sendInitialEvents is provided"),
    ({"send_initial_events": True, "resource_version": "5"},
     "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
     "resourceVersionMatch to NotOlderThan"),
])
def test_invalid_watch_options_are_422(core, kw, message):
    code, status = failure(core.list_namespaced_pod, "default", watch=True, **kw)
    assert code == 422
    assert status["message"] == f'ListOptions.meta.k8s.io "" is invalid: {message}'


def test_two_errors_are_listed_together(core):
    _, status = failure(core.list_namespaced_pod, "default", watch=True,
                        send_initial_events=True, resource_version_match="Exact")
    assert status["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: '
        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, "
        'resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]')
    assert len(status["details"]["causes"]) == 2


def test_unsupported_field_label_is_400(core, api_server):
    code, status = failure(core.list_namespaced_pod, "default", field_selector="spec.foo=bar")
    assert (code, status["reason"], status["message"]) == (
        400, "BadRequest", "field label not supported: spec.foo")
    code, status = failure(core.list_namespaced_config_map, "default",
                           field_selector="data.key=x")
    assert (code, status["message"]) == (400, "field label not supported: data.key")
    # Supported fields work, including a pod's legacy spec.host alias of spec.nodeName.
    api_server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"},
                       "spec": {"nodeName": "n1", "containers": []}})
    assert [p.metadata.name for p in core.list_namespaced_pod(
        "default", field_selector="spec.host=n1").items] == ["a"]


def test_bad_label_selector_is_400(core):
    code, status = failure(core.list_namespaced_pod, "default", label_selector="a in (b")
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"].startswith("unable to parse requirement: ")


def test_full_label_selector_syntax(core, api_server):
    for name, labels in (("a", {"env": "prod", "tier": "web"}), ("b", {"env": "dev"}),
                         ("c", {"tier": "db"})):
        api_server.create({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name, "labels": labels}})

    def select(selector: str) -> list[str]:
        items = core.list_namespaced_config_map("default", label_selector=selector).items
        return [i.metadata.name for i in items]

    assert select("env in (prod,dev),!tier") == ["b"]
    assert select("env!=prod") == ["b", "c"]
    assert select("tier,env notin (dev)") == ["a", "c"]


@pytest.mark.parametrize(("query", "message"), [
    ("watch=maybe", 'watch: strconv.ParseBool: parsing "maybe": invalid syntax'),
    ("limit=ten", 'limit: strconv.ParseInt: parsing "ten": invalid syntax'),
    ("resourceVersion=abc",  # cacher.go GetList: NewBadRequest("invalid resource version: ")
     'invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: '
     'parsing "abc": invalid syntax'),
])
def test_undecodable_query_values_are_400(api_server, api_client, query, message):
    resp = api_client.call_api(
        "GET", f"{api_server.url}/api/v1/namespaces/default/pods?{query}",
        header_params={"Authorization": f"Bearer {api_server.token}"})
    resp.read()
    assert (resp.status, json.loads(resp.data)["message"]) == (400, message)


def test_continue_tokens_round_trip_and_stay_opaque():
    token = encode_continue(42, "default/pod-1")
    assert decode_continue(token) == (42, "default/pod-1")
    assert "pod-1" not in token and "=" not in token
