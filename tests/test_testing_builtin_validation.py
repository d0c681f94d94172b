"""kube-apiserver's create and update validation of the built-in kinds' content, held to the
real server: each test runs on the embedded server and on kube-apiserver v1.36.3
(``any_api_server``), asserting the same 422 ``Invalid`` Status: its message and its causes
(reason, field path, message) in order. The rules are those of
``pkg/apis/core/validation/validation.go`` (``ValidatePodSpec``, ``ValidatePodUpdate``,
``ValidateConfigMap``, ``ValidateSecret``, ``validateService``) and
``pkg/apis/apps/validation/validation.go`` (``ValidateDeploymentSpec`` and its siblings), as
informers/testing/pod_validation.py and kind_validation.py port them. Writes go over HTTP.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from informers.client.api_call import api_call
from informers.errors import StatusError

MERGE = "application/merge-patch+json"
LABELS = {"app": "web"}
C = [{"name": "c", "image": "registry.invalid/x:1"}]
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": {"containers": C}}
RFC1123_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
CONFIG_KEY = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')")
PORT_RANGE = "must be between 1 and 65535, inclusive"
NO_MATCH = "`selector` does not match template `labels`"
IMMUTABLE_SET = "Forbidden: field is immutable when `immutable` is set"
POD_UPDATE = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)")


def call(s, method: str, path: str, body: Any = None, content_type: str = "application/json"):
    api = s.api_client()
    try:
        return api_call(api, method, path, body, content_type=content_type)
    finally:
        api.close()


def path(s, plural: str, name: str = "") -> str:
    group = "/apis/apps/v1" if plural in ("deployments", "replicasets", "statefulsets",
                                          "daemonsets") else "/api/v1"
    return f"{group}/namespaces/{s.namespace}/{plural}" + (f"/{name}" if name else "")


def refused(s, method: str, url: str, body: Any, content_type: str = "application/json"):
    """The 422's ``(message, [(reason, field, message), ...])``."""
    with pytest.raises(StatusError) as info:
        call(s, method, url, body, content_type)
    status = info.value.status
    assert (status["code"], status["reason"]) == (422, "Invalid"), status
    return status["message"], [(c["reason"], c["field"], c["message"])
                               for c in status["details"]["causes"]]


def required(field: str) -> tuple[str, str, str]:
    return ("FieldValueRequired", field, "Required value")


def invalid(field: str, value: str, detail: str) -> tuple[str, str, str]:
    return ("FieldValueInvalid", field, f"Invalid value: {value}: {detail}")


def unsupported(field: str, value: str, values: str) -> tuple[str, str, str]:
    return ("FieldValueNotSupported", field,
            f'Unsupported value: "{value}": supported values: {values}')


def pod(spec: dict[str, Any], name: str = "v") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


# -- pods ------------------------------------------------------------------------------------------

