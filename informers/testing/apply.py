"""Server-side apply (``application/apply-patch+yaml``) as kube-apiserver v1.36.3 does it for
the cases kubectl and controllers use.

The merge follows sigs.k8s.io/structured-merge-diff (v6) over the shapes of
:mod:`informers.testing.merge_schema`: structs and maps merge field by field (unless
``x-kubernetes-map-type: atomic``), associative lists (``x-kubernetes-list-type: map``, or a
``merge`` patch strategy) merge items by their keys, sets by value, other lists are replaced.
Each apply manager's fields are recorded in ``metadata.managedFields`` (``operation: Apply``,
``fieldsType: FieldsV1``), stripped of the fields kube-apiserver never tracks
(apimachinery/pkg/util/managedfields/internal/stripmeta.go) and, on resources with a status
subresource, of ``status`` (the main resource's reset fields). A field the applied
configuration changes that another manager owns is a 409 ``Conflict`` with
structured-merge-diff's message (internal/conflict.go ``NewConflictError``) unless
``force=true``, which takes the field over. Fields a manager applied before and no longer
applies are removed when no other manager owns them. Applying to an object that does not exist
creates it (201).

Creates, updates and patches record ``operation: Update`` entries (:func:`record_update`):
the fields a write changed move to its manager. Writes through the seeding helpers record
none. Pure functions of their inputs; the strategy calls them under its storage lock.
"""

from __future__ import annotations

import copy
import datetime
import json
from typing import Any

from informers.errors import StatusError
from informers.testing import status
from informers.testing.merge_schema import Shape
from informers.testing.schemas import Fields

__all__ = ["apply_object", "conflict_message", "field_paths", "fields_v1", "object_where",
           "parse_fields_v1", "path_string", "record_update", "sort_entries",
           "undeclared_fields"]

Path = tuple[str, ...]

_STRIPPED_META = ("name", "namespace", "uid", "resourceVersion", "generation",
                  "creationTimestamp", "selfLink", "managedFields", "deletionTimestamp",
                  "deletionGracePeriodSeconds")


def _key(item: dict[str, Any], shape: Shape) -> str:
    """The path element of an associative list's item: its key fields, a missing one by the
    schema's default when it has one (structured-merge-diff typed/helpers.go
    ``keyedAssociativeListItemToPathElement``), so an applied port ``{port: 80}`` is the
    live ``{port: 80, protocol: TCP}``."""
    fields = {}
    for name in sorted(shape.keys):
        if name in item:
            fields[name] = item[name]
        else:
            default = shape.item().child(name).default
            if default is not None:
                fields[name] = default
    return "k:" + json.dumps(fields, separators=(",", ":"), sort_keys=True)


def field_paths(value: Any, shape: Shape, prefix: Path = (), *,
                maps: bool = False) -> set[Path]:
    """The set of fields ``value`` sets (structured-merge-diff's ``toFieldSet``): leaves,
    atomic values, and the items of associative lists and sets; with ``maps``, also the maps,
    associative lists and sets themselves (an Update's added fields: a ``map[string]...``, a
    schemaless object or a keyed list counts as added, a struct does not)."""
    if isinstance(value, dict) and value and not shape.atomic:
        result: set[Path] = set()
        if (maps and prefix and shape.kind in ("map", "any")
                and prefix != ("f:metadata",)):
            result.add(prefix)
        for key, child in value.items():
            result |= field_paths(child, shape.child(key), (*prefix, "f:" + key), maps=maps)
        return result
    if isinstance(value, list) and shape.kind == "list" and shape.list_type == "map":
        result = {prefix} if maps and prefix and value else set()
        for item in value:
            if isinstance(item, dict):
                path = (*prefix, _key(item, shape))
                result.add(path)
                result |= field_paths(item, shape.item(), path, maps=maps)
        return result
    if isinstance(value, list) and shape.kind == "list" and shape.list_type == "set":
        items = {(*prefix, "v:" + json.dumps(v, separators=(",", ":"))) for v in value}
        return items | ({prefix} if maps and prefix and value else set())
    return {prefix} if prefix else set()


def strip(paths: set[Path], has_status: bool) -> set[Path]:
    """Without the fields kube-apiserver does not track (and ``status`` when reset)."""
    dropped: set[Path] = {("f:apiVersion",), ("f:kind",)}
    dropped |= {("f:metadata", "f:" + name) for name in _STRIPPED_META}
    return {p for p in paths
            if p[:2] not in dropped and p[:1] not in dropped
            and not (has_status and p[:1] == ("f:status",))}


