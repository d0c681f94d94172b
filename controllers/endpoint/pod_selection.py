"""Finds a Service's pods in the informer cache through a pod label index.

Deviation from upstream: endpoints_controller.go lists the Service's whole namespace and
matches every pod's labels, which is cheap in Go. In Python that costs a microsecond or more
a pod, some 10 ms on every sync in a namespace of 10,000 pods. Reading the smallest index
bucket of the selector's pairs and matching only those pods gives the same result at a cost
that follows the matching pods, not the namespace.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from controllers.endpoint.desired import string_map
from controllers.endpoint.json_values import meta_of as _meta
from informers.labels import selector_from_validated_set

__all__ = ["POD_LABEL_INDEX", "PodSelector", "pod_label_index_func"]

logger = logging.getLogger(__name__)

POD_LABEL_INDEX = "endpoint-controller/label"
"""Pod index the controller adds: ``namespace/key=value`` per string label (unambiguous:
namespaces hold no ``/`` and label keys and values no ``=``)."""


def pod_label_index_func(obj: Any) -> list[str]:
    """Index values of :data:`POD_LABEL_INDEX`: ``namespace/key=value`` for each string label."""
    meta = _meta(obj)
    namespace = meta.get("namespace")
    namespace = namespace if isinstance(namespace, str) else ""
    return [f"{namespace}/{k}={v}" for k, v in string_map(meta.get("labels")).items()]


class PodSelector:
    """Selects cached pods by a Service's selector. Thread-safe (reads the informer's indexer).

    Adds :data:`POD_LABEL_INDEX` to the pod informer at construction; if that fails (the
    informer stopped, or the index name is taken) it logs a warning and lists whole namespaces
    through the lister instead, with the same results.
    """

    def __init__(self, pod_informer: Any, pod_lister: Any, name: str) -> None:
        self._informer = pod_informer
        self._lister = pod_lister
        self.indexed = True
        try:
            pod_informer.add_indexers({POD_LABEL_INDEX: pod_label_index_func})
        except Exception as err:
            self.indexed = False
            logger.warning("%s: no pod label index (%s); syncs list whole namespaces", name, err)

    def select(self, namespace: str, selector: Mapping[str, str]) -> list[Any]:
        """The cached pods of ``namespace`` matching ``selector`` (shared: do not mutate).

        A one-pair selector's bucket is the answer itself; with more pairs the smallest bucket
        is matched against the whole selector."""
        if not selector or not self.indexed:
            sel = selector_from_validated_set(selector)
            return list(self._lister.by_namespace(namespace).list(sel))
        indexer = self._informer.get_indexer()
        candidates: list[Any] | None = None
        for key, value in selector.items():
            bucket = indexer.by_index(POD_LABEL_INDEX, f"{namespace}/{key}={value}")
            if candidates is None or len(bucket) < len(candidates):
                candidates = bucket
            if not candidates:
                return []
        if len(selector) == 1:
            return candidates or []
        sel = selector_from_validated_set(selector)
        return [pod for pod in candidates or () if sel.matches(_meta(pod).get("labels"))]
