"""In-memory object storage with one cluster-wide resourceVersion and a replayable event history.

This plays etcd plus the watch cache for the embedded API server:

* every write takes the next value of a single counter (etcd's revision), so resourceVersions
  are comparable across kinds, as on a real cluster;
* each write appends a :class:`Change` that keeps the object before the change, so the state of
  a collection at any retained version can be rebuilt (exact-version lists and the snapshot of a
  paginated list) and watchers can replay from any retained version;
* a bounded history per collection and :meth:`Storage.compact` make older versions answer 410,
  as etcd compaction and the watch cache's bounded window do.

Objects are stored encoded: an :class:`Entry` holds the compact JSON of the object *without*
``kind``/``apiVersion`` (what a built-in list item looks like), plus the labels and selectable
fields needed for selectors. A list is then a join of cached bytes, and a watch event is encoded
once, however many watchers receive it.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from informers import fields as field_selectors
from informers.clock import REAL_CLOCK, Clock
from informers.testing.codec import dumps, loads
from informers.testing.resources import ResourceType

__all__ = ["ADDED", "DELETED", "MODIFIED", "Change", "Collection", "Entry", "Snapshot", "Storage"]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

DEFAULT_HISTORY_LIMIT = 10_000
"""Events kept per collection. kube-apiserver's watch cache keeps a window of recent events
sized dynamically between ``--default-watch-cache-size`` (100) and 100*1024 so that at least
75 s of history (``eventFreshDuration``) fit (``storage/cacher/watch_cache.go``)."""

_SNAPSHOT_CACHE = 4  # rebuilt past states kept for the pages of paginated lists


def object_key(rt: ResourceType, namespace: str, name: str) -> str:
    """``namespace/name`` for namespaced kinds, ``name`` otherwise (etcd key order)."""
    return f"{namespace}/{name}" if rt.namespaced else name


class Entry:
    """One stored object version. Immutable by convention: never mutate a field.

    Attributes:
        key: ``namespace/name`` or ``name``.
        rv: the resourceVersion this version was written at.
        body: compact JSON without ``kind``/``apiVersion``.
        labels: ``metadata.labels`` (for label selectors).
        fields: the kind's selectable fields (for field selectors).
        uid: ``metadata.uid`` (for shard selectors), ``""`` if absent.
    """

    __slots__ = ("body", "fields", "key", "labels", "name", "namespace", "rv", "uid")

    def __init__(
        self, key: str, namespace: str, name: str, rv: int, body: bytes,
        labels: dict[str, str], fields: dict[str, str], uid: str = "",
    ) -> None:
        self.key = key
        self.namespace = namespace
        self.name = name
        self.rv = rv
        self.body = body
        self.labels = labels
        self.fields = fields
        self.uid = uid

    def decode(self) -> dict[str, Any]:
        """A fresh dict of the object (without ``kind``/``apiVersion``); the caller owns it."""
        obj: dict[str, Any] = loads(self.body)
        return obj

    def typed(self, rt: ResourceType) -> bytes:
        """The object's JSON with ``kind`` and ``apiVersion`` spliced in front."""
        return splice(rt.type_prefix, self.body)


def splice(prefix: bytes, body: bytes) -> bytes:
    """``prefix`` is ``{"kind":..,"apiVersion":..,``; ``body`` a JSON object."""
    if body == b"{}":
        return prefix[:-1] + b"}"
    return prefix + body[1:]


class Change:
    """One history event: the new version (for DELETED, the final state stamped with the
    deletion's resourceVersion) and the version before it (``None`` for ADDED).

    Encoded watch lines are computed on first use and shared by every watcher.
    """

    __slots__ = ("_deleted_line", "_line", "entry", "prev", "rv", "type")

    def __init__(self, type_: str, entry: Entry, prev: Entry | None) -> None:
        self.type = type_
        self.rv = entry.rv
        self.entry = entry
        self.prev = prev
        self._line: bytes | None = None
        self._deleted_line: bytes | None = None

    def line(self, rt: ResourceType) -> bytes:
        """``{"type":"MODIFIED","object":{...}}\\n``."""
        line = self._line
        if line is None:
            line = watch_line(self.type, splice(rt.type_prefix, self.entry.body))
            self._line = line
        return line

    def unmatched_line(self, rt: ResourceType) -> bytes:
        """A DELETED line for a watcher whose selector matched the previous version only.

        Like the watch cache (``cacheWatcher.convertToWatchEvent``): "return a delete event
        with the previous object content, but with the event's resource version".
        """
        line = self._deleted_line
        if line is None:
            assert self.prev is not None
            obj = self.prev.decode()
            obj["metadata"]["resourceVersion"] = str(self.rv)
            line = watch_line(DELETED, splice(rt.type_prefix, dumps(obj)))
            self._deleted_line = line
        return line


def watch_line(type_: str, obj: bytes) -> bytes:
    """One JSON watch event line (a ``metav1.WatchEvent``)."""
    return b'{"type":"' + type_.encode() + b'","object":' + obj + b"}\n"


