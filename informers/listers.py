"""Reads an informer's cache by name, namespace and label selector (client-go ``listers``).

client-go ``tools/cache/listers.go`` (``ListAll``, ``ListAllByNamespace``, ``GenericLister``)
and the generated typed listers (``PodLister.Pods(ns)``, ...). One :class:`Lister` serves every
resource; the typed accessors (:meth:`Lister.pods`, :meth:`Lister.deployments`, ...) are
:meth:`Lister.by_namespace` checked against the lister's resource.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable
from typing import Any, Generic

from informers import labels
from informers.errors import IndexNotFoundError, NotFoundError
from informers.indexer import Indexer
from informers.keys import NAMESPACE_INDEX
from informers.object_codec import label_prefilter
from informers.object_type import ObjectT
from informers.resources import Resource

__all__ = ["Lister", "NamespaceLister"]

logger = logging.getLogger(__name__)

SelectorLike = labels.Selector | str | None


def _selector(selector: SelectorLike) -> labels.Selector:
    if selector is None:
        return labels.EVERYTHING
    if isinstance(selector, str):
        return labels.parse(selector)
    return selector


def _labels_of(obj: Any) -> Any:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta.get("labels") if isinstance(meta, dict) else None


def _prefilter(indexer: Indexer[Any], selector: labels.Selector) -> Callable[[bytes], bool] | None:
    """A compact cache's byte pre-filter for ``selector`` (decode only likely matches)."""
    if selector.empty() or not getattr(indexer, "compact", False):
        return None
    return label_prefilter(selector)


def _filter(objects: list[ObjectT], selector: labels.Selector) -> list[ObjectT]:
    if selector.empty():
        return objects
    matches = selector.matches
    return [obj for obj in objects if matches(_labels_of(obj))]