def fields_v1(paths: set[Path]) -> dict[str, Any]:
    """The ``FieldsV1`` trie of ``paths`` (``"."`` marks a member that has children)."""
    root: dict[str, Any] = {}
    members: list[Path] = sorted(paths)
    for path in members:
        node = root
        for element in path:
            node = node.setdefault(element, {})
    for path in members:
        node = root
        for element in path:
            node = node[element]
        if node and "." not in node:
            node["."] = {}
    return _sorted(root)


def _sorted(node: dict[str, Any]) -> dict[str, Any]:
    return {k: _sorted(node[k]) for k in sorted(node)}


def parse_fields_v1(trie: dict[str, Any], prefix: Path = ()) -> set[Path]:
    """The paths of a ``FieldsV1`` trie."""
    result: set[Path] = set()
    for element, child in trie.items():
        if element == ".":
            result.add(prefix)
            continue
        path = (*prefix, element)
        if child:
            result |= parse_fields_v1(child, path)
        else:
            result.add(path)
    return result


def path_string(path: Path) -> str:
    """fieldpath ``Path.String()``: ``.spec.containers[name="c"].image``."""
    out = []
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            out.append("." + rest)
        elif kind == "k":
            fields = json.loads(rest)
            out.append("[" + ",".join(f"{k}={json.dumps(v, separators=(',', ':'))}"
                                      for k, v in fields.items()) + "]")
        elif kind == "v":
            out.append("[=" + rest + "]")
        else:
            out.append(f"[{rest}]")
    return "".join(out)


_MISSING = object()


def _get(value: Any, path: Path, shape: Shape) -> Any:
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f" and isinstance(value, dict):
            value = value.get(rest, _MISSING)
            shape = shape.child(rest)
        elif kind == "k" and isinstance(value, list):
            value = next((i for i in value if isinstance(i, dict)
                          and _key(i, shape) == element), _MISSING)
            shape = shape.item()
        elif kind == "v" and isinstance(value, list):
            wanted = json.loads(rest)
            value = wanted if wanted in value else _MISSING
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _shape_at(shape: Shape, path: Path) -> Shape:
    for element in path:
        kind, _, rest = element.partition(":")
        shape = shape.child(rest) if kind == "f" else shape.item()
    return shape


def _remove(obj: Any, path: Path, shape: Shape) -> None:
    parent = _get(obj, path[:-1], shape)
    kind, _, rest = path[-1].partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(rest, None)
    elif kind == "k" and isinstance(parent, list):
        list_shape = _shape_at(shape, path[:-1])
        parent[:] = [i for i in parent if not (isinstance(i, dict)
                                               and _key(i, list_shape) == path[-1])]
    elif kind == "v" and isinstance(parent, list):
        wanted = json.loads(rest)
        parent[:] = [i for i in parent if i != wanted]


def _merge(live: Any, config: Any, shape: Shape) -> Any:
    if isinstance(live, dict) and isinstance(config, dict) and not shape.atomic:
        out = dict(live)
        for key, value in config.items():
            out[key] = (_merge(live[key], value, shape.child(key)) if key in live
                        else copy.deepcopy(value))
        return out
    if (isinstance(live, list) and isinstance(config, list) and shape.kind == "list"
            and shape.list_type == "map"):
        out_list = list(live)
        for item in config:
            key = _key(item, shape) if isinstance(item, dict) else None
            index = next((n for n, old in enumerate(out_list) if isinstance(old, dict)
                          and key is not None and _key(old, shape) == key), -1)
            if index >= 0:
                out_list[index] = _merge(out_list[index], item, shape.item())
            else:
                out_list.append(copy.deepcopy(item))
        return out_list
    if (isinstance(live, list) and isinstance(config, list) and shape.kind == "list"
            and shape.list_type == "set"):
        return list(live) + [v for v in config if v not in live]
    return copy.deepcopy(config)


def _manager_label(entry: dict[str, Any]) -> str:
    """internal/conflict.go ``printManager``."""
    label = json.dumps(entry["manager"])
    if entry.get("subresource"):
        label += f' with subresource "{entry["subresource"]}"'
    if entry.get("operation") == "Update":  # the manager's identity carries no time
        label += f" using {entry.get('apiVersion', '')}"
    return label


