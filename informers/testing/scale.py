"""The ``scale`` subresource: ``autoscaling/v1`` ``Scale`` views of a workload's replicas.

kube-apiserver serves ``deployments/scale``, ``replicasets/scale`` and ``statefulsets/scale``
(``pkg/registry/apps/{deployment,replicaset,statefulset}/storage/storage.go`` ``ScaleREST``)
and, for a CRD with ``subresources.scale``, ``<plural>/scale``
(``apiextensions-apiserver/pkg/registry/customresource/etcd.go`` ``ScaleREST``). Both answer
GET, PUT and PATCH with a ``Scale``:

* ``metadata``: the parent's ``name``, ``namespace``, ``uid``, ``resourceVersion`` and
  ``creationTimestamp`` only;
* ``spec.replicas``: the parent's ``spec.replicas`` (a CRD: the value at
  ``specReplicasPath``); 0 is omitted (``ScaleSpec.Replicas`` is ``omitempty``);
* ``status.replicas``: the parent's ``status.replicas`` (``statusReplicasPath``), always
  written; ``status.selector``: ``metav1.LabelSelectorAsSelector(spec.selector).String()``
  (a CRD: the string at ``labelSelectorPath``), omitted when empty.

A write turns the parent into its scale, applies the request to the scale (PUT replaces it,
PATCH patches its JSON, server-side apply merges the configuration into it), validates it
(``autoscaling/validation`` ``ValidateScale``: ``spec.replicas`` not negative, 422
``Scale.autoscaling``; a custom resource is validated as an update of itself instead, with
``ValidateScaleSpec``'s ``.spec.replicas ... should be a non-negative integer``), copies
``spec.replicas`` back and stores the parent as a normal update (generation, validation).
Managed fields are those of the scale, converted from and back to the parent's by
:mod:`informers.testing.scale_fields` (entries with ``subresource: scale``). A
``resourceVersion`` in the scale is the parent's precondition (409 ``Conflict`` on the parent
resource when stale); none makes the write unconditional. An apply to a custom resource's scale
is refused with kube-apiserver v1.36.3's 500 once it passes the conflict check (its field
manager cannot convert a ``Scale`` with the CRD's converter). The ``fieldValidation`` of
``Scale`` bodies is :mod:`informers.testing.scale_endpoint`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from informers.testing import status, tables
from informers.testing.apply import apply_object, record_update, sort_entries
from informers.testing.codec import dumps
from informers.testing.patch import PatchError, apply_json_patch, apply_merge_patch
from informers.testing.resources import ResourceType, ScalePaths
from informers.testing.scale_fields import (
    SCALE_API_VERSION,
    SCALE_SHAPE,
    apply_errors,
    custom_apply_message,
    replicas_path,
    to_parent,
    to_subresource,
)
from informers.testing.schemas import Schemas
from informers.testing.storage import Entry, Storage, object_key
from informers.testing.validation import Cause

__all__ = ["apply", "custom_scale_errors", "get", "scale_of", "update"]

JSON_PATCH = "application/json-patch+json"


class Strategy(Protocol):
    """What a scale write needs of :class:`informers.testing.strategy.Strategy`: its update
    (a ``metadata.resourceVersion`` in ``obj`` is a precondition)."""

    def update(self, rt: ResourceType, namespace: str, name: str, obj: Any, *,
               subresource: str = "", seeding: bool = False, dry_run: bool = False,
               manager: str = "") -> Entry: ...

    def now(self) -> str: ...


_INVALID_SPEC_REPLICAS = -2147483648
"""``customresource/etcd.go``: a custom resource's scale without spec replicas carries the
smallest int32, so that a write that leaves it there is refused."""

_MAX_INT32 = 2147483647


def _split(path: str) -> list[str]:
    return path.removeprefix(".").split(".")


def _nested(obj: Any, path: str) -> tuple[Any, bool]:
    value = obj
    for key in _split(path):
        if not isinstance(value, dict) or key not in value:
            return None, False
        value = value[key]
    return value, True


def _int(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer())


def _selector(obj: dict[str, Any]) -> str:
    """``metav1.LabelSelectorAsSelector(spec.selector).String()``: empty for none."""
    text = tables.label_selector((obj.get("spec") or {}).get("selector"))
    return "" if text == "<none>" else text


def scale_of(obj: dict[str, Any], paths: ScalePaths) -> tuple[dict[str, Any], bool]:
    """The ``Scale`` of ``obj`` and whether its spec replicas exist (a missing or wrongly
    typed value reads as 0, as ``unstructured.NestedInt64`` leaves it)."""
    meta = obj.get("metadata") or {}
    spec_replicas, found = _nested(obj, paths.spec_replicas)
    if not _int(spec_replicas):
        spec_replicas, found = 0, False
    status_replicas, _ = _nested(obj, paths.status_replicas)
    if not _int(status_replicas):
        status_replicas = 0
    if paths.label_selector is None:
        selector = _selector(obj) if paths.builtin else ""
    else:
        value, _ = _nested(obj, paths.label_selector)
        selector = value if isinstance(value, str) else ""
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                       "creationTimestamp") if meta.get(k)}
    scale: dict[str, Any] = {"kind": "Scale", "apiVersion": "autoscaling/v1",
                             "metadata": scale_meta, "spec": {}, "status": {}}
    if spec_replicas:
        scale["spec"]["replicas"] = int(spec_replicas)
    scale["status"]["replicas"] = int(status_replicas)
    if selector:
        scale["status"]["selector"] = selector
    return scale, found


def _paths(rt: ResourceType) -> ScalePaths:
    paths = rt.scale
    assert paths is not None
    return paths


def get(storage: Storage, rt: ResourceType, namespace: str, name: str) -> bytes:
    """GET ``.../<name>/scale``: 404 as the parent's get; a custom resource without spec
    replicas is a 500 (``the spec replicas field ... does not exist``)."""
    entry = storage.get(rt, object_key(rt, namespace, name))
    if entry is None:
        raise status.not_found(rt.plural, rt.group, name)
    paths = _paths(rt)
    scale, found = scale_of(entry.decode(), paths)
    if not found and not paths.builtin:
        raise status.internal_error(
            f'the spec replicas field "{paths.spec_replicas}" does not exist')
    return dumps(scale)


def update(storage: Storage, strategy: Strategy, rt: ResourceType, namespace: str, name: str, *,
           body: Any = None, patch_type: str = "", patch: Any = None,
           dry_run: bool = False, manager: str = "",
           check: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> bytes:
    """PUT (``body``, a decoded ``Scale``) or PATCH (``patch_type`` and ``patch``) of
    ``.../<name>/scale``; answers the parent's new scale. ``check`` sees a patched scale
    (the ``fieldValidation`` of a patch) and returns what to write. Holds the storage lock
    from the read of the parent to its write."""
    with storage.lock:
        parent, old_scale = _read(storage, rt, namespace, name)
        if patch_type:
            scale = _patched(old_scale, patch_type, patch, name)
            if check is not None:
                scale = check(scale)
        else:
            scale = _checked_body(body, name, namespace if rt.namespaced else "")
            scale = {**scale, "metadata": dict(scale.get("metadata") or {})}
        meta = scale.setdefault("metadata", {})
        if not isinstance(meta.get("managedFields"), list):  # none sent: unchanged
            meta["managedFields"] = old_scale["metadata"]["managedFields"]
        if manager:
            record_update(old_scale, scale, SCALE_SHAPE, manager=manager,
                          api_version=SCALE_API_VERSION, now=strategy.now(),
                          has_status=False, subresource="scale")
        return _write(strategy, rt, namespace, name, parent, scale, dry_run)


def apply(storage: Storage, strategy: Strategy, rt: ResourceType, namespace: str, name: str,
          config: dict[str, Any], *, manager: str, force: bool, dry_run: bool,
          schemas: Schemas) -> bytes:
    """Server-side apply of a ``Scale`` configuration to ``.../<name>/scale``
    (:func:`informers.testing.apply.apply_object` over the scale, its managed fields
    converted by :mod:`informers.testing.scale_fields`); answers the parent's new scale.

    Raises:
        StatusError: 404 for a missing parent, 400 for a configuration of another kind,
            500 for unknown fields, 409 for a conflict without ``force``, and the errors of
            a scale update.
    """
    with storage.lock:
        parent, old_scale = _read(storage, rt, namespace, name)
        if (config.get("apiVersion"), config.get("kind")) != (SCALE_API_VERSION, "Scale"):
            group, _, version = str(config.get("apiVersion") or "").rpartition("/")
            raise status.bad_request(
                f"invalid object type: {group}/{version}, Kind={config.get('kind') or ''}")
        error = apply_errors(config, schemas)
        if error is not None:
            raise error
        scale = apply_object(old_scale, config, SCALE_SHAPE, manager=manager, force=force,
                             api_version=SCALE_API_VERSION, now=strategy.now(),
                             has_status=False, subresource="scale")
        if not _paths(rt).builtin:  # after the conflicts, as kube-apiserver
            raise status.plain_error(custom_apply_message(config))
        return _write(strategy, rt, namespace, name, parent, scale, dry_run)


def _read(storage: Storage, rt: ResourceType, namespace: str,
          name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parent and its scale, with the parent's managed fields as the scale's
    (``scaleUpdatedObjectInfo``: ``ToSubresource``)."""
    paths = _paths(rt)
    entry = storage.get(rt, object_key(rt, namespace, name))
    if entry is None:
        raise status.not_found(rt.plural, rt.group, name)
    parent = entry.decode()
    old_scale, found = scale_of(parent, paths)
    if not found and not paths.builtin:
        old_scale["spec"]["replicas"] = _INVALID_SPEC_REPLICAS
    old_scale["metadata"]["managedFields"] = to_subresource(
        parent["metadata"].get("managedFields") or [], replicas_path(paths.spec_replicas))
    return parent, old_scale


