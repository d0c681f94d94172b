"""Names the API resources a ListWatch can talk to: group, version, plural, kind and scope.

A :class:`Resource` is client-go's ``schema.GroupVersionResource`` plus the two facts an
informer needs without asking the server: the object ``kind`` (for the reflector's kind check
and for listers' error messages) and whether the resource is namespaced (for URL paths and
listers). :data:`BUILTIN_RESOURCES` covers the kinds the bundled controllers and the
factory's typed accessors use; :func:`lookup` finds one by name.

Custom resources are described by building a :class:`Resource` directly, or through
:func:`informers.client.list_watch_for_resource` (which asks the server's discovery endpoint
when the resource is not built in).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

__all__ = ["BUILTIN_RESOURCES", "Resource", "lookup"]


@dataclass(frozen=True)
class Resource:
    """A GroupVersionResource and what we need to talk to it. Immutable and hashable.

    Attributes:
        group: API group, ``""`` for the core group.
        version: API version within the group, e.g. ``"v1"``.
        plural: the resource name in URLs, e.g. ``"pods"``.
        kind: the object kind, e.g. ``"Pod"``; ``""`` when unknown (a custom resource that
            was not discovered), which turns the reflector's kind check off.
        namespaced: whether objects live in namespaces.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``"v1"`` for the core group, ``"group/version"`` otherwise (objects' apiVersion)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``"pods"`` or ``"deployments.apps"`` (kubectl's ``resource.group`` spelling)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The URL path of the collection, or of one object when ``name`` is given.

        Args:
            namespace: a namespace for namespaced resources; ``None`` or ``""`` means all
                namespaces (the collection across namespaces). Ignored for cluster-scoped
                resources.
            name: an object name, to address one object.
            subresource: e.g. ``"status"``; requires ``name``.

        Returns:
            ``/api/v1/namespaces/ns/pods``, ``/apis/apps/v1/deployments``, ...

        Raises:
            ValueError: ``subresource`` without ``name``.
        """
        if subresource and not name:
            raise ValueError(f"{self.group_resource}: subresource {subresource!r} needs a name")
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [base]
        if self.namespaced and namespace:
            parts.append("namespaces/" + quote(namespace, safe=""))
        parts.append(self.plural)
        if name:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.api_version}/{self.plural}"  # "v1/pods", "apps/v1/deployments"


def _core(plural: str, kind: str, namespaced: bool = True) -> Resource:
    return Resource("", "v1", plural, kind, namespaced)


BUILTIN_RESOURCES: tuple[Resource, ...] = (
    _core("pods", "Pod"),
    _core("services", "Service"),
    _core("endpoints", "Endpoints"),
    _core("nodes", "Node", namespaced=False),
    _core("namespaces", "Namespace", namespaced=False),
    _core("configmaps", "ConfigMap"),
    _core("secrets", "Secret"),
    _core("events", "Event"),
    _core("serviceaccounts", "ServiceAccount"),
    _core("persistentvolumeclaims", "PersistentVolumeClaim"),
    _core("persistentvolumes", "PersistentVolume", namespaced=False),
    Resource("apps", "v1", "deployments", "Deployment", True),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True),
    Resource("apps", "v1", "statefulsets", "StatefulSet", True),
    Resource("apps", "v1", "daemonsets", "DaemonSet", True),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True),
    Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
    Resource("batch", "v1", "jobs", "Job", True),
)
"""The built-in resources known without discovery (all at their GA version)."""

_BY_GVR: dict[tuple[str, str, str], Resource] = {
    (r.group, r.version, r.plural): r for r in BUILTIN_RESOURCES
}
_BY_NAME: dict[str, Resource] = {}
for _r in BUILTIN_RESOURCES:
    _BY_NAME[_r.group_resource] = _r
    _BY_NAME.setdefault(_r.plural, _r)


def lookup(resource: str | tuple[str, str, str]) -> Resource:
    """Find a built-in resource by name.

    Args:
        resource: ``"pods"``, ``"deployments"``, ``"deployments.apps"`` or a
            ``(group, version, plural)`` tuple such as ``("apps", "v1", "deployments")``.

    Returns:
        The matching entry of :data:`BUILTIN_RESOURCES`.

    Raises:
        KeyError: the resource is not built in; the message names it.
    """
    if isinstance(resource, tuple):
        found = _BY_GVR.get(resource)
        if found is None:
            group, version, plural = resource
            raise KeyError(f"unknown resource {plural}.{group}/{version}" if group
                           else f"unknown resource {plural}/{version}")
        return found
    found = _BY_NAME.get(resource)
    if found is None:
        raise KeyError(f"unknown resource {resource!r}")
    return found
