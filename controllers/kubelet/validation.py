"""Validates a static pod as the API server would on create, and finds banned API references.

Two checks the kubelet runs on every pod read from a manifest file or URL
(``pkg/kubelet/config/common.go``):

* :func:`validate_pod` -- the part of ``ValidatePodCreate`` (``pkg/apis/core/validation``) that
  concerns a pod a node runs: object metadata, containers, init containers, ports, env,
  volumes and mounts, and the enumerated policies. It is robust to wrongly typed input (a
  string where a list belongs gives an error, never an exception). ``spec.nodeName`` is not
  checked: the kubelet sets it to its own node name.
* :func:`api_object_reference` -- ``podutil.HasAPIObjectReference``
  (``pkg/api/pod/util.go``, the ``PreventStaticPodAPIReferences`` behaviour): static pods run
  without the API server, so they may not reference ServiceAccounts, Secrets, ConfigMaps,
  ResourceClaims, PersistentVolumeClaims, CSI drivers, ClusterTrustBundles or Pod
  certificates.

Errors are strings in the form of apimachinery's ``field.Error``:
``spec.containers[0].image: Required value``. Pure functions, thread-safe.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from informers.labels import label_key_errors, label_value_errors
from informers.name_validation import is_dns1123_label, is_dns1123_subdomain

__all__ = [
    "ALLOWED_VOLUME_TYPES",
    "VOLUME_TYPES",
    "api_object_reference",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "validate_pod",
]

_ENV_NAME_RE = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
_IANA_SVC_RE = re.compile(r"[-a-z0-9]+")

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
"""apimachinery ``TotalAnnotationSizeLimitB``: keys plus values, in bytes."""

_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_MESSAGE_POLICIES = ("FallbackToLogsOnError", "File")

ALLOWED_VOLUME_TYPES: tuple[str, ...] = (
    "awsElasticBlockStore", "azureDisk", "cephfs", "cinder", "downwardAPI", "emptyDir", "fc",
    "flexVolume", "flocker", "gcePersistentDisk", "gitRepo", "hostPath", "image", "iscsi",
    "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos",
    "vsphereVolume",
)
"""Volume sources a static pod may use (they need no API object)."""

_BANNED_VOLUME_TYPES: dict[str, str] = {
    "configMap": "configmaps (via configmap volumes)",
    "secret": "secrets (via secret volumes)",
    "csi": "csidrivers (via CSI volumes)",
    "glusterfs": "endpoints (via glusterFS volumes)",
    "persistentVolumeClaim": "persistentvolumeclaims",
    "ephemeral": "persistentvolumeclaims (via ephemeral volumes)",
    "azureFile": "secrets (via azureFile volumes)",
}

VOLUME_TYPES: tuple[str, ...] = (*ALLOWED_VOLUME_TYPES, *_BANNED_VOLUME_TYPES, "projected")
"""Every ``v1.VolumeSource`` member: a volume names exactly one of them."""

_PROJECTED_BANNED: dict[str, str] = {
    "configMap": "configmaps (via projected volumes)",
    "secret": "secrets (via projected volumes)",
    "serviceAccountToken": "serviceaccounts (via projected volumes)",
    "clusterTrustBundle": "clustertrustbundles",
    "podCertificate": "podcertificates",
}

# Volume sources whose secretRef names a Secret (podutil.VisitPodSecretNames).
_SECRET_REF_VOLUMES = ("cephfs", "cinder", "flexVolume", "iscsi", "rbd", "scaleIO", "storageos")


def _q(value: object) -> str:
    return json.dumps(value, default=str)


def _invalid(path: str, value: object, detail: str) -> str:
    return f"{path}: Invalid value: {_q(value)}: {detail}"


def _required(path: str, detail: str = "") -> str:
    return f"{path}: Required value" + (f": {detail}" if detail else "")


def _unsupported(path: str, value: object, supported: tuple[str, ...]) -> str:
    return f"{path}: Unsupported value: {_q(value)}: supported values: " + ", ".join(
        _q(s) for s in supported
    )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list_at(value: Any, path: str, errs: list[str]) -> list[Any]:
    """``value`` as a list; anything else but ``None`` is an error and counts as empty."""
    if value is not None and not isinstance(value, list):
        errs.append(_invalid(path, value, "must be a list"))
    return _list(value)


_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)


def _validate_unique_name(name: Any, path: str, seen: set[str], errs: list[str]) -> None:
    """The ``name`` at ``path`` is required, a DNS-1123 label and not in ``seen`` (then it is
    added): the rule for volume and container names."""
    if not name:
        errs.append(_required(path))
    elif not is_dns1123_label(name):
        errs.append(_invalid(path, name, _LABEL_MSG))
    elif name in seen:
        errs.append(f"{path}: Duplicate value: {_q(name)}")
    else:
        seen.add(name)


def _validate_metadata(meta: Any, errs: list[str]) -> None:
    if not isinstance(meta, Mapping):
        errs.append(_required("metadata"))
        return
    name = meta.get("name")
    if not name:
        errs.append(_required("metadata.name", "name or generateName is required"))
    elif not is_dns1123_subdomain(name):
        errs.append(_invalid("metadata.name", name, _SUBDOMAIN_MSG))
    namespace = meta.get("namespace")
    if not namespace:
        errs.append(_required("metadata.namespace"))
    elif not is_dns1123_label(namespace):
        errs.append(_invalid("metadata.namespace", namespace, _LABEL_MSG))
    labels = meta.get("labels")
    if labels is not None:
        if not isinstance(labels, Mapping):
            errs.append(_invalid("metadata.labels", labels, "must be a map of strings"))
        else:
            for key, value in labels.items():
                errs.extend(_invalid("metadata.labels", key, e) for e in label_key_errors(key))
                errs.extend(
                    _invalid(f"metadata.labels[{key}]", value, e) for e in label_value_errors(value)
                )
    annotations = meta.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, Mapping):
            errs.append(_invalid("metadata.annotations", annotations, "must be a map of strings"))
        else:
            size = 0
            for key, value in annotations.items():
                errs.extend(
                    _invalid("metadata.annotations", key, e) for e in label_key_errors(key)
                )
                if not isinstance(value, str):
                    errs.append(_invalid(f"metadata.annotations[{key}]", value, "must be a string"))
                    continue
                size += len(str(key).encode()) + len(value.encode())
            if size > TOTAL_ANNOTATION_SIZE_LIMIT:
                errs.append(
                    f"metadata.annotations: Too long: must have at most "
                    f"{TOTAL_ANNOTATION_SIZE_LIMIT} bytes"
                )


def _validate_volumes(volumes: Any, errs: list[str]) -> set[str]:
    names: set[str] = set()
    for i, vol in enumerate(_list_at(volumes, "spec.volumes", errs)):
        path = f"spec.volumes[{i}]"
        if not isinstance(vol, Mapping):
            errs.append(_invalid(path, vol, "must be an object"))
            continue
        _validate_unique_name(vol.get("name"), f"{path}.name", names, errs)
        kinds = [k for k in VOLUME_TYPES if vol.get(k) is not None]
        if not kinds:
            errs.append(_required(path, "must specify a volume type"))
        elif len(kinds) > 1:
            errs.append(f"{path}.{kinds[1]}: Forbidden: may not specify more than 1 volume type")
    return names


def _validate_container(
    c: Any, path: str, volumes: set[str], seen_names: set[str], host_network: bool,
    errs: list[str],
) -> None:
    if not isinstance(c, Mapping):
        errs.append(_invalid(path, c, "must be an object"))
        return
    _validate_unique_name(c.get("name"), f"{path}.name", seen_names, errs)
    image = c.get("image")
    if not isinstance(image, str) or not image:
        errs.append(_required(f"{path}.image"))
    elif image != image.strip():
        errs.append(_invalid(f"{path}.image", image,
                             "must not have leading or trailing whitespace"))
    policy = c.get("imagePullPolicy")
    if policy not in _PULL_POLICIES:
        errs.append(_unsupported(f"{path}.imagePullPolicy", policy, _PULL_POLICIES))
    message_policy = c.get("terminationMessagePolicy")
    if message_policy not in _MESSAGE_POLICIES:
        errs.append(
            _unsupported(f"{path}.terminationMessagePolicy", message_policy, _MESSAGE_POLICIES)
        )
    port_names: set[str] = set()
    for j, port in enumerate(_list_at(c.get("ports"), f"{path}.ports", errs)):
        ppath = f"{path}.ports[{j}]"
        if not isinstance(port, Mapping):
            errs.append(_invalid(ppath, port, "must be an object"))
            continue
        cport = port.get("containerPort")
        if cport is None or cport == 0:
            errs.append(_required(f"{ppath}.containerPort"))
        elif isinstance(cport, bool) or not isinstance(cport, int) or not 1 <= cport <= 65535:
            errs.append(_invalid(f"{ppath}.containerPort", cport,
                                 "must be between 1 and 65535, inclusive"))
        hport = port.get("hostPort", 0)
        if isinstance(hport, bool) or not isinstance(hport, int) or not 0 <= hport <= 65535:
            errs.append(_invalid(f"{ppath}.hostPort", hport,
                                 "must be between 1 and 65535, inclusive"))
        elif host_network and hport != cport:
            errs.append(_invalid(f"{ppath}.hostPort", hport,
                                 "must match `containerPort` when `hostNetwork` is true"))
        protocol = port.get("protocol")
        if protocol not in _PROTOCOLS:
            errs.append(_unsupported(f"{ppath}.protocol", protocol, _PROTOCOLS))
        pname = port.get("name")
        if pname:
            if not isinstance(pname, str) or len(pname) > 15 or not _IANA_SVC_RE.fullmatch(pname):
                errs.append(_invalid(f"{ppath}.name", pname,
                                     "must be no more than 15 characters of [-a-z0-9]"))
            elif pname in port_names:
                errs.append(f"{ppath}.name: Duplicate value: {_q(pname)}")
            else:
                port_names.add(pname)
    for j, var in enumerate(_list_at(c.get("env"), f"{path}.env", errs)):
        epath = f"{path}.env[{j}]"
        vname = _map(var).get("name")
        if not vname:
            errs.append(_required(f"{epath}.name"))
        elif not isinstance(vname, str) or not _ENV_NAME_RE.fullmatch(vname):
            errs.append(_invalid(f"{epath}.name", vname,
                                 "a valid environment variable name must consist of alphabetic "
                                 "characters, digits, '_', '-', or '.', and must not start with "
                                 "a digit"))
    mount_paths: set[str] = set()
    for j, mount in enumerate(_list_at(c.get("volumeMounts"), f"{path}.volumeMounts", errs)):
        mpath = f"{path}.volumeMounts[{j}]"
        m = _map(mount)
        mname = m.get("name")
        if not mname:
            errs.append(_required(f"{mpath}.name"))
        elif mname not in volumes:
            errs.append(f"{mpath}.name: Not found: {_q(mname)}")
        mount_path = m.get("mountPath")
        if not mount_path:
            errs.append(_required(f"{mpath}.mountPath"))
        elif mount_path in mount_paths:
            errs.append(f"{mpath}.mountPath: Invalid value: {_q(mount_path)}: must be unique")
        else:
            mount_paths.add(mount_path)


def validate_pod(pod: Mapping[str, Any]) -> list[str]:
    """Why ``pod`` may not be created, as field errors; empty when it is valid.

    Call it on a fully defaulted pod (API defaults and static-pod defaults applied), as the
    kubelet does.
    """
    errs: list[str] = []
    _validate_metadata(pod.get("metadata"), errs)
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        errs.append(_required("spec"))
        return errs
    volumes = _validate_volumes(spec.get("volumes"), errs)
    host_network = spec.get("hostNetwork") is True
    names: set[str] = set()
    for key in ("initContainers", "containers"):
        for i, c in enumerate(_list_at(spec.get(key), f"spec.{key}", errs)):
            _validate_container(c, f"spec.{key}[{i}]", volumes, names, host_network, errs)
    if not _list(spec.get("containers")) and isinstance(spec.get("containers", []), list):
        errs.append(_required("spec.containers"))
    if spec.get("ephemeralContainers"):
        errs.append("spec.ephemeralContainers: Forbidden: cannot be set on create")
    restart = spec.get("restartPolicy")
    if restart not in _RESTART_POLICIES:
        errs.append(_unsupported("spec.restartPolicy", restart, _RESTART_POLICIES))
    dns = spec.get("dnsPolicy")
    if dns not in _DNS_POLICIES:
        errs.append(_unsupported("spec.dnsPolicy", dns, _DNS_POLICIES))
    elif dns == "None" and not isinstance(spec.get("dnsConfig"), Mapping):
        errs.append(_required("spec.dnsConfig",
                              "must provide `dnsConfig` when `dnsPolicy` is None"))
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int) or grace < 0):
        errs.append(_invalid("spec.terminationGracePeriodSeconds", grace,
                             "must be greater than or equal to 0"))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (
        isinstance(deadline, bool) or not isinstance(deadline, int) or deadline < 1
    ):
        errs.append(_invalid("spec.activeDeadlineSeconds", deadline,
                             "must be between 1 and 2147483647, inclusive"))
    return errs


# -- references to API objects -------------------------------------------------------------------


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in _list(spec.get(key)):
            if isinstance(c, Mapping):
                yield c


def _env_references(spec: Mapping[str, Any], env_from_ref: str, key_ref: str) -> bool:
    """A container's ``envFrom`` has an ``env_from_ref``, or an ``env`` entry's ``valueFrom``
    a ``key_ref`` (a Secret's or a ConfigMap's)."""
    for c in _containers(spec):
        for env_from in _list(c.get("envFrom")):
            if _map(env_from).get(env_from_ref) is not None:
                return True
        for var in _list(c.get("env")):
            if _map(_map(var).get("valueFrom")).get(key_ref) is not None:
                return True
    return False


def _projects(volume: Mapping[str, Any], kind: str) -> bool:
    """A projected volume with a source of ``kind`` (``secret``, ``configMap``...)."""
    sources = _list(_map(volume.get("projected")).get("sources"))
    return any(_map(source).get(kind) is not None for source in sources)


def _references_secret(spec: Mapping[str, Any]) -> bool:
    """podutil ``VisitPodSecretNames`` found at least one name."""
    if _list(spec.get("imagePullSecrets")):
        return True
    if _env_references(spec, "secretRef", "secretKeyRef"):
        return True
    for vol in _list(spec.get("volumes")):
        v = _map(vol)
        if v.get("secret") is not None or v.get("azureFile") is not None:
            return True
        for kind in _SECRET_REF_VOLUMES:
            if _map(v.get(kind)).get("secretRef") is not None:
                return True
        if _map(v.get("csi")).get("nodePublishSecretRef") is not None:
            return True
        if _projects(v, "secret"):
            return True
    return False


def _references_config_map(spec: Mapping[str, Any]) -> bool:
    """podutil ``VisitPodConfigmapNames`` found at least one name."""
    if _env_references(spec, "configMapRef", "configMapKeyRef"):
        return True
    for vol in _list(spec.get("volumes")):
        v = _map(vol)
        if v.get("configMap") is not None or _projects(v, "configMap"):
            return True
    return False


def api_object_reference(pod: Mapping[str, Any]) -> str | None:
    """The plural resource a pod refers to (``"secrets"``, ...), or ``None`` when it refers to none.

    Same order of checks and same texts as ``podutil.HasAPIObjectReference``: service account,
    Secrets, ConfigMaps, ResourceClaims, then each volume.

    Raises:
        ValueError: a volume or projected source of an unknown type (the kubelet refuses what it
            cannot classify).
    """
    spec = _map(pod.get("spec"))
    if spec.get("serviceAccountName") or spec.get("serviceAccount"):
        return "serviceaccounts"
    if _references_secret(spec):
        return "secrets"
    if _references_config_map(spec):
        return "configmaps"
    if _list(spec.get("resourceClaims")):
        return "resourceclaims"
    for vol in _list(spec.get("volumes")):
        v = _map(vol)
        name = v.get("name")
        if any(v.get(k) is not None for k in ALLOWED_VOLUME_TYPES):
            continue
        for kind, resource in _BANNED_VOLUME_TYPES.items():
            if v.get(kind) is not None:
                return resource
        projected = v.get("projected")
        if projected is None:
            raise ValueError(f"unknown volume type for volume {name!r}")
        for source in _list(_map(projected).get("sources")):
            s = _map(source)
            for kind, resource in _PROJECTED_BANNED.items():
                if s.get(kind) is not None:
                    return resource
            if s.get("downwardAPI") is not None:
                continue
            raise ValueError(f"unknown source for projected volume {name!r}")
    return None
