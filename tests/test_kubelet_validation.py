"""Tests for controllers.kubelet.validation: pod-create validation and the API-reference ban."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.kubelet.validation import (
    api_object_reference,
    is_dns1123_label,
    is_dns1123_subdomain,
    validate_pod,
)


def valid_pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "web-node", "namespace": "default", "labels": {"app": "web"},
                     "annotations": {"example.com/x": "y"}},
        "spec": {
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30,
            "volumes": [{"name": "data", "hostPath": {"path": "/data"}}],
            "containers": [{
                "name": "web",
                "image": "nginx:1.27",
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePolicy": "File",
                "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                "env": [{"name": "MODE", "value": "x"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }],
        },
    }


def with_change(path: list[Any], value: Any) -> dict[str, Any]:
    pod = valid_pod()
    target: Any = pod
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return pod


_DELETE = object()


def test_valid_pod_has_no_errors():
    assert validate_pod(valid_pod()) == []


@pytest.mark.parametrize("path,value,error", [
    (["metadata", "name"], "Bad_Name",
     'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain'),
    (["metadata", "namespace"], "Not.A.Label",
     'metadata.namespace: Invalid value: "Not.A.Label": a lowercase RFC 1123 label'),
    (["metadata", "labels"], {"bad key!": "v"}, 'metadata.labels: Invalid value: "bad key!"'),
    (["metadata", "labels"], {"k": "bad value!"},
     'metadata.labels[k]: Invalid value: "bad value!"'),
    (["spec", "containers"], [], "spec.containers: Required value"),
    (["spec", "containers"], "nginx", 'spec.containers: Invalid value: "nginx": must be a list'),
    (["spec", "restartPolicy"], "Sometimes",
     'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
     '"OnFailure", "Never"'),
    (["spec", "dnsPolicy"], "Cluster", 'spec.dnsPolicy: Unsupported value: "Cluster"'),
    (["spec", "dnsPolicy"], "None",
     "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"),
    (["spec", "terminationGracePeriodSeconds"], "30",
     'spec.terminationGracePeriodSeconds: Invalid value: "30"'),
    (["spec", "activeDeadlineSeconds"], 0, "spec.activeDeadlineSeconds: Invalid value: 0"),
    (["spec", "ephemeralContainers"], [{"name": "debug"}],
     "spec.ephemeralContainers: Forbidden: cannot be set on create"),
    (["spec", "containers", 0, "name"], "Web", 'spec.containers[0].name: Invalid value: "Web"'),
    (["spec", "containers", 0, "image"], "", "spec.containers[0].image: Required value"),
    (["spec", "containers", 0, "image"], " nginx",
     'spec.containers[0].image: Invalid value: " nginx": must not have leading or trailing'),
    (["spec", "containers", 0, "imagePullPolicy"], "Sometimes",
     'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes"'),
    (["spec", "containers", 0, "terminationMessagePolicy"], None,
     "spec.containers[0].terminationMessagePolicy: Unsupported value: null"),
    (["spec", "containers", 0, "ports", 0, "containerPort"], 70000,
     "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and "
     "65535, inclusive"),
    (["spec", "containers", 0, "ports", 0, "containerPort"], _DELETE,
     "spec.containers[0].ports[0].containerPort: Required value"),
    (["spec", "containers", 0, "ports", 0, "protocol"], "HTTP",
     'spec.containers[0].ports[0].protocol: Unsupported value: "HTTP"'),
    (["spec", "containers", 0, "ports", 0, "name"], "this-name-is-too-long",
     'spec.containers[0].ports[0].name: Invalid value: "this-name-is-too-long"'),
    (["spec", "containers", 0, "env", 0, "name"], "1BAD",
     'spec.containers[0].env[0].name: Invalid value: "1BAD"'),
    (["spec", "containers", 0, "volumeMounts", 0, "name"], "missing",
     'spec.containers[0].volumeMounts[0].name: Not found: "missing"'),
    (["spec", "containers", 0, "volumeMounts", 0, "mountPath"], "",
     "spec.containers[0].volumeMounts[0].mountPath: Required value"),
    (["spec", "volumes", 0, "name"], "Data", 'spec.volumes[0].name: Invalid value: "Data"'),
    (["spec", "volumes", 0, "emptyDir"], {},
     "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"),
    (["spec", "volumes", 0, "hostPath"], _DELETE,
     "spec.volumes[0]: Required value: must specify a volume type"),
    (["spec"], "nope", "spec: Required value"),
])
def test_invalid_fields_are_reported(path, value, error):
    errors = validate_pod(with_change(path, value))
    assert any(e.startswith(error) for e in errors), errors


def test_duplicate_names_are_reported():
    pod = valid_pod()
    pod["spec"]["initContainers"] = [copy.deepcopy(pod["spec"]["containers"][0])]
    pod["spec"]["volumes"].append({"name": "data", "emptyDir": {}})
    errors = validate_pod(pod)
    assert 'spec.containers[0].name: Duplicate value: "web"' in errors
    assert 'spec.volumes[1].name: Duplicate value: "data"' in errors


def test_host_network_requires_matching_host_port():
    pod = valid_pod()
    pod["spec"]["hostNetwork"] = True
    pod["spec"]["containers"][0]["ports"][0]["hostPort"] = 8080
    assert validate_pod(pod) == [
        "spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` "
        "when `hostNetwork` is true"
    ]


def test_oversized_annotations_are_reported():
    pod = valid_pod()
    pod["metadata"]["annotations"] = {"big": "x" * (256 * 1024)}
    assert validate_pod(pod) == [
        "metadata.annotations: Too long: must have at most 262144 bytes"]


def test_wrong_types_give_errors_not_exceptions():
    pod = {"metadata": "x", "spec": {"containers": [5, {"ports": "80", "env": "x",
                                                       "volumeMounts": 3}],
                                     "volumes": {"a": 1}}}
    errors = validate_pod(pod)
    assert "metadata: Required value" in errors
    assert "spec.containers[0]: Invalid value: 5: must be an object" in errors
    assert 'spec.containers[1].ports: Invalid value: "80": must be a list' in errors
    assert 'spec.volumes: Invalid value: {"a": 1}: must be a list' in errors


def test_dns_helpers():
    assert is_dns1123_label("a-b") and not is_dns1123_label("a.b") and not is_dns1123_label("A")
    assert is_dns1123_subdomain("a.b-c") and not is_dns1123_subdomain("-a")
    assert not is_dns1123_label("a" * 64) and is_dns1123_label("a" * 63)
    assert not is_dns1123_subdomain(5)


# -- API references ------------------------------------------------------------------------------


def spec_with(**spec: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "image": "x"}], **spec}}


def container_with(**fields: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "image": "x", **fields}]}}


@pytest.mark.parametrize("pod,resource", [
    (spec_with(), None),
    (spec_with(volumes=[{"name": "h", "hostPath": {"path": "/"}},
                        {"name": "e", "emptyDir": {}},
                        {"name": "d", "downwardAPI": {"items": []}},
                        {"name": "p", "projected": {"sources": [{"downwardAPI": {}}]}}]), None),
    (spec_with(serviceAccountName="sa"), "serviceaccounts"),
    (spec_with(serviceAccount="sa"), "serviceaccounts"),
    (spec_with(imagePullSecrets=[{"name": "pull"}]), "secrets"),
    (container_with(envFrom=[{"secretRef": {"name": "s"}}]), "secrets"),
    (container_with(env=[{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]),
     "secrets"),
    (spec_with(volumes=[{"name": "r", "rbd": {"image": "i", "secretRef": {"name": "s"}}}]),
     "secrets"),
    (spec_with(volumes=[{"name": "c", "csi": {"driver": "d",
                                              "nodePublishSecretRef": {"name": "s"}}}]),
     "secrets"),
    (spec_with(volumes=[{"name": "a", "azureFile": {"secretName": "s", "shareName": "x"}}]),
     "secrets"),
    (spec_with(volumes=[{"name": "p", "projected": {"sources": [{"secret": {"name": "s"}}]}}]),
     "secrets"),
    (container_with(envFrom=[{"configMapRef": {"name": "c"}}]), "configmaps"),
    (container_with(env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c",
                                                                         "key": "k"}}}]),
     "configmaps"),
    (spec_with(volumes=[{"name": "p", "projected": {"sources": [{"configMap": {"name": "c"}}]}}]),
     "configmaps"),
    (spec_with(resourceClaims=[{"name": "gpu"}]), "resourceclaims"),
    (spec_with(volumes=[{"name": "c", "csi": {"driver": "d"}}]), "csidrivers (via CSI volumes)"),
    (spec_with(volumes=[{"name": "g", "glusterfs": {"endpoints": "e", "path": "p"}}]),
     "endpoints (via glusterFS volumes)"),
    (spec_with(volumes=[{"name": "e", "ephemeral": {"volumeClaimTemplate": {}}}]),
     "persistentvolumeclaims (via ephemeral volumes)"),
    (spec_with(volumes=[{"name": "p", "projected": {"sources": [
        {"clusterTrustBundle": {"name": "b", "path": "p"}}]}}]), "clustertrustbundles"),
    (spec_with(volumes=[{"name": "p", "projected": {"sources": [
        {"podCertificate": {"signerName": "s"}}]}}]), "podcertificates"),
])
def test_api_object_reference(pod, resource):
    assert api_object_reference(pod) == resource


def test_unknown_volume_and_projection_types_are_errors():
    with pytest.raises(ValueError, match="unknown volume type for volume 'v'"):
        api_object_reference(spec_with(volumes=[{"name": "v"}]))
    with pytest.raises(ValueError, match="unknown source for projected volume 'p'"):
        api_object_reference(spec_with(volumes=[{"name": "p", "projected": {"sources": [
            {"somethingNew": {}}]}}]))