POD_CASES = [
    pytest.param({}, [required("spec.containers")], id="no-containers"),
    pytest.param({"containers": []}, [required("spec.containers")], id="empty-containers"),
    pytest.param({"containers": [{"name": "", "image": ""}]},
                 [required("spec.containers[0].name"), required("spec.containers[0].image")],
                 id="no-name-no-image"),
    pytest.param({"containers": [{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]},
                 [("FieldValueDuplicate", "spec.containers[1].name", 'Duplicate value: "c"')],
                 id="duplicate-names"),
    pytest.param({"containers": C, "initContainers": [{"name": "c", "image": "y"}]},
                 [("FieldValueDuplicate", "spec.initContainers[0].name",
                   'Duplicate value: "c"')], id="init-container-named-as-a-container"),
    pytest.param({"containers": [{"name": "Bad_Name", "image": "x"}]},
                 [invalid("spec.containers[0].name", '"Bad_Name"', RFC1123_LABEL)],
                 id="container-name"),
    pytest.param({"containers": C, "restartPolicy": "Sometimes"},
                 [unsupported("spec.restartPolicy", "Sometimes",
                              '"Always", "OnFailure", "Never"')], id="restart-policy"),
    pytest.param({"containers": C, "dnsPolicy": "Bad"},
                 [unsupported("spec.dnsPolicy", "Bad", '"ClusterFirstWithHostNet", '
                                                       '"ClusterFirst", "Default", "None"')],
                 id="dns-policy"),
    pytest.param({"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 0}]}]},
                 [required("spec.containers[0].ports[0].containerPort")], id="port-zero"),
    pytest.param({"containers": [{"name": "c", "image": "x", "ports": [
        {"containerPort": 70000, "protocol": "XTP"}]}]},
        [invalid("spec.containers[0].ports[0].containerPort", "70000", PORT_RANGE),
         unsupported("spec.containers[0].ports[0].protocol", "XTP", '"SCTP", "TCP", "UDP"')],
        id="port-range-and-protocol"),
    pytest.param({"containers": [{"name": "c", "image": "x", "imagePullPolicy": "Sometimes"}]},
                 [unsupported("spec.containers[0].imagePullPolicy", "Sometimes",
                              '"Always", "IfNotPresent", "Never"')], id="pull-policy"),
]


@pytest.mark.parametrize(("spec", "causes"), POD_CASES)
def test_validate_pod_spec(any_api_server, spec, causes):
    s = any_api_server
    message, got = refused(s, "POST", path(s, "pods"), pod(spec))
    assert got == causes
    listed = [f"{field}: {text}" for _, field, text in causes]
    assert message == 'Pod "v" is invalid: ' + (
        listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]")


def test_validate_pod_update(any_api_server):
    s = any_api_server
    call(s, "POST", path(s, "pods"), pod({"containers": C}, "p"))
    # images, activeDeadlineSeconds and added tolerations may change
    changed = call(s, "PATCH", path(s, "pods", "p"), {"spec": {
        "containers": [{"name": "c", "image": "registry.invalid/x:2"}],
        "activeDeadlineSeconds": 60,
        "tolerations": [{"key": "k", "operator": "Exists"}]}}, MERGE)
    assert changed["spec"]["containers"][0]["image"] == "registry.invalid/x:2"
    message, causes = refused(s, "PATCH", path(s, "pods", "p"),
                              {"spec": {"restartPolicy": "Never"}}, MERGE)
    assert len(causes) == 1
    reason, field, text = causes[0]
    # kube-apiserver appends a diff of its internal PodSpec, which the embedded server omits
    assert (reason, field) == ("FieldValueForbidden", "spec")
    assert text.startswith(POD_UPDATE)
    assert message.startswith('Pod "p" is invalid: spec: ' + POD_UPDATE)
    # the new spec is validated too, and kube-apiserver reports its errors twice
    message, causes = refused(s, "PATCH", path(s, "pods", "p"), {"spec": {
        "containers": [{"name": "c", "image": ""}]}}, MERGE)
    assert causes == [required("spec.containers[0].image")] * 2
    assert message == 'Pod "p" is invalid: spec.containers[0].image: Required value'


# -- ConfigMaps and Secrets ------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "details"), [
    ("a b", [CONFIG_KEY]),
    ("a/b", [CONFIG_KEY]),
    (".", ["must not be '.'"]),
    ("..", ["must not be '..'"]),
    ("..a", ["must not start with '..'"]),
    ("k" * 254, ["must be no more than 253 characters"]),
], ids=["space", "slash", "dot", "dot-dot", "dot-dot-prefix", "too-long"])
def test_validate_config_map_and_secret_keys(any_api_server, key, details):
    s = any_api_server
    expected = [invalid(f"data[{key}]", f'"{key}"', d) for d in details]
    message, causes = refused(s, "POST", path(s, "configmaps"),
                              {"metadata": {"name": "c"}, "data": {key: "x"}})
    assert causes == expected
    assert message == f'ConfigMap "c" is invalid: data[{key}]: Invalid value: "{key}": ' + (
        details[0])
    _, causes = refused(s, "POST", path(s, "secrets"),
                        {"metadata": {"name": "s"}, "data": {key: "eA=="}})
    assert causes == expected
    _, causes = refused(s, "POST", path(s, "secrets"),  # stringData is checked as data
                        {"metadata": {"name": "t"}, "stringData": {key: "x"}})
    assert causes == expected


def test_validate_config_map_binary_data(any_api_server):
    s = any_api_server
    _, causes = refused(s, "POST", path(s, "configmaps"), {
        "metadata": {"name": "c"}, "data": {"k": "x"}, "binaryData": {"k": "eA=="}})
    assert causes == [invalid("data[k]", '"k"', "duplicate of key present in binaryData")]
    _, causes = refused(s, "POST", path(s, "configmaps"), {
        "metadata": {"name": "c"}, "binaryData": {"a b": "eA=="}})
    assert causes == [invalid("binaryData[a b]", '"a b"', CONFIG_KEY)]


