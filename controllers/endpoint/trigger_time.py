"""Computes the ``endpoints.kubernetes.io/last-change-trigger-time`` of each Service's Endpoints.

The Python counterpart of ``TriggerTimeTracker`` in k8s.io/endpointslice v0.36.3
``util/trigger_time_tracker.go`` (``staging/src/k8s.io/endpointslice`` in the kubernetes
repository). Times are integer nanoseconds since the Unix epoch (UTC), so that RFC 3339
timestamps with sub-microsecond fractions round-trip exactly as Go's ``time.Time`` does;
``None`` is Go's zero time.
"""

from __future__ import annotations

import datetime
import functools
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controllers.endpoint.json_values import as_map as _map

__all__ = [
    "TRIGGER_TIME_ANNOTATION",
    "TriggerTimeTracker",
    "format_rfc3339_nano",
    "parse_rfc3339",
    "pod_trigger_time",
    "service_trigger_time",
]

logger = logging.getLogger(__name__)

TRIGGER_TIME_ANNOTATION = "endpoints.kubernetes.io/last-change-trigger-time"
"""k8s.io/api core/v1 ``EndpointsLastChangeTriggerTime``."""

_NS_PER_SECOND = 1_000_000_000
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
# Go's zero time.Time, 0001-01-01T00:00:00Z: IsZero() is true for it, so it counts as no time.
_GO_ZERO_TIME = -62_135_596_800 * _NS_PER_SECOND
# Go's time.Parse(time.RFC3339, ...): a fraction of any length (after '.' or ',') is accepted
# when parsing, and the zone is 'Z' or ±hh:mm.
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:\d{2})"
)


_PARSED_CACHE_SIZE = 4096
"""Timestamps whose parse is remembered. Every sync parses the Ready condition's
``lastTransitionTime`` of each of the Service's pods, nearly all unchanged since the previous
sync, and a cached parse is about fifty times cheaper than a fresh one."""


def parse_rfc3339(text: Any) -> int | None:
    """An RFC 3339 timestamp as nanoseconds since the epoch; ``None`` if absent or malformed.

    Fractions beyond nanoseconds are cut off, as Go does.
    """
    if not isinstance(text, str):
        return None
    return _parse_rfc3339(text)


@functools.lru_cache(maxsize=_PARSED_CACHE_SIZE)
def _parse_rfc3339(text: str) -> int | None:
    match = _RFC3339.fullmatch(text)
    if match is None:
        logger.debug("ignoring malformed timestamp %r", text)
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7), match.group(8)
    try:
        if zone == "Z":
            offset = datetime.timedelta(0)
        else:
            sign = 1 if zone[0] == "+" else -1
            hours, minutes = int(zone[1:3]), int(zone[4:6])
            if hours > 23 or minutes > 59:
                raise ValueError(zone)
            offset = sign * datetime.timedelta(hours=hours, minutes=minutes)
        moment = datetime.datetime(
            year, month, day, hour, minute, second, tzinfo=datetime.timezone(offset)
        )
    except ValueError:
        logger.debug("ignoring malformed timestamp %r", text)
        return None
    delta = moment - _EPOCH
    nanos = int((fraction or "0")[:9].ljust(9, "0"))
    value = (delta.days * 86_400 + delta.seconds) * _NS_PER_SECOND + nanos
    return None if value == _GO_ZERO_TIME else value


def format_rfc3339_nano(nanos: int) -> str:
    """Go's ``t.UTC().Format(time.RFC3339Nano)``: trailing fraction zeros dropped, ``Z`` zone."""
    seconds, fraction = divmod(nanos, _NS_PER_SECOND)
    moment = _EPOCH + datetime.timedelta(seconds=seconds)
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    if fraction:
        text += "." + f"{fraction:09d}".rstrip("0")
    return text + "Z"


def pod_trigger_time(pod: Mapping[str, Any]) -> int | None:
    """The ``lastTransitionTime`` of the pod's first Ready condition (zero if none)."""
    for condition in _map(pod.get("status")).get("conditions") or ():
        if (condition.__class__ is dict or isinstance(condition, Mapping)) and condition.get(
                "type") == "Ready":
            return parse_rfc3339(condition.get("lastTransitionTime"))
    return None


def service_trigger_time(service: Mapping[str, Any]) -> int | None:
    """The Service's ``metadata.creationTimestamp`` (zero if none)."""
    return parse_rfc3339(_map(service.get("metadata")).get("creationTimestamp"))


@dataclass
class _ServiceState:
    last_service_trigger_time: int | None = None
    last_pod_trigger_times: dict[str, int] = field(default_factory=dict)
    # id(pod) -> (pod, its name, its trigger time), for the pods of the last computation: a
    # cached pod that is the very same object is not read again (informer caches replace an
    # object on every change and never modify one; holding it keeps its id from being reused).
    pods: dict[int, tuple[Mapping[str, Any], str, int | None]] = field(default_factory=dict)


class TriggerTimeTracker:
    """Remembers, per Service, the trigger times seen at its last sync (``TriggerTimeTracker``).

    :meth:`compute_endpoint_last_change_trigger_time` returns the earliest trigger time that
    changed since the previous call for the same Service: pods' Ready-condition
    ``lastTransitionTime`` newer than recorded for the same pod name, and the Service's
    ``creationTimestamp`` if newer than recorded. The very first call for a Service returns its
    ``creationTimestamp`` instead. Like Go's, the result can be wrong when an object changes
    several times between two syncs.

    Thread safety: calls for *different* Services may run concurrently (a lock guards the
    state map); calls for the same Service must not overlap, which the work queue guarantees
    (it never hands one key to two workers).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[tuple[str, str], _ServiceState] = {}

    def compute_endpoint_last_change_trigger_time(
        self, namespace: str, service: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
    ) -> int | None:
        """The trigger time to annotate, in nanoseconds, or ``None`` (remove the annotation).

        Always updates the recorded state, even when the caller then writes nothing.
        """
        name = _map(service.get("metadata")).get("name")
        key = (namespace, name if isinstance(name, str) else "")
        with self._lock:
            previous = self._states.get(key)
        was_known = previous is not None
        state = previous if previous is not None else _ServiceState()

        min_changed: int | None = None
        pod_times: dict[str, int] = {}
        seen = state.pods
        pods_now: dict[int, tuple[Mapping[str, Any], str, int | None]] = {}
        for pod in pods:
            hit = seen.get(id(pod))
            if hit is not None and hit[0] is pod:
                _, pod_name, pod_time = hit
            else:
                pod_time = pod_trigger_time(pod)
                name = _map(pod.get("metadata")).get("name")
                pod_name = name if isinstance(name, str) else ""
            pods_now[id(pod)] = (pod, pod_name, pod_time)
            if pod_time is None:
                continue
            pod_times[pod_name] = pod_time
            last = state.last_pod_trigger_times.get(pod_name)
            changed = last is None or pod_time > last
            if changed and (min_changed is None or pod_time < min_changed):
                min_changed = pod_time
        service_time = service_trigger_time(service)
        last_service = state.last_service_trigger_time
        if (
            service_time is not None
            and (last_service is None or service_time > last_service)
            and (min_changed is None or service_time < min_changed)
        ):
            min_changed = service_time

        with self._lock:
            self._states[key] = _ServiceState(service_time, pod_times, pods_now)
        if not was_known:
            return service_time
        return min_changed

    def delete_service(self, namespace: str, name: str) -> None:
        """Forget the Service: its next computation counts as a new Service again."""
        with self._lock:
            self._states.pop((namespace, name), None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._states)
