"""kube-apiserver's v1 defaulting of the built-in kinds, as pure functions over decoded bodies.

kube-apiserver defaults every object it decodes (create, update and patch bodies alike), with
the ``SetDefaults_*`` functions of ``k8s.io/kubernetes/pkg/apis/<group>/v1/defaults.go`` as
``zz_generated.defaults.go`` calls them; :func:`apply_defaults` is that step for the kinds the
embedded server serves. What a registry or an admission plugin adds after decoding is here too,
named by its source, for the strategy to call at the right moment: a Service's IP families
(the service REST storage, :func:`default_ip_families`); a pod's admission defaults and QoS
class are :mod:`informers.testing.pod_admission`'s. (Server-side apply keys list items by
their keys' defaults itself: :mod:`informers.testing.apply`.)

Not covered: quantities are kept as sent (kube-apiserver writes them in canonical form:
``1000m`` becomes ``1``), ``PodLevelResources`` pod-level requests, image volumes, the
deprecated volume plugins' defaults (iSCSI, RBD, AzureDisk, ScaleIO), ReplicationControllers
and CronJobs (not served), a Job's generated selector and labels, and NodePort allocation.

The functions change the dicts they are given in place: the caller owns the body. A nested
dict shared with the stored object (a patch result) only gains what the stored object, itself
defaulted, already has.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any, Final

__all__ = ["apply_defaults", "default_ip_families", "dicts", "set_default"]

def dicts(value: Any) -> Iterator[dict[str, Any]]:
    """The dict items of a list (anything else yields nothing: field validation answers it)."""
    if isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                yield item


def _dict(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """``parent[key]`` as a dict, set to ``{}`` when absent or null (a Go struct or a nil
    pointer the defaulting allocates)."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def set_default(obj: dict[str, Any], key: str, value: Any) -> None:
    """Set ``key`` when absent, null or the Go zero value ``""``."""
    if obj.get(key) in (None, ""):
        obj[key] = value


# -- containers ----------------------------------------------------------------------------------


def _image_tag(image: str) -> str:
    """The tag ``parsers.ParseImageName`` finds (``latest`` when none and no digest; none
    for an empty reference, which it cannot parse)."""
    if not image:
        return ""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


def _probe(probe: Any) -> None:
    """``SetDefaults_Probe``, ``SetDefaults_HTTPGetAction`` and the gRPC ``service``."""
    if not isinstance(probe, dict):
        return
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10),
                       ("successThreshold", 1), ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    http_get = probe.get("httpGet")
    if isinstance(http_get, dict):
        set_default(http_get, "path", "/")
        set_default(http_get, "scheme", "HTTP")
    grpc = probe.get("grpc")
    if isinstance(grpc, dict) and grpc.get("service") is None:
        grpc["service"] = ""


def _container(container: dict[str, Any], host_network: bool) -> None:
    """``SetDefaults_Container`` and the generated defaults of its ports, env and probes."""
    if not container.get("imagePullPolicy"):
        image = container.get("image")
        tag = _image_tag(image) if isinstance(image, str) else ""
        container["imagePullPolicy"] = "Always" if tag == "latest" else "IfNotPresent"
    set_default(container, "terminationMessagePath", "/dev/termination-log")
    set_default(container, "terminationMessagePolicy", "File")
    for port in dicts(container.get("ports")):
        set_default(port, "protocol", "TCP")
        if host_network and not port.get("hostPort"):  # defaultHostNetworkPorts
            port["hostPort"] = port.get("containerPort", 0)
    for env in dicts(container.get("env")):
        source = env.get("valueFrom")
        if isinstance(source, dict):
            field_ref = source.get("fieldRef")
            if isinstance(field_ref, dict):
                set_default(field_ref, "apiVersion", "v1")
            file_ref = source.get("fileKeyRef")
            if isinstance(file_ref, dict) and file_ref.get("optional") is None:
                file_ref["optional"] = False
    _dict(container, "resources")  # a struct: always written
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(container.get(key))


def _field_refs(items: Any) -> None:
    for item in dicts(items):
        ref = item.get("fieldRef")
        if isinstance(ref, dict):
            set_default(ref, "apiVersion", "v1")


