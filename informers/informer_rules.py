"""The rules a shared informer's drivers share, without I/O: the resync periods of handlers, the
cache's key and index functions, the queue's transform and its metrics name.

client-go ``tools/cache/shared_informer.go``; used by the threaded
:class:`~informers.shared_informer.SharedIndexInformer` and the async
:class:`~informers.aio.informer.AsyncSharedIndexInformer`, so both apply the same rules.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from informers.delta_fifo import TransformFunc
from informers.fifo_metrics import InformerNameAndResource
from informers.keys import Indexers, KeyFunc, deletion_handling_meta_namespace_key_func
from informers.object_codec import Encoded, compact_index_func, compact_key_func

__all__ = [
    "MINIMUM_RESYNC_PERIOD",
    "cache_index_funcs",
    "cache_key_func",
    "fifo_identifier",
    "fifo_transform",
    "handler_resync_periods",
    "resync_period_for",
]

logger = logging.getLogger(__name__)

MINIMUM_RESYNC_PERIOD = 1.0
"""Seconds; smaller handler periods are raised to it (client-go ``minimumResyncPeriod``)."""


def handler_resync_periods(name: str, requested: float, check_period: float,
                           started: bool) -> tuple[float, float]:
    """The resync period a new handler asks for and the informer's resync check period after
    it registered (client-go ``sharedIndexInformer.AddEventHandlerWithOptions``), for the
    threaded and the async informer.

    A positive ``requested`` below :data:`MINIMUM_RESYNC_PERIOD` is raised to it; one below
    ``check_period`` lowers the check period before the informer started, and is raised to
    the check period after. ``0`` (no resync) changes nothing. The listener's effective period
    is then :func:`~informers.processor_listener.determine_resync_period` of the two (``0``
    when the check period is ``0``: an informer created without resync never resyncs).

    Returns:
        ``(requested period, check period)``.
    """
    if requested > 0:
        if requested < MINIMUM_RESYNC_PERIOD:
            logger.warning("%s: resync period %ss is too small; changing it to the minimum "
                           "allowed value of %ss", name, requested, MINIMUM_RESYNC_PERIOD)
            requested = MINIMUM_RESYNC_PERIOD
        if requested < check_period:
            if started:
                logger.warning("%s: resync period %ss is smaller than the resync check period "
                               "%ss of a started informer; changing it to %ss", name,
                               requested, check_period, check_period)
                requested = check_period
            else:
                check_period = requested
    return requested, check_period


def cache_key_func(compact: bool) -> KeyFunc:
    """The key function of an informer's cache and queue (a compact cache's also keys
    :class:`~informers.object_codec.Encoded` objects)."""
    key_func = deletion_handling_meta_namespace_key_func
    return compact_key_func(key_func) if compact else key_func


def cache_index_funcs(indexers: Indexers | None, compact: bool) -> Indexers | None:
    """The index functions as the cache runs them (a compact cache's decode first)."""
    if not compact or not indexers:
        return indexers
    return {name: compact_index_func(fn) for name, fn in indexers.items()}


def fifo_transform(transform: TransformFunc | None, compact: bool) -> TransformFunc | None:
    """The queue's transform: a compact informer's listed objects arrive transformed and
    encoded already (:func:`~informers.object_codec.item_encoder`) and pass as they are."""
    if not compact or transform is None:
        return transform
    apply = transform

    def queue_transform(obj: Any) -> Any:
        return obj if obj.__class__ is Encoded else apply(obj)

    return queue_transform


def fifo_identifier(name: str | None, resource: Any) -> InformerNameAndResource | None:
    """What names an informer's queue for metrics (:mod:`informers.fifo_metrics`): only an
    explicitly named informer publishes them (client-go ``id.Reserved()``)."""
    if not name:
        return None
    if resource is None:
        return InformerNameAndResource(name)
    return InformerNameAndResource(name, resource.group, resource.version, resource.plural)


def resync_period_for(resource: Any, default: float, custom: Mapping[Any, float]) -> float:
    """A factory's resync period for ``resource``: ``custom``'s entry for it (keyed by the
    :class:`~informers.resources.Resource`, ``"deployments.apps"`` or ``"pods"``), else
    ``default`` (client-go ``WithCustomResyncConfig``)."""
    for key in (resource, resource.group_resource, resource.plural):
        if key in custom:
            return float(custom[key])
    return float(default)
