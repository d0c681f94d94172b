"""``CustomResourceDefinition`` objects: the apiextensions-apiserver inside the embedded server.

Creating a CRD (``apiextensions.k8s.io/v1``) through the API or :meth:`ApiServer.create`
serves its resource at once; updating it changes what is served; deleting it deletes every
custom resource of it and stops serving it. As kube-apiserver does:

* the CRD is validated (``pkg/apis/apiextensions/validation/validation.go``
  ``ValidateCustomResourceDefinition``) and defaulted (``apis/apiextensions/v1/defaults.go``),
  by :mod:`informers.testing.crd_validation`;
* the create stores the status the registry strategy prepares (``storedVersions``, empty
  ``acceptedNames``), then the naming and establishing controllers write ``acceptedNames``
  and the ``NamesAccepted`` and ``Established`` conditions (a second write, a MODIFIED
  event, as on kube-apiserver; names that another CRD has accepted are refused with
  ``NamesAccepted`` False and the resource is not served);
* a delete adds the ``customresourcecleanup.apiextensions.k8s.io`` finalizer and the
  ``Terminating`` condition and marks the CRD, then (within the same request here,
  asynchronously there) every custom resource of it is deleted and the finalizer removed,
  which removes the CRD;
* custom resources are defaulted, pruned and validated by the served version's schema
  (:class:`CustomResources`), their ``status`` is dropped on create and kept by
  main-resource updates when the status subresource is on.

Several versions may be served (``served``/``storage``); conversion ``None`` only changes
``apiVersion``, so every version reads the same objects; conversion ``Webhook`` stores them
in the storage version and calls the CRD's conversion webhook for the other versions
(:mod:`informers.testing.conversion`).
"""

from __future__ import annotations

import base64
import copy
import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from informers.testing import cel_rules, scale, status
from informers.testing import structural_schema as structural
from informers.testing.crd_validation import _dict, crd_errors, default_crd
from informers.testing.crd_versions import deprecation_warnings
from informers.testing.resources import (
    BUILTIN_RESOURCES,
    ResourceRegistry,
    ResourceType,
    ScalePaths,
)
from informers.testing.storage import Entry, Storage
from informers.testing.validation import Cause


class _Writer(Protocol):
    """What the CRD controllers need of :class:`~informers.testing.strategy.Strategy`."""

    def update(self, rt: ResourceType, namespace: str, name: str, obj: Any, *,
               subresource: str = "", seeding: bool = False,
               dry_run: bool = False) -> Entry: ...

    def delete(self, rt: ResourceType, namespace: str, name: str, options: dict[str, Any], *,
               dry_run: bool = False) -> tuple[Entry, bool]: ...

    def now(self) -> str: ...

__all__ = ["CRD_RESOURCE", "CustomResourceType", "CustomResources"]

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
"""The finalizer kube-apiserver puts on every CRD (``apiextensions/v1``
``CustomResourceCleanupFinalizer``)."""

_CUSTOM_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update",
                 "watch")
"""A custom resource's verbs in the order kube-apiserver's discovery lists them (unsorted:
``apiextensions-apiserver/pkg/apiserver/customresource_discovery_controller.go``)."""

CRD_RESOURCE = ResourceType(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
    namespaced=False, short_names=("crd", "crds"), has_status=True, has_generation=True,
    categories=("api-extensions",), create_status=None,
)
"""The ``customresourcedefinitions`` collection as kube-apiserver's discovery lists it."""