def test_validate_immutable_config_map_and_secret_update(any_api_server):
    s = any_api_server
    call(s, "POST", path(s, "configmaps"),
         {"metadata": {"name": "c"}, "data": {"a": "1"}, "immutable": True})
    message, causes = refused(s, "PATCH", path(s, "configmaps", "c"), {"data": {"a": "2"}},
                              MERGE)
    assert causes == [("FieldValueForbidden", "data", IMMUTABLE_SET)]
    assert message == f'ConfigMap "c" is invalid: data: {IMMUTABLE_SET}'
    _, causes = refused(s, "PATCH", path(s, "configmaps", "c"), {"immutable": False}, MERGE)
    assert causes == [("FieldValueForbidden", "immutable", IMMUTABLE_SET)]
    labelled = call(s, "PATCH", path(s, "configmaps", "c"),
                    {"metadata": {"labels": {"x": "y"}}}, MERGE)
    assert labelled["metadata"]["labels"] == {"x": "y"}  # metadata stays mutable
    call(s, "POST", path(s, "secrets"),
         {"metadata": {"name": "s"}, "stringData": {"a": "1"}, "immutable": True})
    _, causes = refused(s, "PATCH", path(s, "secrets", "s"), {"data": {"a": "Mg=="}}, MERGE)
    assert causes == [("FieldValueForbidden", "data", IMMUTABLE_SET)]
    _, causes = refused(s, "PATCH", path(s, "secrets", "s"), {"type": "Other"}, MERGE)
    assert causes == [invalid("type", '"Other"', "field is immutable")]


# -- Services --------------------------------------------------------------------------------------

SERVICE_CASES = [
    pytest.param({"ports": []}, [required("spec.ports")], id="no-ports"),
    pytest.param({"ports": [{"port": 0}]},
                 [invalid("spec.ports[0].port", "0", PORT_RANGE),
                  invalid("spec.ports[0].targetPort", "0", PORT_RANGE)], id="port-zero"),
    pytest.param({"ports": [{"port": 70000}]},
                 [invalid("spec.ports[0].port", "70000", PORT_RANGE),
                  invalid("spec.ports[0].targetPort", "70000", PORT_RANGE)], id="port-range"),
    pytest.param({"ports": [{"port": 80}, {"port": 81}]},
                 [required("spec.ports[0].name"), required("spec.ports[1].name")],
                 id="unnamed-ports"),
    pytest.param({"ports": [{"name": "a", "port": 80}, {"name": "a", "port": 81}]},
                 [("FieldValueDuplicate", "spec.ports[1].name", 'Duplicate value: "a"')],
                 id="duplicate-names"),
    pytest.param({"type": "Weird", "ports": [{"port": 80}]},
                 [unsupported("spec.type", "Weird",
                              '"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"')],
                 id="type"),
    pytest.param({"sessionAffinity": "Bad", "ports": [{"port": 80, "protocol": "XTP"}]},
                 [unsupported("spec.ports[0].protocol", "XTP", '"SCTP", "TCP", "UDP"'),
                  unsupported("spec.sessionAffinity", "Bad", '"ClientIP", "None"')],
                 id="protocol-and-affinity"),
]


@pytest.mark.parametrize(("spec", "causes"), SERVICE_CASES)
def test_validate_service(any_api_server, spec, causes):
    s = any_api_server
    _, got = refused(s, "POST", path(s, "services"), {"metadata": {"name": "v"}, "spec": spec})
    assert got == causes


def test_a_headless_service_needs_no_ports(any_api_server):
    s = any_api_server
    made = call(s, "POST", path(s, "services"),
                {"metadata": {"name": "v"}, "spec": {"clusterIP": "None"}})
    assert "ports" not in made["spec"]


# -- workloads -------------------------------------------------------------------------------------

