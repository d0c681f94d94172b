"""Merges the pod lists of several sources into one ordered stream of PodUpdates.

The Python counterpart of ``pkg/kubelet/config/config.go`` (``PodConfig`` and ``podStorage``,
``merge``) and ``mux.go`` (k8s.io/kubernetes v1.36.3), with the notification modes of earlier
releases (v1.36.3 keeps only the incremental one). Each source puts
:class:`~controllers.kubelet.pod_update.PodUpdate` s on its own channel; PodConfig keeps one map
``uid -> pod`` per source, decides from the difference what really changed, and emits ADD /
UPDATE / DELETE / REMOVE / RECONCILE or SET updates on :attr:`PodConfig.updates` according to
its notification mode.
"""

from __future__ import annotations

import copy
import datetime
import logging
import queue
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from controllers.kubelet.pod_update import (
    ADD,
    ALL_SOURCE,
    CONFIG_FIRST_SEEN_ANNOTATION_KEY,
    CONFIG_SOURCE_ANNOTATION_KEY,
    DELETE,
    INCREMENTAL,
    LOCAL_ANNOTATIONS,
    RECONCILE,
    REMOVE,
    SET,
    SNAPSHOT,
    SNAPSHOT_AND_UPDATES,
    UPDATE,
    PodConfigNotificationMode,
    PodOperation,
    PodUpdate,
    pod_full_name,
    pod_uid,
)
from informers.clock import REAL_CLOCK, Clock

__all__ = [
    "UPDATES_CAPACITY",
    "EventRecorderLike",
    "PodConfig",
    "PodUpdateQueue",
    "SourceChannel",
    "format_timestamp",
]

logger = logging.getLogger(__name__)

UPDATES_CAPACITY = 50
"""Capacity of :attr:`PodConfig.updates` (kubelet config.go ``make(chan PodUpdate, 50)``)."""

FAILED_VALIDATION = "FailedValidation"
"""Reason of the warning event for a duplicate pod name (kubelet events ``FailedValidation``)."""


class EventRecorderLike(Protocol):
    """What PodConfig needs from an event recorder (``informers.events.EventRecorder`` fits)."""

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None: ...


def format_timestamp(t: datetime.datetime) -> str:
    """kubelet ``Timestamp.GetString``: RFC 3339 with exactly nine fraction digits, in UTC."""
    t = t.astimezone(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}000Z"


class PodUpdateQueue(queue.Queue[PodUpdate]):
    """The ``queue.Queue`` of merged updates, with a wait that a fake clock controls.

    A plain bounded ``queue.Queue`` for every reader and writer; :meth:`wait_not_empty` lets a
    consumer such as :class:`~controllers.kubelet.sync_loop.SyncLoop` wait for the next update
    *or* a timer measured on an injectable clock, and :meth:`wake` ends such a wait early.
    """

    def wait_not_empty(
        self, clock: Clock, timeout: float | None, stop: threading.Event | None = None
    ) -> bool:
        """Wait until an update is queued or ``timeout`` passes on ``clock``; True if one is.

        Returns at once when ``stop`` is set; a :meth:`wake` issued after ``stop`` was set is
        never lost.
        """
        with self.not_empty:
            if not self._qsize() and not (stop is not None and stop.is_set()):
                clock.wait_condition(self.not_empty, timeout)
            return bool(self._qsize())

    def wake(self) -> None:
        """End every :meth:`wait_not_empty` in progress (it returns False when still empty)."""
        with self.not_empty:
            self.not_empty.notify_all()


class SourceChannel(queue.Queue[PodUpdate]):
    """The input of one source: ``put(PodUpdate)`` merges it into the PodConfig.

    A ``queue.Queue`` for writers (``put``, ``put_nowait``, ``qsize``, ``empty``, ``full``,
    ``join``). Unlike a plain queue it holds nothing -- it stays empty, so there is nothing to
    ``get`` from it: ``put`` merges the update on the caller's
    thread, serialised with every other channel of the same PodConfig, and returns once the
    resulting updates are on :attr:`PodConfig.updates`. So the output order is the order in
    which ``put`` calls complete, and a test can assert right after ``put``. Like the kubelet's
    unbuffered source channels, ``put`` blocks while :attr:`PodConfig.updates` is full; ``block``
    and ``timeout`` are accepted for compatibility and do not change that.

    Raises (from ``put``):
        TypeError: the item is not a :class:`PodUpdate` whose pods are mappings.
    """

    def __init__(self, config: PodConfig, source: str) -> None:
        super().__init__()
        self._config = config
        self.source = source

    def put(self, item: PodUpdate, block: bool = True, timeout: float | None = None) -> None:
        if not isinstance(item, PodUpdate):
            raise TypeError(f"source {self.source!r}: expected a PodUpdate, got {item!r}")
        for pod in item.pods:
            if not isinstance(pod, Mapping):
                raise TypeError(f"source {self.source!r}: a pod must be a mapping, got {pod!r}")
        self._config._storage.merge(self.source, item)

    def put_nowait(self, item: PodUpdate) -> None:
        self.put(item, block=False)

    def __repr__(self) -> str:
        return f"SourceChannel({self.source!r})"


