"""The decisions of a leader-election participant, without I/O: what the threaded
:class:`~informers.leaderelection.LeaderElector` and the async
:class:`informers.aio.leaderelection.AsyncLeaderElector` share.

client-go ``tools/leaderelection/leaderelection.go``: the observed record and the local time it
was observed (the only time a participant trusts), ``tryAcquireOrRenew`` and ``release``. The
two attempts are generators in sans-I/O style: they yield the lock operation to perform
(:class:`LockOp`: ``get``, ``create`` or ``update`` with a record) and receive its result, or
have its exception thrown in; a driver (:func:`drive` for a blocking lock, the async elector's
own loop for an async one) performs them. So the rules (the optimistic fast path, the local
expiry timer restarted when the raw record changes, takeover versus renewal, release only of
a lease this participant still holds) exist once. See
:mod:`informers.leaderelection.leader_elector` for the timing rules and the authority bound.

Thread-safe: the observed state is guarded by a lock (client-go ``observedRecordLock``), so
:meth:`Election.leading` and friends may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from informers.client.api_call import status_code
from informers.clock import Clock
from informers.leaderelection.metrics import LeaderMetric
from informers.leaderelection.resource_lock import LeaderElectionRecord

__all__ = ["Attempt", "Election", "LockOp", "drive", "renew_verdict"]

# The elector's logger: what it logged before these decisions moved here keeps its name.
logger = logging.getLogger("informers.leaderelection.leader_elector")

_HTTP_NOT_FOUND = 404
_HTTP_CONFLICT = 409


@dataclass(frozen=True)
class LockOp:
    """One operation on the lock: ``get`` (answers ``(record, raw)``), ``create(record)`` or
    ``update(record)``."""

    name: str
    record: LeaderElectionRecord | None = None


Attempt = Generator[LockOp, Any, bool]
"""An attempt: yields lock operations, receives their results, returns its outcome."""


def drive(attempt: Attempt, lock: Any) -> bool:
    """Run ``attempt`` against a blocking lock (a
    :class:`~informers.leaderelection.resource_lock.ResourceLock`)."""
    try:
        op = next(attempt)
        while True:
            try:
                result = getattr(lock, op.name)(*(() if op.record is None else (op.record,)))
            except Exception as err:
                op = attempt.throw(err)
            else:
                op = attempt.send(result)
    except StopIteration as done:
        return bool(done.value)


def renew_verdict(holder: str, identity: str, now: float, expiry: float,
                  deadline: float, renew_deadline: float) -> str | None:
    """After a failed renewal attempt: why this participant must step down at once (a log
    message), or ``None`` to retry. The lease is seen held by another; or it expired for the
    others (``expiry``: ``leaseDurationSeconds`` after the last successful renewal started);
    or client-go's ``RenewDeadline`` passed."""
    if holder and holder != identity:
        return f"is held by {holder}: stopping leading at once"
    if now >= expiry:
        return (f"expired {now - expiry:.3f}s ago for the other candidates and was not "
                "renewed: stopping leading at once")
    if deadline - now <= 0:
        return f"not renewed within {renew_deadline}s"
    return None


