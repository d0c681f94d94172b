"""Ring membership on coordination.k8s.io/v1 Leases: each replica holds its own Lease, every
replica watches them all.

**The Leases.** A ring is the set of Leases in one namespace labelled
``sharding.informers.io/ring=<ring>`` (:data:`RING_LABEL`). Each replica creates and renews
its own (:class:`MemberLease`): name = the member's name = ``spec.holderIdentity``, with
``leaseDurationSeconds``, ``acquireTime`` and ``renewTime`` as leader election writes them
(:func:`informers.leaderelection.lease_lock.record_to_lease_spec`), renewed every
``retry_period`` and given up after ``renew_deadline`` without a successful renewal, with
leader election's defaults (15 s, 10 s, 2 s: component-base ``RecommendedDefaultLeader
ElectionConfiguration``). Its handover acknowledgement (:mod:`informers.shard.handover`) is
the annotation :data:`ACK_ANNOTATION`. A clean shutdown releases the Lease
(``holderIdentity`` emptied, as client-go's ``ReleaseOnCancel`` does).

**Member states** (:func:`member_state`), after timebertt/kubernetes-controller-sharding's
``pkg/shard/lease`` ``ToState``, judged on this replica's clock from the time it last *saw*
the Lease's record change (``observed_at``, as client-go's leader election judges expiry:
not the writer's ``renewTime``, so clock skew between machines does not matter):

========== ===================================================================================
ready      held (``holderIdentity`` == the Lease's name) and observed renewed less than
           ``leaseDurationSeconds`` ago: a member of the assignment.
expired    held, but not observed renewed for ``leaseDurationSeconds`` or more (and less
           than twice that). Not in the assignment: its ranges go to the others, which do
           not wait for its acknowledgement, because a member that cannot renew stops
           reconciling after ``renew_deadline`` < ``leaseDurationSeconds``
           (:meth:`MemberLease.held`), as a leader steps down. timebertt keeps an expired
           shard in the assignment (its sharder moves objects only once it acquired the
           Lease); without a sharder this is the earliest safe takeover, so a killed replica's
           keys move after one lease duration plus the handover.
dead       released (``holderIdentity`` empty or another name), or expired for a further
           ``leaseDurationSeconds`` (timebertt's *uncertain* and *dead*).
orphaned   dead for :data:`ORPHAN_AFTER` seconds: any ready member may delete the Lease
           (timebertt's sharder deletes orphaned Leases). A member that comes back creates
           it again.
========== ===================================================================================

Before the coordinator treats a member as expired, it re-reads that Lease from the server
(:meth:`RingObserver.confirm`), so a lagging watch cannot make a live member look expired.
"""

from __future__ import annotations

import copy
import enum
import logging
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from informers.client import list_watch_from_client
from informers.client.api_call import api_call
from informers.clock import REAL_CLOCK, Clock
from informers.errors import is_conflict, is_not_found
from informers.handlers import ResourceEventHandlerFuncs
from informers.leaderelection import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    LeaderElectionRecord,
)
from informers.leaderelection.lease_lock import lease_spec_to_record, record_to_lease_spec
from informers.shared_informer import SharedIndexInformer

__all__ = [
    "ACK_ANNOTATION",
    "ORPHAN_AFTER",
    "RING_LABEL",
    "MemberLease",
    "MemberState",
    "Observed",
    "RingObserver",
    "default_member_name",
    "member_state",
]

logger = logging.getLogger(__name__)

RING_LABEL = "sharding.informers.io/ring"
"""The label naming a member Lease's ring."""

ACK_ANNOTATION = "sharding.informers.io/acknowledged-view"
"""The annotation holding the member's handover acknowledgement (a view id)."""

ORPHAN_AFTER = 60.0
"""Seconds a Lease stays dead before it may be deleted: timebertt's ``Orphaned`` ("in state
Dead for at least 1 minute")."""


class MemberState(enum.Enum):
    READY = "ready"
    EXPIRED = "expired"
    DEAD = "dead"
    ORPHANED = "orphaned"


