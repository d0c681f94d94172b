"""The marking half of a delete: graceful pod deletion and what a dry-run delete answers.

``registry/rest/delete.go`` ``BeforeDelete`` and ``store.go``
``updateForGracefulDeletionAndFinalizers`` for the embedded server: a pod's delete first marks
it (``deletionTimestamp``, ``deletionGracePeriodSeconds``) and removes it only once the period
is 0 and no finalizer is left (:func:`delete_pod`); a delete with ``dryRun`` answers the object
as that delete would leave it and stores nothing (:func:`dry_run_delete`). Both run under the
storage lock held by :meth:`Strategy.delete <informers.testing.strategy.Strategy.delete>`, which
checked the preconditions and admission first; neither reads anything but its arguments.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from informers.clock import Clock
from informers.testing.kind_rules import (
    TERMINATING,
    is_namespaces,
    is_pods,
    pod_grace_period,
    spec_finalizers,
)
from informers.testing.resources import ResourceType
from informers.testing.storage import Entry, Storage

__all__ = ["bump_generation", "delete_pod", "dry_run_delete", "parse_time", "rfc3339"]

Remove = Callable[[ResourceType, str, dict[str, Any] | None], Entry]
"""Removes the object at a key, given the object it was last stored as (``None``: as stored)."""


def rfc3339(moment: datetime.datetime) -> str:
    """``metav1.Time`` JSON: RFC 3339 in UTC with second precision."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime.datetime:
    """A ``metav1.Time`` (RFC 3339, UTC, second precision) as an aware datetime."""
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def bump_generation(rt: ResourceType, meta: dict[str, Any]) -> None:
    """A kind with ``metadata.generation`` counts the marking as a change of its spec."""
    if rt.has_generation and meta.get("generation"):
        meta["generation"] = int(meta["generation"]) + 1


def dry_run_delete(
    storage: Storage, clock: Clock, rt: ResourceType, current: Entry, obj: dict[str, Any],
    grace: int | None,
) -> tuple[Entry, bool]:
    """What a delete would answer, storing nothing (``store.go`` ``Delete`` with
    ``dryRun``): an object with finalizers, a pod (graceful deletion: marked even with
    period 0) and a namespace (``Terminating``) are answered marked, at their stored
    resourceVersion; any other is answered as stored, and the endpoint turns that into
    the ``Status`` or the object, as for a real removal."""
    meta = obj["metadata"]
    if meta.get("deletionTimestamp"):
        pending = meta.get("deletionGracePeriodSeconds")
        if is_namespaces(rt):
            return current, not (spec_finalizers(obj) or meta.get("finalizers"))
        if meta.get("finalizers"):
            return current, False
        if is_pods(rt) and pending and pod_grace_period(obj, grace) >= pending:
            return current, False
        return current, True
    if is_namespaces(rt):
        meta["deletionTimestamp"] = rfc3339(clock.wall())
        status_part = obj.get("status")
        obj["status"] = {**(status_part if isinstance(status_part, dict) else {}),
                         "phase": TERMINATING}
        return storage.preview(rt, obj), False
    period = pod_grace_period(obj, grace) if is_pods(rt) else 0
    if is_pods(rt) or meta.get("finalizers"):
        # The dry-run graceful update's object, returned as is (store.go Delete: "Going
        # further in this function is not useful when we are performing a dry-run").
        moment = clock.wall() + datetime.timedelta(seconds=period)
        meta["deletionTimestamp"] = rfc3339(moment)
        meta["deletionGracePeriodSeconds"] = period
        bump_generation(rt, meta)
        gone = period == 0 and not meta.get("finalizers")
        return storage.preview(rt, obj), gone
    return current, True


def delete_pod(
    storage: Storage, clock: Clock, remove: Remove, rt: ResourceType, current: Entry,
    obj: dict[str, Any], grace: int | None,
) -> tuple[Entry, bool]:
    """A pod's delete: pods have a graceful-delete strategy, so every delete first writes
    ``deletionTimestamp``/``deletionGracePeriodSeconds`` (a MODIFIED event) and, when the
    period is 0 and no finalizer is left, then removes the pod (DELETED, by ``remove``), as
    ``registry/rest/delete.go`` ``BeforeDelete`` and ``store.go``
    ``updateForGracefulDeletionAndFinalizers`` do. The period is
    :func:`~informers.testing.kind_rules.pod_grace_period`'s. A pod already terminating
    may only have its period shortened (its deadline moves by the difference, but never
    into the past: a deadline already passed becomes now, with period 1 unless 0 was
    asked); one marked with period 0 is removed at once."""
    meta = obj["metadata"]
    period = pod_grace_period(obj, grace)
    pending = meta.get("deletionGracePeriodSeconds")
    if meta.get("deletionTimestamp"):
        if not pending:  # marked with period 0 (or by finalizers): remove it now
            if meta.get("finalizers"):
                return current, False
            return remove(rt, current.key, None), True
        if period >= pending:
            return current, False  # only a shorter period may be set
        start = parse_time(meta["deletionTimestamp"]) - datetime.timedelta(seconds=pending)
        moment = start + datetime.timedelta(seconds=period)
        now = clock.wall()
        if moment < now:  # never into the past (Kubernetes v1.34+ BeforeDelete)
            moment = now
            if period != 0:
                period = 1  # still graceful: someone else sends the final delete
        meta["deletionTimestamp"] = rfc3339(moment)
    else:
        moment = clock.wall() + datetime.timedelta(seconds=period)
        meta["deletionTimestamp"] = rfc3339(moment)
        bump_generation(rt, meta)
    meta["deletionGracePeriodSeconds"] = period
    marked = storage.put(rt, obj)
    if period > 0 or meta.get("finalizers"):
        return marked, False
    return remove(rt, marked.key, marked.decode()), True
