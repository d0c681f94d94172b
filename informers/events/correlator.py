"""Aggregates, counts and rate-limits events before they are written (client-go EventCorrelator).

Mirrors client-go ``tools/record/events_cache.go``. For each event, in this order:

1. **Aggregate**: events that differ only in their message are "similar". Once
   ``max_events`` (10) distinct messages were seen for one similar group, each with less than
   ``max_interval_seconds`` (600) since the previous one, a combined event with message
   ``"(combined from similar events): " + message`` is emitted instead, cached under the
   group's key so that later ones raise its count.
2. **Count** (dedup): an event identical to one already written (same source, involved object
   including fieldPath, type, reason and message) reuses that event's name and
   firstTimestamp and gets ``count + 1``; it is written as a PATCH of ``count``,
   ``lastTimestamp`` and ``message``.
3. **Spam filter**: a token bucket per source + involved object + type (reason and message
   excluded) allows a burst of 25 and then one event every 300 seconds; the rest are skipped.

Events are plain dicts shaped like core/v1 Events. Each cache is an LRU of 4096 entries.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

from informers.clock import REAL_CLOCK, Clock
from informers.meta_time import format_time, unix_nano
from informers.name_validation import is_dns1123_subdomain

__all__ = [
    "DEFAULT_AGGREGATE_INTERVAL_SECONDS",
    "DEFAULT_AGGREGATE_MAX_EVENTS",
    "DEFAULT_SPAM_BURST",
    "DEFAULT_SPAM_QPS",
    "MAX_LRU_CACHE_ENTRIES",
    "CorrelateResult",
    "CorrelatorOptions",
    "EventAggregator",
    "EventCorrelator",
    "EventLogger",
    "EventSourceObjectSpamFilter",
    "TokenBucket",
    "event_aggregator_by_reason_func",
    "event_aggregator_by_reason_message_func",
    "generate_event_name",
    "get_event_key",
    "get_spam_key",
]

Event = dict[str, Any]

# client-go tools/record/events_cache.go
MAX_LRU_CACHE_ENTRIES = 4096
DEFAULT_AGGREGATE_MAX_EVENTS = 10
DEFAULT_AGGREGATE_INTERVAL_SECONDS = 600
DEFAULT_SPAM_BURST = 25
DEFAULT_SPAM_QPS = 1.0 / 300.0

_EPOCH_TIME = "1970-01-01T00:00:00Z"

# apimachinery validation NameIsDNSSubdomain: at most 253 characters of this form.


def _field(event: Event, *path: str) -> str:
    node: Any = event
    for key in path:
        if not isinstance(node, dict):
            return ""
        node = node.get(key)
    return "" if node is None else str(node)


# The parts of each key, in client-go's order (events_cache.go getEventKey, getSpamKey,
# EventAggregatorByReasonFunc).
_Fields = tuple[tuple[str, ...], ...]
_SOURCE_AND_OBJECT_NAME: _Fields = (
    ("source", "component"), ("source", "host"),
    ("involvedObject", "kind"), ("involvedObject", "namespace"), ("involvedObject", "name"),
)
_OBJECT_UID_AND_TYPE: _Fields = (
    ("involvedObject", "uid"), ("involvedObject", "apiVersion"), ("type",),
)
_EVENT_KEY: _Fields = (
    *_SOURCE_AND_OBJECT_NAME, ("involvedObject", "fieldPath"), *_OBJECT_UID_AND_TYPE,
    ("reason",), ("message",),
)
_SPAM_KEY: _Fields = (*_SOURCE_AND_OBJECT_NAME, *_OBJECT_UID_AND_TYPE)
_AGGREGATE_KEY: _Fields = (
    *_SOURCE_AND_OBJECT_NAME, *_OBJECT_UID_AND_TYPE,
    ("reason",), ("reportingComponent",), ("reportingInstance",),
)


def _key(event: Event, fields: _Fields) -> str:
    """The values of ``fields`` (paths into the event) concatenated, as client-go's keys are."""
    return "".join(_field(event, *path) for path in fields)


def get_event_key(event: Event) -> str:
    """The dedup key: source, involved object (with fieldPath), type, reason and message."""
    return _key(event, _EVENT_KEY)


def get_spam_key(event: Event) -> str:
    """The spam-filter key: source, involved object (without fieldPath) and type."""
    return _key(event, _SPAM_KEY)


def event_aggregator_by_reason_func(event: Event) -> tuple[str, str]:
    """``(aggregate key, local key)``: similar events share everything except the message."""
    return _key(event, _AGGREGATE_KEY), _field(event, "message")


def event_aggregator_by_reason_message_func(event: Event) -> str:
    """The combined event's message."""
    return "(combined from similar events): " + _field(event, "message")


