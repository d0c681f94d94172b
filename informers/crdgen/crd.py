"""The ``apiextensions.k8s.io/v1`` CustomResourceDefinition of a kind's versions.

:func:`crd` joins the classes :func:`~informers.crdgen.resource.custom_resource` marked for
one group and kind into one CRD, as controller-gen's ``pkg/crd/spec.go`` does:

* each version's ``openAPIV3Schema`` is the class's structural schema
  (:mod:`informers.crdgen.schema`) with ``apiVersion`` and ``kind`` (strings, described as
  ``metav1.TypeMeta`` describes them) and ``metadata: {type: object}`` added at the root:
  kube-apiserver allows nothing else about ``metadata`` than ``name`` and ``generateName``
  restrictions (``apiextensions/validation/validation.go``), and controller-gen writes
  exactly this;
* versions are ordered by name, so the output does not depend on import order, and a
  single version is the storage version (controller-gen ``spec.go`` ``NeedCRDFor``);
* exactly one version is the storage version and at least one is served.

Every check kube-apiserver would make later is made here first with the class and field
named: two storage versions, none, one version declared twice, versions that disagree on
names or scope, printer columns, selectable fields and scale paths that name no field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from informers.crdgen import markers as m
from informers.crdgen.errors import ResourceDefinitionError
from informers.crdgen.resource import CustomResource, resource_of
from informers.crdgen.schema import apply_markers, object_schema, type_doc

__all__ = ["API_VERSION_DESCRIPTION", "KIND_DESCRIPTION", "crd", "crds", "root_schema"]

API_VERSION_DESCRIPTION = (
    "APIVersion defines the versioned schema of this representation of an object.\n"
    "Servers should convert recognized schemas to the latest internal value, and\n"
    "may reject unrecognized values.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#resources")
"""``metav1.TypeMeta.APIVersion``'s doc comment, as controller-gen writes it."""

KIND_DESCRIPTION = (
    "Kind is a string value representing the REST resource this object represents.\n"
    "Servers may infer this from the endpoint the client submits requests to.\n"
    "Cannot be updated.\n"
    "In CamelCase.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds")
"""``metav1.TypeMeta.Kind``'s doc comment, as controller-gen writes it."""

_FIXED = frozenset({"apiVersion", "kind", "metadata"})


def root_schema(cls: type) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one version's class."""
    res = resource_of(cls)
    kind = res.kind if res is not None else cls.__name__
    body = object_schema(cls, kind)
    declared = sorted(_FIXED & set(body["properties"]))
    if declared:
        raise ResourceDefinitionError(
            f"{kind}.{declared[0]}: apiVersion, kind and metadata are added by the generator "
            "and must not be declared")
    properties = {
        "apiVersion": {"type": "string", "description": API_VERSION_DESCRIPTION},
        "kind": {"type": "string", "description": KIND_DESCRIPTION},
        "metadata": {"type": "object"},
        **body["properties"],
    }
    out: dict[str, Any] = {"type": "object", "properties": properties}
    doc = type_doc(cls)
    if doc:
        out["description"] = doc
    if "required" in body:
        out["required"] = body["required"]
    return apply_markers(out, m.type_markers(cls), kind)


def _has_path(schema: dict[str, Any], path: str) -> bool:
    """Whether the simple part of a JSON path (``.spec.replicas``; up to the first ``[`` of
    ``.status.conditions[?(@.type=="Ready")].status``) names a field of ``schema``."""
    node: Any = schema
    for part in path.split("[", 1)[0].lstrip(".").split("."):
        if not isinstance(node, dict):
            return False
        if node.get("x-kubernetes-preserve-unknown-fields"):
            return True
        props = node.get("properties") or {}
        if part not in props:
            return False
        node = props[part]
    return True


def _version(res: CustomResource, storage: bool) -> dict[str, Any]:
    where = f"{res.crd_name} {res.version}"
    schema = root_schema(res.cls)
    entry: dict[str, Any] = {"name": res.version, "served": res.served, "storage": storage,
                             "schema": {"openAPIV3Schema": schema}}
    for column in res.printer_columns:
        # every object has the ObjectMeta fields, which the schema does not spell out
        if not column.json_path.startswith(".metadata.") and not _has_path(
                schema, column.json_path):
            raise ResourceDefinitionError(
                f"{where}: printer column {column.name!r} names {column.json_path}, "
                "which is not a field")
    if res.printer_columns:
        entry["additionalPrinterColumns"] = [c.to_json() for c in res.printer_columns]
    for path in res.selectable_fields:
        if not _has_path(schema, path):
            raise ResourceDefinitionError(
                f"{where}: selectable field {path} is not a field")
    if res.selectable_fields:
        entry["selectableFields"] = [{"jsonPath": p} for p in res.selectable_fields]
    subresources: dict[str, Any] = {}
    if res.status:
        subresources["status"] = {}
    if res.scale is not None:
        for path, under in ((res.scale.spec_replicas_path, ".spec."),
                            (res.scale.status_replicas_path, ".status.")):
            if not path.startswith(under) or not _has_path(schema, path):
                raise ResourceDefinitionError(
                    f"{where}: scale path {path} must name a field under {under.rstrip('.')}")
        subresources["scale"] = res.scale.to_json()
    if subresources:
        entry["subresources"] = subresources
    if res.deprecated:
        entry["deprecated"] = True
        if res.deprecation_warning is not None:
            entry["deprecationWarning"] = res.deprecation_warning
    return entry