def _write(strategy: Strategy, rt: ResourceType, namespace: str, name: str,
           parent: dict[str, Any], scale: dict[str, Any], dry_run: bool) -> bytes:
    """Validate ``scale``, copy its replicas and managed fields (``ToParent``) to the parent
    and store it."""
    paths = _paths(rt)
    replicas = _replicas(scale)
    if paths.builtin:
        if replicas < 0:
            raise status.invalid("Scale", "autoscaling", name, [(
                "FieldValueInvalid", "spec.replicas",
                f"Invalid value: {replicas}: must be greater than or equal to 0")])
        uid = (scale.get("metadata") or {}).get("uid")
        if uid and uid != parent["metadata"].get("uid"):
            raise status.conflict(
                f"{rt.plural}/scale", rt.group, name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                f"{parent['metadata'].get('uid')}")
    elif replicas == _INVALID_SPEC_REPLICAS:
        raise status.bad_request(
            f'the spec replicas field "{paths.spec_replicas}" cannot be empty')
    _set_nested(parent, paths.spec_replicas, replicas)
    scale_meta = scale.get("metadata") or {}
    rv = scale_meta.get("resourceVersion")
    meta = parent["metadata"]
    if rv:
        meta["resourceVersion"] = rv
    else:
        meta.pop("resourceVersion", None)
    entries = sort_entries(to_parent(
        meta.get("managedFields") or [], scale_meta.get("managedFields") or [],
        replicas_path(paths.spec_replicas), rt.api_version))
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)
    parent = {"kind": rt.kind, "apiVersion": rt.api_version, **parent}
    stored = strategy.update(rt, namespace, name, parent, subresource="scale", dry_run=dry_run)
    return dumps(scale_of(stored.decode(), paths)[0])


