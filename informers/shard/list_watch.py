"""A ListWatch that lists and watches one member's share of the hash space.

:class:`ShardedListWatch` wraps any :class:`~informers.list_watch.ListWatch` (usually the
HTTP one of :func:`informers.client.list_watch_from_client`):

* every list and watch carries the KEP-5866 ``shardSelector`` of the current ranges
  (:func:`informers.shard.ranges.selector_for`), so a server with ``ShardedListAndWatch``
  sends only the share;
* every listed item and watch event (ADDED, MODIFIED, DELETED) is also checked on the
  client and dropped when its hash is outside the ranges, before the reflector puts it in the
  FIFO: the cache and the memory hold only the share even when the server ignored the
  selector. A list whose metadata has no ``shardInfo`` means the server ignored it: logged
  once per ranges (warning) and counted in :attr:`ShardFilterStats.lists_unfiltered`;
  every object dropped on the client counts in :attr:`ShardFilterStats.filtered`
  (the ``shard_keys_filtered_on_client_total`` metric);
* :meth:`ShardedListWatch.set_ranges` changes the ranges and ends the open watches with an
  ERROR event ``410 Expired`` (reason ``Expired``), which makes the reflector relist (with
  the new selector) and replace its store: objects of the lost ranges are deleted from the
  cache (handlers see deletes), those of the gained ones are added.

An empty range set (the member owns nothing yet) is sent as the one-hash range
``[0x0, 0x1)`` (a selector must have a range) and everything is dropped on the client.

The list is asked without ``ListOptions.item_hook`` (a compact informer's encoder), so its
items come back as ``dict`` and can be checked; the reflector applies the hook to the kept
items afterwards (its contract for a list function that ignores the hook). A compact sharded
informer's list so exists decoded in full for a moment.

Thread-safe: :meth:`set_ranges` may be called from any thread while the reflector lists and
watches.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Iterator
from typing import Any

from informers.list_watch import ListOptions, ListResult, ListWatch, WatchEvent, WatchStream
from informers.shard.ranges import RangeSet, key_hash, selector_for

__all__ = ["RANGES_CHANGED_REASON", "ShardFilterStats", "ShardedListWatch"]

logger = logging.getLogger(__name__)

RANGES_CHANGED_REASON = "Expired"
"""The reason of the ERROR event that ends a watch whose ranges changed (a 410, which the
reflector answers with a relist, as after a compacted watch)."""

_NOTHING = RangeSet([(0, 1)])


@dataclasses.dataclass
class ShardFilterStats:
    """Counters of one or more :class:`ShardedListWatch` (shared when passed to several).

    Attributes:
        filtered: objects dropped on the client (the server did not filter them).
        lists_unfiltered: lists answered without ``shardInfo``.
    """

    filtered: int = 0
    lists_unfiltered: int = 0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    def add(self, filtered: int = 0, unfiltered_lists: int = 0) -> None:
        with self.lock:
            self.filtered += filtered
            self.lists_unfiltered += unfiltered_lists


class ShardedListWatch(ListWatch):
    """``inner`` restricted to the objects whose ``key`` hashes into the current ranges.

    Args:
        inner: the ListWatch to wrap.
        key: ``object.metadata.namespace`` or ``object.metadata.uid``
            (:data:`informers.sharding.NAMESPACE_KEY`, :data:`~informers.sharding.UID_KEY`).
        ranges: the initial ranges (default: none; see the module docstring).
        stats: where to count; a new :class:`ShardFilterStats` by default.
    """

    def __init__(self, inner: ListWatch, key: str, ranges: RangeSet | None = None,
                 stats: ShardFilterStats | None = None) -> None:
        super().__init__(None, None, resource=inner.resource)
        selector_for(RangeSet.full(), key)  # validates the key
        self.inner = inner
        self.key = key
        self.stats = stats if stats is not None else ShardFilterStats()
        self._lock = threading.Lock()
        self._ranges = ranges if ranges is not None else RangeSet()
        self._streams: set[_ShardStream] = set()
        self._warned_for: RangeSet | None = None
        self.server_filters: bool | None = None
        """Whether the last list came with ``shardInfo`` (``None`` before the first list)."""
        self.listed: tuple[RangeSet, str] | None = None
        """The ranges and resourceVersion of the last complete list (its last page), ``None``
        before one: the cache holds those ranges once it applied that version."""

    @property
    def drop_managed_fields(self) -> bool:
        return self.inner.drop_managed_fields

    @property
    def ranges(self) -> RangeSet:
        with self._lock:
            return self._ranges

    def selector(self) -> str:
        """The ``shardSelector`` sent for the current ranges."""
        return str(selector_for(self.ranges or _NOTHING, self.key))

    def set_ranges(self, ranges: RangeSet) -> bool:
        """Use ``ranges`` from now on; when they differ, end the open watches (the reflector
        relists). Returns whether they differed."""
        with self._lock:
            if ranges == self._ranges:
                return False
            self._ranges = ranges
            streams = list(self._streams)
        for stream in streams:
            stream.expire()
        return True

    def matches(self, obj: Any, ranges: RangeSet) -> bool:
        if not isinstance(obj, dict):
            return True
        return key_hash(obj, self.key) in ranges

    def list(self, options: ListOptions) -> ListResult:
        ranges = self.ranges
        opts = dataclasses.replace(
            options, shard_selector=str(selector_for(ranges or _NOTHING, self.key)),
            item_hook=None)
        result = self.inner.list(opts)
        self.server_filters = result.shard_info is not None
        if result.shard_info is None:
            self.stats.add(unfiltered_lists=1)
            with self._lock:
                warn = self._warned_for != ranges
                self._warned_for = ranges
            if warn:
                logger.warning(
                    "%r: the list answered no shardInfo: the server ignored shardSelector "
                    "(ShardedListAndWatch off?); filtering %s on the client", self.inner,
                    self.key)
        kept = [item for item in result.items if self.matches(item, ranges)]
        dropped = len(result.items) - len(kept)
        if dropped:
            self.stats.add(filtered=dropped)
        if not result.continue_:
            with self._lock:
                self.listed = (ranges, result.resource_version)
        return dataclasses.replace(result, items=kept)

    def watch(self, options: ListOptions) -> WatchStream:
        ranges = self.ranges
        opts = dataclasses.replace(
            options, shard_selector=str(selector_for(ranges or _NOTHING, self.key)))
        stream = _ShardStream(self, self.inner.watch(opts), ranges)
        with self._lock:
            if self._ranges != ranges:
                stale = True
            else:
                stale = False
                self._streams.add(stream)
        if stale:
            stream.expire()
        return stream

    def _forget(self, stream: _ShardStream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def __repr__(self) -> str:
        return f"ShardedListWatch({self.inner!r}, {self.key})"


class _ShardStream:
    """One watch of a :class:`ShardedListWatch`: drops events outside its ranges, and ends
    with a 410 ERROR event once the ranges changed."""

    def __init__(self, owner: ShardedListWatch, inner: WatchStream, ranges: RangeSet) -> None:
        self._owner = owner
        self._inner = inner
        self._ranges = ranges
        self._expired = threading.Event()

    def expire(self) -> None:
        self._expired.set()
        self._inner.close()

    def __iter__(self) -> Iterator[WatchEvent]:
        owner = self._owner
        try:
            for event in self._inner:
                if self._expired.is_set():
                    break
                if event.type in ("ADDED", "MODIFIED", "DELETED") and not owner.matches(
                        event.object, self._ranges):
                    owner.stats.add(filtered=1)
                    continue
                yield event
            if self._expired.is_set():
                yield WatchEvent("ERROR", {
                    "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
                    "reason": RANGES_CHANGED_REASON,
                    "message": "the shard ranges changed: relist with the new shardSelector",
                })
        finally:
            owner._forget(self)

    def close(self) -> None:
        self._owner._forget(self)
        self._inner.close()
