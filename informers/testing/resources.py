"""The resource types the embedded API server serves, and their discovery documents.

A :class:`ResourceType` is a :class:`informers.resources.Resource` (group, version, plural,
kind, scope) plus what only a server needs (short names, verbs, subresources, name rules,
registry strategy facts); a :class:`ResourceRegistry` holds the built-ins plus whatever a test
registers, and renders ``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>`` and
``/apis/<group>/<version>`` the way kube-apiserver's legacy (non-aggregated) discovery does,
which the official dynamic client reads, and the aggregated ``apidiscovery.k8s.io/v2``
documents of ``/api`` and ``/apis`` that ``kubectl`` asks for first.

The built-in table is derived from :data:`informers.resources.BUILTIN_RESOURCES`, the
library's table, so the client side and the server side cannot disagree on a kind's group,
version, plural, kind or scope: every kind the library knows is served.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from informers import resources as library
from informers.resources import Resource

__all__ = ["AGGREGATED_DISCOVERY", "ALL_VERBS", "BUILTIN_RESOURCES", "BUILTIN_SCALE",
           "ResourceRegistry", "ResourceType", "ScalePaths", "wants_aggregated_discovery"]

ALL_VERBS: tuple[str, ...] = (
    "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
)
"""The verbs of a standard REST storage, in discovery's (sorted) order."""

_NO_DELETECOLLECTION = tuple(v for v in ALL_VERBS if v != "deletecollection")
# The namespace REST storage implements no CollectionDeleter (registry/core/namespace/storage):
# kube-apiserver's discovery lists namespaces without "deletecollection".


@dataclass(frozen=True)
class ScalePaths:
    """Where a kind keeps its replicas: a CRD's ``subresources.scale`` (``.spec.replicas``
    style paths, leading dot optional), or the built-in workloads' fixed fields
    (``label_selector=None``: the selector is rendered from ``spec.selector``)."""

    spec_replicas: str
    status_replicas: str
    label_selector: str | None = None
    builtin: bool = False


BUILTIN_SCALE = ScalePaths(".spec.replicas", ".status.replicas", None, builtin=True)
"""Deployments, ReplicaSets and StatefulSets (``scaleFromDeployment`` and its siblings;
served by :mod:`informers.testing.scale`)."""