def _checked_body(body: Any, name: str, namespace: str) -> dict[str, Any]:
    """The PUT body as ``handlers/update.go`` accepts it: a ``Scale`` whose name is the
    URL's (``checkName``)."""
    if not isinstance(body, dict):
        raise status.bad_request("the body of the request must be a JSON object of kind Scale")
    kind = body.get("kind")
    if kind not in (None, "", "Scale"):
        raise status.bad_request(
            f"the object provided is unrecognized (must be of type Scale): "
            f'kind "{kind}" (apiVersion "{body.get("apiVersion")}")')
    meta = body.get("metadata") or {}
    if not isinstance(meta, dict):
        raise status.bad_request("metadata must be a JSON object")
    if meta.get("name", "") != name:
        raise status.bad_request(
            f"the name of the object ({meta.get('name', '')}) does not match the name on "
            f"the URL ({name})")
    if namespace and meta.get("namespace") and meta["namespace"] != namespace:
        raise status.bad_request(
            "the namespace of the provided object does not match the namespace sent on the "
            "request")
    return body


def _patched(old_scale: dict[str, Any], patch_type: str, patch: Any,
             name: str) -> dict[str, Any]:
    """A JSON, merge or strategic merge patch of the scale (a ``Scale`` has no lists, so a
    strategic merge patch is a merge patch)."""
    try:
        if patch_type == JSON_PATCH:
            patched = apply_json_patch(old_scale, patch)
        else:
            if not isinstance(patch, dict):
                raise PatchError("a merge patch must be a JSON object")
            patched = apply_merge_patch(old_scale, patch)
    except PatchError as err:
        raise status.invalid("Scale", "autoscaling", name, [
            ("FieldValueInvalid", "patch", f"Invalid value: {err}")]) from None
    if not isinstance(patched, dict):
        raise status.bad_request("the patched object is not a Scale")
    return patched