class Election:
    """One participant's observed state and decisions.

    Args:
        identity: the lock's identity.
        lease_duration: see :class:`~informers.leaderelection.LeaderElector`.
        renew_deadline: likewise.
        describe: the lock's description, for logs.
        name: the lease's name, for metrics and :meth:`check`.
        clock: local time (``now()``) and the record's wall times (``wall()``).
        metrics: the leader metric (``slowpath_exercised``).
    """

    def __init__(self, identity: str, lease_duration: float, renew_deadline: float,
                 describe: Callable[[], str], name: str, clock: Clock,
                 metrics: LeaderMetric) -> None:
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self._describe = describe
        self.name = name
        self.clock = clock
        self._metrics = metrics
        self._observed_lock = threading.Lock()
        self._observed_record = LeaderElectionRecord()
        self._observed_time = 0.0
        self._leading = False
        self._renewed_at = 0.0
        # How long after _renewed_at this participant may act.
        self._authority = min(renew_deadline, float(int(lease_duration)))
        # Touched only by the election loop.
        self._observed_raw_record: bytes | None = None
        self._reported_leader = ""

    # -- observation -------------------------------------------------------------------------

    def get_leader(self) -> str:
        with self._observed_lock:
            return self._observed_record.holder_identity

    def is_leader(self) -> bool:
        return self.get_leader() == self.identity

    def leading(self) -> bool:
        now = self.clock.now()
        with self._observed_lock:
            return (self._leading and self._observed_record.holder_identity == self.identity
                    and now < self._renewed_at + self._authority)

    def set_leading(self, leading: bool) -> None:
        with self._observed_lock:
            self._leading = leading

    def check(self, max_tolerable_expired_lease: float) -> str | None:
        with self._observed_lock:
            leading = self._observed_record.holder_identity == self.identity
            last = self._observed_time
        if not leading:
            return None
        if self.clock.now() - last > self.lease_duration + max_tolerable_expired_lease:
            return f"failed election to renew leadership on lease {self.name}"
        return None

    def set_observed_record(self, record: LeaderElectionRecord,
                            renewed_at: float | None = None) -> None:
        with self._observed_lock:
            self._observed_record = record
            self._observed_time = self.clock.now()
            if renewed_at is not None:
                self._renewed_at = renewed_at

    def observed_record(self) -> LeaderElectionRecord:
        with self._observed_lock:
            return self._observed_record

    def is_lease_valid(self, now: float) -> bool:
        with self._observed_lock:
            return self._observed_time + self._observed_record.lease_duration_seconds > now

    def expiry(self) -> float:
        """When a standby that saw our last renewal may take over (local time)."""
        with self._observed_lock:
            return self._renewed_at + int(self.lease_duration)

    def transition(self) -> str | None:
        """The newly observed holder, once per change (``None``: no change)."""
        holder = self.get_leader()
        if holder == self._reported_leader:
            return None
        self._reported_leader = holder
        return holder

    # -- attempts ----------------------------------------------------------------------------

    def try_acquire_or_renew(self) -> Attempt:
        """One attempt to acquire or renew (client-go ``tryAcquireOrRenew``); True on
        success."""
        now = self.clock.now()
        wall = self.clock.wall()
        desc = self._describe()
        lease_seconds = int(self.lease_duration)

        # 1. Fast path: the leader updates optimistically from the record it last wrote.
        if self.is_leader() and self.is_lease_valid(now):
            old = self.observed_record()
            record = LeaderElectionRecord(
                holder_identity=self.identity, lease_duration_seconds=lease_seconds,
                acquire_time=old.acquire_time, renew_time=wall,
                leader_transitions=old.leader_transitions)
            try:
                yield LockOp("update", record)
            except Exception as e:
                logger.debug("failed to update lease %s optimistically, falling back to slow "
                             "path: %s", desc, e)
            else:
                self.set_observed_record(record, renewed_at=now)
                return True

        # 2. Obtain or create the record.
        try:
            old, raw = yield LockOp("get")
        except Exception as e:
            if status_code(e) != _HTTP_NOT_FOUND:
                logger.error("error retrieving lease lock %s: %s", desc, e)
                return False
            record = LeaderElectionRecord(
                holder_identity=self.identity, lease_duration_seconds=lease_seconds,
                acquire_time=wall, renew_time=wall)
            try:
                yield LockOp("create", record)
            except Exception as ce:
                logger.error("error initially creating lease lock %s: %s", desc, ce)
                return False
            self.set_observed_record(record, renewed_at=now)
            return True

        # 3. The record changed since we last looked: restart our local expiry timer.
        if raw != self._observed_raw_record:
            self.set_observed_record(old)
            self._observed_raw_record = raw
        if old.holder_identity and self.is_lease_valid(now) and not self.is_leader():
            logger.debug("lease %s is held by %s and has not yet expired", desc,
                         old.holder_identity)
            return False

        # 4. Take over (a new transition) or renew (keep acquire time and transitions).
        if self.is_leader():
            acquire_time, transitions = old.acquire_time, old.leader_transitions
            self._metrics.slowpath_exercised(self.name)
        else:
            acquire_time, transitions = wall, old.leader_transitions + 1
        record = LeaderElectionRecord(
            holder_identity=self.identity, lease_duration_seconds=lease_seconds,
            acquire_time=acquire_time, renew_time=wall, leader_transitions=transitions)
        try:
            yield LockOp("update", record)
        except Exception as e:
            logger.error("failed to update lease %s: %s", desc, e)
            return False
        self.set_observed_record(record, renewed_at=now)
        return True

    def release(self) -> Attempt:
        """Give the lease up if we hold it (client-go ``release``/``tryRelease``): re-read
        it; write holder ``""``, duration 1 s, acquire and renew time now and the
        transitions unchanged; retry a Conflict until ``renew_deadline`` passes. Checks the
        holder in the record it just read, so it never clears a lease someone else took."""
        desc = self._describe()
        deadline = self.clock.now() + self.renew_deadline
        while True:
            try:
                old, _ = yield LockOp("get")
            except Exception as e:
                if status_code(e) == _HTTP_NOT_FOUND:
                    logger.info("lease lock %s not found", desc)
                else:
                    logger.error("error retrieving lease lock %s: %s", desc, e)
                return False
            if not self.is_leader() or old.holder_identity != self.identity:
                return True
            wall = self.clock.wall()
            record = LeaderElectionRecord(
                holder_identity="", lease_duration_seconds=1, acquire_time=wall,
                renew_time=wall, leader_transitions=old.leader_transitions)
            try:
                yield LockOp("update", record)
            except Exception as e:
                if status_code(e) == _HTTP_CONFLICT and self.clock.now() < deadline:
                    logger.debug("conflict when releasing lease %s, retrying", desc)
                    continue
                logger.error("failed to release lease %s: %s", desc, e)
                return False
            self.set_observed_record(record)
            logger.info("released lease %s", desc)
            return True
