"""Runs one replica's part of a sharded controller: its Lease, its view of the ring, the
handover, the filtered informers and the per-key gate of its controllers.

:class:`ShardCoordinator` ties together :class:`~informers.shard.membership.MemberLease`,
:class:`~informers.shard.membership.RingObserver`, :class:`~informers.shard.handover.Handover`
and every :class:`~informers.shard.list_watch.ShardedListWatch` and
:class:`~informers.controller.Controller` given to it. Its loop (:meth:`run`), woken by
every Lease event and renewal and at least every ``retry_period / 2``:

1. reads the ring: the ready members (a member seen expired is re-read from the server
   first, :meth:`RingObserver.confirm`), their acknowledgements, and itself as ready only
   while its own Lease is :meth:`~MemberLease.held`; while it is not, it reconciles nothing;
2. feeds the handover; on a new target, sets every ShardedListWatch's ranges (the informers
   relist their new share: the cache holds the target, which the gate then releases);
3. once no reconcile of a draining hash is in flight in any gated controller, marks the
   handover drained, and publishes the acknowledgement in its Lease (while a handover is
   pending the loop runs every :data:`HANDOVER_POLL` seconds);
4. re-enqueues the keys it held back (their hash was in the target but not yet active) as
   soon as they become active; deletes orphaned Leases (only the first ready member, by
   name, does).

**The gate** (:meth:`gate`): a gated controller asks :meth:`may_start` right before every
reconcile (its ``shard_check``, atomically with registering the key in flight): a key whose
hash is active starts; one in the target but not active is held back and re-enqueued on
activation; any other is dropped (it is another member's; this member's informers no longer
list it). The key's hash is that of the namespace (``object.metadata.namespace`` key: the
part of ``namespace/name`` before the slash, ``""`` for a cluster-scoped name) or of the
object's UID (``object.metadata.uid``: looked up in the controller's primary informer, or the
last UID seen for the key, so the reconcile of a deleted object is still gated).

**Stop** (clean shutdown): reconcile nothing more, wait (up to ``renew_deadline``) for the
gated controllers' reconciles in flight, then release the Lease: the others see this member
dead at once and take its ranges without waiting for the Lease to expire.

Thread-safe. Metrics: :class:`ShardMetrics`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from informers.clock import REAL_CLOCK, Clock
from informers.leaderelection import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
)
from informers.list_watch import ListWatch
from informers.shard.handover import Handover
from informers.shard.list_watch import ShardedListWatch, ShardFilterStats
from informers.shard.membership import (
    MemberLease,
    MemberState,
    RingObserver,
    default_member_name,
)
from informers.shard.ranges import RangeSet, key_hash
from informers.sharding import NAMESPACE_KEY, SUPPORTED_KEYS, UID_KEY, fnv1a_64

__all__ = ["HANDOVER_POLL", "ShardCoordinator", "ShardMetrics", "ShardingConfig"]

logger = logging.getLogger(__name__)

HANDOVER_POLL = 0.05
"""Seconds between passes of the loop while a handover is pending (draining, or a target not
yet active): the end of a drain and a cache's relist wake nothing (the same poll as
:data:`informers.controller.controller.LEADERSHIP_POLL`)."""


@dataclass(frozen=True)
class ShardingConfig:
    """How a replica takes part in a ring.

    Attributes:
        ring: the ring's name (the Leases' ``sharding.informers.io/ring`` label value).
        namespace: where the ring's Leases live.
        key: what is hashed: ``object.metadata.namespace`` (default; children follow their
            namespace) or ``object.metadata.uid``.
        name: this member's name (its Lease's name); ``None``:
            :func:`~informers.shard.membership.default_member_name`.
        lease_duration: leader election's lease duration (default 15 s).
        renew_deadline: leader election's renew deadline (default 10 s).
        retry_period: leader election's retry period (default 2 s).
    """

    ring: str
    namespace: str = "default"
    key: str = NAMESPACE_KEY
    name: str | None = None
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD

    def __post_init__(self) -> None:
        if not self.ring:
            raise ValueError("a sharding config needs a ring name")
        if self.key not in SUPPORTED_KEYS:
            raise ValueError(f"unsupported shard key {self.key!r}; supported: "
                             f"{', '.join(SUPPORTED_KEYS)}")


@dataclass
class ShardMetrics:
    """What a coordinator measures (read :meth:`ShardCoordinator.metrics`), also exported to
    a ``prometheus_client`` registry when one is given:

    * ``shard_ranges_owned``: contiguous ranges this member may reconcile now;
    * ``shard_members{state}``: ring members by state;
    * ``shard_keys_filtered_on_client_total``: objects its informers dropped on the client
      (the server ignored the selector);
    * ``shard_handover_seconds``: from a change of target to its activation.
    """

    ranges_owned: int = 0
    owned_fraction: float = 0.0
    members: dict[str, int] = field(default_factory=dict)
    filtered_on_client: int = 0
    lists_unfiltered: int = 0
    handovers: list[float] = field(default_factory=list)


class _Prometheus:
    def __init__(self, registry: Any) -> None:
        import prometheus_client as pc

        self.ranges = pc.Gauge("shard_ranges_owned", "Hash ranges this member reconciles.",
                               ["ring"], registry=registry)
        self.members = pc.Gauge("shard_members", "Ring members by state.", ["ring", "state"],
                                registry=registry)
        self.filtered = pc.Counter("shard_keys_filtered_on_client",
                                   "Objects dropped on the client (server ignored the "
                                   "shardSelector).", ["ring"], registry=registry)
        self.handover = pc.Histogram("shard_handover_seconds",
                                     "Seconds from a new target to its activation.", ["ring"],
                                     registry=registry)


@dataclass
class _Gated:
    controller: Any
    informer: Any
    held: set[str] = field(default_factory=set)
    uids: dict[str, int] = field(default_factory=dict)


class ShardCoordinator:
    """One replica's sharding (see the module docstring).

    Args:
        api_client: a ``kubernetes.client.ApiClient`` for the Leases.
        config: the ring, key and timings.
        clock: time source of the Lease, the member states and the loop.
        metrics_registry: a ``prometheus_client`` registry to export :class:`ShardMetrics`
            to, or ``None``.
    """

    def __init__(self, api_client: Any, config: ShardingConfig, *, clock: Clock = REAL_CLOCK,
                 metrics_registry: Any = None) -> None:
        self.config = config
        self.name = config.name or default_member_name(config.ring)
        self._clock = clock
        self.lease = MemberLease(api_client, config.namespace, config.ring, self.name,
                                 lease_duration=config.lease_duration,
                                 renew_deadline=config.renew_deadline,
                                 retry_period=config.retry_period, clock=clock)
        self._wake = threading.Event()
        self.observer = RingObserver(api_client, config.namespace, config.ring, clock=clock,
                                     on_change=self._wake.set)
        self._lock = threading.Lock()
        self.handover = Handover(self.name)
        self._list_watches: list[ShardedListWatch] = []
        self._gated: list[_Gated] = []
        self._stats = ShardFilterStats()
        self._confirmed_expired: set[str] = set()
        self._target_since: float | None = None
        self._metrics = ShardMetrics()
        self._prometheus = _Prometheus(metrics_registry) if metrics_registry is not None \
            else None
        self._filtered_exported = 0
        self._stopping = False
        self.cache_check: Callable[[ShardedListWatch, str], bool] | None = None
        """``None``, or ``cache_check(list_watch, resource_version)``: whether the cache fed
        by ``list_watch`` has applied ``resource_version`` (its last list). With it, a gain
        waits until every cache has applied a list of the new target; the Manager sets it.
        Without it, a gain waits until every ListWatch has listed the target."""
        self.before_relist: list[Callable[[], None]] = []
        """Called before the ListWatches get new ranges (their informers then relist), e.g.
        to reset the informers' backoff (:meth:`SharedIndexInformer.reset_backoff
        <informers.shared_informer.SharedIndexInformer.reset_backoff>`, as the Manager
        does)."""

    # -- wiring --------------------------------------------------------------------------------

    def list_watch(self, inner: ListWatch) -> ShardedListWatch:
        """``inner`` restricted to this member's target ranges (updated by the loop)."""
        with self._lock:
            lw = ShardedListWatch(inner, self.config.key, self.handover.target, self._stats)
            self._list_watches.append(lw)
        return lw

    def list_watches(self) -> tuple[ShardedListWatch, ...]:
        """The ListWatches made by :meth:`list_watch`."""
        with self._lock:
            return tuple(self._list_watches)

    def gate(self, controller: Any, informer: Any = None) -> None:
        """Make ``controller`` (a :class:`~informers.controller.Controller`) reconcile only
        this member's active keys: sets its ``shard_check``. ``informer``: its primary
        informer, needed to hash keys by UID."""
        if self.config.key == UID_KEY and informer is None:
            raise ValueError("a ring keyed by object.metadata.uid needs the controller's "
                             "primary informer to hash its keys")
        gated = _Gated(controller, informer)
        with self._lock:
            self._gated.append(gated)
        controller.shard_check = lambda key: self._may_start(gated, key)

    # -- the gate ------------------------------------------------------------------------------

    def _hash(self, gated: _Gated, key: str) -> int | None:
        if self.config.key == NAMESPACE_KEY:
            namespace = key.split("/", 1)[0] if "/" in key else ""
            return fnv1a_64(namespace.encode("utf-8"))
        obj = gated.informer.get_store().get_by_key(key) if gated.informer is not None else None
        if isinstance(obj, dict):
            hashed = key_hash(obj, UID_KEY)
            gated.uids[key] = hashed
            return hashed
        return gated.uids.get(key)

    def _may_start(self, gated: _Gated, key: str) -> bool:
        with self._lock:
            hashed = self._hash(gated, key)
            if hashed is None:
                return False
            if self.handover.may_start(hashed):
                return True
            if hashed in self.handover.target:
                gated.held.add(key)
            return False

    def may_start(self, key: str) -> bool:
        """Whether a reconcile of ``key`` may start now on the first gated controller
        (a convenience for runnables that are not controllers)."""
        with self._lock:
            gated = self._gated[0] if self._gated else _Gated(None, None)
        return self._may_start(gated, key)

    # -- state ---------------------------------------------------------------------------------

    def active(self) -> RangeSet:
        with self._lock:
            return self.handover.active

    def target(self) -> RangeSet:
        with self._lock:
            return self.handover.target

    def ready(self) -> bool:
        """The ``/readyz`` check: the ring's Leases are synced and this member holds its
        Lease. It does not wait for ranges (a member whose ranges wait for a handover is
        ready; one holding nothing in a ring larger than the hash space is too)."""
        return self.observer.has_synced() and self.lease.held()

    def metrics(self) -> ShardMetrics:
        with self._lock:
            m = self._metrics
            return ShardMetrics(m.ranges_owned, m.owned_fraction, dict(m.members),
                                self._stats.filtered, self._stats.lists_unfiltered,
                                list(m.handovers))

    # -- the loop ------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Hold the Lease, watch the ring and keep the handover going until ``stop`` is set;
        then hand over cleanly (see the module docstring). Blocks."""
        with self._lock:
            self._stopping = False
        if self.observer.informer.has_started():  # a restart: an informer runs only once
            self.observer = RingObserver(self.lease.api_client, self.config.namespace,
                                         self.config.ring, clock=self._clock,
                                         on_change=self._wake.set)
            self._confirmed_expired.clear()
        informer_stop = threading.Event()
        lease_stop = threading.Event()
        threads = [
            threading.Thread(target=self.observer.informer.run, args=(informer_stop,),
                             name=f"shard-ring-{self.config.ring}", daemon=True),
            threading.Thread(target=self.lease.run, args=(lease_stop, self._wake.set),
                             name=f"shard-lease-{self.name}", daemon=True),
        ]
        for t in threads:
            t.start()
        try:
            while not stop.is_set():
                self._wake.clear()
                try:
                    self.tick()
                except Exception:
                    logger.exception("ring %s: coordinator step failed", self.config.ring)
                with self._lock:
                    pending = (self.handover.active != self.handover.target
                               or bool(self.handover.draining))
                # While a handover is pending, look again soon: a drain or a relist ends
                # without any event that would wake the loop.
                timeout = self.config.retry_period / 2
                self._clock.wait_event(self._wake, min(timeout, HANDOVER_POLL) if pending
                                       else timeout)
                if stop.is_set():
                    break
        finally:
            self._hand_over_and_release(lease_stop, threads[1])
            informer_stop.set()
            for t in threads:
                t.join()

    def interrupt(self) -> None:
        """Wake the loop (e.g. right after setting its stop event)."""
        self._wake.set()

    def tick(self) -> None:
        """One pass of the loop (public for tests driving it step by step)."""
        if not self.observer.has_synced():
            return
        states = self.observer.states()
        ready: set[str] = set()
        for name, (state, _) in states.items():
            if state is MemberState.READY:
                self._confirmed_expired.discard(name)
                ready.add(name)
            elif (state is MemberState.EXPIRED and name != self.name
                  and name not in self._confirmed_expired):
                if self.observer.confirm(name) is MemberState.READY:
                    ready.add(name)
                    continue
                self._confirmed_expired.add(name)
        held = self.lease.held()
        ready.discard(self.name)
        if held:
            ready.add(self.name)
        acks = {name: ack for name, (_, ack) in states.items()}
        acks[self.name] = self.lease.published_ack
        now = self._clock.now()
        with self._lock:
            if self._stopping:
                return
            old_target = self.handover.target
            old_active = self.handover.active
            list_watches = list(self._list_watches)
            if held:
                self.handover.observe(ready, acks,
                                      self._caches_hold(list_watches, self.handover.target
                                                        if set(self.handover.view) == ready
                                                        else None))
            elif self.handover.view or self.handover.active:
                logger.warning("ring %s: %s has not renewed its Lease for %ss: reconciling "
                               "nothing until it does", self.config.ring, self.name,
                               self.config.renew_deadline)
                self.handover.stop()
            target, active = self.handover.target, self.handover.active
            draining = self.handover.draining
            if target != old_target:
                self._target_since = now
            list_watches = list(self._list_watches)
            gated = list(self._gated)
        if target != old_target:
            for hook in list(self.before_relist):
                try:
                    hook()
                except Exception:
                    logger.exception("ring %s: before_relist hook failed", self.config.ring)
        for lw in list_watches:
            lw.set_ranges(target)
        if draining and not self._in_flight_in(gated, draining):
            with self._lock:
                self.handover.drained()
        with self._lock:
            ack = self.handover.ack
        self.lease.set_ack(ack)
        if active != old_active:
            logger.info("ring %s: %s reconciles %s (view %s)", self.config.ring, self.name,
                        active, ", ".join(self.handover.view))
            self._release_held(gated)
        self._record(states, active, target, now)
        self._collect_orphans(states, ready)

    def _caches_hold(self, list_watches: list[ShardedListWatch],
                     target: RangeSet | None) -> bool:
        """Whether every ListWatch listed ``target`` and its cache applied that list (``None``:
        the target is about to change: no)."""
        if target is None:
            return False
        check = self.cache_check
        for lw in list_watches:
            listed = lw.listed
            if listed is None or listed[0] != target:
                return False
            if check is not None and not check(lw, listed[1]):
                return False
        return True

    def _in_flight_in(self, gated: list[_Gated], ranges: RangeSet) -> bool:
        for g in gated:
            for key in g.controller.in_flight_keys():
                with self._lock:
                    hashed = self._hash(g, key)
                if hashed is None or hashed in ranges:
                    return True
        return False

    def _release_held(self, gated: list[_Gated]) -> None:
        for g in gated:
            with self._lock:
                ready_keys = []
                for key in list(g.held):
                    hashed = self._hash(g, key)
                    if hashed is None or hashed not in self.handover.target:
                        g.held.discard(key)
                    elif self.handover.may_start(hashed):
                        g.held.discard(key)
                        ready_keys.append(key)
            for key in ready_keys:
                g.controller.enqueue(key)

    def _record(self, states: dict[str, tuple[MemberState, str | None]], active: RangeSet,
                target: RangeSet, now: float) -> None:
        counts = {s.value: 0 for s in MemberState}
        for member_state, _ in states.values():
            counts[member_state.value] += 1
        with self._lock:
            m = self._metrics
            m.ranges_owned = len(active.ranges)
            m.owned_fraction = active.size() / float(1 << 64)
            m.members = counts
            finished = None
            if self._target_since is not None and active == target:
                finished = now - self._target_since
                self._target_since = None
                m.handovers.append(finished)
            filtered = self._stats.filtered
        if finished is not None:
            logger.info("ring %s: %s took over its target in %.3fs", self.config.ring,
                        self.name, finished)
        p = self._prometheus
        if p is not None:
            ring = self.config.ring
            p.ranges.labels(ring).set(len(active.ranges))
            for state_name, n in counts.items():
                p.members.labels(ring, state_name).set(n)
            if filtered > self._filtered_exported:
                p.filtered.labels(ring).inc(filtered - self._filtered_exported)
                self._filtered_exported = filtered
            if finished is not None:
                p.handover.labels(ring).observe(finished)

    def _collect_orphans(self, states: dict[str, tuple[MemberState, str | None]],
                         ready: set[str]) -> None:
        if not ready or min(ready) != self.name:
            return
        for name, (state, _) in states.items():
            if state is MemberState.ORPHANED and name != self.name:
                self.observer.delete_orphan(name)

    def _hand_over_and_release(self, lease_stop: threading.Event,
                               renewer: threading.Thread) -> None:
        with self._lock:
            self._stopping = True
            self.handover.stop()
            gated = list(self._gated)
        deadline = self._clock.now() + self.config.renew_deadline
        while any(g.controller.in_flight_keys() for g in gated):
            if self._clock.now() >= deadline:
                logger.warning("ring %s: reconciles still in flight at shutdown; not "
                               "releasing the Lease (it expires instead)", self.config.ring)
                lease_stop.set()
                self.lease.interrupt()
                return
            self._clock.sleep(0.01)
        lease_stop.set()
        self.lease.interrupt()
        renewer.join()  # no renewal in flight: the release must not conflict with one
        with self._lock:
            self.handover.drained()
        if self.lease.release():
            logger.info("ring %s: %s released its Lease", self.config.ring, self.name)