@dataclass
class Observed:
    """A member Lease as this replica last saw it, and since when its record is unchanged."""

    lease: dict[str, Any]
    observed_at: float

    @property
    def name(self) -> str:
        return str((self.lease.get("metadata") or {}).get("name") or "")

    @property
    def ack(self) -> str | None:
        annotations = (self.lease.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(ACK_ANNOTATION)
        return str(value) if value else None

    def record_key(self) -> tuple[Any, ...]:
        spec = self.lease.get("spec") or {}
        return (spec.get("holderIdentity"), spec.get("renewTime"),
                spec.get("leaseDurationSeconds"))


def member_state(lease: dict[str, Any], observed_at: float, now: float) -> MemberState:
    """The state of a member Lease seen unchanged since ``observed_at`` (see the table in
    the module docstring). A Lease without ``leaseDurationSeconds`` counts as having 0."""
    spec = lease.get("spec") or {}
    name = (lease.get("metadata") or {}).get("name") or ""
    duration = float(spec.get("leaseDurationSeconds") or 0)
    age = now - observed_at
    holder = spec.get("holderIdentity") or ""
    if not holder or holder != name:
        return MemberState.ORPHANED if age >= ORPHAN_AFTER else MemberState.DEAD
    if age < duration:
        return MemberState.READY
    if age < 2 * duration:
        return MemberState.EXPIRED
    return MemberState.ORPHANED if age >= 2 * duration + ORPHAN_AFTER else MemberState.DEAD


def default_member_name(ring: str) -> str:
    """``<ring>-<hostname>``, lowercased, characters a Lease name may not hold replaced by
    ``-``, cut to 253: a Deployment's pods get one Lease each, and a container restarted in
    the same pod takes its Lease back."""
    raw = f"{ring}-{socket.gethostname()}".lower()
    return re.sub(r"[^a-z0-9.-]", "-", raw).strip("-.")[:253]


class MemberLease:
    """This replica's Lease in a ring: acquire, renew, acknowledge, release.

    :meth:`run` renews every ``retry_period`` (and at once after :meth:`set_ack`) until its
    stop event is set; :meth:`held` says whether the last successful renewal started less
    than ``renew_deadline`` ago: only then may the member reconcile. :meth:`release` empties
    ``holderIdentity``. Thread-safe.

    Args:
        api_client: a ``kubernetes.client.ApiClient``.
        namespace: the ring's namespace.
        ring: the ring's name (the :data:`RING_LABEL` value).
        name: the member's name (the Lease's name and holder).
        lease_duration: seconds the others wait after the last renewal they saw
            (:data:`informers.leaderelection.DEFAULT_LEASE_DURATION`, 15); the Lease stores
            ``leaseDurationSeconds`` as whole seconds (at least 1).
        renew_deadline: seconds without a successful renewal after which :meth:`held` is
            false (:data:`~informers.leaderelection.DEFAULT_RENEW_DEADLINE`, 10).
        retry_period: seconds between renewals
            (:data:`~informers.leaderelection.DEFAULT_RETRY_PERIOD`, 2).
        clock: time source of the renewals and of :meth:`held`.
    """

    def __init__(self, api_client: Any, namespace: str, ring: str, name: str, *,
                 lease_duration: float = DEFAULT_LEASE_DURATION,
                 renew_deadline: float = DEFAULT_RENEW_DEADLINE,
                 retry_period: float = DEFAULT_RETRY_PERIOD,
                 clock: Clock = REAL_CLOCK) -> None:
        if not 0 < retry_period < renew_deadline < lease_duration:
            raise ValueError("need 0 < retry_period < renew_deadline < lease_duration, got "
                             f"{retry_period}, {renew_deadline}, {lease_duration}")
        self.api_client = api_client
        self.namespace = namespace
        self.ring = ring
        self.name = name
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._clock = clock
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._ack: str | None = None
        self._published_ack: str | None = None
        self._renewed_at: float | None = None
        self._acquired_at: Any = None
        self._lease: dict[str, Any] | None = None
        ns = quote(namespace, safe="")
        self._collection = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
        self._path = f"{self._collection}/{quote(name, safe='')}"

    def held(self) -> bool:
        """Whether the last successful renewal started less than ``renew_deadline`` ago."""
        with self._lock:
            at = self._renewed_at
        return at is not None and self._clock.now() - at < self.renew_deadline

    def set_ack(self, ack: str | None) -> None:
        """Publish ``ack`` in :data:`ACK_ANNOTATION` with the next renewal, which it hastens."""
        with self._lock:
            changed = ack != self._ack
            self._ack = ack
        if changed:
            self._wake.set()

    @property
    def published_ack(self) -> str | None:
        """The acknowledgement the server last stored."""
        with self._lock:
            return self._published_ack

    def _body(self, lease: dict[str, Any] | None, holder: str, now_wall: Any) -> dict[str, Any]:
        body: dict[str, Any] = copy.deepcopy(lease) if lease is not None else {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace}}
        body.setdefault("apiVersion", "coordination.k8s.io/v1")
        body.setdefault("kind", "Lease")
        meta: dict[str, Any] = body.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), RING_LABEL: self.ring}
        with self._lock:
            ack = self._ack
        annotations = dict(meta.get("annotations") or {})
        if ack:
            annotations[ACK_ANNOTATION] = ack
        else:
            annotations.pop(ACK_ANNOTATION, None)
        meta["annotations"] = annotations
        old = lease_spec_to_record(dict((lease or {}).get("spec") or {}))
        acquired = old.acquire_time if old.holder_identity == holder and holder else now_wall
        record = LeaderElectionRecord(
            holder_identity=holder,
            lease_duration_seconds=max(1, int(self.lease_duration)),
            acquire_time=acquired, renew_time=now_wall,
            leader_transitions=old.leader_transitions + (
                1 if holder and old.holder_identity != holder and lease is not None else 0))
        body["spec"] = record_to_lease_spec(record)
        return body

    def renew(self) -> bool:
        """One attempt to create or renew the Lease (with the acknowledgement). Returns
        whether it succeeded; failures are logged."""
        start = self._clock.now()
        wall = self._clock.wall()
        try:
            lease = self._lease
            if lease is None:
                try:
                    lease = api_call(self.api_client, "GET", self._path,
                                     request_timeout=self.renew_deadline)
                except Exception as exc:
                    if not is_not_found(exc):
                        raise
                    lease = None
            if lease is None:
                stored = api_call(self.api_client, "POST", self._collection,
                                  self._body(None, self.name, wall),
                                  request_timeout=self.renew_deadline)
            else:
                stored = api_call(self.api_client, "PUT", self._path,
                                  self._body(lease, self.name, wall),
                                  request_timeout=self.renew_deadline)
        except Exception as exc:
            self._lease = None  # read it again next time (a conflict, a deletion...)
            level = logging.DEBUG if is_conflict(exc) else logging.WARNING
            logger.log(level, "ring %s: renewing the Lease %s/%s failed: %s", self.ring,
                       self.namespace, self.name, exc)
            return False
        self._lease = stored
        with self._lock:
            self._renewed_at = start
            annotations = (stored.get("metadata") or {}).get("annotations") or {}
            self._published_ack = annotations.get(ACK_ANNOTATION) or None
        return True

    def run(self, stop: threading.Event, on_renewed: Callable[[], None] | None = None) -> None:
        """Renew until ``stop`` is set (every ``retry_period``, at once after
        :meth:`set_ack`); call ``on_renewed`` after each success. Does not release. Whoever
        sets ``stop`` calls :meth:`interrupt` to end the wait at once."""
        while not stop.is_set():
            self._wake.clear()
            if self.renew() and on_renewed is not None:
                on_renewed()
            if stop.is_set():
                return
            self._clock.sleep(self.retry_period, self._wake)

    def interrupt(self) -> None:
        """End :meth:`run`'s current wait (it renews, or returns when its stop is set)."""
        self._wake.set()

    def release(self) -> bool:
        """Empty ``holderIdentity`` (keeping the annotation): the others see this member dead
        at once. Call it once :meth:`run` has returned (a renewal in flight would conflict;
        a conflict is retried twice). Returns whether the write succeeded."""
        with self._lock:
            self._renewed_at = None
        for attempt in range(3):  # a conflict: someone wrote it meanwhile; read it again
            try:
                lease = api_call(self.api_client, "GET", self._path,
                                 request_timeout=self.renew_deadline)
                self._lease = api_call(self.api_client, "PUT", self._path,
                                       self._body(lease, "", self._clock.wall()),
                                       request_timeout=self.renew_deadline)
            except Exception as exc:
                if is_conflict(exc) and attempt < 2:
                    continue
                logger.warning("ring %s: releasing the Lease %s/%s failed: %s", self.ring,
                               self.namespace, self.name, exc)
                return False
            return True
        return False