@dataclass(frozen=True)
class CustomResourceType(ResourceType):
    """A served version of a CRD: a :class:`ResourceType` plus the version's schema,
    printer columns and selectable fields, and the name of the CRD that serves it.

    ``printer_columns`` are the version's ``additionalPrinterColumns`` as the CRD gives them
    (for ``Table`` output: kubectl asks with ``as=Table;g=meta.k8s.io;v=v1``); the
    ``Table`` rendering of built-in kinds lives elsewhere and takes these columns.
    """

    crd_name: str = ""
    warnings: tuple[str, ...] = field(default=(), compare=False, hash=False)
    """Sent with every request to this version: a deprecated version's warning."""
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    printer_columns: tuple[dict[str, Any], ...] = field(default=(), compare=False, hash=False)
    selectable_fields: tuple[str, ...] = ()
    rules: Any = field(default=None, compare=False, hash=False)
    storage_version: str = ""
    conversion: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    crd_resource_version: str = ""  # a CRD update makes a new type (OpenAPI caches by type)

    def extra_fields(self, obj: dict[str, Any]) -> dict[str, str]:
        """The ``selectableFields`` values of ``obj`` (``registry/customresource/strategy.go``
        ``selectableFields``): ``fmt.Sprint`` of the value at each path, ``""`` when absent."""
        values = {}
        for path in self.selectable_fields:
            name = path.removeprefix(".")
            value: Any = obj
            for key in name.split("."):
                value = value.get(key) if isinstance(value, dict) else None
            values[name] = _sprint(value)
        return values

    def discovery(self) -> list[dict[str, Any]]:
        """As :meth:`ResourceType.discovery`, plus the ``storageVersionHash`` of the storage
        version (``apiserver/pkg/endpoints/discovery`` ``StorageVersionHash``); ``status``
        before ``scale``, unsorted, as ``customresource_discovery_controller.go`` lists
        them."""
        entries = super().discovery()
        entries[1:] = sorted(entries[1:], key=lambda e: e["name"].endswith("/scale"))
        gvk = f"{self.group}/{self.storage_version}/{self.kind}"
        entries[0]["storageVersionHash"] = base64.b64encode(
            hashlib.sha256(gvk.encode()).digest()[:8]).decode()
        return entries


_BUILTIN_GROUPS = frozenset({rt.group for rt in BUILTIN_RESOURCES} | {CRD_RESOURCE.group})


def is_builtin_group(group: str) -> bool:
    """A group some compiled-in kind belongs to (``apps``...), not one only CRDs serve."""
    return group in _BUILTIN_GROUPS