@dataclass(frozen=True)
class ResourceType(Resource):
    """One served collection: a :class:`~informers.resources.Resource` plus the server's
    facts. Immutable; safe to share between threads.

    Attributes:
        group, version, plural, kind, namespaced: as on
            :class:`~informers.resources.Resource` (``namespaced`` defaults to ``True`` here).
        short_names: discovery short names (``po``), used by ``kubectl``.
        verbs: the verbs served on the resource (discovery lists them; others answer 405).
        has_status: serves the ``status`` subresource; a main-resource update or patch then
            keeps the stored status, and ``.../status`` changes only the status (what every
            built-in with a status subresource and every CRD with ``subresources.status`` do).
        has_finalize: serves the ``finalize`` subresource (namespaces: an update of
            ``spec.finalizers``, which main-resource updates keep).
        has_generation: ``metadata.generation`` starts at 1 and grows when anything outside
            ``metadata`` and ``status`` changes (true for pods since 1.33, workloads and custom
            resources; ConfigMaps, Secrets and the like have no generation).
        builtin: a compiled-in kind: list items omit ``kind``/``apiVersion`` as kube-apiserver
            does for them; custom resources (``False``) keep them, as the real server does.
        name_rule: how ``metadata.name`` is validated: ``"subdomain"`` (DNS-1123 subdomain,
            most kinds), ``"label"`` (DNS-1123 label: namespaces, statefulsets) or
            ``"dns1035"`` (services).
        create_status: the status a create through the API stores instead of the one sent
            (the registry strategies' ``PrepareForCreate`` as encoded by the v1 types; e.g.
            pods start ``Pending``), or ``None`` to keep the status sent (nodes, kinds without
            a status subresource).
        categories: discovery categories (``all``).
        returns_deleted_object: a delete that removes the object answers the object (the
            registry store's ``ReturnDeletedObject``: pods, services, service accounts,
            namespaces, persistent volumes and claims); other kinds answer a ``Status`` of
            ``Success``.
        scale: serves the ``scale`` subresource (:mod:`informers.testing.scale`) with the
            replicas at these paths; ``None``: no ``scale``.
    """

    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    has_status: bool = False
    has_finalize: bool = False
    has_generation: bool = False
    builtin: bool = True
    name_rule: str = "subdomain"
    create_status: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    categories: tuple[str, ...] = ()
    returns_deleted_object: bool = False
    scale: ScalePaths | None = None

    @classmethod
    def from_resource(cls, resource: Resource, **extras: Any) -> ResourceType:
        """``resource``'s identity with the server facts in ``extras`` (the field names)."""
        return cls(resource.group, resource.version, resource.plural, resource.kind,
                   resource.namespaced, **extras)

    @property
    def resource(self) -> Resource:
        """The plain :class:`~informers.resources.Resource` (what a ListWatch takes)."""
        return Resource(self.group, self.version, self.plural, self.kind, self.namespaced)

    def extra_fields(self, obj: dict[str, Any]) -> dict[str, str]:
        """Field-selector fields beyond the kind's built-in ones (a CRD's
        ``selectableFields``: :class:`informers.testing.crds.CustomResourceType`)."""
        return {}

    @property
    def list_kind(self) -> str:
        """``PodList``."""
        return f"{self.kind}List"

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """``pods`` or ``deployments.apps`` (``GroupResource.String()``)."""
        return self.group_resource

    @property
    def subresources(self) -> tuple[str, ...]:
        """The subresources served (``status``, ``finalize``, ``scale``)."""
        return (("status",) * self.has_status + ("finalize",) * self.has_finalize
                + ("scale",) * (self.scale is not None))

    @property
    def type_prefix(self) -> bytes:
        """``{"kind":"Pod","apiVersion":"v1",`` spliced in front of a cached body."""
        return f'{{"kind":"{self.kind}","apiVersion":"{self.api_version}",'.encode()

    @property
    def path_prefix(self) -> str:
        """``/api/v1`` or ``/apis/apps/v1``."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def discovery(self) -> list[dict[str, Any]]:
        """This resource's ``APIResource`` entries (the resource, then its subresources)."""
        entry: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        entries = [entry]
        if self.has_finalize:
            entries.append({
                "name": f"{self.plural}/finalize",
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": self.kind,
                "verbs": ["update"],
            })
        if self.scale is not None:  # the group and version of autoscaling/v1 Scale
            entries.append({
                "name": f"{self.plural}/scale",
                "singularName": "",
                "namespaced": self.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            })
        if self.has_status:
            entries.append({
                "name": f"{self.plural}/status",
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": self.kind,
                "verbs": ["get", "patch", "update"],
            })
        return entries


_WORKLOAD: dict[str, Any] = {"has_status": True, "has_generation": True,
                             "categories": ("all",)}

# What kube-apiserver v1.36 knows about each kind of the library's table beyond its identity:
# discovery (short names, categories, verbs, subresources) as /api/v1 and /apis/<g>/v1 answer,
# name validation (pkg/apis/*/validation), the status a create stores (the registry
# strategies' PrepareForCreate, then the v1 encoding: non-omitempty counters appear as 0) and
# ReturnDeletedObject (pkg/registry/*/storage). Keyed by library entries, so a kind the library
# does not know fails at import; a library kind without an entry is served with the defaults.
_SERVER_FACTS: dict[Resource, dict[str, Any]] = {
    library.lookup("namespaces"): {
        "short_names": ("ns",), "verbs": _NO_DELETECOLLECTION, "has_status": True,
        "has_finalize": True, "name_rule": "label", "create_status": {"phase": "Active"},
        "returns_deleted_object": True},
    library.lookup("pods"): {
        "short_names": ("po",), "has_status": True, "has_generation": True,
        "create_status": {"phase": "Pending"}, "categories": ("all",),
        "returns_deleted_object": True},
    library.lookup("services"): {
        "short_names": ("svc",), "has_status": True, "name_rule": "dns1035",
        "create_status": {"loadBalancer": {}}, "categories": ("all",),
        "returns_deleted_object": True},
    library.lookup("endpoints"): {"short_names": ("ep",)},
    library.lookup("nodes"): {"short_names": ("no",), "has_status": True},
    library.lookup("configmaps"): {"short_names": ("cm",)},
    library.lookup("events"): {"short_names": ("ev",)},
    library.lookup("serviceaccounts"): {"short_names": ("sa",), "returns_deleted_object": True},
    library.lookup("persistentvolumeclaims"): {
        "short_names": ("pvc",), "has_status": True, "create_status": {"phase": "Pending"},
        "returns_deleted_object": True},
    library.lookup("persistentvolumes"): {
        "short_names": ("pv",), "has_status": True, "create_status": {"phase": "Pending"},
        "returns_deleted_object": True},
    library.lookup("deployments.apps"): {
        "short_names": ("deploy",), "create_status": {}, "scale": BUILTIN_SCALE, **_WORKLOAD},
    library.lookup("replicasets.apps"): {
        "short_names": ("rs",), "create_status": {"replicas": 0}, "scale": BUILTIN_SCALE,
        **_WORKLOAD},
    library.lookup("statefulsets.apps"): {
        "short_names": ("sts",), "name_rule": "label", "scale": BUILTIN_SCALE,
        "create_status": {"replicas": 0, "availableReplicas": 0}, **_WORKLOAD},
    library.lookup("daemonsets.apps"): {
        "short_names": ("ds",), "create_status": {
            "currentNumberScheduled": 0, "numberMisscheduled": 0,
            "desiredNumberScheduled": 0, "numberReady": 0}, **_WORKLOAD},
    library.lookup("jobs.batch"): {"create_status": {}, **_WORKLOAD},
}

