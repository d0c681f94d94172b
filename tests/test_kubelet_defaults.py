"""Tests for controllers.kubelet.defaults: decoding, API defaults and static-pod defaults."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from controllers.kubelet.defaults import (
    MAX_CONFIG_LENGTH,
    NO_EXECUTE_TOLERATION,
    apply_defaults,
    decode_manifest,
    decode_static_pods,
    default_static_pod,
    generate_pod_name,
    set_api_defaults,
    static_pod_uid,
    try_decode_pod_list,
    try_decode_single_pod,
)
from controllers.kubelet.errors import ManifestError
from controllers.kubelet.pod_update import CONFIG_HASH_ANNOTATION_KEY

NODE = "Node-A"
PATH = "/etc/kubernetes/manifests/web.yaml"
URL = "http://config.example/pods"

MANIFEST_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    ports:
    - containerPort: 80
"""


def manifest(**spec_extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}], **spec_extra},
    }


def file_pod(m: dict[str, Any], path: str = PATH, node: str = NODE) -> dict[str, Any]:
    return default_static_pod(m, source=path, node_name=node, is_file=True)


# -- the whole pipeline ------------------------------------------------------------------------


def test_file_manifest_gets_every_default():
    parsed, pod, err = try_decode_single_pod(MANIFEST_YAML, source=PATH, node_name=NODE,
                                             is_file=True)
    assert (parsed, err) == (True, None)
    assert pod is not None
    uid = pod["metadata"]["uid"]
    assert len(uid) == 32 and int(uid, 16) >= 0
    assert pod == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-node-a",
            "namespace": "default",
            "uid": uid,
            "labels": {"app": "web"},
            "annotations": {CONFIG_HASH_ANNOTATION_KEY: uid},
        },
        "spec": {
            "containers": [{
                "name": "nginx",
                "image": "nginx:1.27",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30,
            "schedulerName": "default-scheduler",
            "enableServiceLinks": True,
            "securityContext": {},
            "nodeName": "Node-A",
            "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
        },
        "status": {"phase": "Pending"},
    }


def test_url_pod_has_no_toleration():
    pod = default_static_pod(manifest(), source=URL, node_name=NODE, is_file=False)
    assert "tolerations" not in pod["spec"]
    assert pod["metadata"]["name"] == "web-node-a"
    assert pod["spec"]["nodeName"] == NODE


def test_input_is_not_mutated():
    m = manifest()
    before = copy.deepcopy(m)
    file_pod(m)
    assert m == before


# -- name, namespace, node -----------------------------------------------------------------------


@pytest.mark.parametrize("node,expected", [
    ("node1", "static-pod1-node1"),
    ("Node1", "static-pod1-node1"),
    ("NODE1", "static-pod1-node1"),
])
def test_generate_pod_name_lower_cases_the_node(node, expected):
    assert generate_pod_name("static-pod1", node) == expected


def test_node_name_is_kept_as_given_and_overrides_the_manifest():
    pod = file_pod(manifest(nodeName="somewhere-else"), node="MiXeD")
    assert pod["spec"]["nodeName"] == "MiXeD"
    assert pod["metadata"]["name"] == "web-mixed"


def test_explicit_namespace_is_kept():
    m = manifest()
    m["metadata"]["namespace"] = "kube-system"
    assert file_pod(m)["metadata"]["namespace"] == "kube-system"


def test_status_phase_is_pending_whatever_the_manifest_says():
    m = manifest()
    m["status"] = {"phase": "Running", "message": "kept"}
    assert file_pod(m)["status"] == {"phase": "Pending", "message": "kept"}


# -- UID -----------------------------------------------------------------------------------------


def test_uid_is_deterministic():
    assert file_pod(manifest())["metadata"]["uid"] == file_pod(manifest())["metadata"]["uid"]
    a = default_static_pod(manifest(), source=URL, node_name=NODE, is_file=False)
    b = default_static_pod(manifest(), source=URL, node_name=NODE, is_file=False)
    assert a["metadata"]["uid"] == b["metadata"]["uid"]


def test_uid_changes_with_content_node_path_and_url():
    base = file_pod(manifest())["metadata"]["uid"]
    changed = manifest()
    changed["spec"]["containers"][0]["image"] = "nginx:1.28"
    others = {
        "content": file_pod(changed)["metadata"]["uid"],
        "node": file_pod(manifest(), node="node-b")["metadata"]["uid"],
        "path": file_pod(manifest(), path="/other/web.yaml")["metadata"]["uid"],
        "url": default_static_pod(manifest(), source=PATH, node_name=NODE,
                                  is_file=False)["metadata"]["uid"],
    }
    assert base not in others.values()
    assert len(set(others.values())) == 4
    url_a = default_static_pod(manifest(), source=URL, node_name=NODE, is_file=False)
    url_b = default_static_pod(manifest(), source=URL + "/2", node_name=NODE, is_file=False)
    assert url_a["metadata"]["uid"] != url_b["metadata"]["uid"]


def test_uid_ignores_key_order_of_the_manifest():
    m = manifest()
    reordered = {"spec": m["spec"], "metadata": m["metadata"], "kind": "Pod", "apiVersion": "v1"}
    assert file_pod(m)["metadata"]["uid"] == file_pod(reordered)["metadata"]["uid"]


def test_explicit_uid_is_kept_and_becomes_the_hash():
    m = manifest()
    m["metadata"]["uid"] = "12345"
    pod = file_pod(m)
    assert pod["metadata"]["uid"] == "12345"
    assert pod["metadata"]["annotations"] == {CONFIG_HASH_ANNOTATION_KEY: "12345"}


def test_static_pod_uid_is_md5_hex():
    uid = static_pod_uid({"metadata": {"name": "x"}}, PATH, True, NODE)
    assert len(uid) == 32
    assert uid != static_pod_uid({"metadata": {"name": "x"}}, PATH, False, NODE)


# -- toleration ------------------------------------------------------------------------------


def test_toleration_is_not_duplicated_and_others_are_kept():
    other = {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}
    pod = file_pod(manifest(tolerations=[other, dict(NO_EXECUTE_TOLERATION)]))
    assert pod["spec"]["tolerations"] == [other, NO_EXECUTE_TOLERATION]
    pod = file_pod(manifest(tolerations=[other]))
    assert pod["spec"]["tolerations"] == [other, NO_EXECUTE_TOLERATION]


def test_apply_defaults_in_place():
    pod: dict[str, Any] = {"metadata": {"name": "x"}, "spec": {}}
    apply_defaults(pod, URL, False, "N")
    assert pod["metadata"]["name"] == "x-n"
    assert pod["metadata"]["namespace"] == "default"
    assert pod["status"] == {"phase": "Pending"}


# -- API defaults ----------------------------------------------------------------------------


@pytest.mark.parametrize("image,policy", [
    ("nginx", "Always"),
    ("nginx:latest", "Always"),
    ("registry:5000/nginx", "Always"),
    ("registry:5000/nginx:1.2", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
    ("nginx:latest@sha256:" + "a" * 64, "Always"),
    ("nginx:1.27", "IfNotPresent"),
])
def test_image_pull_policy_default(image, policy):
    pod = {"spec": {"containers": [{"name": "c", "image": image}]}}
    set_api_defaults(pod)
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_explicit_values_win_over_defaults():
    pod = {"spec": {"restartPolicy": "Never", "dnsPolicy": "Default",
                    "terminationGracePeriodSeconds": 5, "enableServiceLinks": False,
                    "containers": [{"name": "c", "image": "x", "imagePullPolicy": "Never"}]}}
    set_api_defaults(pod)
    spec = pod["spec"]
    assert (spec["restartPolicy"], spec["dnsPolicy"], spec["terminationGracePeriodSeconds"],
            spec["enableServiceLinks"], spec["containers"][0]["imagePullPolicy"]) == (
        "Never", "Default", 5, False, "Never")


def test_negative_grace_period_becomes_one():
    pod = {"spec": {"terminationGracePeriodSeconds": -5}}
    set_api_defaults(pod)
    assert pod["spec"]["terminationGracePeriodSeconds"] == 1


def test_other_api_defaults():
    pod = {"spec": {
        "hostNetwork": True,
        "initContainers": [{"name": "init", "image": "busybox:1"}],
        "containers": [{
            "name": "c", "image": "x:1", "ports": [{"containerPort": 8080}],
            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "resources": {"limits": {"cpu": "1"}},
            "livenessProbe": {"httpGet": {"port": 8080}},
        }],
        "volumes": [{"name": "scratch"}, {"name": "info", "downwardAPI": {"items": []}}],
    }}
    set_api_defaults(pod)
    spec = pod["spec"]
    c = spec["containers"][0]
    assert c["ports"] == [{"containerPort": 8080, "protocol": "TCP", "hostPort": 8080}]
    assert c["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "spec.nodeName",
                                                     "apiVersion": "v1"}
    assert c["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    assert c["livenessProbe"] == {"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
                                  "timeoutSeconds": 1, "periodSeconds": 10,
                                  "successThreshold": 1, "failureThreshold": 3}
    assert spec["initContainers"][0]["terminationMessagePolicy"] == "File"
    assert spec["volumes"] == [{"name": "scratch", "emptyDir": {}},
                               {"name": "info", "downwardAPI": {"items": [], "defaultMode": 420}}]


# -- rejection -------------------------------------------------------------------------------


def reason_of(data: Any, is_file: bool = True) -> str:
    with pytest.raises(ManifestError) as info:
        decode_static_pods(data, source=PATH, node_name=NODE, is_file=is_file)
    assert info.value.source == PATH
    assert str(info.value).startswith(PATH + ": ")
    return info.value.reason


def test_pod_without_name_is_rejected_with_the_reason():
    m = manifest()
    del m["metadata"]["name"]
    assert reason_of(json.dumps(m)) == "invalid pod: name is needed for the pod"


def test_invalid_name_after_suffix_is_rejected():
    m = manifest()
    m["metadata"]["name"] = "Web_Server"
    reason = reason_of(json.dumps(m))
    assert reason.startswith('invalid pod: [metadata.name: Invalid value: "Web_Server-node-a": '
                             "a lowercase RFC 1123 subdomain")


def test_missing_container_image_is_rejected():
    m = manifest()
    del m["spec"]["containers"][0]["image"]
    assert reason_of(json.dumps(m)) == "invalid pod: [spec.containers[0].image: Required value]"


@pytest.mark.parametrize("spec_extra,resource", [
    ({"serviceAccountName": "default"}, "serviceaccounts"),
    ({"volumes": [{"name": "s", "secret": {"secretName": "s"}}]}, "secrets"),
    ({"volumes": [{"name": "c", "configMap": {"name": "c"}}]}, "configmaps"),
    ({"volumes": [{"name": "p", "persistentVolumeClaim": {"claimName": "p"}}]},
     "persistentvolumeclaims"),
    ({"volumes": [{"name": "t", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token"}}]}}]},
     "serviceaccounts (via projected volumes)"),
    ({"resourceClaims": [{"name": "gpu"}]}, "resourceclaims"),
])
def test_static_pods_may_not_reference_api_objects(spec_extra, resource):
    assert reason_of(json.dumps(manifest(**spec_extra))) == (
        f"static pods may not reference {resource}")


def test_unparsable_manifest():
    reason = reason_of("apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n")
    assert reason.startswith("couldn't parse as pod: ")


def test_not_a_pod_is_not_parsed():
    parsed, pod, err = try_decode_single_pod(
        '{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}',
        source=PATH, node_name=NODE, is_file=True)
    assert (parsed, pod) == (False, None)
    assert err is not None and "got kind 'Deployment' of apiVersion 'apps/v1'" in err.reason


@pytest.mark.parametrize("doc,message", [
    ({"apiVersion": "v1", "metadata": {"name": "x"}}, "Object 'Kind' is missing"),
    ({"kind": "Pod", "metadata": {"name": "x"}}, "Object 'apiVersion' is missing"),
])
def test_kind_and_api_version_are_required(doc, message):
    parsed, _, err = try_decode_single_pod(json.dumps(doc), source=PATH, node_name=NODE,
                                           is_file=True)
    assert not parsed and err is not None and message in err.reason


def test_too_large_manifest_is_refused():
    with pytest.raises(ManifestError, match="larger than the"):
        decode_manifest(b" " * (MAX_CONFIG_LENGTH + 1), PATH)


def test_multi_document_yaml_is_refused():
    with pytest.raises(ManifestError, match="couldn't parse as pod"):
        decode_manifest(MANIFEST_YAML + "---\n" + MANIFEST_YAML, PATH)


# -- pod lists -------------------------------------------------------------------------------


def pod_list(*items: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "PodList", "items": list(items)})


def item(name: str, **spec_extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x:1"}], **spec_extra}}


def test_pod_list_decodes_every_item():
    pods = decode_static_pods(pod_list(item("a"), item("b")), source=URL, node_name=NODE,
                              is_file=False)
    assert [p["metadata"]["name"] for p in pods] == ["a-node-a", "b-node-a"]
    assert all(p["kind"] == "Pod" and "tolerations" not in p["spec"] for p in pods)


def test_pod_list_with_one_invalid_item_is_rejected_whole():
    parsed, pods, err = try_decode_pod_list(
        pod_list(item("a"), {"metadata": {}, "spec": {}}), source=URL, node_name=NODE,
        is_file=False)
    assert (parsed, pods) == (True, [])
    assert err is not None
    assert str(err) == f"{URL}: items[1]: invalid pod: name is needed for the pod"


def test_empty_pod_list():
    assert decode_static_pods(pod_list(), source=URL, node_name=NODE, is_file=False) == []


def test_neither_pod_nor_list_names_both_errors():
    with pytest.raises(ManifestError) as info:
        decode_static_pods("just text", source=URL, node_name=NODE, is_file=False)
    assert info.value.reason == (
        "received data that couldn't be parsed as single (couldn't parse as Pod: expected a Pod "
        "object, got a string) or multiple pods (couldn't parse as PodList: expected a PodList "
        "object, got a string)")


def test_single_pod_only_when_lists_are_not_allowed():
    with pytest.raises(ManifestError, match="couldn't parse as Pod"):
        decode_static_pods(pod_list(item("a")), source=PATH, node_name=NODE, is_file=True,
                           allow_list=False)


def test_pod_nested_too_deeply_to_process_is_a_manifest_error():
    deep = "[" * 900 + "]" * 900
    data = ("apiVersion: v1\nkind: Pod\nmetadata: {name: deep}\nspec:\n  containers:\n"
            f"  - name: c\n    image: x:1\n    args: {deep}\n")
    with pytest.raises(ManifestError) as info:
        decode_static_pods(data, source=PATH, node_name=NODE, is_file=True)
    assert str(info.value) == f"{PATH}: invalid pod: nested too deeply to process"
    listed = json.dumps({"apiVersion": "v1", "kind": "PodList", "items": [
        item("a"), {"metadata": {"name": "b"}, "spec": {"containers": [
            {"name": "c", "image": "x:1", "args": json.loads(deep)}]}}]})
    with pytest.raises(ManifestError) as info:
        decode_static_pods(listed, source=URL, node_name=NODE, is_file=False)
    assert info.value.reason == "items[1]: invalid pod: nested too deeply to process"


def test_alias_bomb_is_a_manifest_error_without_expanding():
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'] + [
        f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]"
        for p, c in zip("abcdefg", "bcdefgh", strict=True)]
    data = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: bomb\n  labels:\n" +
            "".join(f"    {line}\n" for line in levels) +
            "spec:\n  containers:\n  - name: c\n    image: x:1\n    args: *h\n")
    with pytest.raises(ManifestError) as info:
        decode_static_pods(data, source=URL, node_name=NODE, is_file=False)
    assert info.value.reason == (
        "couldn't parse as pod: document contains excessive aliasing (line 9, column 24)")


@pytest.mark.parametrize(("obj", "reason"), [
    ("AWS_SECRET_ACCESS_KEY=abc", "expected a Pod object, got a string"),
    (["abc"], "expected a Pod object, got a list"),
    (12, "expected a Pod object, got a number"),
    (None, "expected a Pod object, got an empty document"),
    ({"kind": "Pod", "apiVersion": "v1 abc"}, "got kind 'Pod' of apiVersion (not a valid name)"),
    ({"kind": "a b c", "apiVersion": "apps/v1"},
     "got kind (not a valid name) of apiVersion 'apps/v1'"),
])
def test_type_errors_never_quote_content(obj, reason):
    parsed, pod, err = try_decode_single_pod(obj, source=PATH, node_name=NODE, is_file=True)
    assert (parsed, pod) == (False, None)
    assert err is not None and err.reason == f"couldn't parse as Pod: {reason}"
