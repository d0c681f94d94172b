"""kube-apiserver's v1 defaults of the built-in kinds, held to the real server: each test runs
on the embedded server and on kube-apiserver v1.36.3 (``any_api_server``) with the same
expected objects. The defaults are those of ``pkg/apis/{core,apps,batch,discovery}/v1/
defaults.go`` (``SetDefaults_Pod``, ``SetDefaults_PodSpec``, ``SetDefaults_Container``,
``SetDefaults_Service``, ``SetDefaults_Deployment``, ...), the pod strategy's ``qosClass``, the
``DefaultTolerationSeconds`` and ``Priority`` admission plugins and the service registry's IP
families (informers/testing/defaults.py). Writes go over HTTP on both servers.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from informers.client import list_watch_from_client
from informers.client.api_call import api_call
from informers.list_watch import ListOptions

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"

CONTAINER_DEFAULTS = {"imagePullPolicy": "IfNotPresent", "resources": {},
                      "terminationMessagePath": "/dev/termination-log",
                      "terminationMessagePolicy": "File"}
POD_SPEC_DEFAULTS = {"dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                     "schedulerName": "default-scheduler", "securityContext": {},
                     "terminationGracePeriodSeconds": 30}
TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
]
POD_ADMISSION = {"enableServiceLinks": True, "priority": 0,
                 "preemptionPolicy": "PreemptLowerPriority", "tolerations": TOLERATIONS}
LABELS = {"app": "web"}
TEMPLATE = {"metadata": {"labels": LABELS},
            "spec": {"containers": [{"name": "c", "image": "registry.invalid/web:1"}]}}
DEFAULTED_TEMPLATE = {"metadata": {"labels": LABELS}, "spec": {
    "containers": [{"name": "c", "image": "registry.invalid/web:1", **CONTAINER_DEFAULTS}],
    **POD_SPEC_DEFAULTS}}


def call(s, method: str, path: str, body: Any = None, content_type: str = "application/json"):
    api = s.api_client()
    try:
        return api_call(api, method, path, body, content_type=content_type)
    finally:
        api.close()


def core(s, plural: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{s.namespace}/{plural}" + (f"/{name}" if name else "")


def apps(s, plural: str, name: str = "") -> str:
    return f"/apis/apps/v1/namespaces/{s.namespace}/{plural}" + (f"/{name}" if name else "")


def obj(name: str, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, **fields}


# -- pods ------------------------------------------------------------------------------------------


def test_set_defaults_pod(any_api_server):
    s = any_api_server
    made = call(s, "POST", core(s, "pods"), obj("p", spec={
        "containers": [
            {"name": "latest", "image": "nginx", "ports": [{"containerPort": 80}]},
            {"name": "tagged", "image": "registry.invalid/x:1.0"},
            {"name": "digest", "image": "registry.invalid/x@sha256:" + "a" * 64},
        ],
        "initContainers": [{"name": "init", "image": "busybox:latest"}],
    }))
    assert made["spec"] == {
        "containers": [
            {"name": "latest", "image": "nginx", "ports": [{"containerPort": 80,
                                                            "protocol": "TCP"}],
             **CONTAINER_DEFAULTS, "imagePullPolicy": "Always"},
            {"name": "tagged", "image": "registry.invalid/x:1.0", **CONTAINER_DEFAULTS},
            {"name": "digest", "image": "registry.invalid/x@sha256:" + "a" * 64,
             **CONTAINER_DEFAULTS},
        ],
        "initContainers": [{"name": "init", "image": "busybox:latest", **CONTAINER_DEFAULTS,
                            "imagePullPolicy": "Always"}],
        **POD_SPEC_DEFAULTS, **POD_ADMISSION,
    }
    assert made["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert call(s, "GET", core(s, "pods", "p"))["spec"] == made["spec"]


def test_set_defaults_pod_volumes_probes_and_env(any_api_server):
    s = any_api_server
    made = call(s, "POST", core(s, "pods"), obj("p", spec={
        "containers": [{
            "name": "c", "image": "registry.invalid/x:1",
            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "livenessProbe": {"httpGet": {"port": 8080}},
            "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
        }],
        "volumes": [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "cfg"}},
                    {"name": "key", "secret": {"secretName": "key"}},
                    {"name": "host", "hostPath": {"path": "/tmp"}}],
    }))
    container = made["spec"]["containers"][0]
    assert container["env"] == [{"name": "NODE", "valueFrom": {"fieldRef": {
        "apiVersion": "v1", "fieldPath": "spec.nodeName"}}}]
    assert container["livenessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
        "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert container["readinessProbe"] == {
        "tcpSocket": {"port": 8080}, "timeoutSeconds": 1, "periodSeconds": 5,
        "successThreshold": 1, "failureThreshold": 3}
    assert made["spec"]["volumes"] == [
        {"name": "scratch", "emptyDir": {}},
        {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}},
        {"name": "key", "secret": {"secretName": "key", "defaultMode": 420}},
        {"name": "host", "hostPath": {"path": "/tmp", "type": ""}},
    ]


def test_limits_are_requests_and_set_the_qos_class(any_api_server):
    s = any_api_server
    limits = {"cpu": "100m", "memory": "64Mi"}
    guaranteed = call(s, "POST", core(s, "pods"), obj("g", spec={"containers": [
        {"name": "c", "image": "registry.invalid/x:1", "resources": {"limits": limits}}]}))
    assert guaranteed["spec"]["containers"][0]["resources"] == {"limits": limits,
                                                                "requests": limits}
    assert guaranteed["status"]["qosClass"] == "Guaranteed"
    burstable = call(s, "POST", core(s, "pods"), obj("b", spec={"containers": [
        {"name": "c", "image": "registry.invalid/x:1",
         "resources": {"requests": {"cpu": "100m"}}}]}))
    assert burstable["status"]["qosClass"] == "Burstable"
    # the class is set at creation: a status write without it keeps it
    kept = call(s, "PATCH", core(s, "pods", "b") + "/status",
                {"status": {"phase": "Running"}}, MERGE)
    assert kept["status"] == {"phase": "Running", "qosClass": "Burstable"}


def test_default_toleration_seconds_adds_only_the_missing_tolerations(any_api_server):
    s = any_api_server
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
           "tolerationSeconds": 10}
    made = call(s, "POST", core(s, "pods"), obj("p", spec={
        "containers": [{"name": "c", "image": "registry.invalid/x:1"}], "tolerations": [own]}))
    assert made["spec"]["tolerations"] == [own, TOLERATIONS[1]]
    anything = call(s, "POST", core(s, "pods"), obj("q", spec={
        "containers": [{"name": "c", "image": "registry.invalid/x:1"}],
        "tolerations": [{"operator": "Exists"}]}))
    assert anything["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_a_pod_update_keeps_the_admission_defaults(any_api_server):
    s = any_api_server
    made = call(s, "POST", core(s, "pods"), obj("p", spec={
        "containers": [{"name": "c", "image": "registry.invalid/x:1"}]}))
    body = copy.deepcopy(made)
    body["metadata"]["labels"] = {"a": "b"}
    for key in ("priority", "preemptionPolicy", "tolerations", "restartPolicy"):
        del body["spec"][key]
    updated = call(s, "PUT", core(s, "pods", "p"), body)
    assert updated["metadata"]["labels"] == {"a": "b"}
    assert updated["spec"] == made["spec"]


# -- services --------------------------------------------------------------------------------------


def test_set_defaults_service(any_api_server):
    s = any_api_server
    made = call(s, "POST", core(s, "services"), obj("web", spec={
        "selector": LABELS,
        "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP",
                                                 "targetPort": "dns"}]}))
    ip = made["spec"]["clusterIP"]
    assert made["spec"] == {
        "selector": LABELS, "clusterIP": ip, "clusterIPs": [ip], "type": "ClusterIP",
        "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
        "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
        "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80},
                  {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": "dns"}]}
    assert made["status"] == {"loadBalancer": {}}


def test_set_defaults_service_headless_external_name_and_client_ip(any_api_server):
    s = any_api_server
    port = [{"port": 80}]
    headless = call(s, "POST", core(s, "services"), obj("hl", spec={
        "clusterIP": "None", "selector": LABELS, "ports": port}))["spec"]
    assert (headless["clusterIPs"], headless["ipFamilies"], headless["ipFamilyPolicy"]) == (
        ["None"], ["IPv4"], "SingleStack")
    bare = call(s, "POST", core(s, "services"), obj("bare", spec={
        "clusterIP": "None", "ports": port}))["spec"]
    assert (bare["ipFamilies"], bare["ipFamilyPolicy"]) == (["IPv4", "IPv6"],
                                                            "RequireDualStack")
    external = call(s, "POST", core(s, "services"), obj("ext", spec={
        "type": "ExternalName", "externalName": "example.com"}))["spec"]
    assert external == {"type": "ExternalName", "externalName": "example.com",
                        "sessionAffinity": "None"}
    sticky = call(s, "POST", core(s, "services"), obj("sticky", spec={
        "sessionAffinity": "ClientIP", "ports": port}))["spec"]
    assert sticky["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_a_service_update_keeps_its_families_and_defaults_again(any_api_server):
    s = any_api_server
    made = call(s, "POST", core(s, "services"), obj("web", spec={"ports": [{"port": 80}]}))
    spec = {"ports": [{"port": 81}]}
    body = {**made, "spec": spec}
    updated = call(s, "PUT", core(s, "services", "web"), body)
    assert updated["spec"] == {**made["spec"], "ports": [
        {"port": 81, "protocol": "TCP", "targetPort": 81}]}


# -- workloads -------------------------------------------------------------------------------------


def test_set_defaults_deployment(any_api_server):
    s = any_api_server
    made = call(s, "POST", apps(s, "deployments"), obj("web", spec={
        "selector": {"matchLabels": LABELS}, "template": TEMPLATE}))
    assert made["spec"] == {
        "replicas": 1, "selector": {"matchLabels": LABELS}, "template": DEFAULTED_TEMPLATE,
        "strategy": {"type": "RollingUpdate",
                     "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}
    recreate = call(s, "POST", apps(s, "deployments"), obj("once", spec={
        "selector": {"matchLabels": LABELS}, "template": TEMPLATE,
        "strategy": {"type": "Recreate"}}))
    assert recreate["spec"]["strategy"] == {"type": "Recreate"}


def test_set_defaults_replica_set_stateful_set_and_daemon_set(any_api_server):
    s = any_api_server
    base = {"selector": {"matchLabels": LABELS}, "template": TEMPLATE}
    rs = call(s, "POST", apps(s, "replicasets"), obj("rs", spec=base))
    assert rs["spec"] == {**base, "replicas": 1, "template": DEFAULTED_TEMPLATE}
    sts = call(s, "POST", apps(s, "statefulsets"), obj("sts", spec=base))
    assert sts["spec"] == {
        **base, "template": DEFAULTED_TEMPLATE, "replicas": 1, "revisionHistoryLimit": 10,
        "podManagementPolicy": "OrderedReady", "serviceName": "",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain",
                                                 "whenScaled": "Retain"}}
    ds = call(s, "POST", apps(s, "daemonsets"), obj("ds", spec=base))
    assert ds["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    assert ds["spec"] == {
        **base, "template": DEFAULTED_TEMPLATE, "revisionHistoryLimit": 10,
        "updateStrategy": {"type": "RollingUpdate",
                           "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}}


def test_a_daemon_set_template_change_moves_its_template_generation(any_api_server):
    s = any_api_server
    call(s, "POST", apps(s, "daemonsets"), obj("ds", spec={
        "selector": {"matchLabels": LABELS}, "template": TEMPLATE}))
    key = "deprecated.daemonset.template.generation"
    kept = call(s, "PATCH", apps(s, "daemonsets", "ds"),
                {"metadata": {"annotations": {key: "7", "a": "b"}}}, MERGE)
    assert kept["metadata"]["annotations"] == {key: "1", "a": "b"}
    moved = call(s, "PATCH", apps(s, "daemonsets", "ds"), {"spec": {"template": {
        "metadata": {"labels": {**LABELS, "v": "2"}}}}}, MERGE)
    assert moved["metadata"]["annotations"] == {key: "2", "a": "b"}


def test_set_defaults_job(any_api_server):
    s = any_api_server
    template = {"spec": {"restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "registry.invalid/x:1"}]}}
    made = call(s, "POST", f"/apis/batch/v1/namespaces/{s.namespace}/jobs",
                obj("once", spec={"template": template}))
    spec = made["spec"]
    assert {k: spec[k] for k in ("completions", "parallelism", "backoffLimit", "completionMode",
                                 "suspend", "podReplacementPolicy", "manualSelector")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
        "suspend": False, "podReplacementPolicy": "TerminatingOrFailed",
        "manualSelector": False}
    assert spec["template"]["spec"]["containers"] == [
        {"name": "c", "image": "registry.invalid/x:1", **CONTAINER_DEFAULTS}]


def test_defaults_apply_to_patches_and_watch_events(any_api_server):
    s = any_api_server
    made = call(s, "POST", apps(s, "deployments"), obj("web", spec={
        "selector": {"matchLabels": LABELS}, "template": TEMPLATE}))
    api = s.api_client()
    stream = list_watch_from_client(api, "deployments.apps", namespace=s.namespace).watch(
        ListOptions(resource_version=made["metadata"]["resourceVersion"], timeout_seconds=30))
    seen: list[dict[str, Any]] = []
    done = threading.Event()

    def read() -> None:
        try:
            for event in stream:
                seen.append(event.object)
                break
        finally:
            done.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    try:
        # a patch that clears the strategy and the revision limit: both defaulted again
        patched = call(s, "PATCH", apps(s, "deployments", "web"), {"spec": {
            "strategy": None, "revisionHistoryLimit": None, "replicas": 2}}, MERGE)
        assert done.wait(10)
    finally:
        stream.close()
        thread.join(10)
        api.close()
    assert patched["spec"] == {**made["spec"], "replicas": 2}
    assert seen[0]["spec"] == patched["spec"]
    sm = call(s, "PATCH", apps(s, "deployments", "web"), {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "imagePullPolicy": None}]}}}}, STRATEGIC)
    assert sm["spec"]["template"] == DEFAULTED_TEMPLATE


# -- other kinds -----------------------------------------------------------------------------------


def test_set_defaults_secret_config_map_and_claim(any_api_server):
    s = any_api_server
    secret = call(s, "POST", core(s, "secrets"), obj("s", stringData={"user": "admin"}))
    assert (secret["type"], secret["data"], "stringData" in secret) == (
        "Opaque", {"user": "YWRtaW4="}, False)
    config = call(s, "POST", core(s, "configmaps"), obj("c"))
    assert "data" not in config  # defaulted to an empty map, which is not written
    claim = call(s, "POST", core(s, "persistentvolumeclaims"), obj("pvc", spec={
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}))
    assert (claim["spec"]["volumeMode"], claim["status"]) == ("Filesystem",
                                                              {"phase": "Pending"})


def test_set_defaults_endpoint_slice_and_event(any_api_server):
    s = any_api_server
    sliced = call(s, "POST", f"/apis/discovery.k8s.io/v1/namespaces/{s.namespace}/"
                             "endpointslices", obj("web-1", addressType="IPv4",
                                                   endpoints=[{"addresses": ["10.1.0.1"]}],
                                                   ports=[{"port": 80}]))
    assert (sliced["ports"], sliced["endpoints"]) == (
        [{"name": "", "port": 80, "protocol": "TCP"}],
        [{"addresses": ["10.1.0.1"], "conditions": {}}])
    event = call(s, "POST", core(s, "events"), obj("e", reason="R", message="m",
                                                   involvedObject={"kind": "Pod", "name": "p",
                                                                   "namespace": s.namespace}))
    assert {k: event[k] for k in ("eventTime", "firstTimestamp", "lastTimestamp",
                                  "reportingComponent", "reportingInstance", "source")} == {
        "eventTime": None, "firstTimestamp": None, "lastTimestamp": None,
        "reportingComponent": "", "reportingInstance": "", "source": {}}
