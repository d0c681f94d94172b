"""Turns a static pod manifest (file or URL body) into the pods a node runs.

The Python counterpart of ``pkg/kubelet/config/common.go`` (``tryDecodeSinglePod``,
``tryDecodePodList``, ``applyDefaults``; k8s.io/kubernetes v1.36.3), in the order the kubelet
applies it:

1. **Decode**: YAML or JSON (JSON is YAML) into a ``Pod`` or a ``PodList``; ``kind`` and
   ``apiVersion: v1`` are required, as the API machinery's universal decoder requires them.
   The v1 API defaults are applied to each pod (:func:`set_api_defaults`).
2. A pod without ``metadata.name`` is rejected: ``invalid pod: name is needed for the pod``.
3. :func:`apply_defaults` (kubelet ``applyDefaults``): a UID derived from the content, the node
   and the file path or URL unless the manifest has one; the name suffixed with
   ``-<lower-cased node name>``; namespace ``default`` when empty; ``spec.nodeName`` set to the
   node name as given; the ``kubernetes.io/config.hash`` annotation set to the UID; for file
   pods only, the toleration ``{operator: Exists, effect: NoExecute}``; ``status.phase``
   ``Pending``.
4. :func:`~controllers.kubelet.validation.validate_pod` -- ``invalid pod: [...]``.
5. :func:`~controllers.kubelet.validation.api_object_reference` -- ``static pods may not
   reference <resource>``.
6. In a PodList any failing item rejects the whole list.

Every failure is a :class:`~controllers.kubelet.errors.ManifestError` naming the source.

**UID.** The kubelet hashes Go's ``spew`` dump of the whole pod (``hash.DeepHashObject`` in
``applyDefaults``), which is not reproduced here, so the exact bits differ from a real
kubelet's: here the UID is the MD5 (the kubelet's hash before it moved to FNV-128a) of the
canonical JSON of the decoded, API-defaulted pod, followed by ``host:<node>`` and
``file:<path>`` or ``url:<url>``. What matters holds: the UID is deterministic for the same
(content, node, path or URL) and changes when any of them changes. Unlike the kubelet, which
hashes the node only for file pods, the node is hashed for URL pods too, so two nodes reading
one URL never share a pod UID.

All functions are pure (inputs are never mutated) and thread-safe.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from controllers.kubelet.errors import ManifestError
from controllers.kubelet.pod_update import CONFIG_HASH_ANNOTATION_KEY, NAMESPACE_DEFAULT
from controllers.kubelet.validation import VOLUME_TYPES, api_object_reference, validate_pod
from informers.yaml_loader import YAMLLoadError, load_yaml

__all__ = [
    "MAX_CONFIG_LENGTH",
    "NO_EXECUTE_TOLERATION",
    "apply_defaults",
    "decode_manifest",
    "decode_static_pods",
    "default_static_pod",
    "generate_pod_name",
    "set_api_defaults",
    "static_pod_uid",
    "try_decode_pod_list",
    "try_decode_single_pod",
]

MAX_CONFIG_LENGTH = 10 * 1 << 20
"""Largest manifest read, in bytes (kubelet common.go ``maxConfigLength``, 10 MiB)."""

NO_EXECUTE_TOLERATION: dict[str, str] = {"operator": "Exists", "effect": "NoExecute"}
"""Added to file pods so node problems never evict them (kubelet ``applyDefaults``)."""

# v1 API defaults (pkg/apis/core/v1/defaults.go).
DEFAULT_TERMINATION_GRACE_PERIOD = 30  # v1.DefaultTerminationGracePeriodSeconds
DEFAULT_SCHEDULER_NAME = "default-scheduler"  # v1.DefaultSchedulerName
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"  # v1.TerminationMessagePathDefault
DEFAULT_VOLUME_MODE = 420  # v1 SecretVolumeSourceDefaultMode and friends (0644)

# -- decoding --------------------------------------------------------------------------------


def decode_manifest(data: bytes | str, source: str = "") -> Any:
    """Parse YAML or JSON text into Python data (one document).

    Decoded by :func:`informers.yaml_loader.load_yaml`, which refuses alias bombs before
    expanding them (go-yaml's alias-ratio rule, as the kubelet's ``sigs.k8s.io/yaml``). The
    error names the problem and its position, never the content.

    Raises:
        ManifestError: the text is too long, not UTF-8, not YAML, holds several documents or
            aliases excessively.
    """
    if len(data) > MAX_CONFIG_LENGTH:
        raise ManifestError(
            f"manifest is {len(data)} bytes, larger than the {MAX_CONFIG_LENGTH} bytes allowed",
            source,
        )
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ManifestError(
                f"couldn't parse as pod: not UTF-8 text (invalid byte at offset {exc.start})",
                source,
            ) from None
    else:
        text = data
    try:
        return load_yaml(text, source)
    except YAMLLoadError as exc:
        raise ManifestError(f"couldn't parse as pod: {exc.detail}", source) from None


_TOO_DEEP = "invalid pod: nested too deeply to process"
"""A pod nested deeper than Python's recursion limit allows defaulting and hashing it (the
YAML loader accepts libyaml's 1000 levels)."""