def _sprint(value: Any) -> str:
    """Go's ``fmt.Sprint`` of a decoded JSON scalar (``nil``: ``""``)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _condition(kind: str, reason: str, message: str, now: str,
               state: str = "True") -> dict[str, Any]:
    return {"type": kind, "status": state, "lastTransitionTime": now, "reason": reason,
            "message": message}


class CustomResources:
    """The CRD side of :class:`~informers.testing.strategy.Strategy`: its hooks are called
    under the storage lock, so every change of what is served is atomic with the write that
    caused it. Thread-safe under that lock."""

    def __init__(self, registry: ResourceRegistry, storage: Storage) -> None:
        self._registry = registry
        self._storage = storage
        self._strategy: _Writer | None = None
        self._served: dict[str, list[CustomResourceType]] = {}  # by CRD name
        self._served_specs: dict[str, Any] = {}  # the spec each CRD is served by
        registry.add(CRD_RESOURCE)

    def attach(self, strategy: _Writer) -> None:
        self._strategy = strategy

    # -- strategy hooks ------------------------------------------------------------------------

    def prepare(self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None,
                subresource: str, seeding: bool) -> None:
        """Before validation of a create (``old`` is ``None``) or update: default, prune and
        validate a CRD or a custom resource. Raises a 422 ``StatusError``."""
        if rt is CRD_RESOURCE or rt == CRD_RESOURCE:
            self._prepare_crd(obj, old, subresource, seeding)
        elif isinstance(rt, CustomResourceType):
            self._prepare_custom(rt, obj, old, subresource, seeding)

    def stored(self, rt: ResourceType, entry: Entry) -> None:
        """After a CRD was written: serve what it defines; finish its deletion."""
        if rt == CRD_RESOURCE:
            self._reconcile(entry)

    def deleting(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Before a delete marks ``obj``: a CRD gets the cleanup finalizer and the
        ``Terminating`` condition (``registry/customresourcedefinition/etcd.go`` ``Delete``)."""
        if rt != CRD_RESOURCE:
            return
        meta = obj["metadata"]
        if CLEANUP_FINALIZER not in (meta.get("finalizers") or []):
            meta["finalizers"] = [*(meta.get("finalizers") or []), CLEANUP_FINALIZER]
        conditions = [c for c in _dict(obj.get("status")).get("conditions") or []
                      if c.get("type") != "Terminating"]
        conditions.append(_condition(
            "Terminating", "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin "
            "soon", self._now()))
        obj.setdefault("status", {})["conditions"] = conditions

    def removed(self, rt: ResourceType, entry: Entry) -> None:
        if rt == CRD_RESOURCE:
            self._unserve(entry.name)

    # -- CRDs ----------------------------------------------------------------------------------

    def _prepare_crd(self, crd: dict[str, Any], old: dict[str, Any] | None, subresource: str,
                     seeding: bool) -> None:
        if subresource == "status":
            return
        default_crd(crd)
        causes = crd_errors(crd, old)
        if causes:
            raise status.invalid("CustomResourceDefinition", "apiextensions.k8s.io",
                                 (crd.get("metadata") or {}).get("name") or "", causes)
        if old is None:
            if not (seeding and "status" in crd):
                crd["status"] = {"conditions": [],
                                 "acceptedNames": {"plural": "", "kind": ""},
                                 "storedVersions": [self._storage_version(crd)]}
        else:
            stored = list((old.get("status") or {}).get("storedVersions") or [])
            version = self._storage_version(crd)
            if version not in stored:
                stored.append(version)
            crd.setdefault("status", {})["storedVersions"] = stored

    @staticmethod
    def _storage_version(crd: dict[str, Any]) -> str:
        for version in crd["spec"]["versions"]:
            if version.get("storage"):
                return str(version["name"])
        return ""

    def _accept_names(self, crd: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
        """The naming controller (``controller/status/naming_controller.go``
        ``calculateNamesAndConditions``): the names of ``crd`` that no other CRD of its group
        has accepted, and the ``NamesAccepted`` reason and message (``NoConflicts``, or the
        last conflict found: plural, singular, short names, kind, list kind)."""
        spec = crd["spec"]
        used: set[str] = set()
        kinds: set[str] = set()
        for entry in self._storage.collection(CRD_RESOURCE).objects.values():
            other = entry.decode()
            if (other["metadata"]["name"] == crd["metadata"]["name"]
                    or _dict(other.get("spec")).get("group") != spec["group"]):
                continue
            accepted = _dict(_dict(other.get("status")).get("acceptedNames"))
            used.update([accepted.get("plural", ""), accepted.get("singular", ""),
                         *(accepted.get("shortNames") or [])])
            kinds.update([accepted.get("kind", ""), accepted.get("listKind", "")])
        requested = spec["names"]
        before = _dict(_dict(crd.get("status")).get("acceptedNames"))
        names = dict(before) or {"plural": "", "kind": ""}
        reason, message = "NoConflicts", "no conflicts found"

        def fresh(key: str, pool: set[str], why: str) -> None:
            nonlocal reason, message
            wanted = requested.get(key, "")
            if wanted == before.get(key, "") or wanted not in pool:
                if wanted:
                    names[key] = wanted
                return
            reason, message = why, f'"{wanted}" is already in use'

        fresh("plural", used, "PluralConflict")
        fresh("singular", used, "SingularConflict")
        short = requested.get("shortNames") or []
        if short != (before.get("shortNames") or []):
            taken = [n for n in short if n not in (before.get("shortNames") or []) and n in used]
            if taken:
                reason = "ShortNamesConflict"
                message = ", ".join(f'"{n}" is already in use' for n in taken)
                if len(taken) > 1:
                    message = f"[{message}]"
            elif short:
                names["shortNames"] = short
        fresh("kind", kinds, "KindConflict")
        fresh("listKind", kinds, "ListKindConflict")
        if requested.get("categories"):
            names["categories"] = requested["categories"]
        else:
            names.pop("categories", None)
        return names, reason, message

    def _reconcile(self, entry: Entry) -> None:
        crd = entry.decode()
        meta = crd["metadata"]
        if meta.get("deletionTimestamp"):
            self._finish_deletion(entry, crd)
            return
        assert self._strategy is not None
        names, reason, message = self._accept_names(crd)
        status_part = crd.setdefault("status", {})
        status_part["acceptedNames"] = names
        now = self._now()
        conflict = reason != "NoConflicts"
        if conflict:
            conditions = [
                _condition("NamesAccepted", reason, message, now, "False"),
                _condition("Established", "NotAccepted", "not all names are accepted", now,
                           "False")]
            self._unserve(meta["name"])
        else:
            conditions = [
                _condition("NamesAccepted", "NoConflicts", "no conflicts found", now),
                _condition("Established", "InitialNamesAccepted",
                           "the initial names have been accepted", now),
            ]
            self._serve(crd)
        old_conditions = {c.get("type"): c for c in status_part.get("conditions") or []}
        for condition in conditions:  # keep lastTransitionTime when nothing changed
            before = old_conditions.get(condition["type"])
            if before and before.get("status") == condition["status"]:
                condition["lastTransitionTime"] = before.get("lastTransitionTime")
        if status_part.get("conditions") == conditions and entry.decode().get("status") == (
                status_part):
            return
        status_part["conditions"] = conditions
        self._strategy.update(CRD_RESOURCE, "", meta["name"], crd, subresource="status")

    def _now(self) -> str:
        assert self._strategy is not None
        return self._strategy.now()

    def _serve(self, crd: dict[str, Any]) -> None:
        """Register a :class:`CustomResourceType` per served version of ``crd``."""
        spec = crd["spec"]
        names = spec["names"]
        rts = []
        for version in spec["versions"]:
            if not version.get("served"):
                continue
            subresources = version.get("subresources") or {}
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            scale_spec = subresources.get("scale")
            rts.append(CustomResourceType(
                spec["group"], version["name"], names["plural"], names["kind"],
                namespaced=spec.get("scope") == "Namespaced",
                warnings=deprecation_warnings(spec, version),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                has_status="status" in subresources, has_generation=True, builtin=False,
                verbs=_CUSTOM_VERBS, storage_version=self._storage_version(crd),
                crd_resource_version=crd["metadata"].get("resourceVersion", ""),
                conversion=spec.get("conversion"),
                create_status=None, crd_name=crd["metadata"]["name"], schema=schema,
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                selectable_fields=tuple(f.get("jsonPath", "")
                                        for f in version.get("selectableFields") or ()),
                rules=cel_rules.compile_schema(schema) if schema else None,
                scale=ScalePaths(scale_spec.get("specReplicasPath", ""),
                                 scale_spec.get("statusReplicasPath", ""),
                                 scale_spec.get("labelSelectorPath"))
                if isinstance(scale_spec, dict) else None,
            ))
        before = {rt.version: rt.schema for rt in self._served.get(crd["metadata"]["name"], [])}
        previous = self._served_specs.get(crd["metadata"]["name"])
        self._unserve(crd["metadata"]["name"])
        for rt in rts:
            self._registry.add(rt)
        self._served[crd["metadata"]["name"]] = rts
        self._default_on_read(rts, before)
        self._served_specs[crd["metadata"]["name"]] = copy.deepcopy(spec)
        if rts and previous is not None and previous != spec:
            # crdHandler.updateCustomResourceDefinition: a changed spec tears down the
            # resource's storage (its open watches end) and its new watch cache starts now:
            # older resourceVersions answer 410 "too old resource version"
            self._storage.collection(rts[0]).restart(self._storage.rv)

    def _default_on_read(self, rts: list[CustomResourceType],
                         before: dict[str, dict[str, Any] | None]) -> None:
        """A CRD update that changed the schema: stored objects read with its defaults, as
        kube-apiserver's decoding from etcd applies them (``customresource_handler.go``
        ``unstructuredDefaulter``), without a new resourceVersion or event. The storage
        version's schema applies (the served versions share the objects here)."""
        if not rts or not before:
            return
        rt = next((r for r in rts if r.version == r.storage_version), rts[0])
        schema = rt.schema
        if schema is None or before.get(rt.version) == schema:
            return

        def default(obj: dict[str, Any]) -> bool:
            original = copy.deepcopy(obj)
            structural.apply_defaults(obj, schema)
            return obj != original

        self._storage.rewrite(rt, default)

    def _unserve(self, crd_name: str) -> None:
        self._served_specs.pop(crd_name, None)
        for rt in self._served.pop(crd_name, []):
            self._registry.remove(rt)

    def _finish_deletion(self, entry: Entry, crd: dict[str, Any]) -> None:
        """The finalizer controller: delete every custom resource, then drop the finalizer."""
        assert self._strategy is not None
        rts = self._served.get(crd["metadata"]["name"], [])
        if rts:
            rt = rts[0]
            coll = self._storage.collection(rt)
            for key in list(coll.sorted_keys()):
                stored = coll.objects.get(key)
                if stored is not None:
                    self._strategy.delete(rt, stored.namespace, stored.name, {})
        finalizers = [f for f in crd["metadata"].get("finalizers") or []
                      if f != CLEANUP_FINALIZER]
        if finalizers == (crd["metadata"].get("finalizers") or []):
            return
        crd["metadata"]["finalizers"] = finalizers
        if not finalizers:
            del crd["metadata"]["finalizers"]
        self._unserve(crd["metadata"]["name"])
        self._strategy.update(CRD_RESOURCE, "", crd["metadata"]["name"], crd)

    # -- custom resources ----------------------------------------------------------------------

    def _prepare_custom(self, rt: CustomResourceType, obj: dict[str, Any],
                        old: dict[str, Any] | None, subresource: str, seeding: bool) -> None:
        if rt.has_status and subresource == "":
            # customresource strategy PrepareForCreate / PrepareForUpdate: a create cannot
            # set the status, a main-resource update keeps the stored one.
            if old is not None and "status" in old:
                obj["status"] = old["status"]
            elif old is not None or not seeding:
                obj.pop("status", None)
        schema = rt.schema
        if schema is None:
            return
        structural.prune(obj, schema)
        structural.apply_defaults(obj, schema)
        causes: list[Cause] = []
        for key, value in obj.items():
            if key in ("metadata", "apiVersion", "kind"):
                continue
            if subresource == "status" and key != "status":
                continue
            props = schema.get("properties") or {}
            causes.extend(structural.validate(value, props.get(key), key))
        for name in schema.get("required") or []:
            if name not in obj:
                causes.append(structural._required(name))
        if rt.scale is not None:  # validator.go ValidateScaleSpec, ValidateScaleStatus
            causes.extend(scale.custom_scale_errors(rt.scale, obj,
                                                    spec=subresource != "status"))
        if rt.rules:  # cel.NewValidator: none for a schema without rules
            if any(cause[0] in _BLOCKING for cause in causes):
                causes.append(_RULES_NOT_CHECKED)
            else:
                causes.extend(cel_rules.evaluate(rt.rules, obj, old))
        if causes:
            raise status.invalid(rt.kind, rt.group, (obj.get("metadata") or {}).get("name")
                                 or "", causes)



# apiextensions-apiserver pkg/registry/customresource/strategy.go hasBlockingErr: after one of
# these schema errors (type, maxLength, maxItems, required, enum) the CEL rules are not run,
# and this cause (field.Invalid(nil, nil, ...): no path, a null value) says so.
_BLOCKING = ("FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong",
             "FieldValueTooMany", "FieldValueTypeInvalid")
_RULES_NOT_CHECKED: Cause = (
    "FieldValueInvalid", "<nil>", "Invalid value: null: some validation rules were not "
    "checked because the object was invalid; correct the existing errors to complete "
    "validation")
