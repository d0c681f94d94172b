"""The handover state machine of one ring member: which hashes it may reconcile now.

Each member runs one :class:`Handover`, fed with what it observes of the ring (the ready
members and the acknowledgement each one published in its Lease) and with the end of its
draining. It answers which hashes the member may start reconciling (:attr:`Handover.active`)
and what it should publish as its acknowledgement (:attr:`Handover.ack`).

The protocol (every member runs it alike; no member is in charge):

* The **view** is the sorted set of ready members a member observes; the **target** is its
  range in the view's assignment (:func:`informers.shard.ranges.assign`).
* When the view changes, the member at once stops starting reconciles of the hashes it loses
  (``active`` shrinks to ``active & target``); those hashes are **draining** until every
  reconcile of them that was already running has ended (:meth:`Handover.drained`).
* With nothing draining, the member acknowledges the view: :attr:`Handover.ack` becomes the
  view's :func:`~informers.shard.ranges.view_id`, which the member publishes in its Lease.
  An acknowledgement of view ``V`` so means: "I reconcile nothing outside my range in ``V``".
* A member **gains** (``active`` becomes the whole target) only once every member of the
  view, itself included, is observed to have published the acknowledgement of the view (in
  particular every member that lost part of the target has drained it), and its own caches
  hold the target (the coordinator's check: a reconcile must not read a cache that has not
  listed its new ranges yet). Members outside the
  view (expired or released Leases, :mod:`informers.shard.membership`) are not waited for:
  they stopped reconciling (a member that cannot renew its Lease stops before its Lease
  expires, as a leader does).
* A member that is not in its own view (not registered yet, or its Lease is not renewed)
  reconciles nothing.

Why no key is reconciled by two members at once: a published acknowledgement of ``V`` stays
true until the member publishes another one, because a member's set only grows by a gain,
which needs its own acknowledgement of the new view published first; and a gain in ``V``
needs every other member's acknowledgement of ``V``, whose ranges in ``V`` are disjoint from
the gainer's. The property test (tests/test_shard_handover.py) checks it over random joins,
leaves, crashes and observation delays.

Not thread-safe: the owner (:class:`informers.shard.coordinator.ShardCoordinator`) calls it
under its lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from informers.shard.ranges import RangeSet, assign, view_id

__all__ = ["Handover"]


class Handover:
    """One member's side of the protocol above.

    Attributes:
        me: this member's name.
        view: the ready members it last observed, sorted.
        target: its range in :attr:`view`'s assignment (empty when it is not in the view).
        active: the hashes it may start reconciling now.
        draining: hashes lost while reconciles of them may still run.
        ack: the view id it acknowledges (``None`` while draining or before any view).
    """

    def __init__(self, me: str) -> None:
        self.me = me
        self.view: tuple[str, ...] = ()
        self.target = RangeSet()
        self.active = RangeSet()
        self.draining = RangeSet()
        self.ack: str | None = None

    def observe(self, ready: Iterable[str], acks: Mapping[str, str | None],
                caches_hold_target: bool = True) -> bool:
        """Take in the ready members and the acknowledgements they published (by member
        name; ``None`` or absent: none), and whether this member's caches hold its current
        target (a gain also waits for that). Returns whether :attr:`active` or :attr:`ack`
        changed."""
        before = (self.active, self.ack)
        view = tuple(sorted(set(ready)))
        if view != self.view:
            self.view = view
            self.target = assign(view).get(self.me, RangeSet())
            self.draining = self.draining | (self.active - self.target)
            self.active = self.active & self.target
            self.ack = None
        self._acknowledge()
        vid = view_id(self.view)
        if (self.me in self.view and self.ack == vid and self.active != self.target
                and caches_hold_target and all(acks.get(m) == vid for m in self.view)):
            self.active = self.target
        return (self.active, self.ack) != before

    def drained(self) -> bool:
        """Every reconcile of a draining hash has ended. Returns whether :attr:`ack`
        changed."""
        before = self.ack
        self.draining = RangeSet()
        self._acknowledge()
        return self.ack != before

    def stop(self) -> None:
        """Reconcile nothing from now on (a clean shutdown, or a Lease not renewed in time):
        everything active is draining, nothing is acknowledged."""
        self.draining = self.draining | self.active
        self.active = RangeSet()
        self.view = ()
        self.target = RangeSet()
        self.ack = None

    def may_start(self, hashed: int) -> bool:
        """Whether a reconcile of an object with this hash may start."""
        return hashed in self.active

    def _acknowledge(self) -> None:
        if not self.draining and self.me in self.view:
            self.ack = view_id(self.view)