class Lister(Generic[ObjectT]):
    """Reads the cached objects of one resource from an informer's indexer.

    Generic over the objects' static type: ``Lister[Pod](indexer, PODS)`` (or the typed
    ``object_type=`` of the factory's accessors) makes :meth:`get` return a
    :class:`~informers.types.core_v1.Pod`; unparameterized, objects are ``dict[str, Any]``.
    The type is static only (objects are the cache's dicts).

    Contract:

    * **Shared objects.** Every object returned is the informer's cached dict, shared with
      every other reader and handler: never mutate it (client-go: "Objects returned here must
      be treated as read-only"); ``copy.deepcopy`` first. Enable the mutation detector
      (``KUBE_CACHE_MUTATION_DETECTOR=true``) to catch violations in tests.
    * **Staleness.** The cache may lag the server; an object may be missing or old.
    * **Thread safety.** Safe from any thread; each call is one consistent read of the
      indexer (one lock acquisition), not a snapshot across calls.
    * Lists come in no particular order.

    Args:
        indexer: the informer's cache (``informer.get_indexer()``).
        resource: what it holds (for scope checks and error messages).
    """

    __slots__ = ("indexer", "resource")

    def __init__(self, indexer: Indexer[ObjectT], resource: Resource) -> None:
        self.indexer = indexer
        self.resource = resource

    def list(self, selector: SelectorLike = labels.EVERYTHING) -> builtins.list[ObjectT]:
        """Every cached object whose labels match ``selector`` (client-go ``ListAll``).

        :data:`~informers.labels.NOTHING` returns ``[]`` at once; the empty selector returns
        everything without evaluating labels. A string is parsed as a label selector.
        """
        sel = _selector(selector)
        if labels.matches_nothing(sel):
            return []
        prefilter = _prefilter(self.indexer, sel)
        if prefilter is not None:
            return _filter(self.indexer.list_matching(prefilter), sel)
        return _filter(self.indexer.list(), sel)

    def get(self, name: str) -> ObjectT:
        """The cached object named ``name`` of a cluster-scoped resource.

        For a namespaced resource, pass the key ``"namespace/name"`` or use
        ``by_namespace(ns).get(name)``.

        Raises:
            NotFoundError: nothing cached under that key (names the resource and the key).
        """
        obj = self.indexer.get_by_key(name)
        if obj is None:
            raise NotFoundError(self.resource.group_resource, name)
        return obj

    def last_store_sync_resource_version(self) -> str:
        """The resourceVersion of the cache's last write (client-go v0.36
        ``LastStoreSyncResourceVersion``; see
        :meth:`informers.indexer.Indexer.last_store_sync_resource_version`). Read it *before*
        the objects: what is listed afterwards is at least that recent."""
        return self.indexer.last_store_sync_resource_version()

    def by_namespace(self, namespace: str) -> NamespaceLister[ObjectT]:
        """A lister restricted to ``namespace`` (``""``: all namespaces)."""
        return NamespaceLister(self.indexer, self.resource, namespace)

    def _typed(self, plural: str, group: str, namespace: str) -> NamespaceLister[ObjectT]:
        if self.resource.plural != plural or self.resource.group != group:
            wanted = f"{plural}.{group}" if group else plural
            raise TypeError(
                f"{wanted} lister requested from a lister of {self.resource.group_resource}"
            )
        return NamespaceLister(self.indexer, self.resource, namespace)

    # Typed accessors named like client-go's generated listers (PodLister.Pods(ns), ...).

    def pods(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("pods", "", namespace)

    def services(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("services", "", namespace)

    def endpoints(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("endpoints", "", namespace)

    def config_maps(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("configmaps", "", namespace)

    def secrets(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("secrets", "", namespace)

    def events(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("events", "", namespace)

    def service_accounts(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("serviceaccounts", "", namespace)

    def persistent_volume_claims(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("persistentvolumeclaims", "", namespace)

    def leases(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("leases", "coordination.k8s.io", namespace)

    def endpoint_slices(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("endpointslices", "discovery.k8s.io", namespace)

    def deployments(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("deployments", "apps", namespace)

    def replica_sets(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("replicasets", "apps", namespace)

    def stateful_sets(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("statefulsets", "apps", namespace)

    def daemon_sets(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("daemonsets", "apps", namespace)

    def jobs(self, namespace: str) -> NamespaceLister[ObjectT]:
        return self._typed("jobs", "batch", namespace)

    def __repr__(self) -> str:
        return f"<Lister {self.resource.group_resource}>"


class NamespaceLister(Generic[ObjectT]):
    """Reads one namespace's cached objects (client-go ``GenericNamespaceLister``).

    Same contract as :class:`Lister`: returned objects are shared and must not be mutated.
    Lists go through the ``namespace`` index (which factory informers always have); without
    it they scan the whole cache and log a warning (client-go ``ListAllByNamespace``).
    """

    __slots__ = ("indexer", "namespace", "resource")

    def __init__(self, indexer: Indexer[ObjectT], resource: Resource, namespace: str) -> None:
        self.indexer = indexer
        self.resource = resource
        self.namespace = namespace

    def list(self, selector: SelectorLike = labels.EVERYTHING) -> builtins.list[ObjectT]:
        """The namespace's cached objects whose labels match ``selector``."""
        sel = _selector(selector)
        if labels.matches_nothing(sel):
            return []
        ns = self.namespace
        prefilter = _prefilter(self.indexer, sel)
        if not ns:
            if prefilter is not None:
                return _filter(self.indexer.list_matching(prefilter), sel)
            return _filter(self.indexer.list(), sel)
        try:
            if prefilter is not None:
                return _filter(self.indexer.by_index_matching(NAMESPACE_INDEX, ns, prefilter),
                               sel)
            objects = self.indexer.by_index(NAMESPACE_INDEX, ns)
        except IndexNotFoundError:
            logger.warning(
                "lister of %s: no %r index; listing namespace %s scans the whole cache",
                self.resource.group_resource,
                NAMESPACE_INDEX,
                ns,
            )
            objects = [
                obj
                for obj in self.indexer.list()
                if isinstance(obj, dict)
                and isinstance(obj.get("metadata"), dict)
                and obj["metadata"].get("namespace") == ns
            ]
        return _filter(objects, sel)

    def get(self, name: str) -> ObjectT:
        """The cached object ``name`` in this namespace.

        Raises:
            NotFoundError: nothing cached under ``namespace/name`` (names the resource and key).
        """
        key = f"{self.namespace}/{name}" if self.namespace else name
        obj = self.indexer.get_by_key(key)
        if obj is None:
            raise NotFoundError(self.resource.group_resource, key)
        return obj

    def __repr__(self) -> str:
        return f"<NamespaceLister {self.resource.group_resource} namespace={self.namespace!r}>"
