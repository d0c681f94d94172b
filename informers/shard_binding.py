"""Binds an informer factory to a shard ring: the factory's informers list and watch only
this replica's share, and the ring's coordinator sees what their caches hold.

:func:`bind_to_ring` is what ``Manager(sharding=...)`` does with its factory
(docs/sharding.md): it creates the :class:`~informers.shard.coordinator.ShardCoordinator`,
wraps every list-watch the factory creates from then on (informers created before keep
their full list-watch), resets the informers' backoffs before a relist of a new share, and
answers the coordinator's ``cache_check`` from the informers' last applied resourceVersion.
Call it once per factory, before its informers are created; the hooks it installs are called
on the coordinator's thread and read the factory under its own locks.
"""

from __future__ import annotations

import functools
from typing import Any

from informers.clock import Clock
from informers.factory import SharedInformerFactory
from informers.shard.coordinator import ShardCoordinator, ShardingConfig

__all__ = ["bind_to_ring", "cache_applied", "reset_informer_backoffs"]


def bind_to_ring(factory: SharedInformerFactory, api_client: Any, sharding: ShardingConfig, *,
                 clock: Clock, metrics_registry: Any) -> ShardCoordinator:
    """This replica's coordinator in the ``sharding`` ring, bound to ``factory``; the caller
    runs it (:meth:`ShardCoordinator.run`) and serves its readiness."""
    shard = ShardCoordinator(api_client, sharding, clock=clock,
                             metrics_registry=metrics_registry)
    factory.wrap_list_watch = shard.list_watch
    shard.before_relist.append(functools.partial(reset_informer_backoffs, factory))
    shard.cache_check = functools.partial(cache_applied, factory)
    return shard


def cache_applied(factory: SharedInformerFactory, list_watch: Any,
                  resource_version: str) -> bool:
    """Whether the factory's informer on ``list_watch`` has applied ``resource_version``."""
    for informer in factory.informers().values():
        if informer.list_watch is list_watch:
            applied = informer.last_store_sync_resource_version()
            if applied.isdigit() and resource_version.isdigit():
                return int(applied) >= int(resource_version)
            return applied == resource_version
    return True


def reset_informer_backoffs(factory: SharedInformerFactory) -> None:
    """Let every informer of ``factory`` retry at once (a relist of a new share follows)."""
    for informer in factory.informers().values():
        informer.reset_backoff()
