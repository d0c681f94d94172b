"""Stores the leader-election record in a coordination.k8s.io/v1 Lease.

Mirrors client-go ``tools/leaderelection/resourcelock/leaselock.go``. The Lease is read and
written as a plain dict through the official client's ``ApiClient`` (see
:mod:`informers.client.api_call`); times are written as MicroTime strings
(``2026-01-01T00:00:00.000000Z``).
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any, Protocol
from urllib.parse import quote

from informers.client.api_call import api_call
from informers.errors import LeaseNotInitializedError
from informers.leaderelection.resource_lock import LeaderElectionRecord
from informers.meta_time import format_micro_time, parse_time

__all__ = [
    "EventfRecorder",
    "LeaseLock",
    "lease_spec_to_record",
    "new_lease",
    "raw_record",
    "record_lease_event",
    "record_to_lease_spec",
    "updated_lease",
]

logger = logging.getLogger(__name__)

_API_VERSION = "coordination.k8s.io/v1"


class EventfRecorder(Protocol):
    """What the lock needs from an event recorder (client-go ``resourcelock.EventRecorder``)."""

    def eventf(self, obj: dict[str, Any], type: str, reason: str, fmt: str, *args: Any) -> None:
        ...


def lease_spec_to_record(spec: dict[str, Any]) -> LeaderElectionRecord:
    """A Lease's ``spec`` as a record; absent fields take their zero values."""
    return LeaderElectionRecord(
        holder_identity=str(spec.get("holderIdentity") or ""),
        lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=parse_time(spec.get("acquireTime")),
        renew_time=parse_time(spec.get("renewTime")),
        leader_transitions=int(spec.get("leaseTransitions") or 0),
        strategy=str(spec.get("strategy") or ""),
        preferred_holder=str(spec.get("preferredHolder") or ""),
    )


def record_to_lease_spec(record: LeaderElectionRecord) -> dict[str, Any]:
    """A record as a Lease ``spec`` (client-go ``LeaderElectionRecordToLeaseSpec``).

    ``holderIdentity``, ``leaseDurationSeconds`` and ``leaseTransitions`` are always written
    (also ``""`` / 0); times when set; ``strategy`` and ``preferredHolder`` only when non-empty.
    """
    spec: dict[str, Any] = {
        "holderIdentity": record.holder_identity,
        "leaseDurationSeconds": record.lease_duration_seconds,
        "leaseTransitions": record.leader_transitions,
    }
    if record.acquire_time is not None:
        spec["acquireTime"] = format_micro_time(record.acquire_time)
    if record.renew_time is not None:
        spec["renewTime"] = format_micro_time(record.renew_time)
    if record.preferred_holder:
        spec["preferredHolder"] = record.preferred_holder
    if record.strategy:
        spec["strategy"] = record.strategy
    return spec


