"""The typed accessors of a :class:`~informers.factory.SharedInformerFactory`: one
:class:`GenericInformer` per resource, reached as ``factory.core().v1().pods()`` (client-go's
generated ``informers/<group>/<version>`` packages, e.g. ``informers/core/v1/pod.go``).

Each accessor only names a built-in resource; the informer itself is the factory's, created on
first use. Stateless apart from the factory they point at; safe from any thread.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol

from informers.listers import Lister
from informers.object_type import ObjectT
from informers.resources import Resource, lookup
from informers.shared_informer import SharedIndexInformer


class InformerSource(Protocol):
    """What the accessors need of their factory (:class:`~informers.factory.
    SharedInformerFactory` is one): its one shared informer per resource."""

    def informer_for(self, resource: Resource) -> SharedIndexInformer[Any]: ...

__all__ = [
    "AppsInformers",
    "AppsV1Informers",
    "BatchInformers",
    "BatchV1Informers",
    "CoordinationInformers",
    "CoordinationV1Informers",
    "CoreInformers",
    "CoreV1Informers",
    "DiscoveryInformers",
    "DiscoveryV1Informers",
    "GenericInformer",
    "InformerSource",
]


class GenericInformer(Generic[ObjectT]):
    """The informer and lister of one resource of a factory (client-go ``GenericInformer``;
    also what the typed accessors such as ``factory.core().v1().pods()`` return).

    Nothing is created until :meth:`informer` or :meth:`lister` is first called; every call
    returns the factory's one shared informer for the resource. Generic over the objects'
    static type (``object_type`` of
    :meth:`~informers.factory.SharedInformerFactory.for_resource`; default ``dict[str, Any]``).
    """

    __slots__ = ("_factory", "resource")

    def __init__(self, factory: InformerSource, resource: Resource) -> None:
        self._factory = factory
        self.resource = resource

    def informer(self) -> SharedIndexInformer[ObjectT]:
        """The shared informer (created and registered with the factory on first use)."""
        informer: SharedIndexInformer[ObjectT] = self._factory.informer_for(self.resource)
        return informer

    def lister(self) -> Lister[ObjectT]:
        """A lister over the shared informer's cache (objects are shared: do not mutate)."""
        return Lister(self.informer().get_indexer(), self.resource)

    def __repr__(self) -> str:
        return f"<GenericInformer {self.resource.group_resource}>"


class _Group:
    __slots__ = ("_factory",)

    def __init__(self, factory: InformerSource) -> None:
        self._factory = factory

    def _get(self, group: str, plural: str) -> GenericInformer:
        return GenericInformer(self._factory, lookup((group, "v1", plural)))


class CoreV1Informers(_Group):
    """``factory.core().v1()``: the core/v1 kinds."""

    __slots__ = ()

    def pods(self) -> GenericInformer:
        return self._get("", "pods")

    def services(self) -> GenericInformer:
        return self._get("", "services")

    def endpoints(self) -> GenericInformer:
        return self._get("", "endpoints")

    def nodes(self) -> GenericInformer:
        return self._get("", "nodes")

    def namespaces(self) -> GenericInformer:
        return self._get("", "namespaces")

    def config_maps(self) -> GenericInformer:
        return self._get("", "configmaps")

    def secrets(self) -> GenericInformer:
        return self._get("", "secrets")

    def events(self) -> GenericInformer:
        return self._get("", "events")

    def service_accounts(self) -> GenericInformer:
        return self._get("", "serviceaccounts")

    def persistent_volume_claims(self) -> GenericInformer:
        return self._get("", "persistentvolumeclaims")

    def persistent_volumes(self) -> GenericInformer:
        return self._get("", "persistentvolumes")


class AppsV1Informers(_Group):
    """``factory.apps().v1()``."""

    __slots__ = ()

    def deployments(self) -> GenericInformer:
        return self._get("apps", "deployments")

    def replica_sets(self) -> GenericInformer:
        return self._get("apps", "replicasets")

    def stateful_sets(self) -> GenericInformer:
        return self._get("apps", "statefulsets")

    def daemon_sets(self) -> GenericInformer:
        return self._get("apps", "daemonsets")


class CoordinationV1Informers(_Group):
    """``factory.coordination().v1()``."""

    __slots__ = ()

    def leases(self) -> GenericInformer:
        return self._get("coordination.k8s.io", "leases")


class DiscoveryV1Informers(_Group):
    """``factory.discovery().v1()``."""

    __slots__ = ()

    def endpoint_slices(self) -> GenericInformer:
        return self._get("discovery.k8s.io", "endpointslices")


class BatchV1Informers(_Group):
    """``factory.batch().v1()``."""

    __slots__ = ()

    def jobs(self) -> GenericInformer:
        return self._get("batch", "jobs")


class CoreInformers(_Group):
    """``factory.core()``."""

    __slots__ = ()

    def v1(self) -> CoreV1Informers:
        return CoreV1Informers(self._factory)


class AppsInformers(_Group):
    """``factory.apps()``."""

    __slots__ = ()

    def v1(self) -> AppsV1Informers:
        return AppsV1Informers(self._factory)


class CoordinationInformers(_Group):
    """``factory.coordination()``."""

    __slots__ = ()

    def v1(self) -> CoordinationV1Informers:
        return CoordinationV1Informers(self._factory)


class DiscoveryInformers(_Group):
    """``factory.discovery()``."""

    __slots__ = ()

    def v1(self) -> DiscoveryV1Informers:
        return DiscoveryV1Informers(self._factory)


class BatchInformers(_Group):
    """``factory.batch()``."""

    __slots__ = ()

    def v1(self) -> BatchV1Informers:
        return BatchV1Informers(self._factory)