def _mode(source: dict[str, Any]) -> None:
    if source.get("defaultMode") is None:
        source["defaultMode"] = 420  # 0644: the *VolumeSourceDefaultMode constants


def _downward_api(source: dict[str, Any]) -> None:
    _mode(source)
    _field_refs(source.get("items"))


def _projected(source: dict[str, Any]) -> None:
    _mode(source)
    for item in dicts(source.get("sources")):
        downward = item.get("downwardAPI")
        if isinstance(downward, dict):
            _field_refs(downward.get("items"))
        token = item.get("serviceAccountToken")
        if isinstance(token, dict) and token.get("expirationSeconds") is None:
            token["expirationSeconds"] = 3600


def _host_path(source: dict[str, Any]) -> None:
    if source.get("type") is None:
        source["type"] = ""  # HostPathUnset


def _ephemeral(source: dict[str, Any]) -> None:
    template = source.get("volumeClaimTemplate")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        set_default(template["spec"], "volumeMode", "Filesystem")


_VOLUME_SOURCES: Final[dict[str, Callable[[dict[str, Any]], None]]] = {
    "secret": _mode, "configMap": _mode, "downwardAPI": _downward_api,
    "projected": _projected, "hostPath": _host_path, "ephemeral": _ephemeral,
}


def _volume(volume: dict[str, Any]) -> None:
    """``SetDefaults_Volume`` (no source: an ``emptyDir``) and the generated defaults of the
    sources: default modes, ``hostPath`` type, downward API field references, token
    expiry, ephemeral claim volume mode."""
    sources = [k for k, v in volume.items() if k != "name" and v is not None]
    if not sources:
        volume["emptyDir"] = {}
    for key in sources:
        default = _VOLUME_SOURCES.get(key)
        source = volume[key]
        if default is not None and isinstance(source, dict):
            default(source)


def _pod_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_PodSpec`` and the generated defaults of its volumes and containers
    (what a pod and every pod template get)."""
    set_default(spec, "dnsPolicy", "ClusterFirst")
    set_default(spec, "restartPolicy", "Always")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    set_default(spec, "schedulerName", "default-scheduler")
    host_network = spec.get("hostNetwork") is True
    for volume in dicts(spec.get("volumes")):
        _volume(volume)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in dicts(spec.get(key)):
            _container(container, host_network and key != "ephemeralContainers")


def _spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    """``obj["spec"]``, set to ``{}`` when absent or null (a Go struct: it is always there
    to default); ``None`` when it is not an object (field validation answers that)."""
    if obj.get("spec") is None:
        obj["spec"] = {}
    spec = obj["spec"]
    return spec if isinstance(spec, dict) else None


def _template(obj: dict[str, Any]) -> None:
    """The pod spec defaults of ``spec.template.spec`` (structs: created when absent)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if spec.get("template") is None:
        spec["template"] = {}
    template = spec["template"]
    if isinstance(template, dict):
        template_spec = _spec(template)
        if template_spec is not None:
            _pod_spec(template_spec)


# -- kinds ---------------------------------------------------------------------------------------


def _pod(obj: dict[str, Any]) -> None:
    """``SetObjectDefaults_Pod``: ``SetDefaults_Pod`` (a container's limits are its requests
    when it names none; ``enableServiceLinks``) and ``SetDefaults_PodSpec``."""
    spec = _spec(obj)
    if spec is None:
        return
    for container in [*dicts(spec.get("containers")), *dicts(spec.get("initContainers"))]:
        resources = container.get("resources")
        limits = resources.get("limits") if isinstance(resources, dict) else None
        if isinstance(limits, dict) and isinstance(resources, dict):
            requests = resources.get("requests")
            if not isinstance(requests, dict):
                requests = resources["requests"] = {}
            for key, value in limits.items():
                requests.setdefault(key, value)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    _pod_spec(spec)