class Snapshot:
    """The state of one collection at ``rv``: keys in etcd order and their entries."""

    __slots__ = ("keys", "objects", "rv")

    def __init__(self, rv: int, keys: list[str], objects: dict[str, Entry]) -> None:
        self.rv = rv
        self.keys = keys
        self.objects = objects


class Collection:
    """The objects and history of one :class:`ResourceType`. Guarded by the storage lock.

    ``history`` holds the retained changes in resourceVersion order; the change at index ``i``
    has sequence number ``first_seq + i``. Every change with ``rv > oldest_rv`` is retained, so
    a watch or an exact list at ``rv >= oldest_rv`` can be served.
    """

    def __init__(self, rt: ResourceType, lock: threading.RLock, oldest_rv: int) -> None:
        self.rt = rt
        self.objects: dict[str, Entry] = {}
        self.history: list[Change] = []
        self.first_seq = 0
        self.oldest_rv = oldest_rv
        self.restarts = 0  # how many times restart() was called: watches started before end
        self.cond = threading.Condition(lock)
        self._keys: list[str] | None = None
        self._current: Snapshot | None = None
        self._snapshots: OrderedDict[int, Snapshot] = OrderedDict()

    @property
    def next_seq(self) -> int:
        return self.first_seq + len(self.history)

    @property
    def last_change_rv(self) -> int:
        return self.history[-1].rv if self.history else self.oldest_rv

    def seq_after(self, rv: int) -> int:
        """The sequence number of the first retained change newer than ``rv``."""
        index = bisect.bisect_right(self.history, rv, key=lambda change: change.rv)
        return self.first_seq + index

    def sorted_keys(self) -> list[str]:
        """Current keys in etcd order (cached until a key is added or removed)."""
        if self._keys is None:
            self._keys = sorted(self.objects)
        return self._keys

    def snapshot(self, rv: int) -> Snapshot:
        """The collection as it was at ``rv`` (``oldest_rv <= rv``), rebuilt from history.

        Served from the live state when nothing changed after ``rv``.
        """
        if not self.history or self.history[-1].rv <= rv:
            current = self._current
            if current is None:
                current = Snapshot(rv, self.sorted_keys(), dict(self.objects))
                self._current = current
            return Snapshot(rv, current.keys, current.objects)
        cached = self._snapshots.get(rv)
        if cached is not None:
            self._snapshots.move_to_end(rv)
            return cached
        objects = dict(self.objects)
        for change in reversed(self.history):
            if change.rv <= rv:
                break
            if change.prev is None:
                objects.pop(change.entry.key, None)
            else:
                objects[change.prev.key] = change.prev
        snap = Snapshot(rv, sorted(objects), objects)
        self._snapshots[rv] = snap
        while len(self._snapshots) > _SNAPSHOT_CACHE:
            self._snapshots.popitem(last=False)
        return snap

    def _record(self, change: Change, key_set_changed: bool, limit: int) -> None:
        self.history.append(change)
        self._current = None
        if key_set_changed:
            self._keys = None
        excess = len(self.history) - limit
        if excess > 0:
            self.oldest_rv = self.history[excess - 1].rv
            del self.history[:excess]
            self.first_seq += excess
            for rv in [rv for rv in self._snapshots if rv < self.oldest_rv]:
                del self._snapshots[rv]
        self.cond.notify_all()

    def restart(self, rv: int) -> None:
        """As a new watch cache (kube-apiserver's storage of a resource torn down and made
        again): the history is forgotten at ``rv`` and the open watches end (their streams
        finish cleanly, as a stopped cacher terminates its watchers)."""
        self.restarts += 1
        self.forget_history(rv)

    def forget_history(self, rv: int) -> None:
        """Drop every retained change: versions older than ``rv`` are gone."""
        self.first_seq += len(self.history)
        self.history = []
        self.oldest_rv = max(self.oldest_rv, rv)
        self._snapshots.clear()
        self.cond.notify_all()