def _storage(versions: list[CustomResource], name: str) -> str:
    if len(versions) == 1 and versions[0].storage is None:
        return versions[0].version
    marked = [r.version for r in versions if r.storage]
    if len(marked) != 1:
        found = ("none is" if not marked else
                 f"{' and '.join(marked)} are")
        raise ResourceDefinitionError(
            f"{name}: exactly one version must be the storage version "
            f"(custom_resource(storage=True)), {found}: versions "
            f"{', '.join(r.version for r in versions)}")
    return marked[0]


def crd(*classes: type, conversion: dict[str, Any] | None = None) -> dict[str, Any]:
    """The CRD of the versions ``classes`` (one group and kind).

    Args:
        classes: classes marked with :func:`~informers.crdgen.resource.custom_resource`.
        conversion: the CRD's ``spec.conversion`` (e.g. a webhook stanza); ``None`` leaves
            it out (kube-apiserver defaults it to ``strategy: None``).

    Raises:
        ResourceDefinitionError: see the module docstring.
        SchemaError: a field whose annotation or markers have no structural schema.
    """
    found: list[CustomResource] = []
    for cls in classes:
        res = resource_of(cls)
        if res is None:
            raise ResourceDefinitionError(
                f"{getattr(cls, '__name__', cls)!r} is not marked with custom_resource()")
        found.append(res)
    if not found:
        raise ResourceDefinitionError("crd() needs at least one version's class")
    first = found[0]
    names = ("group", "kind", "plural", "singular", "list_kind", "short_names", "categories",
             "scope")
    for res in found[1:]:
        for attr in names:
            if getattr(res, attr) != getattr(first, attr):
                raise ResourceDefinitionError(
                    f"{first.crd_name}: versions {first.version} ({first.cls.__name__}) and "
                    f"{res.version} ({res.cls.__name__}) disagree on {attr}: "
                    f"{getattr(first, attr)!r} != {getattr(res, attr)!r}")
    seen: dict[str, str] = {}
    for res in found:
        if res.version in seen:
            raise ResourceDefinitionError(
                f"{first.crd_name}: version {res.version} is declared twice "
                f"({seen[res.version]} and {res.cls.__name__})")
        seen[res.version] = res.cls.__name__
    found.sort(key=lambda r: r.version)
    storage = _storage(found, first.crd_name)
    if not any(r.served for r in found):
        raise ResourceDefinitionError(
            f"{first.crd_name}: no version is served (custom_resource(served=True))")
    names_json: dict[str, Any] = {"kind": first.kind, "listKind": first.list_kind,
                                  "plural": first.plural, "singular": first.singular}
    if first.short_names:
        names_json["shortNames"] = list(first.short_names)
    if first.categories:
        names_json["categories"] = list(first.categories)
    spec: dict[str, Any] = {
        "group": first.group, "names": names_json, "scope": first.scope,
        "versions": [_version(r, r.version == storage) for r in found]}
    if conversion is not None:
        spec["conversion"] = conversion
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": first.crd_name}, "spec": spec}


def crds(classes: Iterable[type], *,
         conversions: Mapping[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One CRD per group and kind of ``classes`` (the marked ones; others are skipped),
    ordered by CRD name; ``conversions`` maps a CRD name to its ``spec.conversion``.

    Raises:
        ResourceDefinitionError: see :func:`crd`; or ``conversions`` names a CRD that none
            of ``classes`` defines.
    """
    kinds: dict[tuple[str, str], list[type]] = {}
    for cls in classes:
        res = resource_of(cls)
        if res is not None:
            kinds.setdefault((res.group, res.kind), []).append(cls)
    made = [crd(*group) for group in kinds.values()]
    conversions = conversions or {}
    unknown = sorted(set(conversions) - {c["metadata"]["name"] for c in made})
    if unknown:
        raise ResourceDefinitionError(
            f"a conversion is registered for {', '.join(unknown)}, which no "
            "custom_resource() class defines")
    for made_crd in made:
        conversion = conversions.get(made_crd["metadata"]["name"])
        if conversion is not None:
            made_crd["spec"]["conversion"] = conversion
    return sorted(made, key=lambda c: c["metadata"]["name"])