def generate_event_name(ref_name: str, unix_nanos: int) -> str:
    """``"<ref_name>.<hex unix nanos>"``, or a UUID when that is not a valid DNS subdomain.

    client-go tools/record/util ``GenerateEventName`` (issue 127594).
    """
    name = f"{ref_name}.{unix_nanos:x}"
    if not is_dns1123_subdomain(name):
        name = str(uuid.uuid4())
    return name


@dataclass
class CorrelatorOptions:
    """Knobs of the correlator (client-go ``CorrelatorOptions``); defaults from events_cache.go.

    Attributes:
        lru_cache_size: entries of each of the three LRU caches.
        burst_size: spam filter token-bucket burst per source + object.
        qps: spam filter refill rate, tokens per second.
        key_func: groups events for aggregation: ``event -> (aggregate key, local key)``.
        message_func: the combined event's message.
        max_events: distinct local keys in a group before aggregation starts.
        max_interval_seconds: a group is forgotten when no similar event came for longer.
        clock: time source; ``None`` means the recorder's clock.
        spam_key_func: the spam filter's key.
    """

    lru_cache_size: int = MAX_LRU_CACHE_ENTRIES
    burst_size: int = DEFAULT_SPAM_BURST
    qps: float = DEFAULT_SPAM_QPS
    key_func: Callable[[Event], tuple[str, str]] = event_aggregator_by_reason_func
    message_func: Callable[[Event], str] = event_aggregator_by_reason_message_func
    max_events: int = DEFAULT_AGGREGATE_MAX_EVENTS
    max_interval_seconds: float = DEFAULT_AGGREGATE_INTERVAL_SECONDS
    clock: Clock | None = None
    spam_key_func: Callable[[Event], str] = get_spam_key


class TokenBucket:
    """A passive token bucket (golang.org/x/time/rate ``Limiter.Allow``): starts full.

    Not thread-safe.
    """

    __slots__ = ("_burst", "_clock", "_last", "_qps", "_tokens")

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        self._qps = qps
        self._burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock.now()

    def try_accept(self) -> bool:
        """Take a token if one is available now."""
        now = self._clock.now()
        elapsed = max(0.0, now - self._last)
        tokens = min(float(self._burst), self._tokens + elapsed * self._qps)
        if tokens < 1.0:
            return False  # x/time/rate leaves its state unchanged on a refusal
        self._tokens = tokens - 1.0
        self._last = now
        return True


class EventSourceObjectSpamFilter:
    """Limits how many events one source may emit about one object (a bucket per spam key)."""

    def __init__(
        self,
        lru_cache_size: int,
        burst: int,
        qps: float,
        clock: Clock,
        spam_key_func: Callable[[Event], str] = get_spam_key,
    ) -> None:
        self._cache: LRUCache[str, TokenBucket] = LRUCache(maxsize=lru_cache_size)
        self._burst = burst
        self._qps = qps
        self._clock = clock
        self._spam_key_func = spam_key_func

    def filter(self, event: Event) -> bool:
        """True when the event must be skipped (its bucket is empty)."""
        key = self._spam_key_func(event)
        bucket = self._cache.get(key)
        if bucket is None:
            bucket = TokenBucket(self._qps, self._burst, self._clock)
        skip = not bucket.try_accept()
        self._cache[key] = bucket
        return skip


class _AggregateRecord:
    __slots__ = ("last_seen", "local_keys")

    def __init__(self) -> None:
        self.local_keys: set[str] = set()
        self.last_seen: float | None = None


class EventAggregator:
    """Replaces a flood of similar events by one combined event (client-go ``EventAggregator``)."""

    def __init__(
        self,
        lru_cache_size: int,
        key_func: Callable[[Event], tuple[str, str]],
        message_func: Callable[[Event], str],
        max_events: int,
        max_interval_seconds: float,
        clock: Clock,
    ) -> None:
        self._cache: LRUCache[str, _AggregateRecord] = LRUCache(maxsize=lru_cache_size)
        self._key_func = key_func
        self._message_func = message_func
        self._max_events = max_events
        self._max_interval = max_interval_seconds
        self._clock = clock

    def event_aggregate(self, event: Event) -> tuple[Event, str]:
        """Return the event to write (``event`` itself or a combined one) and its cache key.

        The key is the event's full key (:func:`get_event_key`) for an event passed through,
        the aggregate key for a combined event (so later combined events count it up).
        """
        now = self._clock.now()
        event_key = get_event_key(event)
        aggregate_key, local_key = self._key_func(event)
        record = self._cache.get(aggregate_key)
        if (
            record is None
            or record.last_seen is None
            or now - record.last_seen > self._max_interval
        ):
            record = _AggregateRecord()
        record.local_keys.add(local_key)
        record.last_seen = now
        self._cache[aggregate_key] = record
        if len(record.local_keys) < self._max_events:
            return event, event_key
        # Do not let the set grow past the maximum (client-go PopAny).
        record.local_keys.pop()
        wall = self._clock.wall()
        timestamp = format_time(wall)
        involved = event.get("involvedObject") or {}
        combined: Event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{involved.get('name', '')}.{unix_nano(wall):x}",
                "namespace": (event.get("metadata") or {}).get("namespace", ""),
            },
            "involvedObject": involved,
            "reason": event.get("reason", ""),
            "message": self._message_func(event),
            "source": event.get("source") or {},
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "count": 1,
            "type": event.get("type", ""),
            # client-go's combined event leaves ReportingController/Instance and EventTime
            # unset; they are written as their zero values.
            "eventTime": None,
            "reportingComponent": "",
            "reportingInstance": "",
        }
        return combined, aggregate_key