_KIND_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
_API_VERSION_SHAPE = re.compile(r"(?:[a-z0-9][a-z0-9.-]{0,252}/)?v[0-9a-z]{1,20}")
_TYPE_NAMES = {str: "a string", list: "a list", int: "a number", float: "a number",
               bool: "a boolean", type(None): "an empty document"}


def _shown(value: Any, shape: re.Pattern[str]) -> str:
    """``value`` quoted if it has the shape of a kind or apiVersion, else a placeholder.

    A manifest path may point at a file that is not a manifest (a symlink to a file of
    secrets), so errors never quote a value that is not such an identifier.
    """
    if isinstance(value, str) and shape.fullmatch(value):
        return repr(value)
    return "(not a valid name)"


def _check_type(obj: Any, kind: str, source: str) -> tuple[bool, ManifestError | None]:
    """(is it a ``kind``, error) as the universal decoder judges an object.

    Errors name the kind of problem only; they never quote the content.
    """
    if not isinstance(obj, Mapping):
        got = _TYPE_NAMES.get(type(obj), "a non-object value")
        return False, ManifestError(
            f"couldn't parse as {kind}: expected a {kind} object, got {got}", source
        )
    if not obj.get("kind"):
        return False, ManifestError(f"couldn't parse as {kind}: Object 'Kind' is missing", source)
    if not obj.get("apiVersion"):
        return False, ManifestError(
            f"couldn't parse as {kind}: Object 'apiVersion' is missing", source
        )
    if obj.get("apiVersion") != "v1" or obj.get("kind") != kind:
        return False, ManifestError(
            f"couldn't parse as {kind}: got kind {_shown(obj.get('kind'), _KIND_SHAPE)} of "
            f"apiVersion {_shown(obj.get('apiVersion'), _API_VERSION_SHAPE)}",
            source,
        )
    return True, None


def try_decode_single_pod(
    data: bytes | str | Any, *, source: str, node_name: str, is_file: bool
) -> tuple[bool, dict[str, Any] | None, ManifestError | None]:
    """kubelet ``tryDecodeSinglePod``: ``(parsed, pod, error)``.

    ``parsed`` is true when the data is a Pod, even if it is then rejected (``error`` set).
    ``data`` may be text or already-decoded data.
    """
    try:
        obj = decode_manifest(data, source) if isinstance(data, (bytes, str)) else data
    except ManifestError as exc:
        return False, None, exc
    ok, err = _check_type(obj, "Pod", source)
    if not ok:
        return False, None, err
    try:
        return True, default_static_pod(obj, source=source, node_name=node_name,
                                        is_file=is_file), None
    except ManifestError as exc:
        return True, None, exc
    except RecursionError:
        return True, None, ManifestError(_TOO_DEEP, source)


def try_decode_pod_list(
    data: bytes | str | Any, *, source: str, node_name: str, is_file: bool
) -> tuple[bool, list[dict[str, Any]], ManifestError | None]:
    """kubelet ``tryDecodePodList``: ``(parsed, pods, error)``; one bad item rejects the list."""
    try:
        obj = decode_manifest(data, source) if isinstance(data, (bytes, str)) else data
    except ManifestError as exc:
        return False, [], exc
    ok, err = _check_type(obj, "PodList", source)
    if not ok:
        return False, [], err
    items = obj.get("items")
    if items is None:
        items = []
    if not isinstance(items, list):
        return True, [], ManifestError("invalid pods list: items must be a list", source)
    pods: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            return True, [], ManifestError(f"invalid pod: items[{i}] is not an object", source)
        try:
            pods.append(default_static_pod(item, source=source, node_name=node_name,
                                           is_file=is_file))
        except ManifestError as exc:
            return True, [], ManifestError(f"items[{i}]: {exc.reason}", source)
        except RecursionError:
            return True, [], ManifestError(f"items[{i}]: {_TOO_DEEP}", source)
    return True, pods, None