class RingObserver:
    """Watches a ring's Leases (an informer with the :data:`RING_LABEL` selector) and
    remembers when each one's record last changed, on ``clock``.

    ``on_change`` is called (from the informer's handler thread) after every event.
    :meth:`snapshot` and :meth:`confirm` are thread-safe.
    """

    def __init__(self, api_client: Any, namespace: str, ring: str, *,
                 clock: Clock = REAL_CLOCK,
                 on_change: Callable[[], None] | None = None) -> None:
        self.api_client = api_client
        self.namespace = namespace
        self.ring = ring
        self._clock = clock
        self._on_change = on_change
        self._lock = threading.Lock()
        self._members: dict[str, Observed] = {}
        lw = list_watch_from_client(api_client, "leases", namespace=namespace,
                                    label_selector=f"{RING_LABEL}={ring}")
        self.informer = SharedIndexInformer(lw, name=f"shard-ring-{ring}")
        self.informer.add_event_handler(ResourceEventHandlerFuncs(
            on_add=lambda obj, initial: self._seen(obj),
            on_update=lambda old, new: self._seen(new),
            on_delete=self._deleted))

    def _seen(self, lease: Any) -> None:
        if not isinstance(lease, dict):
            return
        fresh = Observed(lease, self._clock.now())
        with self._lock:
            old = self._members.get(fresh.name)
            if old is not None and old.record_key() == fresh.record_key():
                fresh.observed_at = old.observed_at
            self._members[fresh.name] = fresh
        if self._on_change is not None:
            self._on_change()

    def _deleted(self, lease: Any) -> None:
        obj = getattr(lease, "obj", lease)  # a DeletedFinalStateUnknown carries .obj
        name = str(((obj or {}).get("metadata") or {}).get("name") or "")
        with self._lock:
            self._members.pop(name, None)
        if self._on_change is not None:
            self._on_change()

    def has_synced(self) -> bool:
        return self.informer.has_synced()

    def snapshot(self) -> dict[str, Observed]:
        with self._lock:
            return dict(self._members)

    def states(self) -> dict[str, tuple[MemberState, str | None]]:
        """Each member's state now and its published acknowledgement."""
        now = self._clock.now()
        return {name: (member_state(o.lease, o.observed_at, now), o.ack)
                for name, o in self.snapshot().items()}

    def confirm(self, name: str) -> MemberState:
        """Re-read ``name``'s Lease from the server (a watch may lag); a record that changed
        counts as observed now. Returns its state (``DEAD`` when it is gone)."""
        path = (f"/apis/coordination.k8s.io/v1/namespaces/{quote(self.namespace, safe='')}"
                f"/leases/{quote(name, safe='')}")
        try:
            lease = api_call(self.api_client, "GET", path)
        except Exception as exc:
            if is_not_found(exc):
                with self._lock:
                    self._members.pop(name, None)
                return MemberState.DEAD
            raise
        self._seen_quietly(lease)
        with self._lock:
            o = self._members[name]
        return member_state(o.lease, o.observed_at, self._clock.now())

    def _seen_quietly(self, lease: dict[str, Any]) -> None:
        fresh = Observed(lease, self._clock.now())
        with self._lock:
            old = self._members.get(fresh.name)
            if old is not None and old.record_key() == fresh.record_key():
                fresh.observed_at = old.observed_at
                fresh.lease = old.lease if _rv(old.lease) > _rv(lease) else lease
            self._members[fresh.name] = fresh

    def delete_orphan(self, name: str) -> bool:
        """Delete an orphaned Lease, on the condition that it did not change since it was
        observed (``preconditions.resourceVersion``). Returns whether it was deleted."""
        with self._lock:
            o = self._members.get(name)
        if o is None:
            return False
        rv = (o.lease.get("metadata") or {}).get("resourceVersion")
        path = (f"/apis/coordination.k8s.io/v1/namespaces/{quote(self.namespace, safe='')}"
                f"/leases/{quote(name, safe='')}")
        try:
            api_call(self.api_client, "DELETE", path, {
                "apiVersion": "v1", "kind": "DeleteOptions",
                "preconditions": {"resourceVersion": rv}})
        except Exception as exc:
            logger.info("ring %s: deleting the orphaned Lease %s failed: %s", self.ring, name,
                        exc)
            return False
        logger.info("ring %s: deleted the orphaned Lease %s", self.ring, name)
        return True


def _rv(lease: dict[str, Any]) -> int:
    try:
        return int((lease.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0
