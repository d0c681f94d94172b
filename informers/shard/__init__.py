"""Sharding one controller across replicas (issue 20): membership on Leases, the assignment
of the 64-bit FNV-1a hash space (KEP-5866's) to the members, filtered list and watch, and a
handover that never lets two replicas reconcile one key at once.

* :mod:`informers.shard.ranges`: :class:`RangeSet`, :func:`assign`, selectors;
* :mod:`informers.shard.handover`: the per-member handover state machine;
* :mod:`informers.shard.membership`: the member Leases and the ring's observer;
* :mod:`informers.shard.list_watch`: the filtered ListWatch;
* :mod:`informers.shard.coordinator`: :class:`ShardingConfig` and :class:`ShardCoordinator`,
  what ``Manager(sharding=...)`` runs (docs/sharding.md).
"""

from __future__ import annotations

from informers.shard.coordinator import ShardCoordinator, ShardingConfig, ShardMetrics
from informers.shard.handover import Handover
from informers.shard.list_watch import ShardedListWatch
from informers.shard.membership import MemberLease, MemberState, RingObserver
from informers.shard.ranges import SPACE, RangeSet, assign, key_hash, selector_for, view_id

__all__ = [
    "SPACE",
    "Handover",
    "MemberLease",
    "MemberState",
    "RangeSet",
    "RingObserver",
    "ShardCoordinator",
    "ShardMetrics",
    "ShardedListWatch",
    "ShardingConfig",
    "assign",
    "key_hash",
    "selector_for",
    "view_id",
]
