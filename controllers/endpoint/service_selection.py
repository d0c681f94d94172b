"""Finds the Services that may select a pod, through a Service selector index.

Deviation from upstream, as for pods (:mod:`controllers.endpoint.pod_selection`):
``GetPodServiceMemberships`` lists every Service of the pod's namespace on each pod event and
matches each selector: in Python a cost that grows with the namespace's Services, paid on the
informer's thread for every pod event before the sync is even queued.
Each Service is indexed under one pair of its selector; a pod can only be selected by the
Services filed under one of its own label pairs, or under the namespace's "select everything"
entry. :func:`~controllers.endpoint.membership.pod_service_memberships` still matches the
full selectors, so the result is upstream's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from controllers.endpoint.desired import string_map
from controllers.endpoint.json_values import meta_of as _meta
from controllers.endpoint.membership import valid_selector
from informers.labels import EVERYTHING

__all__ = ["SERVICE_SELECTOR_INDEX", "ServiceSelector", "service_selector_index_func"]

logger = logging.getLogger(__name__)

SERVICE_SELECTOR_INDEX = "endpoint-controller/selector"
"""Service index the controller adds: ``namespace/key=value`` for the smallest pair of a
Service's selector, ``namespace/`` for an empty selector (selects every pod), nothing for a
missing or malformed one (selects none)."""


def service_selector_index_func(obj: Any) -> list[str]:
    """Index values of :data:`SERVICE_SELECTOR_INDEX` (at most one per Service)."""
    if not isinstance(obj, Mapping):
        return []
    selector = valid_selector(obj)
    if selector is None:
        return []
    namespace = _meta(obj).get("namespace")
    namespace = namespace if isinstance(namespace, str) else ""
    if not selector:
        return [f"{namespace}/"]
    key, value = min(selector.items())
    return [f"{namespace}/{key}={value}"]


class ServiceSelector:
    """Lists the cached Services that may select pods with given labels. Thread-safe (reads
    the informer's indexer).

    Adds :data:`SERVICE_SELECTOR_INDEX` to the Service informer at construction; if that fails
    (the informer stopped, or the index name is taken) it logs a warning and lists whole
    namespaces through the lister instead: :meth:`candidates` then returns every Service of the
    namespace, which gives the same memberships.
    """

    def __init__(self, service_informer: Any, service_lister: Any, name: str) -> None:
        self._informer = service_informer
        self._lister = service_lister
        self.indexed = True
        try:
            service_informer.add_indexers({SERVICE_SELECTOR_INDEX: service_selector_index_func})
        except Exception as err:
            self.indexed = False
            logger.warning("%s: no service selector index (%s); pod events list whole "
                           "namespaces", name, err)

    def candidates(self, namespace: str, *pods: Any) -> list[Any]:
        """The Services of ``namespace`` whose selector may select one of ``pods`` (a
        superset of those that do, each Service once; shared objects: do not mutate)."""
        if not self.indexed:
            return list(self._lister.by_namespace(namespace).list(EVERYTHING))
        by_index = self._informer.get_indexer().by_index
        found = by_index(SERVICE_SELECTOR_INDEX, f"{namespace}/")
        seen: set[str] = set()
        for pod in pods:
            for key, value in string_map(_meta(pod).get("labels")).items():
                pair = f"{namespace}/{key}={value}"
                if pair not in seen:
                    seen.add(pair)
                    found += by_index(SERVICE_SELECTOR_INDEX, pair)
        return found
