"""The managed fields and the field checks of ``Scale`` bodies (the ``scale`` subresource).

kube-apiserver runs its field manager on the ``Scale`` itself, not on the parent: the parent's
``managedFields`` are converted to the scale's before the write and back after it
(k8s.io/apimachinery/pkg/util/managedfields/scalehandler.go ``ScaleHandler``):

* :func:`to_subresource` (``ToSubresource``): every entry owning the parent's spec replicas
  becomes an entry owning the scale's ``.spec.replicas``, with ``apiVersion:
  autoscaling/v1`` (the rest of the entry, time included, as it was); the others are left
  out;
* :func:`to_parent` (``ToParent``): a parent entry owning the replicas keeps them only when
  the same manager (``internal/managedfields.go`` ``BuildManagerIdentifier``: manager,
  operation, subresource and, for ``Update``, apiVersion) still owns them in the scale;
  every other scale entry owning ``.spec.replicas`` becomes a parent entry owning just the
  replicas path, in the parent's apiVersion, with the time the parent had for that
  identity (usually none: such entries carry no ``time``). So an ``Update`` manager of the
  parent that still shares the replicas after a scale write shows up twice, once per
  apiVersion's identity, as on kube-apiserver.

The conflicts of a scale apply name ``Update`` managers with the scale's apiVersion
(``conflict with "m0" using autoscaling/v1``). Every apiVersion of the parent's entries is
taken to map to the same replicas path (kube-apiserver maps each served version, and drops
entries of versions it does not know).

:data:`SCALE_SHAPE` is the merge shape of a ``Scale`` (all structs). :func:`scale_fields` is
its field tree for ``fieldValidation`` (``autoscaling/v1`` ``Scale``: ``ObjectMeta``,
``spec.replicas``, ``status.replicas`` and ``status.selector``), and :func:`apply_errors`
the 500 kube-apiserver answers an apply whose configuration has fields a ``Scale`` lacks
(``failed to create typed patch object``; every ``fieldValidation`` alike, as
structured-merge-diff refuses them before the directive is looked at). Pure functions.
"""

from __future__ import annotations

import json
from typing import Any

from informers.errors import StatusError
from informers.testing.apply import (
    Path,
    fields_v1,
    object_where,
    parse_fields_v1,
    undeclared_fields,
)
from informers.testing.merge_schema import Shape
from informers.testing.schemas import Fields, Schemas

__all__ = ["SCALE_API_VERSION", "SCALE_SHAPE", "apply_errors", "custom_apply_message",
           "replicas_path", "scale_fields", "to_parent", "to_subresource"]

SCALE_API_VERSION = "autoscaling/v1"
_SCALE_REPLICAS: Path = ("f:spec", "f:replicas")
_ENTRY_ORDER = ("manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1",
                "subresource")  # metav1.ManagedFieldsEntry's JSON order

SCALE_SHAPE = Shape("struct", fields={
    "apiVersion": Shape("scalar"), "kind": Shape("scalar"), "metadata": Shape("any"),
    "spec": Shape("struct", fields={"replicas": Shape("scalar")}),
    "status": Shape("struct", fields={"replicas": Shape("scalar"), "selector": Shape("scalar")}),
})


def replicas_path(spec_replicas: str) -> Path:
    """The field path of a ``.spec.replicas``-style JSON path."""
    return tuple("f:" + part for part in spec_replicas.removeprefix(".").split("."))


def _identity(entry: dict[str, Any]) -> str:
    """``BuildManagerIdentifier``: the entry without fields and time (and, for ``Apply``,
    without apiVersion)."""
    kept = {k: entry[k] for k in ("manager", "operation", "apiVersion", "subresource")
            if entry.get(k)}
    if entry.get("operation") == "Apply":
        kept.pop("apiVersion", None)
    return json.dumps(kept, sort_keys=True)


def _entry(source: dict[str, Any], api_version: str, paths: set[Path],
           time: str | None) -> dict[str, Any]:
    values = {**source, "apiVersion": api_version, "fieldsType": "FieldsV1",
              "fieldsV1": fields_v1(paths)}
    values.pop("time", None)
    if time:
        values["time"] = time
    return {k: values[k] for k in _ENTRY_ORDER if values.get(k)}


def to_subresource(parent_entries: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """``ToSubresource``: the scale's entries of the parent's ``parent_entries``."""
    return [_entry(e, SCALE_API_VERSION, {_SCALE_REPLICAS}, e.get("time"))
            for e in parent_entries if path in parse_fields_v1(e.get("fieldsV1") or {})]


def to_parent(parent_entries: list[dict[str, Any]], scale_entries: list[dict[str, Any]],
              path: Path, api_version: str) -> list[dict[str, Any]]:
    """``ToParent``: the parent's entries after a scale write whose scale entries are
    ``scale_entries`` (unsorted; the caller sorts)."""
    scale_by_id = {_identity(e): e for e in scale_entries}
    times = {_identity(e): e.get("time") for e in parent_entries}
    result = []
    for entry in parent_entries:
        paths = parse_fields_v1(entry.get("fieldsV1") or {})
        key = _identity(entry)
        if path not in paths:
            result.append(entry)
        elif key in scale_by_id:
            result.append(entry)
            del scale_by_id[key]
        elif paths - {path}:
            result.append(_entry(entry, entry.get("apiVersion", api_version), paths - {path},
                                 entry.get("time")))
    for key, entry in scale_by_id.items():
        if _SCALE_REPLICAS in parse_fields_v1(entry.get("fieldsV1") or {}):
            result.append(_entry(entry, api_version, {path}, times.get(key)))
    return result


_SCALE_TREES: dict[int, Fields] = {}


def scale_fields(schemas: Schemas) -> Fields:
    """The field tree of an ``autoscaling/v1`` ``Scale`` (``metadata``: the table's
    ``ObjectMeta``)."""
    tree = _SCALE_TREES.get(id(schemas))
    if tree is None:
        tree = Fields({
            "apiVersion": None, "kind": None, "metadata": schemas.object_meta_fields(),
            "spec": Fields({"replicas": None}),
            "status": Fields({"replicas": None, "selector": None}),
        })
        _SCALE_TREES[id(schemas)] = tree
    return tree


def apply_errors(config: dict[str, Any], schemas: Schemas) -> StatusError | None:
    """The 500 of a scale apply whose configuration has fields a ``Scale`` lacks
    (:func:`informers.testing.apply.undeclared_fields`), or ``None``."""
    return undeclared_fields(config, scale_fields(schemas), f"{SCALE_API_VERSION}, Kind=Scale")


def custom_apply_message(config: dict[str, Any]) -> str:
    """The 500 of every apply to a custom resource's scale on kube-apiserver v1.36.3 (the
    field manager converts the ``Scale`` with the CRD's converter, which refuses it)."""
    return (f"failed to convert new object ({object_where(config)}; {SCALE_API_VERSION}, "
            f"Kind=Scale) to proper version: request to convert CR to an invalid "
            f"group/version: {SCALE_API_VERSION}")