class Storage:
    """All collections of one API server. Thread-safe.

    ``lock`` (re-entrant) guards everything; a caller that needs several reads and writes to be
    atomic (a create that checks its namespace) holds it around them. Each collection has a
    condition on that lock, notified on every change to it, on which watchers wait.

    Args:
        history_limit: changes retained per collection (see :data:`DEFAULT_HISTORY_LIMIT`).
        clock: waits for a future resourceVersion use it.
        start_rv: the resourceVersion of an empty store.
    """

    def __init__(
        self, *, history_limit: int = DEFAULT_HISTORY_LIMIT, clock: Clock = REAL_CLOCK,
        start_rv: int = 1,
    ) -> None:
        if history_limit < 1:
            raise ValueError(f"history_limit must be >= 1, got {history_limit}")
        self.lock = threading.RLock()
        self.history_limit = history_limit
        self.clock = clock
        self.rv = start_rv
        self._start_rv = start_rv
        self._collections: dict[tuple[str, str], Collection] = {}
        self._rv_cond = threading.Condition(self.lock)
        self._rv_waiters = 0

    # -- collections ---------------------------------------------------------------------------

    def collection(self, rt: ResourceType) -> Collection:
        """The collection of ``rt``, created empty on first use."""
        key = (rt.group, rt.plural)  # every version of a kind reads the same objects
        with self.lock:
            coll = self._collections.get(key)
            if coll is None:
                coll = Collection(rt, self.lock, self._start_rv)
                self._collections[key] = coll
            elif coll.rt is not rt:
                coll.rt = rt  # re-registered with other options; objects stay
            return coll

    def collections(self) -> list[Collection]:
        with self.lock:
            return list(self._collections.values())

    # -- reads ---------------------------------------------------------------------------------

    def get(self, rt: ResourceType, key: str) -> Entry | None:
        with self.lock:
            return self.collection(rt).objects.get(key)

    # -- writes (each takes the next resourceVersion) ------------------------------------------

    def _entry(
        self, rt: ResourceType, obj: dict[str, Any], rv: int, *, stamp: bool = True
    ) -> Entry:
        meta = obj["metadata"]
        if stamp:
            meta["resourceVersion"] = str(rv)
        namespace = (meta.get("namespace") or "") if rt.namespaced else ""
        name = meta["name"]
        body_obj = {k: v for k, v in obj.items() if k != "kind" and k != "apiVersion"}
        labels = meta.get("labels") or {}
        return Entry(
            object_key(rt, namespace, name), namespace, name, rv, dumps(body_obj),
            dict(labels) if isinstance(labels, dict) else {},
            {**field_selectors.object_fields(obj, rt.kind, namespaced=rt.namespaced),
             **rt.extra_fields(obj)},
            uid if isinstance(uid := meta.get("uid"), str) else "",
        )

    def _advance(self) -> int:
        self.rv += 1
        if self._rv_waiters:
            self._rv_cond.notify_all()
        return self.rv

    def preview(self, rt: ResourceType, obj: dict[str, Any]) -> Entry:
        """The entry ``obj`` would be stored as, without storing it (dry run)."""
        rv = int((obj.get("metadata") or {}).get("resourceVersion") or 0)
        return self._entry(rt, obj, rv, stamp=False)

    def put(self, rt: ResourceType, obj: dict[str, Any]) -> Entry:
        """Create or replace ``obj`` (ADDED or MODIFIED). Sets its ``metadata.resourceVersion``.

        ``obj`` must carry ``metadata.name`` (and ``metadata.namespace`` if namespaced); the
        caller validated it. ``obj`` is not kept: it may be reused after the call.
        """
        with self.lock:
            coll = self.collection(rt)
            entry = self._entry(rt, obj, self.rv + 1)
            self._advance()
            prev = coll.objects.get(entry.key)
            coll.objects[entry.key] = entry
            change = Change(ADDED if prev is None else MODIFIED, entry, prev)
            coll._record(change, prev is None, self.history_limit)
            return entry

    def remove(self, rt: ResourceType, key: str, final: dict[str, Any] | None = None) -> Entry:
        """Delete the object at ``key`` (DELETED). The event carries ``final`` (default: the
        stored object) stamped with the deletion's resourceVersion, as etcd3's watcher does.

        Raises:
            KeyError: no object at ``key``.
        """
        with self.lock:
            coll = self.collection(rt)
            prev = coll.objects[key]
            obj = final if final is not None else prev.decode()
            entry = self._entry(rt, obj, self.rv + 1)
            self._advance()
            del coll.objects[key]
            coll._record(Change(DELETED, entry, prev), True, self.history_limit)
            return entry

    def rewrite(self, rt: ResourceType, change: Callable[[dict[str, Any]], bool]) -> int:
        """Re-encode every stored object of ``rt`` that ``change`` alters in place (it gets a
        decoded copy and returns whether it changed it), keeping its resourceVersion and
        writing no event: what kube-apiserver serves when its decoding from etcd changes (a
        CRD's new schema defaults, applied on read). Older versions rebuilt from the history
        keep the bodies they had. Returns how many objects changed."""
        with self.lock:
            coll = self.collection(rt)
            changed = 0
            for key, entry in list(coll.objects.items()):
                obj = entry.decode()
                if change(obj):
                    coll.objects[key] = self._entry(rt, obj, entry.rv, stamp=False)
                    changed += 1
            if changed:
                coll._current = None
                coll._snapshots.clear()
            return changed

    def compact(self) -> int:
        """Forget all history: every version older than the current one now answers 410.

        Returns the resourceVersion compacted at.
        """
        with self.lock:
            for coll in self._collections.values():
                coll.forget_history(self.rv)
            self._start_rv = self.rv
            return self.rv

    def notify_all(self) -> None:
        """Wake every watcher (after a fault-injection state change)."""
        with self.lock:
            for coll in self._collections.values():
                coll.cond.notify_all()

    def wait_for_rv(self, rv: int, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds on the storage clock) until the current
        resourceVersion reaches ``rv``; like the watch cache's ``waitUntilFreshAndBlock``."""
        with self.lock:
            if self.rv >= rv:
                return True
            deadline = self.clock.now() + timeout
            self._rv_waiters += 1
            try:
                while self.rv < rv:
                    remaining = deadline - self.clock.now()
                    if remaining <= 0:
                        return False
                    self.clock.wait_condition(self._rv_cond, remaining)
                return True
            finally:
                self._rv_waiters -= 1