_GROUP_ORDER = ("", "apps", "batch", "coordination.k8s.io", "discovery.k8s.io")
"""The order of kube-apiserver's ``/apis`` for the built-in groups (core first)."""


def _group_rank(resource: Resource) -> int:
    try:
        return _GROUP_ORDER.index(resource.group)
    except ValueError:
        return len(_GROUP_ORDER)


BUILTIN_RESOURCES: tuple[ResourceType, ...] = tuple(
    ResourceType.from_resource(r, **_SERVER_FACTS.get(r, {}))
    for r in sorted(library.BUILTIN_RESOURCES, key=_group_rank)
)
"""The compiled-in kinds: every entry of :data:`informers.resources.BUILTIN_RESOURCES`, in
the group order of kube-apiserver's discovery."""


class ResourceRegistry:
    """Every served :class:`ResourceType`, looked up by URL or by kind. Thread-safe.

    Registration may happen while the server runs; lookups see it at once.
    """

    def __init__(self, resources: tuple[ResourceType, ...] = BUILTIN_RESOURCES) -> None:
        self._lock = threading.Lock()
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        self._order: list[ResourceType] = []
        for rt in resources:
            self.add(rt)

    def add(self, rt: ResourceType) -> ResourceType:
        """Serve ``rt``. Re-adding the same (group, version, plural) replaces it."""
        with self._lock:
            key = (rt.group, rt.version, rt.plural)
            old = self._by_path.get(key)
            if old is not None:
                self._order.remove(old)
            self._by_path[key] = rt
            self._order.append(rt)
        return rt

    def remove(self, rt: ResourceType) -> None:
        """Stop serving ``rt`` (a deleted CRD's version). Absent: nothing happens."""
        with self._lock:
            key = (rt.group, rt.version, rt.plural)
            if self._by_path.get(key) == rt:
                self._order.remove(self._by_path.pop(key))

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._order)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The collection at ``/apis/<group>/<version>/<plural>``, or ``None``."""
        return self._by_path.get((group, version, plural))

    def find(self, resource: str) -> ResourceType:
        """Resolve a helper's resource argument.

        Accepts ``pods``, a short name (``po``), a kind (``Pod``) or a group-qualified plural
        (``deployments.apps``); the core group wins a tie, as ``kubectl`` resolves it.

        Raises:
            KeyError: nothing matches.
        """
        with self._lock:
            order = sorted(self._order, key=lambda rt: (rt.group != "", rt.group))
        for rt in order:
            if resource in (rt.plural, rt.qualified, rt.kind) or resource in rt.short_names:
                return rt
        raise KeyError(f"the server doesn't have a resource type {resource!r}")

    def for_object(self, obj: dict[str, Any]) -> ResourceType:
        """The collection of an object, from its ``apiVersion`` and ``kind``.

        Raises:
            KeyError: the object names no served kind.
        """
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        with self._lock:
            for rt in self._order:
                if rt.kind == kind and rt.api_version == api_version:
                    return rt
        raise KeyError(
            f"no served resource for apiVersion={api_version!r} kind={kind!r}; "
            "pass resource= or register the kind"
        )

    # -- discovery documents -------------------------------------------------------------------

    def group_versions(self) -> dict[str, list[str]]:
        """Served versions per group, in registration order (core group included as ``""``)."""
        result: dict[str, list[str]] = {}
        for rt in self.all():
            versions = result.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        return result

    def api_versions(self, server_address: str) -> dict[str, Any]:
        """``GET /api``: the core group's ``APIVersions``."""
        return {
            "kind": "APIVersions",
            "versions": self.group_versions().get("", ["v1"]),
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
            ],
        }

    def api_group(self, group: str) -> dict[str, Any] | None:
        """``GET /apis/<group>``: one ``APIGroup``, or ``None`` when not served."""
        versions = self.group_versions().get(group)
        if not group or not versions:
            return None
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": gvs,
            "preferredVersion": gvs[0],
        }

    def api_group_list(self) -> dict[str, Any]:
        """``GET /apis``: every non-core group."""
        groups = []
        for group in self.group_versions():
            doc = self.api_group(group)
            if doc is not None:
                del doc["kind"], doc["apiVersion"]
                groups.append(doc)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        """``GET /api/v1`` or ``/apis/<group>/<version>``: the ``APIResourceList``."""
        resources: list[dict[str, Any]] = []
        builtin = True
        for rt in self.all():
            if rt.group == group and rt.version == version:
                resources.extend(rt.discovery())
                builtin = builtin and rt.builtin
        if not resources:
            return None
        if builtin:  # the compiled-in groups sort; apiextensions' lists are in CRD order
            resources.sort(key=lambda r: r["name"])
        doc: dict[str, Any] = {
            "kind": "APIResourceList",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }
        if group:
            doc["apiVersion"] = "v1"
        return doc

    def aggregated_discovery(self, core: bool) -> dict[str, Any]:
        """``GET /api`` (``core``) or ``/apis`` asked for ``apidiscovery.k8s.io/v2``: the
        ``APIGroupDiscoveryList`` kubectl reads first (``apiserver/pkg/endpoints/discovery/
        aggregated``): per group and version, each resource with its subresources, resources
        sorted by name, every version ``Current``."""
        items = []
        for group, versions in self.group_versions().items():
            if (group == "") != core:
                continue
            entries = []
            for version in versions:
                resources = sorted((_aggregated(rt) for rt in self.all()
                                    if rt.group == group and rt.version == version),
                                   key=lambda r: r["resource"])
                entries.append({"version": version, "resources": resources,
                                "freshness": "Current"})
            items.append({"metadata": {"name": group} if group else {}, "versions": entries})
        return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                "metadata": {}, "items": items}


AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
"""The media type of :meth:`ResourceRegistry.aggregated_discovery` documents."""


def wants_aggregated_discovery(accept: str) -> bool:
    """The first type of ``accept`` the server can answer is the aggregated discovery v2
    (kubectl asks ``...;v=v2;as=APIGroupDiscoveryList,...;v=v2beta1...,application/json``);
    a plain ``application/json`` (or ``*/*``) first means the legacy documents."""
    for part in accept.split(","):
        kind, *raw = (p.strip() for p in part.split(";"))
        params = dict(p.partition("=")[::2] for p in raw)
        if params.get("as") == "APIGroupDiscoveryList":
            if params.get("g") == "apidiscovery.k8s.io" and params.get("v") == "v2":
                return True
            continue  # v2beta1 and others: not served, try the next
        if kind in ("application/json", "*/*", "application/*", ""):
            return False
    return False


def _aggregated(rt: ResourceType) -> dict[str, Any]:
    """One ``APIResourceDiscovery``. Built-in kinds answer in the request's group version
    (an empty ``responseKind`` group and version); a CRD names its own."""
    own = {"group": "" if rt.builtin else rt.group, "version": "" if rt.builtin else rt.version,
           "kind": rt.kind}
    entry: dict[str, Any] = {
        "resource": rt.plural, "responseKind": own,
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular, "verbs": list(rt.verbs)}
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subresources = []
    for legacy in rt.discovery()[1:]:
        name = legacy["name"].split("/", 1)[1]
        kind = ({"group": legacy["group"], "version": legacy["version"],
                 "kind": legacy["kind"]} if "group" in legacy else own)
        subresources.append({"subresource": name, "responseKind": kind,
                             "verbs": list(legacy["verbs"])})
    if subresources:
        entry["subresources"] = (sorted(subresources, key=lambda r: r["subresource"])
                                 if rt.builtin else subresources)
    return entry