WORKLOAD_CASES = [
    pytest.param("deployments", {"selector": {"matchLabels": {"app": "other"}},
                                 "template": TEMPLATE},
                 [invalid("spec.template.metadata.labels", '{"app":"web"}', NO_MATCH)],
                 id="deployment-selector-mismatch"),
    pytest.param("deployments", {"template": TEMPLATE},
                 [required("spec.selector"),
                  invalid("spec.template.metadata.labels", '{"app":"web"}', NO_MATCH)],
                 id="deployment-no-selector"),
    pytest.param("deployments", {"selector": {}, "template": TEMPLATE},
                 [invalid("spec.selector", "{}", "empty selector is invalid for deployment")],
                 id="deployment-empty-selector"),
    pytest.param("deployments", {"replicas": -1, "selector": {"matchLabels": LABELS},
                                 "template": {"metadata": {"labels": LABELS}, "spec": {}}},
                 [invalid("spec.replicas", "-1", "must be greater than or equal to 0"),
                  required("spec.template.spec.containers")], id="deployment-replicas"),
    pytest.param("deployments", {"selector": {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["other"]}]}, "template": TEMPLATE},
        [invalid("spec.template.metadata.labels", '{"app":"web"}', NO_MATCH)],
        id="deployment-expression-mismatch"),
    pytest.param("deployments", {"selector": {"matchLabels": LABELS}, "template": {
        "metadata": {"labels": LABELS}, "spec": {"containers": C, "restartPolicy": "Never"}}},
        [unsupported("spec.template.spec.restartPolicy", "Never", '"Always"')],
        id="deployment-restart-policy"),
    pytest.param("replicasets", {"selector": {"matchLabels": {"app": "other"}},
                                 "template": TEMPLATE},
                 [invalid("spec.template.metadata.labels", '{"app":"web"}', NO_MATCH)],
                 id="replicaset-selector-mismatch"),
    pytest.param("statefulsets", {"selector": {"matchLabels": {"app": "other"}},
                                  "template": TEMPLATE},
                 [invalid("spec.template.metadata.labels", '{"app":"web"}', NO_MATCH)],
                 id="statefulset-selector-mismatch"),
    pytest.param("daemonsets", {"selector": {"matchLabels": {"app": "other"}},
                                "template": TEMPLATE},
                 [invalid("spec.template.metadata.labels", '{"app":"web"}', NO_MATCH)],
                 id="daemonset-selector-mismatch"),
]


@pytest.mark.parametrize(("plural", "spec", "causes"), WORKLOAD_CASES)
def test_validate_workload_spec(any_api_server, plural, spec, causes):
    s = any_api_server
    _, got = refused(s, "POST", path(s, plural), {"metadata": {"name": "w"}, "spec": spec})
    assert got == causes


def test_validate_deployment_update_selector_is_immutable(any_api_server):
    s = any_api_server
    made = call(s, "POST", path(s, "deployments"), {"metadata": {"name": "w"}, "spec": {
        "selector": {"matchLabels": LABELS}, "template": TEMPLATE}})
    message, causes = refused(s, "PATCH", path(s, "deployments", "w"), {"spec": {
        "selector": {"matchLabels": {**LABELS, "x": "y"}},
        "template": {"metadata": {"labels": {"x": "y"}}}}}, MERGE)
    assert causes == [invalid("spec.selector", '{"matchLabels":{"app":"web","x":"y"}}',
                              "field is immutable")]
    assert message == ('Deployment.apps "w" is invalid: spec.selector: Invalid value: '
                       '{"matchLabels":{"app":"web","x":"y"}}: field is immutable')
    _, causes = refused(s, "PATCH", path(s, "deployments", "w"), {"spec": {
        "template": {"metadata": {"labels": {"app": "b"}}}}}, MERGE)
    assert causes == [invalid("spec.template.metadata.labels", '{"app":"b"}', NO_MATCH)]
    body = copy.deepcopy(made)
    body["spec"]["replicas"] = 3
    assert call(s, "PUT", path(s, "deployments", "w"), body)["spec"]["replicas"] == 3


def test_validate_namespace_name(any_api_server):
    s = any_api_server
    message, causes = refused(s, "POST", "/api/v1/namespaces", {"metadata": {"name": "Bad.Name"}})
    assert causes == [invalid("metadata.name", '"Bad.Name"', RFC1123_LABEL)]
    assert message == f'Namespace "Bad.Name" is invalid: metadata.name: Invalid value: ' \
                      f'"Bad.Name": {RFC1123_LABEL}'
