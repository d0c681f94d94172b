"""The assignment of the hash space to a ring and the handover state machine
(informers.shard.ranges, informers.shard.handover): unit cases and a property test over
random joins, clean leaves, crashes, Lease expiries and observation delays."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from informers.shard.handover import Handover
from informers.shard.ranges import SPACE, RangeSet, assign, selector_for, view_id
from informers.sharding import NAMESPACE_KEY, even_split, fnv1a_64


def test_assign_splits_the_sorted_members_as_even_split() -> None:
    ranges = assign(["c", "a", "b"])
    assert list(ranges) == ["a", "b", "c"]
    assert ranges["a"].ranges == ((0, 0x5555555555555555),)
    assert ranges["b"].ranges == ((0x5555555555555555, 0xAAAAAAAAAAAAAAAA),)
    assert ranges["c"].ranges == ((0xAAAAAAAAAAAAAAAA, SPACE),)
    expected = even_split(3, NAMESPACE_KEY)
    assert [selector_for(ranges[m], NAMESPACE_KEY) for m in "abc"] == expected
    assert str(selector_for(assign(["x", "y"])["y"], NAMESPACE_KEY)) == (
        "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')")
    assert assign([]) == {}


def test_range_set_operations() -> None:
    a = RangeSet([(0, 10), (10, 20), (30, 40)])
    assert a.ranges == ((0, 20), (30, 40))
    b = RangeSet([(5, 35)])
    assert (a & b).ranges == ((5, 20), (30, 35))
    assert (a - b).ranges == ((0, 5), (35, 40))
    assert (a | b).ranges == ((0, 40),)
    assert 19 in a and 20 not in a and 30 in a
    assert RangeSet.full() - RangeSet.full() == RangeSet()
    assert (RangeSet.full() - a).size() == SPACE - 30


def test_view_id_names_the_set_not_the_order() -> None:
    assert view_id(["b", "a"]) == view_id(["a", "b", "a"])
    assert view_id(["a", "b"]) == f"{fnv1a_64(b'a' + bytes([10]) + b'b'):016x}"
    assert view_id(["a"]) != view_id(["a", "b"])


def test_a_gain_waits_for_every_members_acknowledgement() -> None:
    a, b = Handover("a"), Handover("b")
    a.observe(["a"], {})
    v1 = view_id(["a"])
    assert a.ack == v1 and not a.active  # its own ack is not published yet
    a.observe(["a"], {"a": v1})
    assert a.active == RangeSet.full()
    # b joins: a loses the upper half at once; b waits for a's acknowledgement.
    v2 = view_id(["a", "b"])
    a.observe(["a", "b"], {"a": v1, "b": None})
    assert a.active == assign(["a", "b"])["a"] and a.ack is None
    assert a.draining == assign(["a", "b"])["b"]
    b.observe(["a", "b"], {"a": v1, "b": None})
    b.observe(["a", "b"], {"a": v1, "b": v2})
    assert not b.active
    a.drained()
    assert a.ack == v2
    b.observe(["a", "b"], {"a": v2, "b": v2})
    assert b.active == assign(["a", "b"])["b"]


def test_a_member_outside_its_view_reconciles_nothing() -> None:
    h = Handover("a")
    h.observe(["a"], {"a": view_id(["a"])})
    h.observe(["a"], {"a": view_id(["a"])})
    assert h.active
    h.observe(["b"], {"b": view_id(["b"])})
    assert not h.active and h.ack is None and h.draining == RangeSet.full()
    h.stop()
    assert not h.active and h.view == ()


NAMES = ["m0", "m1", "m2"]
OPS = ("join",) * 2 + ("crash", "expire", "leave") + ("observe",) * 3 + ("catch_up",) * 5 + (
    "finish", "finish", "drain", "publish", "publish")
"""Steps and their weights: progress (catch-up, observe, publish) more often than changes."""


class Ring:
    """A ring of members whose observations of the Leases lag behind by random amounts, each
    step chosen by the test: ``step(op, name, lag)``."""

    def __init__(self) -> None:
        # The Leases as the API server holds them: name -> (ready, published ack).
        self.store: dict[str, tuple[bool, str | None]] = {}
        self.history: list[dict[str, tuple[bool, str | None]]] = [{}]
        self.members: dict[str, Handover] = {}  # live processes
        self.seen: dict[str, int] = {}  # the store version each member observed last
        self.crashed: set[str] = set()  # dead processes whose Lease has not expired
        self.running: dict[str, RangeSet] = {}  # hashes with a reconcile in flight

    def _write(self, name: str, ready: bool, ack: str | None) -> None:
        self.store[name] = (ready, ack)
        self.history.append(dict(self.store))

    def _observe(self, name: str, version: int) -> None:
        self.seen[name] = version
        snapshot = self.history[version]
        self.members[name].observe([m for m, (r, _) in snapshot.items() if r],
                                   {m: a for m, (_, a) in snapshot.items()})

    def _publish(self, name: str) -> None:
        ack = self.members[name].ack
        if ack is not None and self.store[name][1] != ack:
            self._write(name, True, ack)

    def step(self, op: str, name: str, lag: int) -> None:
        if op == "join":
            if name in self.members:
                return
            # A restarted process takes over its Lease (holder == lease name) with the old
            # annotation: the acknowledgement of a process that reconciles nothing is true.
            self.crashed.discard(name)
            self._write(name, True, self.store.get(name, (False, None))[1])
            self.members[name] = Handover(name)
            self.running[name] = RangeSet()
            self.seen[name] = len(self.history) - 1
            return
        if op == "expire":  # a crashed member's Lease is seen expired
            if name in self.crashed:
                self.crashed.discard(name)
                self._write(name, False, self.store[name][1])
            return
        member = self.members.get(name)
        if member is None:
            return
        if op == "crash":  # SIGKILL: nothing runs any more, the Lease stays until it expires
            del self.members[name], self.running[name]
            self.crashed.add(name)
        elif op == "leave":  # clean shutdown: stop, wait for the reconciles, release
            member.stop()
            member.drained()
            del self.members[name], self.running[name]
            self._write(name, False, self.store[name][1])
        elif op == "observe":  # a lagging watch: some version not older than the last seen
            latest = len(self.history) - 1
            self._observe(name, max(self.seen[name], latest - lag))
        elif op == "catch_up":  # observe the latest Leases, publish the acknowledgement
            self._observe(name, len(self.history) - 1)
            self._publish(name)
        elif op == "finish":  # the reconciles in flight end; those still allowed go on
            self.running[name] = member.active
            if not (self.running[name] & member.draining):
                member.drained()
        elif op == "drain":
            if not (self.running[name] & member.draining):
                member.drained()
        elif op == "publish":
            self._publish(name)

    def check_exclusive(self) -> None:
        # The worst case: a reconcile starts on every hash as soon as it may.
        for n, h in self.members.items():
            self.running[n] = self.running[n] | h.active
        owned = sorted(self.running.items())
        for i, (a, ra) in enumerate(owned):
            for b, rb in owned[i + 1:]:
                assert not (ra & rb), f"{a} and {b} may both reconcile {ra & rb}"

    def converge(self) -> None:
        """Every crashed member's Lease expires, every message arrives, every drain ends."""
        for name in sorted(self.crashed):
            self.step("expire", name, 0)
        for _ in range(4):
            for name in sorted(self.members):
                self.step("catch_up", name, 0)
                self.step("finish", name, 0)
                self.step("publish", name, 0)
                self.check_exclusive()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.integers(10, 80))
def test_handover_keeps_keys_exclusive_and_covered(seed: int, count: int) -> None:
    rng = random.Random(seed)
    steps = [(rng.choice(OPS), rng.choice(NAMES), rng.randint(0, 6)) for _ in range(count)]
    ring = Ring()
    for op, name, lag in steps:
        ring.step(op, name, lag)
        ring.check_exclusive()
    ring.converge()
    if ring.members:
        assert {n: h.active for n, h in ring.members.items()} == assign(ring.members)
        union = RangeSet()
        for h in ring.members.values():
            union = union | h.active
        assert union == RangeSet.full()