def conflict_message(conflicts: list[tuple[str, Path]]) -> str:
    """internal/conflict.go ``getConflictMessage`` (``conflicts``: manager label, path)."""
    if len(conflicts) == 1:
        label, path = conflicts[0]
        return f"Apply failed with 1 conflict: conflict with {label}: {path_string(path)}"
    by_manager: dict[str, list[Path]] = {}
    for label, path in conflicts:
        by_manager.setdefault(label, []).append(path)
    lines = []
    for label in sorted(by_manager):
        lines.append(f"conflicts with {label}:")
        lines += [f"- {path_string(p)}" for p in by_manager[label]]
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


def sort_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """internal/managedfields.go ``sortEncodedManagedFields``: operation, time, manager."""
    return sorted(entries, key=lambda e: (e.get("operation", ""), e.get("time", ""),
                                          e.get("manager", ""), e.get("apiVersion", ""),
                                          e.get("subresource", "")))


def _status_part(obj: dict[str, Any], status_meta: tuple[str, ...]) -> dict[str, Any]:
    """What a write of the status subresource writes of ``obj``: its status and the
    ``status_meta`` keys of its metadata (the kind's status strategy resets the rest)."""
    part = {k: v for k, v in obj.items() if k in ("apiVersion", "kind", "status")}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k in status_meta}
    if meta:
        part["metadata"] = meta
    return part


def apply_object(live: dict[str, Any] | None, config: dict[str, Any], shape: Shape, *,
                 manager: str, force: bool, api_version: str, now: str,
                 has_status: bool, subresource: str = "",
                 status_meta: tuple[str, ...] = ()) -> dict[str, Any]:
    """The object after ``manager`` applies ``config`` to ``live`` (``None``: apply-create),
    with its ``metadata.managedFields``. Raises the 409 ``StatusError`` on conflicts.

    With ``subresource="status"`` only ``config['status']`` and the ``status_meta`` keys of
    its metadata (:func:`informers.testing.kind_rules.status_metadata`) are applied (the rest
    of the object stays as it is, as the status strategy resets it) and the manager's entry
    is the one of that subresource."""
    if subresource == "status":
        config = _status_part(config, status_meta)
    elif has_status:
        config = {k: v for k, v in config.items() if k != "status"}
    base = copy.deepcopy(live) if live is not None else {}
    entries = [dict(e) for e in base.get("metadata", {}).get("managedFields") or []]
    applied = strip(field_paths(config, shape), has_status and subresource != "status")
    mine = next((e for e in entries if e.get("manager") == manager
                 and e.get("operation") == "Apply"
                 and e.get("subresource", "") == subresource), None)
    previous = parse_fields_v1(mine.get("fieldsV1", {})) if mine else set()
    others = [e for e in entries if e is not mine]
    owned = {id(e): parse_fields_v1(e.get("fieldsV1", {})) for e in others}
    conflicts: list[tuple[str, Path]] = []
    taken: set[Path] = set()
    for path in sorted(applied):
        new_value = _get(config, path, shape)
        old_value = _get(base, path, shape)
        if old_value is _MISSING or old_value == new_value or isinstance(new_value, dict):
            continue
        for entry in others:
            if path in owned[id(entry)]:
                conflicts.append((_manager_label(entry), path))
                taken.add(path)
    if conflicts and not force:
        raise StatusError(status.status_dict(409, "Conflict", conflict_message(
            conflicts), {"causes": [{"reason": "FieldManagerConflict",
                                     "message": f"conflict with {label}",
                                     "field": path_string(path)}
                                    for label, path in conflicts]}))
    merged = _merge(base, config, shape)
    still_owned = set().union(*owned.values()) if owned else set()
    kept = applied | still_owned
    parents = {path[:n] for path in kept for n in range(1, len(path))}
    for path in sorted(previous - kept - parents, key=len, reverse=True):
        _remove(merged, path, shape)  # a map still holding owned fields stays
    result_entries = []
    for entry in others:
        paths = owned[id(entry)] - taken
        if paths:
            entry["fieldsV1"] = fields_v1(paths)
            result_entries.append(entry)
    if applied:
        entry = {"manager": manager, "operation": "Apply", "apiVersion": api_version,
                 "time": now, "fieldsType": "FieldsV1", "fieldsV1": fields_v1(applied)}
        if subresource:
            entry["subresource"] = subresource
        result_entries.append(entry)
    meta = merged.setdefault("metadata", {})
    meta["managedFields"] = sort_entries(result_entries)
    return merged


