"""A realistic, deterministic Pod generator shared by every benchmark.

``make_pod(i)`` builds the i-th pod of a Deployment-style workload, shaped like a typical
cluster's pods: 2-5 labels and 0-3 annotations, an owner ReplicaSet, two managedFields entries
(kube-controller-manager ``Update`` and kubelet ``Update`` of the status subresource) whose
FieldsV1 trees follow the object, one container (two in 15% of pods) with env, ports, resources
and (half the time) probes, the projected service-account token volume and a ConfigMap volume,
the two default tolerations, optional affinity and nodeSelector, and a Running status with five
conditions and container statuses.

Sizes (compact JSON): about 7 KB on average with managedFields, about 4 KB without. The same
``i`` always gives the same pod.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

__all__ = ["make_pod", "pod_name"]

_APPS = ("checkout", "payments", "catalog", "search", "frontend", "cart", "shipping",
         "recommendation", "ads", "currency", "email", "auth", "inventory", "reviews")
_TEAMS = ("core", "growth", "platform", "data", "storefront")
_IMAGES = ("registry.example.com/{app}:v{major}.{minor}.{patch}",
           "ghcr.io/example/{app}-service:{major}.{minor}.{patch}")
_SIDECARS = (("istio-proxy", "docker.io/istio/proxyv2:1.22.3"),
             ("log-shipper", "fluent/fluent-bit:3.0.7"))
_ENV = (("LOG_LEVEL", "info"), ("GOMAXPROCS", None), ("OTEL_EXPORTER_OTLP_ENDPOINT",
        "http://otel-collector.observability.svc:4317"), ("POD_NAME", None),
        ("POD_NAMESPACE", None), ("FEATURE_FLAGS", "new-checkout,fast-path"),
        ("CACHE_TTL_SECONDS", "300"))
_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
               "PodScheduled")


def _hex(seed: str, length: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def _suffix(seed: str, length: int) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:length])


def _uid(seed: str) -> str:
    h = _hex(seed, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def pod_name(i: int) -> str:
    """The name of pod ``i``: ``<app>-<replicaset hash>-<suffix>``."""
    app = _APPS[i % len(_APPS)]
    return f"{app}-{_suffix(app + 'rs', 10)}-{_suffix(f'pod{i}', 5)}"


def _timestamp(rng: random.Random, day: int = 10) -> str:
    hour, minute, second = rng.randrange(24), rng.randrange(60), rng.randrange(60)
    return f"2026-01-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"


def _container(rng: random.Random, app: str, main: bool, i: int) -> tuple[dict[str, Any], bool]:
    if main:
        image = rng.choice(_IMAGES).format(app=app, major=rng.randrange(1, 4),
                                           minor=rng.randrange(20), patch=rng.randrange(10))
        name = app
    else:
        name, image = rng.choice(_SIDECARS)
    container: dict[str, Any] = {"name": name, "image": image}
    if main:
        container["args"] = ["--config=/etc/app/config.yaml", f"--port={8080}"]
        env: list[dict[str, Any]] = []
        for key, value in rng.sample(_ENV, rng.randrange(0, 6)):
            if value is not None:
                env.append({"name": key, "value": value})
            elif key == "GOMAXPROCS":
                env.append({"name": key, "valueFrom": {"resourceFieldRef": {
                    "containerName": name, "resource": "limits.cpu", "divisor": "0"}}})
            else:
                field = "metadata.name" if key == "POD_NAME" else "metadata.namespace"
                env.append({"name": key, "valueFrom": {"fieldRef": {
                    "apiVersion": "v1", "fieldPath": field}}})
        if env:
            container["env"] = env
        container["ports"] = [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                              {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}]
    else:
        container["ports"] = [{"name": "admin", "containerPort": 15000, "protocol": "TCP"}]
    cpu = rng.choice(("100m", "250m", "500m"))
    memory = rng.choice(("128Mi", "256Mi", "512Mi"))
    container["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"},
                              "requests": {"cpu": cpu, "memory": memory}}
    probes = main and rng.random() < 0.5
    if probes:
        container["livenessProbe"] = {
            "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
            "initialDelaySeconds": 10, "timeoutSeconds": 1, "periodSeconds": 10,
            "successThreshold": 1, "failureThreshold": 3}
        container["readinessProbe"] = {
            "httpGet": {"path": "/readyz", "port": 8080, "scheme": "HTTP"},
            "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1,
            "failureThreshold": 3}
    container["volumeMounts"] = [
        {"name": "config", "readOnly": True, "mountPath": "/etc/app"},
        {"name": f"kube-api-access-{_suffix(f'sa{i}', 5)}", "readOnly": True,
         "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"},
    ]
    container["terminationMessagePath"] = "/dev/termination-log"
    container["terminationMessagePolicy"] = "File"
    container["imagePullPolicy"] = "IfNotPresent"
    return container, probes


def _fields_container(container: dict[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                            "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {},
                                            "f:memory": {}},
                                            "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
                            "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {},
                            "f:volumeMounts": {".": {}}}
    if "args" in container:
        tree["f:args"] = {}
    for env in container.get("env", ()):
        tree.setdefault("f:env", {".": {}})[f'k:{{"name":"{env["name"]}"}}'] = {
            ".": {}, "f:name": {}, ("f:value" if "value" in env else "f:valueFrom"): {}}
    for port in container.get("ports", ()):
        tree.setdefault("f:ports", {".": {}})[
            f'k:{{"containerPort":{port["containerPort"]},"protocol":"TCP"}}'] = {
            ".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}
    for mount in container["volumeMounts"]:
        tree["f:volumeMounts"][f'k:{{"mountPath":"{mount["mountPath"]}"}}'] = {
            ".": {}, "f:mountPath": {}, "f:name": {}, "f:readOnly": {}}
    for probe in ("livenessProbe", "readinessProbe"):
        if probe in container:
            tree[f"f:{probe}"] = {".": {}, "f:failureThreshold": {}, "f:httpGet": {
                ".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}}, "f:periodSeconds": {},
                "f:successThreshold": {}, "f:timeoutSeconds": {}}
    return tree


def make_pod(
    i: int, namespace: str = "default", node: str | None = None,
    with_managed_fields: bool = True,
) -> dict[str, Any]:
    """The ``i``-th pod: a Running Deployment pod of about 7 KB JSON (4 KB without
    managedFields). ``node`` defaults to one of 100 nodes chosen by ``i``."""
    rng = random.Random(i)
    app = _APPS[i % len(_APPS)]
    name = pod_name(i)
    rs_hash = _suffix(app + "rs", 10)
    node = node or f"node-{i % 100:03d}.cluster.local"
    created = _timestamp(rng)
    labels = {"app.kubernetes.io/name": app, "pod-template-hash": rs_hash}
    for key, value in (("app.kubernetes.io/part-of", "shop"),
                       ("team", rng.choice(_TEAMS)),
                       ("version", f"v{rng.randrange(1, 4)}")):
        if rng.random() < 0.6:
            labels[key] = value
    annotations = {}
    for key, value in (("kubectl.kubernetes.io/restartedAt", created),
                       ("prometheus.io/scrape", "true"),
                       ("checksum/config", _hex(f"cfg{i}", 64))):
        if rng.random() < 0.4:
            annotations[key] = value
    containers = [_container(rng, app, True, i)[0]]
    if rng.random() < 0.15:
        containers.append(_container(rng, app, False, i)[0])
    sa_volume = f"kube-api-access-{_suffix(f'sa{i}', 5)}"
    spec: dict[str, Any] = {
        "volumes": [
            {"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}},
            {"name": sa_volume, "projected": {"sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt",
                               "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                    "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ], "defaultMode": 420}},
        ],
        "containers": containers,
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": app,
        "serviceAccount": app,
        "nodeName": node,
        "securityContext": {"runAsNonRoot": True, "fsGroup": 2000},
        "schedulerName": "default-scheduler",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300},
        ],
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    if rng.random() < 0.3:
        spec["nodeSelector"] = {"kubernetes.io/os": "linux"}
    if rng.random() < 0.3:
        spec["affinity"] = {"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100,
             "podAffinityTerm": {"labelSelector": {"matchLabels": {
                 "app.kubernetes.io/name": app}}, "topologyKey": "kubernetes.io/hostname"}}]}}
    host_ip = f"10.0.{i % 100 // 10}.{i % 100 + 10}"
    pod_ip = f"10.{64 + i // 65536 % 64}.{i // 256 % 256}.{i % 256}"
    started = _timestamp(rng, 11)
    statuses = []
    for container in containers:
        statuses.append({
            "name": container["name"],
            "state": {"running": {"startedAt": started}},
            "lastState": {},
            "ready": True,
            "restartCount": rng.choice((0, 0, 0, 1, 2)),
            "image": container["image"],
            "imageID": f"{container['image'].split(':')[0]}@sha256:{_hex(container['image'], 64)}",
            "containerID": f"containerd://{_hex(name + container['name'], 64)}",
            "started": True,
        })
    status = {
        "phase": "Running",
        "conditions": [{"type": c, "status": "True", "lastProbeTime": None,
                        "lastTransitionTime": started} for c in _CONDITIONS],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": created,
        "containerStatuses": statuses,
        "qosClass": "Burstable",
    }
    metadata: dict[str, Any] = {
        "name": name,
        "generateName": f"{app}-{rs_hash}-",
        "namespace": namespace,
        "uid": _uid(f"pod{i}{namespace}"),
        "resourceVersion": str(1000 + i),
        "creationTimestamp": created,
        "labels": labels,
    }
    if annotations:
        metadata["annotations"] = annotations
    metadata["ownerReferences"] = [{
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-{rs_hash}",
        "uid": _uid(app + "rs"), "controller": True, "blockOwnerDeletion": True}]
    if with_managed_fields:
        metadata["managedFields"] = _managed_fields(metadata, spec, status, created, started)
    return {"kind": "Pod", "apiVersion": "v1", "metadata": metadata, "spec": spec,
            "status": status}


def _managed_fields(
    metadata: dict[str, Any], spec: dict[str, Any], status: dict[str, Any], created: str,
    started: str,
) -> list[dict[str, Any]]:
    meta_tree: dict[str, Any] = {
        "f:generateName": {},
        "f:labels": {".": {}, **{f"f:{k}": {} for k in metadata["labels"]}},
        "f:ownerReferences": {
            ".": {}, f'k:{{"uid":"{metadata["ownerReferences"][0]["uid"]}"}}': {}},
    }
    if "annotations" in metadata:
        meta_tree["f:annotations"] = {".": {}, **{f"f:{k}": {} for k in metadata["annotations"]}}
    spec_tree: dict[str, Any] = {
        "f:containers": {f'k:{{"name":"{c["name"]}"}}': _fields_container(c)
                         for c in spec["containers"]},
        "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
        "f:schedulerName": {}, "f:securityContext": {".": {}, "f:fsGroup": {},
                                                     "f:runAsNonRoot": {}},
        "f:serviceAccount": {}, "f:serviceAccountName": {},
        "f:terminationGracePeriodSeconds": {},
        "f:volumes": {".": {}, 'k:{"name":"config"}': {".": {}, "f:configMap": {
            ".": {}, "f:defaultMode": {}, "f:name": {}}, "f:name": {}}},
    }
    if "nodeSelector" in spec:
        spec_tree["f:nodeSelector"] = {}
    if "affinity" in spec:
        spec_tree["f:affinity"] = {".": {}, "f:podAntiAffinity": {
            ".": {}, "f:preferredDuringSchedulingIgnoredDuringExecution": {}}}
    status_tree: dict[str, Any] = {
        "f:conditions": {f'k:{{"type":"{c}"}}': {".": {}, "f:lastProbeTime": {},
                                                  "f:lastTransitionTime": {}, "f:status": {},
                                                  "f:type": {}} for c in _CONDITIONS},
        "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {},
        "f:podIP": {}, "f:podIPs": {".": {}, f'k:{{"ip":"{status["podIP"]}"}}': {
            ".": {}, "f:ip": {}}}, "f:startTime": {},
    }
    return [
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": created, "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": meta_tree, "f:spec": spec_tree}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": started,
         "fieldsType": "FieldsV1", "fieldsV1": {"f:status": status_tree},
         "subresource": "status"},
    ]