def new_lease(namespace: str, name: str, labels: dict[str, str] | None,
              record: LeaderElectionRecord) -> dict[str, Any]:
    """The Lease a lock creates (shared with the async lock)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        metadata["labels"] = dict(labels)
    return {"apiVersion": _API_VERSION, "kind": "Lease", "metadata": metadata,
            "spec": record_to_lease_spec(record)}


def updated_lease(lease: dict[str, Any], labels: dict[str, str] | None,
                  record: LeaderElectionRecord) -> dict[str, Any]:
    """A copy of the cached ``lease`` holding ``record`` (its ``resourceVersion`` kept for
    optimistic concurrency), ``labels`` merged in (client-go ``NewWithLabels``)."""
    lease = copy.deepcopy(lease)
    lease["spec"] = record_to_lease_spec(record)
    lease.setdefault("apiVersion", _API_VERSION)
    lease.setdefault("kind", "Lease")
    if labels is not None:
        metadata = lease.setdefault("metadata", {})
        merged = dict(metadata.get("labels") or {})
        merged.update(labels)
        metadata["labels"] = merged
    return lease


def raw_record(spec: dict[str, Any]) -> bytes:
    """Every field of the record as the server returned it, in a canonical serialisation."""
    fields = {
        "holderIdentity": spec.get("holderIdentity") or "",
        "leaseDurationSeconds": spec.get("leaseDurationSeconds") or 0,
        "acquireTime": spec.get("acquireTime"),
        "renewTime": spec.get("renewTime"),
        "leaderTransitions": spec.get("leaseTransitions") or 0,
        "strategy": spec.get("strategy") or "",
        "preferredHolder": spec.get("preferredHolder") or "",
    }
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


class LeaseLock:
    """A :class:`~informers.leaderelection.resource_lock.ResourceLock` on a Lease.

    :meth:`get` caches the Lease it read (and :meth:`create` the one it created);
    :meth:`update` sends that cached Lease with the new spec, so its ``resourceVersion``
    makes the write fail with 409 Conflict when someone else wrote in between (optimistic
    concurrency). Not thread-safe: one elector thread uses it.

    Args:
        api_client: a ``kubernetes.client.ApiClient``.
        namespace: the Lease's namespace.
        name: the Lease's name.
        identity: this participant's unique identity (e.g. hostname plus a UUID).
        labels: labels set on create and merged into the Lease's labels on every update
            (client-go ``NewWithLabels``: only the given keys are overwritten).
        event_recorder: optional; receives a ``Normal`` ``LeaderElection`` event
            ``"<identity> <what>"`` on :meth:`record_event`.
        request_timeout: seconds allowed for each request, ``None`` for the client's default.
            kube-controller-manager gives its leader-election client a timeout equal to the
            renew deadline, so a hung request cannot keep a leader past it; do the same.
    """

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        name: str,
        identity: str,
        labels: dict[str, str] | None = None,
        *,
        event_recorder: EventfRecorder | None = None,
        request_timeout: float | None = None,
    ) -> None:
        self._api_client = api_client
        self.namespace = namespace
        self.name = name
        self._identity = identity
        self.labels = dict(labels) if labels is not None else None
        self.event_recorder = event_recorder
        self.request_timeout = request_timeout
        self._lease: dict[str, Any] | None = None
        ns, nm = quote(namespace, safe=""), quote(name, safe="")
        self._collection_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
        self._path = f"{self._collection_path}/{nm}"

    @property
    def identity(self) -> str:
        """This participant's identity (client-go ``Identity()``)."""
        return self._identity

    @property
    def lease(self) -> dict[str, Any] | None:
        """The Lease last read or written, or ``None``. Read-only: do not mutate."""
        return self._lease

    def describe(self) -> str:
        """``"<namespace>/<name>"`` (client-go ``Describe()``)."""
        return f"{self.namespace}/{self.name}"

    def get(self) -> tuple[LeaderElectionRecord, bytes]:
        """Read the Lease, cache it, and return its record and raw record bytes.

        Raises:
            StatusError: with code 404 when the Lease does not exist, or any other failure.
            ApiConnectionError: the server did not answer.
        """
        lease = api_call(self._api_client, "GET", self._path, request_timeout=self.request_timeout)
        self._lease = lease
        spec = lease.get("spec") or {}
        return lease_spec_to_record(spec), raw_record(spec)

    def create(self, record: LeaderElectionRecord) -> None:
        """Create the Lease holding ``record`` (with :attr:`labels`) and cache it.

        Raises:
            StatusError: e.g. 409 AlreadyExists when another participant created it first.
        """
        body = new_lease(self.namespace, self.name, self.labels, record)
        self._lease = api_call(
            self._api_client,
            "POST",
            self._collection_path,
            body,
            request_timeout=self.request_timeout,
        )

    def update(self, record: LeaderElectionRecord) -> None:
        """Write ``record`` into the cached Lease and PUT it (with its resourceVersion).

        Raises:
            LeaseNotInitializedError: neither :meth:`get` nor :meth:`create` succeeded before.
            StatusError: 409 Conflict when the Lease changed since it was read, or another
                failure. The cache keeps the last Lease the server returned.
        """
        if self._lease is None:
            raise LeaseNotInitializedError("lease not initialized, call get or create first")
        lease = updated_lease(self._lease, self.labels, record)
        self._lease = api_call(
            self._api_client, "PUT", self._path, lease, request_timeout=self.request_timeout
        )

    def record_event(self, s: str) -> None:
        """Emit ``Normal LeaderElection "<identity> <s>"`` about the Lease, if a recorder is set."""
        record_lease_event(self.event_recorder, self._lease, self.namespace, self.name,
                           self._identity, s)


def record_lease_event(recorder: EventfRecorder | None, lease: dict[str, Any] | None,
                       namespace: str, name: str, identity: str, s: str) -> None:
    """Emit ``Normal LeaderElection "<identity> <s>"`` about the Lease through ``recorder``
    (nothing when ``None``), the Lease as last read or written or else named by ``namespace``
    and ``name`` (client-go ``LeaseLock.RecordEvent``); shared by the threaded and the async
    lock."""
    if recorder is None:
        return
    metadata = (lease or {}).get("metadata") or {"name": name, "namespace": namespace}
    subject = {"apiVersion": _API_VERSION, "kind": "Lease", "metadata": metadata}
    recorder.eventf(subject, "Normal", "LeaderElection", "%s", f"{identity} {s}")