def _service(obj: dict[str, Any]) -> None:
    """``SetDefaults_Service``."""
    spec = _spec(obj)
    if spec is None:
        return
    set_default(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = spec.get("sessionAffinityConfig")
        client_ip = config.get("clientIP") if isinstance(config, dict) else None
        if not isinstance(client_ip, dict) or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    set_default(spec, "type", "ClusterIP")
    for port in dicts(spec.get("ports")):
        set_default(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port", 0)
    kind = spec["type"]
    if (kind in ("NodePort", "LoadBalancer") or spec.get("externalIPs")) and \
            not spec.get("externalTrafficPolicy"):  # service.ExternallyAccessible
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and kind in ("NodePort", "LoadBalancer",
                                                              "ClusterIP"):
        spec["internalTrafficPolicy"] = "Cluster"
    if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


def default_ip_families(spec: dict[str, Any]) -> None:
    """The service REST storage's ``initIPFamilyFields`` on an IPv4 single-stack cluster:
    ``ipFamilyPolicy`` ``SingleStack`` and ``ipFamilies`` ``[IPv4]``, except a headless
    Service without a selector, which gets ``RequireDualStack`` and both families; an
    ``ExternalName`` Service gets neither."""
    if spec.get("type") == "ExternalName":
        return
    dual = spec.get("clusterIP") == "None" and not spec.get("selector")
    set_default(spec, "ipFamilyPolicy", "RequireDualStack" if dual else "SingleStack")
    if not spec.get("ipFamilies"):
        spec["ipFamilies"] = ["IPv4", "IPv6"] if dual else ["IPv4"]


def _deployment(obj: dict[str, Any]) -> None:
    """``SetDefaults_Deployment``."""
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = _dict(spec, "strategy")
    set_default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        for key in ("maxUnavailable", "maxSurge"):
            if rolling.get(key) is None:
                rolling[key] = "25%"
    for key, value in (("revisionHistoryLimit", 10), ("progressDeadlineSeconds", 600)):
        if spec.get(key) is None:
            spec[key] = value
    _template(obj)


def _replica_set(obj: dict[str, Any]) -> None:
    """``SetDefaults_ReplicaSet``."""
    spec = _spec(obj)
    if spec is not None and spec.get("replicas") is None:
        spec["replicas"] = 1
    _template(obj)


def _stateful_set(obj: dict[str, Any]) -> None:
    """``SetDefaults_StatefulSet`` (``MaxUnavailableStatefulSet`` off, its v1.36 default);
    ``serviceName`` is written even when empty."""
    spec = _spec(obj)
    if spec is None:
        return
    set_default(spec, "podManagementPolicy", "OrderedReady")
    update = _dict(spec, "updateStrategy")
    if not update.get("type"):
        update["type"] = "RollingUpdate"
        _dict(update, "rollingUpdate")
    rolling = update.get("rollingUpdate")
    if update["type"] == "RollingUpdate" and isinstance(rolling, dict) and \
            rolling.get("partition") is None:
        rolling["partition"] = 0
    retention = _dict(spec, "persistentVolumeClaimRetentionPolicy")
    set_default(retention, "whenDeleted", "Retain")
    set_default(retention, "whenScaled", "Retain")
    for key, value in (("replicas", 1), ("revisionHistoryLimit", 10)):
        if spec.get(key) is None:
            spec[key] = value
    if spec.get("serviceName") is None:
        spec["serviceName"] = ""
    for claim in dicts(spec.get("volumeClaimTemplates")):
        claim_spec = claim.get("spec")
        if isinstance(claim_spec, dict):
            set_default(claim_spec, "volumeMode", "Filesystem")
        set_default(_dict(claim, "status"), "phase", "Pending")
    _template(obj)


def _daemon_set(obj: dict[str, Any]) -> None:
    """``SetDefaults_DaemonSet``."""
    spec = _spec(obj)
    if spec is None:
        return
    update = _dict(spec, "updateStrategy")
    set_default(update, "type", "RollingUpdate")
    if update["type"] == "RollingUpdate":
        rolling = _dict(update, "rollingUpdate")
        for key, value in (("maxUnavailable", 1), ("maxSurge", 0)):
            if rolling.get(key) is None:
                rolling[key] = value
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _template(obj)


def _job(obj: dict[str, Any]) -> None:
    """``SetDefaults_Job`` (``JobPodReplacementPolicy`` on, its v1.36 default) and the
    template's pod spec defaults."""
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    template = spec.get("template")
    labels = template.get("metadata", {}).get("labels") if isinstance(template, dict) else None
    meta = obj.get("metadata")
    if isinstance(labels, dict) and isinstance(meta, dict) and not meta.get("labels"):
        meta["labels"] = dict(labels)
    for key, value in (("completionMode", "NonIndexed"), ("suspend", False)):
        if spec.get(key) is None:
            spec[key] = value
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = ("Failed" if spec.get("podFailurePolicy") is not None
                                        else "TerminatingOrFailed")
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    _template(obj)


def _secret(obj: dict[str, Any]) -> None:
    """``SetDefaults_Secret``; and ``Convert_v1_Secret_To_core_Secret``: ``stringData`` is
    written into ``data`` (base64, overwriting a key of the same name) and not kept."""
    set_default(obj, "type", "Opaque")
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data")
        data = dict(data) if isinstance(data, dict) else {}
        for key, value in string_data.items():
            if isinstance(value, str):
                data[key] = base64.b64encode(value.encode()).decode()
        obj["data"] = data


def _pvc(obj: dict[str, Any]) -> None:
    """``SetDefaults_PersistentVolumeClaimSpec``."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        set_default(spec, "volumeMode", "Filesystem")


def _pv(obj: dict[str, Any]) -> None:
    """``SetDefaults_PersistentVolume`` (the ``Pending`` phase is the strategy's)."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        set_default(spec, "persistentVolumeReclaimPolicy", "Retain")
        set_default(spec, "volumeMode", "Filesystem")
        host_path = spec.get("hostPath")
        if isinstance(host_path, dict) and host_path.get("type") is None:
            host_path["type"] = ""


def _endpoint_slice(obj: dict[str, Any]) -> None:
    """``SetDefaults_EndpointPort`` (``name`` ``""``, ``protocol`` ``TCP``) and each
    endpoint's ``conditions`` struct."""
    for port in dicts(obj.get("ports")):
        if port.get("name") is None:
            port["name"] = ""
        if port.get("protocol") is None:
            port["protocol"] = "TCP"
    for endpoint in dicts(obj.get("endpoints")):
        _dict(endpoint, "conditions")


def _event(obj: dict[str, Any]) -> None:
    """The core/v1 Event fields the encoding always writes (no ``omitempty``)."""
    for key in ("eventTime", "firstTimestamp", "lastTimestamp"):
        obj.setdefault(key, None)
    for key in ("reportingComponent", "reportingInstance"):
        obj.setdefault(key, "")
    _dict(obj, "source")


def _node(obj: dict[str, Any]) -> None:
    """``SetDefaults_NodeStatus``: ``allocatable`` is ``capacity`` when unset."""
    node_status = obj.get("status")
    if isinstance(node_status, dict) and node_status.get("allocatable") is None and \
            isinstance(node_status.get("capacity"), dict):
        node_status["allocatable"] = dict(node_status["capacity"])


_DEFAULTERS: Final[dict[tuple[str, str], Callable[[dict[str, Any]], None]]] = {
    ("", "pods"): _pod,
    ("", "services"): _service,
    ("", "secrets"): _secret,
    ("", "persistentvolumeclaims"): _pvc,
    ("", "persistentvolumes"): _pv,
    ("", "events"): _event,
    ("", "nodes"): _node,
    ("apps", "deployments"): _deployment,
    ("apps", "replicasets"): _replica_set,
    ("apps", "statefulsets"): _stateful_set,
    ("apps", "daemonsets"): _daemon_set,
    ("batch", "jobs"): _job,
    ("discovery.k8s.io", "endpointslices"): _endpoint_slice,
}


def apply_defaults(group: str, plural: str, obj: dict[str, Any]) -> None:
    """Default a decoded v1 body of the built-in ``group``/``plural`` in place (nothing for
    other kinds). Namespaces and Endpoints are defaulted by
    :mod:`informers.testing.kind_rules`."""
    defaulter = _DEFAULTERS.get((group, plural))
    if defaulter is not None:
        defaulter(obj)