def decode_static_pods(
    data: bytes | str, *, source: str, node_name: str, is_file: bool, allow_list: bool = True
) -> list[dict[str, Any]]:
    """Decode a manifest as one Pod, else (``allow_list``) as a PodList, like the HTTP source.

    Raises:
        ManifestError: naming ``source``; for a body that is neither a Pod nor a PodList the
            message gives both decoding errors (the kubelet's also quotes the body; this one
            never quotes content).
    """
    obj = decode_manifest(data, source)
    parsed, pod, single_err = try_decode_single_pod(
        obj, source=source, node_name=node_name, is_file=is_file
    )
    if parsed:
        if single_err is not None:
            raise single_err
        assert pod is not None
        return [pod]
    if not allow_list:
        assert single_err is not None
        raise single_err
    parsed, pods, list_err = try_decode_pod_list(
        obj, source=source, node_name=node_name, is_file=is_file
    )
    if parsed:
        if list_err is not None:
            raise list_err
        return pods
    raise ManifestError(
        "received data that couldn't be parsed as single "
        f"({single_err.reason if single_err else ''}) or multiple pods "
        f"({list_err.reason if list_err else ''})",
        source,
    )


# -- v1 API defaults -------------------------------------------------------------------------


def _image_pull_policy(image: Any) -> str:
    """``Always`` for an untagged or ``:latest`` image, else ``IfNotPresent``.

    v1 ``SetDefaults_Container``.
    """
    if not isinstance(image, str):
        return "IfNotPresent"
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    if not tag and not digest:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _default_probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    http_get = probe.get("httpGet")
    if isinstance(http_get, dict):
        http_get.setdefault("path", "/")
        http_get.setdefault("scheme", "HTTP")


def _default_container(c: Any, host_network: bool) -> None:
    if not isinstance(c, dict):
        return
    c.setdefault("terminationMessagePath", DEFAULT_TERMINATION_MESSAGE_PATH)
    c.setdefault("terminationMessagePolicy", "File")
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = _image_pull_policy(c.get("image"))
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            if not port.get("protocol"):
                port["protocol"] = "TCP"
            if host_network and not port.get("hostPort"):
                port["hostPort"] = port.get("containerPort")
    for var in c.get("env") or []:
        field_ref = var.get("valueFrom", {}).get("fieldRef") if isinstance(var, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")
    resources = c.get("resources")
    if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
        requests = resources.get("requests")
        if not isinstance(requests, dict):
            requests = resources["requests"] = {}
        for name, quantity in resources["limits"].items():
            requests.setdefault(name, quantity)
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(c.get(probe))


def set_api_defaults(pod: dict[str, Any]) -> None:
    """Apply the v1 defaults the API machinery applies when it decodes a Pod, in place.

    ``pkg/apis/core/v1/defaults.go``: restartPolicy ``Always``, dnsPolicy ``ClusterFirst``,
    terminationGracePeriodSeconds 30 (a negative value becomes 1), schedulerName
    ``default-scheduler``, enableServiceLinks true, securityContext ``{}``; per container and
    init container: terminationMessagePath ``/dev/termination-log``, terminationMessagePolicy
    ``File``, imagePullPolicy ``Always`` for an untagged or ``:latest`` image else
    ``IfNotPresent``, port protocol ``TCP`` (and hostPort = containerPort with hostNetwork),
    fieldRef apiVersion ``v1``, requests defaulted from limits, probe timings; a volume without
    a source becomes ``emptyDir: {}``, projected/downwardAPI volumes get defaultMode 420.
    Wrongly typed fields are left for validation to report.
    """
    spec = pod.get("spec")
    if spec is None:
        spec = pod["spec"] = {}
    if not isinstance(spec, dict):
        return
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD
    elif isinstance(grace, int) and not isinstance(grace, bool) and grace < 0:
        spec["terminationGracePeriodSeconds"] = 1
    if not spec.get("schedulerName"):
        spec["schedulerName"] = DEFAULT_SCHEDULER_NAME
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    host_network = spec.get("hostNetwork") is True
    for key in ("initContainers", "containers"):
        items = spec.get(key)
        if isinstance(items, list):
            for c in items:
                _default_container(c, host_network)
    volumes = spec.get("volumes")
    if isinstance(volumes, list):
        for vol in volumes:
            if not isinstance(vol, dict):
                continue
            if not any(vol.get(k) is not None for k in VOLUME_TYPES):
                vol["emptyDir"] = {}
            for kind in ("projected", "downwardAPI", "secret", "configMap"):
                if isinstance(vol.get(kind), dict):
                    vol[kind].setdefault("defaultMode", DEFAULT_VOLUME_MODE)


# -- kubelet defaults ------------------------------------------------------------------------


def generate_pod_name(name: str, node_name: str) -> str:
    """``<name>-<lower-cased node name>`` (kubelet ``generatePodName``)."""
    return f"{name}-{node_name.lower()}"


def static_pod_uid(pod: Mapping[str, Any], source: str, is_file: bool, node_name: str) -> str:
    """The UID of a static pod without one: MD5 of content, node and path or URL (hex)."""
    hasher = hashlib.md5(usedforsecurity=False)
    hasher.update(
        json.dumps(pod, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                   default=str).encode()
    )
    hasher.update(f"host:{node_name}".encode())
    hasher.update((f"file:{source}" if is_file else f"url:{source}").encode())
    return hasher.hexdigest()


def _toleration_matches(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """v1 ``Toleration.MatchToleration``: same key, operator, value and effect."""
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "operator", "value", "effect"))