class _EventLog:
    __slots__ = ("count", "first_timestamp", "name", "resource_version")

    def __init__(self, event: Event) -> None:
        """What is remembered of ``event``: its count, firstTimestamp, name and
        resourceVersion."""
        metadata = event.get("metadata") or {}
        self.count = int(event.get("count") or 0)
        self.first_timestamp = event.get("firstTimestamp")
        self.name = str(metadata.get("name", ""))
        self.resource_version = str(metadata.get("resourceVersion", ""))


class EventLogger:
    """Counts occurrences of identical events (client-go ``eventLogger``)."""

    def __init__(self, lru_cache_size: int) -> None:
        self._cache: LRUCache[str, _EventLog] = LRUCache(maxsize=lru_cache_size)

    def event_observe(self, event: Event, key: str) -> tuple[Event, dict[str, Any] | None]:
        """Record an occurrence; return the event to write and, for a repeat, its patch.

        A repeat takes the cached name, resourceVersion and firstTimestamp and
        ``count = previous + 1``. The patch is client-go's two-way strategic merge patch
        between the event with count 0, lastTimestamp at the epoch and no message, and the
        event: ``{"count": n, "lastTimestamp": t, "message": m}`` (``message`` only when not
        empty).
        """
        event = {**event, "metadata": dict(event.get("metadata") or {})}
        patch: dict[str, Any] | None = None
        last = self._cache.get(key)
        if last is not None and last.count > 0:
            event["metadata"]["name"] = last.name
            if last.resource_version:
                event["metadata"]["resourceVersion"] = last.resource_version
            else:
                event["metadata"].pop("resourceVersion", None)
            event["firstTimestamp"] = last.first_timestamp
            event["count"] = last.count + 1
            patch = {"count": event["count"]}
            if event.get("lastTimestamp") != _EPOCH_TIME:
                patch["lastTimestamp"] = event.get("lastTimestamp")
            if event.get("message"):
                patch["message"] = event["message"]
        self._cache[key] = _EventLog(event)
        return event, patch

    def update_state(self, event: Event) -> None:
        """Remember the server's copy of a written event (its name and resourceVersion)."""
        self._cache[get_event_key(event)] = _EventLog(event)


@dataclass
class CorrelateResult:
    """What to do with one event (client-go ``EventCorrelateResult``).

    Attributes:
        event: the event to write (``None`` when skipped).
        patch: the patch to send when ``event["count"] > 1``.
        skip: drop the event (spam filter).
    """

    event: Event | None
    patch: dict[str, Any] | None = None
    skip: bool = False


class EventCorrelator:
    """Aggregation, counting and spam filtering, in that order (client-go ``EventCorrelator``).

    Thread-safe (one lock around each call); the recorder's writer thread is its only user.
    """

    def __init__(self, options: CorrelatorOptions | None = None, clock: Clock = REAL_CLOCK) -> None:
        opts = options or CorrelatorOptions()
        correlator_clock = opts.clock or clock
        self._lock = threading.Lock()
        self._spam_filter = EventSourceObjectSpamFilter(
            opts.lru_cache_size, opts.burst_size, opts.qps, correlator_clock, opts.spam_key_func
        )
        self._aggregator = EventAggregator(
            opts.lru_cache_size,
            opts.key_func,
            opts.message_func,
            opts.max_events,
            opts.max_interval_seconds,
            correlator_clock,
        )
        self._logger = EventLogger(opts.lru_cache_size)

    def event_correlate(self, event: Event) -> CorrelateResult:
        """Aggregate, count and filter one event."""
        with self._lock:
            aggregated, key = self._aggregator.event_aggregate(event)
            observed, patch = self._logger.event_observe(aggregated, key)
            if self._spam_filter.filter(observed):
                return CorrelateResult(event=None, skip=True)
            return CorrelateResult(event=observed, patch=patch)

    def update_state(self, event: Event) -> None:
        """Feed back the server's copy of a written event."""
        with self._lock:
            self._logger.update_state(event)