def record_update(old: dict[str, Any] | None, new: dict[str, Any], shape: Shape, *,
                  manager: str, api_version: str, now: str, has_status: bool,
                  subresource: str = "", status_meta: tuple[str, ...] = ()) -> None:
    """Record a non-apply write in ``new``'s ``managedFields`` as kube-apiserver's field
    manager does for ``operation: Update``: the fields changed from ``old`` (``None``: a
    create) join ``manager``'s Update entry and leave every other manager's; fields gone from
    the object leave every entry. A write of the status subresource tracks the status and
    the ``status_meta`` keys of the metadata. In place on ``new['metadata']``."""
    meta = new.setdefault("metadata", {})
    entries = [dict(e) for e in meta.get("managedFields") or []]
    if subresource == "status":
        written = {("f:status",)} | {("f:metadata", "f:" + key) for key in status_meta}

        def tracked(obj: dict[str, Any] | None) -> set[Path]:
            return {p for p in strip(field_paths(obj or {}, shape, maps=True), False)
                    if p[:1] in written or p[:2] in written}
    else:
        def tracked(obj: dict[str, Any] | None) -> set[Path]:
            return strip(field_paths(obj or {}, shape, maps=True), has_status)
    before, after = tracked(old), tracked(new)
    gone = before - after  # leaves every entry
    changed = {p for p in after if p not in before
               or (_get(old, p, shape) != _get(new, p, shape)
                   and not isinstance(_get(new, p, shape), dict))}
    mine = next((e for e in entries if e.get("manager") == manager
                 and e.get("operation") == "Update" and e.get("apiVersion") == api_version
                 and e.get("subresource", "") == subresource), None)
    result = []
    for entry in entries:
        if entry is mine:
            continue
        paths = parse_fields_v1(entry.get("fieldsV1", {}))
        kept = paths - changed - gone
        if entry.get("subresource", "") == subresource:
            kept &= after
        if kept != paths:
            entry["fieldsV1"] = fields_v1(kept)
        if kept:
            result.append(entry)
    previous = parse_fields_v1(mine.get("fieldsV1", {})) if mine else set()
    owned = (previous | changed) & after
    if owned:
        entry = {"manager": manager, "operation": "Update", "apiVersion": api_version,
                 "time": now if changed or mine is None else mine.get("time", now),
                 "fieldsType": "FieldsV1", "fieldsV1": fields_v1(owned)}
        if subresource:
            entry["subresource"] = subresource
        result.append(entry)
    if result:
        meta["managedFields"] = sort_entries(result)
    else:
        meta.pop("managedFields", None)


def same_managed_fields(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same entries, times compared as instants (a client that decoded
    and re-encoded them may write ``+00:00`` for ``Z``)."""
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
        return False

    def instant(entry: Any) -> Any:
        if not isinstance(entry, dict) or not isinstance(entry.get("time"), str):
            return entry
        try:
            moment = datetime.datetime.fromisoformat(entry["time"].replace("Z", "+00:00"))
        except ValueError:
            return entry
        return {**entry, "time": moment}

    return all(instant(x) == instant(y) for x, y in zip(a, b, strict=True))


def _undeclared(value: Any, node: Fields | None, prefix: str) -> list[str]:
    if node is None or not isinstance(value, dict):
        return []
    if node.is_map:
        return [p for k, v in value.items() for p in _undeclared(v, node.items, f"{prefix}.{k}")]
    if node.fields is None:
        return []
    found = []
    for key, child in value.items():
        if key not in node.fields:
            if not node.preserve:
                found.append(f"{prefix}.{key}")
        else:
            found += _undeclared(child, node.fields[key], f"{prefix}.{key}")
    return found


def object_where(config: dict[str, Any]) -> str:
    """``objectGVKNN``'s ``namespace/name`` of an apply configuration."""
    meta = config.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def undeclared_fields(config: dict[str, Any], fields: Fields | None,
                      gvk: str) -> StatusError | None:
    """The 500 kube-apiserver answers an apply configuration with fields its kind's schema
    lacks, whatever the ``fieldValidation`` (structured-merge-diff refuses them while typing
    the patch: internal/structuredmerge.go ``failed to create typed patch object``; errors as
    typed/helpers.go ``ValidationErrors.Error``: one as is, several as ``errors:`` lines), or
    ``None``. ``gvk``: ``apps/v1, Kind=Deployment``. Objects inside lists are not looked
    into."""
    unknown = sorted(_undeclared(config, fields, ""))
    if not unknown:
        return None
    errors = [f"{path}: field not declared in schema" for path in unknown]
    text = errors[0] if len(errors) == 1 else "\n".join(["errors:", *("  " + e for e in errors)])
    return status.plain_error(f"failed to create typed patch object ({object_where(config)}; "
                              f"{gvk}): {text}")