def _annotations_equal_ignoring_local(
    existing: Mapping[str, Any] | None, candidate: Mapping[str, Any] | None
) -> bool:
    """kubelet ``isAnnotationMapEqual``: equal except for local keys; ``None`` equals ``{}``."""
    existing = existing or {}
    candidate = candidate or {}
    for key, value in candidate.items():
        if key in LOCAL_ANNOTATIONS:
            continue
        if key not in existing or existing[key] != value:
            return False
    return all(key in LOCAL_ANNOTATIONS or key in candidate for key in existing)


def _meta(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod.get("metadata")
    if not isinstance(meta, dict):
        meta = pod["metadata"] = {}
    return meta


def _set_or_drop(target: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value


def _differ_semantically(existing: dict[str, Any], ref: dict[str, Any]) -> bool:
    """kubelet ``podsDifferSemantically``."""
    em, rm = _meta(existing), _meta(ref)
    return not (
        existing.get("spec") == ref.get("spec")
        and em.get("labels") == rm.get("labels")
        and em.get("deletionTimestamp") == rm.get("deletionTimestamp")
        and em.get("deletionGracePeriodSeconds") == rm.get("deletionGracePeriodSeconds")
        and _annotations_equal_ignoring_local(em.get("annotations"), rm.get("annotations"))
    )


def _check_and_update_pod(existing: dict[str, Any], ref: dict[str, Any]) -> PodOperation | None:
    """kubelet ``checkAndUpdatePod``: update ``existing`` from ``ref``; say what changed."""
    if not _differ_semantically(existing, ref):
        if existing.get("status") != ref.get("status"):
            _set_or_drop(existing, "status", ref.get("status"))
            return RECONCILE
        return None
    em, rm = _meta(existing), _meta(ref)
    _set_or_drop(existing, "spec", ref.get("spec"))
    for key in ("labels", "deletionTimestamp", "deletionGracePeriodSeconds"):
        _set_or_drop(em, key, rm.get(key))
    _set_or_drop(existing, "status", ref.get("status"))
    annotations = dict(rm.get("annotations") or {})
    old = em.get("annotations") or {}
    for key in LOCAL_ANNOTATIONS:
        if key in old:
            annotations[key] = old[key]
    em["annotations"] = annotations
    return DELETE if rm.get("deletionTimestamp") else UPDATE


class _PodStorage:
    """kubelet ``podStorage``: the per-source maps and the emission rules."""

    def __init__(
        self,
        updates: queue.Queue[PodUpdate],
        mode: PodConfigNotificationMode,
        recorder: EventRecorderLike | None,
        clock: Clock,
    ) -> None:
        self.updates = updates
        self.mode = mode
        self.recorder = recorder
        self.clock = clock
        self.pod_lock = threading.Lock()
        self.pods: dict[str, dict[str, dict[str, Any]]] = {}
        self.update_lock = threading.Lock()
        self.sources_seen_lock = threading.Lock()
        self.sources_seen: set[str] = set()

    # -- Merge -----------------------------------------------------------------------------------

    def merge(self, source: str, update: PodUpdate) -> None:
        with self.update_lock:
            seen_before = self.has_seen(source)
            adds, updates, deletes, removes, reconciles = self._merge(source, update)
            first_set = not seen_before and self.has_seen(source)
            out = self._emissions(source, first_set, adds, updates, deletes, removes, reconciles)
            for item in out:
                self.updates.put(item)

    def _emissions(
        self, source: str, first_set: bool, adds: PodUpdate, updates: PodUpdate,
        deletes: PodUpdate, removes: PodUpdate, reconciles: PodUpdate,
    ) -> list[PodUpdate]:
        out: list[PodUpdate] = []
        if self.mode == INCREMENTAL:
            out.extend(u for u in (removes, adds, updates, deletes) if u.pods)
            if first_set and not adds.pods and not updates.pods and not deletes.pods:
                # The empty ADD tells the kubelet's sync loop that the source is ready.
                out.append(adds)
            if reconciles.pods:
                out.append(reconciles)
        elif self.mode == SNAPSHOT_AND_UPDATES:
            if removes.pods or adds.pods or first_set:
                out.append(PodUpdate(self.merged_state(), SET, source))
            out.extend(u for u in (updates, deletes) if u.pods)
        elif self.mode == SNAPSHOT:
            if updates.pods or deletes.pods or adds.pods or removes.pods or first_set:
                out.append(PodUpdate(self.merged_state(), SET, source))
        else:  # refused by PodConfig.__init__; kept for a mode changed afterwards
            raise ValueError(f"unsupported PodConfigNotificationMode: {self.mode!r}")
        return out

    def _filter_invalid(self, pods: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
        """kubelet ``filterInvalidPods``: drop pods whose full name appeared earlier in the list."""
        names: set[str] = set()
        kept: list[dict[str, Any]] = []
        for i, pod in enumerate(pods):
            name = pod_full_name(pod)
            if name in names:
                meta = pod.get("metadata") or {}
                logger.warning(
                    "pod %s/%s (index %d) from source %r failed validation due to duplicate pod "
                    "name, ignoring", meta.get("namespace"), meta.get("name"), i, source,
                )
                if self.recorder is not None:
                    self.recorder.event(
                        pod, "Warning", FAILED_VALIDATION,
                        f"Error validating pod {name} from {source} due to duplicate pod name "
                        f"{meta.get('name')!r}, ignoring",
                    )
                continue
            names.add(name)
            kept.append(pod)
        return kept

    def _merge(
        self, source: str, update: PodUpdate
    ) -> tuple[PodUpdate, PodUpdate, PodUpdate, PodUpdate, PodUpdate]:
        added: list[dict[str, Any]] = []
        updated: list[dict[str, Any]] = []
        deleted: list[dict[str, Any]] = []
        removed: list[dict[str, Any]] = []
        reconciled: list[dict[str, Any]] = []
        with self.pod_lock:
            pods = self.pods.get(source, {})

            def update_pods(new_pods: list[dict[str, Any]], old: dict[str, dict[str, Any]],
                            into: dict[str, dict[str, Any]]) -> None:
                for ref in self._filter_invalid(new_pods, source):
                    meta = _meta(ref)
                    annotations = meta.get("annotations")
                    if not isinstance(annotations, dict):
                        annotations = meta["annotations"] = {}
                    annotations[CONFIG_SOURCE_ANNOTATION_KEY] = source
                    uid = pod_uid(ref)
                    existing = old.get(uid)
                    if existing is not None:
                        into[uid] = existing
                        kind = _check_and_update_pod(existing, ref)
                        if kind == UPDATE:
                            updated.append(existing)
                        elif kind == RECONCILE:
                            reconciled.append(existing)
                        elif kind == DELETE:
                            deleted.append(existing)
                        continue
                    annotations[CONFIG_FIRST_SEEN_ANNOTATION_KEY] = format_timestamp(
                        self.clock.wall()
                    )
                    into[uid] = ref
                    added.append(ref)

            # Never alias the sender's objects: they may be a store's cached pods.
            incoming = [copy.deepcopy(dict(p)) for p in update.pods]
            op = update.op
            if op in (ADD, UPDATE, DELETE):
                logger.debug("source %r: %s of %d pods", source, update.op_name, len(incoming))
                update_pods(incoming, pods, pods)
            elif op == REMOVE:
                logger.debug("source %r: removing %d pods", source, len(incoming))
                for pod in incoming:
                    existing = pods.pop(pod_uid(pod), None)
                    if existing is not None:
                        removed.append(existing)
            elif op == SET:
                logger.debug("source %r: setting %d pods", source, len(incoming))
                self.mark_source_set(source)
                old = pods
                pods = {}
                update_pods(incoming, old, pods)
                removed.extend(p for uid, p in old.items() if uid not in pods)
            else:
                logger.warning("source %r: received invalid update type %s, ignoring",
                               source, update.op_name)
            self.pods[source] = pods
            result = (
                PodUpdate(_copy(added), ADD, source),
                PodUpdate(_copy(updated), UPDATE, source),
                PodUpdate(_copy(deleted), DELETE, source),
                PodUpdate(_copy(removed), REMOVE, source),
                PodUpdate(_copy(reconciled), RECONCILE, source),
            )
        return result

    # -- state -----------------------------------------------------------------------------------

    def mark_source_set(self, source: str) -> None:
        with self.sources_seen_lock:
            self.sources_seen.add(source)

    def has_seen(self, source: str) -> bool:
        with self.sources_seen_lock:
            return source in self.sources_seen

    def seen_sources(self, sources: Iterable[str]) -> bool:
        with self.sources_seen_lock:
            return all(s in self.sources_seen for s in sources)

    def merged_state(self) -> list[dict[str, Any]]:
        with self.pod_lock:
            return [copy.deepcopy(p) for by_uid in self.pods.values() for p in by_uid.values()]

    def sync(self) -> None:
        with self.update_lock:
            self.updates.put(PodUpdate(self.merged_state(), SET, ALL_SOURCE))


def _copy(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [copy.deepcopy(p) for p in pods]


class PodConfig:
    """Merges pod sources into one ordered, deduplicated stream of updates (kubelet ``PodConfig``).

    Contract:

    * :meth:`channel` returns the input of a source (the same object for the same name) and
      registers the source as configured. Sources put
      :class:`~controllers.kubelet.pod_update.PodUpdate` s on it; only the source name of the
      channel matters, not ``PodUpdate.source``.
    * **Merge rules** (kubelet ``podStorage.merge``): one map ``uid -> pod`` per source. Within
      one update a pod whose ``name_namespace`` appeared earlier is dropped with a warning (and
      a ``FailedValidation`` event when a recorder is given). Each pod is annotated with its
      source. A UID not yet known is an ADD (first-seen annotation set); a known UID is an
      UPDATE when spec, labels, non-local annotations or the deletion fields changed (DELETE
      when it now has a ``deletionTimestamp``), a RECONCILE when only the status changed, and
      nothing otherwise -- whatever op the source used among ADD, UPDATE and DELETE. REMOVE
      forgets the given UIDs (and reports the stored pods). SET replaces the source's map and
      reports every UID missing from it as REMOVE.
    * **Emission** (one merge, in this order): INCREMENTAL: REMOVE, ADD, UPDATE, DELETE, each
      if non-empty; on the source's first SET an empty ADD when there was no ADD, UPDATE or
      DELETE; then RECONCILE. SNAPSHOT_AND_UPDATES: a SET of the merged state of all sources
      when pods were added or removed or on the first SET, then UPDATE, then DELETE.
      SNAPSHOT: a SET of the merged state on any change but a status-only one, or on the first
      SET. Pods in ADD/UPDATE/DELETE/RECONCILE follow the input order; REMOVEs of a SET and
      the merged state are in no particular order. Every emitted pod is a deep copy.
    * **Ordering and threads.** Merges are serialised by one lock; :attr:`updates` receives the
      output of each merge contiguously, in merge order. Thread-safe.
    * :attr:`updates` is a bounded ``queue.Queue`` (:data:`UPDATES_CAPACITY`, as the kubelet's
      channel); when it is full, merges (and so sources) wait for the consumer.

    Args:
        mode: the notification mode (default INCREMENTAL, the kubelet's).
        recorder: receives a warning event for each duplicate pod name.
        clock: gives the first-seen timestamps.
        capacity: capacity of :attr:`updates`.

    Raises:
        ValueError: an unsupported mode (the kubelet panics on its first merge instead).
    """

    def __init__(
        self,
        mode: PodConfigNotificationMode | int = INCREMENTAL,
        *,
        recorder: EventRecorderLike | None = None,
        clock: Clock = REAL_CLOCK,
        capacity: int = UPDATES_CAPACITY,
    ) -> None:
        try:
            checked = PodConfigNotificationMode(mode)
        except ValueError:
            checked = PodConfigNotificationMode.UNKNOWN
        if checked not in (SNAPSHOT, SNAPSHOT_AND_UPDATES, INCREMENTAL):
            raise ValueError(f"unsupported PodConfigNotificationMode: {mode!r}")
        self.mode = checked
        self.updates: PodUpdateQueue = PodUpdateQueue(maxsize=capacity)
        self._storage = _PodStorage(self.updates, checked, recorder, clock)
        self._sources_lock = threading.Lock()
        self._channels: dict[str, SourceChannel] = {}

    def channel(self, source: str) -> SourceChannel:
        """The input of ``source``, registering it as a configured source.

        Raises:
            ValueError: an empty source name (the kubelet panics).
        """
        if not source:
            raise ValueError("PodConfig.channel: the source name must not be empty")
        with self._sources_lock:
            ch = self._channels.get(source)
            if ch is None:
                ch = self._channels[source] = SourceChannel(self, source)
            return ch

    @property
    def sources(self) -> frozenset[str]:
        """The configured sources (every name passed to :meth:`channel`)."""
        with self._sources_lock:
            return frozenset(self._channels)

    def seen_all_sources(self, seen: Iterable[str]) -> bool:
        """True iff ``seen`` holds every configured source and each has sent at least one SET.

        kubelet ``SeenAllSources``; the sync loop passes the sources whose updates it consumed.
        """
        wanted = self.sources
        seen_set = set(seen)
        ok = wanted <= seen_set and self._storage.seen_sources(wanted)
        logger.debug("looking for sources %s, have seen %s: %s",
                     sorted(wanted), sorted(seen_set), ok)
        return ok

    def sync(self) -> None:
        """Put ``SET{merged state of all sources, source "*"}`` on :attr:`updates`.

        Blocks while :attr:`updates` is full: do not call it from the thread that drains it.
        """
        self._storage.sync()

    def merged_state(self) -> list[dict[str, Any]]:
        """Deep copies of every pod of every source, in no particular order."""
        return self._storage.merged_state()