def _replicas(scale: dict[str, Any]) -> int:
    spec = scale.get("spec")
    value = spec.get("replicas", 0) if isinstance(spec, dict) else 0
    if value is None:
        return 0
    if not _int(value) or not -2 ** 31 <= value <= _MAX_INT32:
        raise status.bad_request(
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
            f"{type(value).__name__} into Go struct field ScaleSpec.spec.replicas of type int32")
    return int(value)


def _set_nested(obj: dict[str, Any], path: str, value: int) -> None:
    """``unstructured.SetNestedField``: intermediate maps are made."""
    keys = _split(path)
    for key in keys[:-1]:
        child = obj.get(key)
        if not isinstance(child, dict):
            child = obj[key] = {}
        obj = child
    obj[keys[-1]] = value


def custom_scale_errors(paths: ScalePaths, obj: dict[str, Any], *,
                        spec: bool = True) -> list[Cause]:
    """``customresource/validator.go`` ``ValidateScaleSpec`` (``spec``: not on a status
    update) then ``ValidateScaleStatus``: the replicas at each path must be absent or a
    non-negative int32, the selector absent or a string. Field paths are the CRD's paths as
    written (``.spec.replicas``)."""
    causes: list[Cause] = []
    checks = [paths.spec_replicas] * spec + [paths.status_replicas]
    for path in checks:
        value, found = _nested(obj, path)
        if not found or value is None:
            continue
        if not _int(value):
            causes.append(("FieldValueInvalid", path,
                           f"Invalid value: 0: {_nested_int_error(path, value)}"))
        elif value < 0:
            causes.append(("FieldValueInvalid", path,
                           f"Invalid value: {int(value)}: should be a non-negative integer"))
        elif value > _MAX_INT32:
            causes.append(("FieldValueInvalid", path,
                           f"Invalid value: {int(value)}: should be less than or equal to "
                           f"{_MAX_INT32}"))
    if paths.label_selector is not None:
        value, found = _nested(obj, paths.label_selector)
        if found and value is not None and not isinstance(value, str):
            causes.append(("FieldValueInvalid", paths.label_selector,
                           'Invalid value: "": ' + _nested_type_error(
                               paths.label_selector, value, "string")))
    return causes


def _go_type(value: Any) -> str:
    """The Go type name of a decoded JSON value (``fmt`` ``%T``)."""
    return {bool: "bool", str: "string", float: "float64", int: "int64", list: "[]interface {}",
            dict: "map[string]interface {}"}.get(type(value), "interface {}")


def _nested_type_error(path: str, value: Any, wanted: str) -> str:
    """``unstructured.NestedString``/``NestedInt64``'s error text."""
    keys = _split(path)
    return (f".{'.'.join(keys)} accessor error: {value!s} is of the type {_go_type(value)}, "
            f"expected {wanted}")


def _nested_int_error(path: str, value: Any) -> str:
    return _nested_type_error(path, value, "int64")