def _add_or_update_toleration(spec: dict[str, Any], toleration: dict[str, str]) -> None:
    """helper ``AddOrUpdateTolerationInPod``: replace a matching toleration, else append."""
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = []
    updated: list[Any] = []
    found = False
    for existing in tolerations:
        if isinstance(existing, Mapping) and _toleration_matches(existing, toleration):
            if not found:
                updated.append(dict(toleration))
            found = True
            continue
        updated.append(existing)
    if not found:
        updated.append(dict(toleration))
    spec["tolerations"] = updated


def apply_defaults(pod: dict[str, Any], source: str, is_file: bool, node_name: str) -> None:
    """The kubelet's static-pod defaults, in place (kubelet common.go ``applyDefaults``).

    Args:
        pod: a decoded, API-defaulted pod with a name.
        source: the manifest file path or URL.
        is_file: true for the file source (adds the NoExecute toleration).
        node_name: the node name, as given.
    """
    meta = pod.setdefault("metadata", {})
    if not meta.get("uid"):
        meta["uid"] = static_pod_uid(pod, source, is_file, node_name)
    meta["name"] = generate_pod_name(str(meta.get("name") or ""), node_name)
    if not meta.get("namespace"):
        meta["namespace"] = NAMESPACE_DEFAULT
    spec = pod.setdefault("spec", {})
    spec["nodeName"] = node_name
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    annotations[CONFIG_HASH_ANNOTATION_KEY] = meta["uid"]
    if is_file:
        _add_or_update_toleration(spec, NO_EXECUTE_TOLERATION)
    status = pod.get("status")
    if not isinstance(status, dict):
        status = pod["status"] = {}
    status["phase"] = "Pending"


def default_static_pod(
    manifest: Mapping[str, Any], *, source: str, node_name: str, is_file: bool
) -> dict[str, Any]:
    """A decoded Pod manifest as the node runs it: defaulted, validated, checked for API refs.

    Returns a new dict (``manifest`` is not changed) with ``apiVersion: v1`` and ``kind: Pod``.

    Args:
        manifest: the decoded pod (``kind`` may be absent, e.g. an item of a PodList).
        source: the file path or URL, used for the UID and in error messages.
        node_name: the node's name.
        is_file: true for the file source.

    Raises:
        ManifestError: no name, invalid after defaulting, or referencing API objects.
    """
    meta = manifest.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise ManifestError("invalid pod: name is needed for the pod", source)
    if not isinstance(meta.get("name"), str):
        raise ManifestError(f"invalid pod: metadata.name {meta.get('name')!r} is not a string",
                            source)
    if manifest.get("spec") is not None and not isinstance(manifest.get("spec"), Mapping):
        raise ManifestError("invalid pod: spec must be an object", source)
    pod: dict[str, Any] = copy.deepcopy(dict(manifest))
    pod["apiVersion"] = "v1"
    pod["kind"] = "Pod"
    set_api_defaults(pod)
    apply_defaults(pod, source, is_file, node_name)
    errors = validate_pod(pod)
    if errors:
        raise ManifestError(f"invalid pod: [{', '.join(errors)}]", source)
    try:
        resource = api_object_reference(pod)
    except ValueError as exc:
        raise ManifestError(f"invalid pod: {exc}", source) from exc
    if resource:
        raise ManifestError(f"static pods may not reference {resource}", source)
    return pod
