"""How the fields of the served kinds merge: list types and keys, map types, patch strategies.

A :class:`Shape` tree per kind, built from the Go field table (``api_schema.json``, see
:mod:`informers.testing.schemas`) and the merge rules kube-apiserver v1.36.3 publishes in its
OpenAPI documents (``merge_rules.json``, written by ``tools/api-schema/merge_rules.py``):

* ``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key``: what a strategic merge
  patch does with a field (k8s.io/apimachinery/pkg/util/strategicpatch reads the same values
  from the Go struct tags ``patchStrategy``/``patchMergeKey``);
* ``x-kubernetes-list-type`` / ``x-kubernetes-list-map-keys`` / ``x-kubernetes-map-type``: how
  server-side apply tracks and merges a field, converted as k8s.io/kube-openapi
  pkg/schemaconv does (``getListElementRelationship``): an explicit list type wins; else a
  ``merge`` patch strategy makes an associative list keyed by the patch merge key (a set when
  there is none); else the list is atomic. Maps and structs are granular unless
  ``x-kubernetes-map-type: atomic``.

Custom resources and kinds without a table get :data:`ANY`: every list atomic, every map
granular (structured-merge-diff's deduced schema). Shapes are immutable once built and
shared; :meth:`MergeSchemas.shape` is thread-safe.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from informers.testing.resources import ResourceType
from informers.testing.schemas import Schemas

__all__ = ["ANY", "MergeSchemas", "Shape"]

logger = logging.getLogger(__name__)

_RULES = Path(__file__).with_name("merge_rules.json")


@dataclass
class Shape:
    """One value's merge shape.

    ``kind`` is ``struct`` (known ``fields``), ``map`` (string keys, values ``elem``), ``list``
    (items ``elem``), ``scalar`` or ``any`` (unknown: deduced from the value). For a list,
    ``list_type`` is ``atomic``, ``set`` or ``map`` (keys ``keys``); ``strategy`` and
    ``merge_key`` are the field's strategic merge patch rules (on lists and maps alike).
    ``atomic`` marks a struct or map replaced whole by apply. ``default`` is the published
    ``default`` of a field that keys an associative list (``None``: none): server-side apply
    keys an item that leaves the field out by it.
    """

    kind: str = "any"
    fields: dict[str, Shape] = field(default_factory=dict)
    elem: Shape | None = None
    list_type: str = "atomic"
    keys: tuple[str, ...] = ()
    strategy: str = ""
    merge_key: str = ""
    atomic: bool = False
    default: Any = None

    def child(self, name: str) -> Shape:
        """The shape of field or map key ``name`` (:data:`ANY` when unknown)."""
        if self.kind == "struct":
            return self.fields.get(name, ANY)
        if self.kind == "map" and self.elem is not None:
            return self.elem
        return ANY

    def item(self) -> Shape:
        """The shape of a list's items (:data:`ANY` when unknown)."""
        return self.elem if self.kind == "list" and self.elem is not None else ANY


ANY = Shape()
"""The shape of a value nothing is known about."""


def _with_rules(shape: Shape, rules: dict[str, Any]) -> Shape:
    """A copy of ``shape`` with a field's published extensions applied."""
    strategy = str(rules.get("x-kubernetes-patch-strategy", ""))
    merge_key = str(rules.get("x-kubernetes-patch-merge-key", ""))
    result = Shape(shape.kind, shape.fields, shape.elem, shape.list_type, shape.keys,
                   strategy, merge_key, shape.atomic, rules.get("default"))
    if shape.kind == "list":
        list_type = rules.get("x-kubernetes-list-type")
        if list_type in ("atomic", "set", "map"):
            result.list_type = str(list_type)
            result.keys = tuple(rules.get("x-kubernetes-list-map-keys", ()))
        elif "merge" in strategy.split(","):
            result.list_type = "map" if merge_key else "set"
            result.keys = (merge_key,) if merge_key else ()
        else:
            result.list_type = "atomic"
    elif rules.get("x-kubernetes-map-type") == "atomic":
        result.atomic = True
    return result


class MergeSchemas:
    """The shapes of the served kinds, built once per Go type. Thread-safe.

    Args:
        schemas: the field table (default: the shared one).
        rules: the ``merge_rules.json`` to read (default: the one next to this module).
    """

    def __init__(self, schemas: Schemas | None = None, rules: str | Path = _RULES) -> None:
        self._schemas = schemas or Schemas.shared()
        self._rules_path = Path(rules)
        self._rules: dict[str, dict[str, dict[str, Any]]] | None = None
        self._structs: dict[str, Shape] = {}
        self._lock = threading.RLock()

    @classmethod
    def shared(cls) -> MergeSchemas:
        """The process-wide instance over the default tables."""
        global _SHARED
        if _SHARED is None:
            with _SHARED_LOCK:
                if _SHARED is None:
                    _SHARED = cls()
        return _SHARED

    def _loaded(self) -> dict[str, dict[str, dict[str, Any]]]:
        if self._rules is None:
            with self._lock:
                if self._rules is None:
                    try:
                        self._rules = dict(json.loads(self._rules_path.read_text())["types"])
                    except (OSError, ValueError, KeyError, TypeError) as err:
                        logger.warning("embedded API server: no merge rules (%s): %s; lists "
                                       "are atomic", self._rules_path, err)
                        self._rules = {}
        return self._rules

    def shape(self, rt: ResourceType) -> Shape:
        """The shape of ``rt``'s objects (:data:`ANY` for custom resources)."""
        go_type = self._schemas.go_type(rt)
        if go_type is None or not self._schemas.complete:
            return ANY
        with self._lock:
            return self._struct(go_type)

    def _struct(self, go_type: str) -> Shape:
        shape = self._structs.get(go_type)
        if shape is not None:
            return shape
        shape = Shape("struct")
        self._structs[go_type] = shape  # before the fields: recursive types refer to it
        own = self._loaded().get(go_type, {})
        shape.atomic = own.get("", {}).get("x-kubernetes-map-type") == "atomic"
        self._fill(go_type, shape, own)
        if "metadata" in shape.fields or go_type.endswith(".ObjectMeta"):
            shape.fields.setdefault("apiVersion", Shape("scalar"))
            shape.fields.setdefault("kind", Shape("scalar"))
        return shape

    def _fill(self, go_type: str, shape: Shape, outer: dict[str, dict[str, Any]]) -> None:
        table = self._schemas._loaded().types  # the shared table, read-only
        own = self._loaded().get(go_type, {})
        for entry in table.get(go_type, ()):
            if entry.get("inline"):
                self._fill(entry["type"]["struct"], shape, outer)
            elif entry.get("json"):
                name = entry["json"]
                rules = outer.get(name) or own.get(name) or {}
                shape.fields[name] = _with_rules(self._of(entry["type"]), rules)

    def _of(self, kind: Any) -> Shape:
        if isinstance(kind, str):
            return Shape("any" if kind in ("rawextension", "fieldsv1") else "scalar")
        if "struct" in kind:
            return self._struct(kind["struct"])
        if "slice" in kind:
            if kind["slice"] == "byte":
                return Shape("scalar")
            return Shape("list", elem=self._of(kind["slice"]))
        if "map" in kind:
            return Shape("map", elem=self._of(kind["map"]))
        return ANY


_SHARED: MergeSchemas | None = None
_SHARED_LOCK = threading.Lock()
