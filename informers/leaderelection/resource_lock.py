"""Defines what a leader-election lock stores and offers: the election record and the lock protocol.

Mirrors client-go ``tools/leaderelection/resourcelock/interface.go``. The record is only ever
*compared* by the elector, never trusted for time: its timestamps are informational
(client-go: "could be replaced with a random string (e.g. UUID) with only slight modification
of this code").
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Protocol

__all__ = ["LeaderElectionRecord", "ResourceLock"]


@dataclass(frozen=True)
class LeaderElectionRecord:
    """The state of one election as stored in the lock (client-go ``LeaderElectionRecord``).

    Immutable; the elector builds a new record for every write.

    Attributes:
        holder_identity: who holds the lease; ``""`` means nobody (set on a voluntary release)
            and anyone may acquire at once.
        lease_duration_seconds: how long, in whole seconds, others must see the record
            unchanged before they may take over.
        acquire_time: when the current holder acquired it (informational), or ``None``.
        renew_time: when the holder last renewed it (informational), or ``None``.
        leader_transitions: how many times the holder changed.
        strategy: coordinated leader election strategy (alpha), ``""`` when unset.
        preferred_holder: coordinated leader election's preferred holder (alpha), ``""``.
    """

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime.datetime | None = None
    renew_time: datetime.datetime | None = None
    leader_transitions: int = 0
    strategy: str = ""
    preferred_holder: str = ""


class ResourceLock(Protocol):
    """A lock the elector can read and write (client-go ``resourcelock.Interface``).

    Used by one elector thread at a time; implementations need not be thread-safe.
    Errors are raised as exceptions; the elector recognises "not found" (404) and "conflict"
    (409) by :func:`informers.client.api_call.status_code`.
    """

    @property
    def identity(self) -> str:
        """This participant's unique identity."""
        ...

    def get(self) -> tuple[LeaderElectionRecord, bytes]:
        """Read the record; return it and a canonical serialisation of *every* field.

        The elector compares the bytes to decide whether the record changed since it last
        looked. Raises an error with status 404 when the lock does not exist.
        """
        ...

    def create(self, record: LeaderElectionRecord) -> None:
        """Create the lock holding ``record``."""
        ...

    def update(self, record: LeaderElectionRecord) -> None:
        """Replace the record, with optimistic concurrency on the version last read."""
        ...

    def record_event(self, s: str) -> None:
        """Emit an event about the lock (``"became leader"``, ``"stopped leading"``)."""
        ...

    def describe(self) -> str:
        """A human-readable name for logs, e.g. ``"kube-system/my-controller"``."""
        ...
