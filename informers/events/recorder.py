"""Records core/v1 Events about objects without ever blocking the caller (client-go tools/record).

:class:`EventRecorder` combines client-go's recorder, its broadcaster and the
``StartRecordingToSink`` writer (``tools/record/event.go``): :meth:`EventRecorder.event`
builds the Event and puts it on a bounded queue (dropping it when the queue is full); one
writer thread correlates each queued event (:mod:`informers.events.correlator`) and writes it
through an :class:`EventSink`, retrying failures that may be transient.
"""

from __future__ import annotations

import collections
import logging
import random
import threading
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import quote

from informers.client.api_call import api_call, status_code
from informers.clock import REAL_CLOCK, Clock
from informers.errors import StatusError
from informers.events.correlator import CorrelatorOptions, EventCorrelator, generate_event_name
from informers.meta_time import format_time, unix_nano

__all__ = [
    "DEFAULT_SLEEP_DURATION",
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "MAX_QUEUED_EVENTS",
    "MAX_TRIES_PER_EVENT",
    "ApiEventSink",
    "EventRecorder",
    "EventSink",
    "get_reference",
]

logger = logging.getLogger(__name__)

Event = dict[str, Any]

# client-go tools/record/event.go
MAX_TRIES_PER_EVENT = 12
DEFAULT_SLEEP_DURATION = 10.0
MAX_QUEUED_EVENTS = 1000

# k8s.io/api/core/v1 EventTypeNormal / EventTypeWarning
EVENT_TYPE_NORMAL = "Normal"
"""The type of an Event that reports normal operation."""
EVENT_TYPE_WARNING = "Warning"
"""The type of an Event that reports a problem."""

_REFERENCE_FIELDS = (
    "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath",
)


class EventSink(Protocol):
    """Where events are written (client-go ``EventSink``). Errors are raised.

    Raise :class:`~informers.errors.StatusError` for an answer from the server (404 on a
    patch makes the writer create instead; other codes are handled as documented on
    :class:`EventRecorder`) and anything else for "no answer".
    """

    def create(self, event: Event) -> Event:
        """Create ``event`` in its namespace; return the server's copy."""
        ...

    def patch(self, event: Event, patch: Mapping[str, Any]) -> Event:
        """Apply ``patch`` (a strategic merge patch) to the event named by ``event``."""
        ...


class ApiEventSink:
    """Writes events to ``/api/v1/namespaces/<ns>/events`` through the official ApiClient.

    Args:
        api_client: a ``kubernetes.client.ApiClient``.
        request_timeout: seconds allowed per request, ``None`` for the client's default.
    """

    def __init__(self, api_client: Any, request_timeout: float | None = None) -> None:
        self._api_client = api_client
        self._request_timeout = request_timeout

    def create(self, event: Event) -> Event:
        namespace = quote(str(event["metadata"].get("namespace", "")), safe="")
        return api_call(
            self._api_client,
            "POST",
            f"/api/v1/namespaces/{namespace}/events",
            event,
            request_timeout=self._request_timeout,
        )

    def patch(self, event: Event, patch: Mapping[str, Any]) -> Event:
        namespace = quote(str(event["metadata"].get("namespace", "")), safe="")
        name = quote(str(event["metadata"].get("name", "")), safe="")
        return api_call(
            self._api_client,
            "PATCH",
            f"/api/v1/namespaces/{namespace}/events/{name}",
            dict(patch),
            content_type="application/strategic-merge-patch+json",
            request_timeout=self._request_timeout,
        )


def get_reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The ObjectReference of ``obj`` (client-go ``reference.GetReference``), empty fields left out.

    ``obj`` is an object dict (``kind``, ``apiVersion``, ``metadata``) or already a reference
    (no ``metadata``; its own ``kind``, ``name``, ... are used). Objects from listers may lack
    ``kind`` and ``apiVersion``; set them (or pass a reference) so the event names its kind.

    Raises:
        TypeError: ``obj`` is not a mapping.
    """
    if not isinstance(obj, Mapping):
        raise TypeError(f"expected an object dict, got {type(obj).__name__}")
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        values = {
            "kind": obj.get("kind"),
            "namespace": metadata.get("namespace"),
            "name": metadata.get("name"),
            "uid": metadata.get("uid"),
            "apiVersion": obj.get("apiVersion"),
            "resourceVersion": metadata.get("resourceVersion"),
        }
    else:
        values = {field: obj.get(field) for field in _REFERENCE_FIELDS}
    return {k: v for k, v in values.items() if v}


class EventRecorder:
    """Records events on behalf of one component (client-go recorder + broadcaster + sink).

    :meth:`event` and :meth:`eventf` never block and never raise: the event gets name
    ``"<involved name>.<hex unix nanos>"``, the involved object's namespace (``"default"``
    for cluster-scoped objects), count 1, first and last timestamp from the clock's wall time,
    source ``{component, host}`` and reporting component/instance, and goes on a bounded queue.
    When the queue is full the event is dropped, counted in :attr:`dropped_events` and logged
    ("too many queued events"). Types other than ``Normal`` and ``Warning`` are rejected with
    an error log.

    The writer thread (:meth:`start`) takes events in order, correlates them and writes each
    one: a PATCH of ``count``/``lastTimestamp``/``message`` for a repeat (a create when the
    server lost the event, 404), a create otherwise. It tries each event up to
    ``max_tries`` (12) times, sleeping ``sleep_duration`` (10 s; the first sleep randomised
    to ``rand * sleep_duration`` so clients do not retry in lockstep) between tries, all on
    the injected clock. It retries when the server did not answer and on 429 and 5xx answers;
    any other server answer (409 AlreadyExists, 422 Invalid, a terminating namespace, 403) is
    logged and the event given up.

    Deviation from client-go: client-go's REST client retries 429 and 5xx answers that carry
    ``Retry-After`` by itself and then treats every Status error as final; the official Python
    client does not retry writes, so the writer treats 429 and 5xx as retryable instead.

    Thread safety: :meth:`event`, :meth:`eventf` and :meth:`annotated_eventf` may be called
    from any thread. :meth:`start` and :meth:`stop` from one controlling thread.

    Args:
        api_client: a ``kubernetes.client.ApiClient`` (unused when ``sink`` is given).
        component: ``source.component`` and ``reportingComponent``.
        host: ``source.host`` and ``reportingInstance`` (e.g. the node or pod name).
        clock: time source of timestamps, correlation and retry sleeps.
        max_queued_events: queue bound (client-go ``maxQueuedEvents``).
        correlator_options: aggregation, dedup and spam-filter knobs.
        sleep_duration: seconds between tries (client-go ``WithSleepDuration``).
        max_tries: tries per event (client-go ``maxTriesPerEvent``).
        sink: where to write; defaults to :class:`ApiEventSink` on ``api_client``.
        request_timeout: per-request timeout of the default sink.
        rng: random source of the first retry sleep.
    """

    def __init__(
        self,
        api_client: Any,
        component: str,
        host: str | None = None,
        *,
        clock: Clock = REAL_CLOCK,
        max_queued_events: int = MAX_QUEUED_EVENTS,
        correlator_options: CorrelatorOptions | None = None,
        sleep_duration: float = DEFAULT_SLEEP_DURATION,
        max_tries: int = MAX_TRIES_PER_EVENT,
        sink: EventSink | None = None,
        request_timeout: float | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.component = component
        self.host = host or ""
        self._clock = clock
        self._max_queued = max_queued_events
        self._sleep_duration = sleep_duration
        self._max_tries = max_tries
        self._sink: EventSink = sink if sink is not None else ApiEventSink(
            api_client, request_timeout
        )
        self._rng = rng or random.Random()
        self._correlator = EventCorrelator(correlator_options, clock)

        self._cond = threading.Condition()
        self._queue: collections.deque[Event] = collections.deque()
        self._dropped = 0
        self._last_nanos = 0
        self._stopped = threading.Event()
        self._writer: threading.Thread | None = None

    # -- producing ---------------------------------------------------------------------------

    @property
    def dropped_events(self) -> int:
        """Events dropped because the queue was full."""
        with self._cond:
            return self._dropped

    def pending(self) -> int:
        """Events queued and not yet taken by the writer."""
        with self._cond:
            return len(self._queue)

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        """Record an event about ``obj`` (client-go ``Event``). Never blocks."""
        self._generate_event(obj, None, type, reason, message)

    def eventf(self, obj: Mapping[str, Any], type: str, reason: str, fmt: str, *args: Any) -> None:
        """Like :meth:`event` with ``message = fmt % args`` (``fmt`` verbatim without args)."""
        self._generate_event(obj, None, type, reason, _format(fmt, args))

    def annotated_eventf(
        self,
        obj: Mapping[str, Any],
        annotations: Mapping[str, str] | None,
        type: str,
        reason: str,
        fmt: str,
        *args: Any,
    ) -> None:
        """Like :meth:`eventf`, with annotations on the Event."""
        self._generate_event(obj, annotations, type, reason, _format(fmt, args))

    def _generate_event(
        self,
        obj: Mapping[str, Any],
        annotations: Mapping[str, str] | None,
        event_type: str,
        reason: str,
        message: str,
    ) -> None:
        try:
            ref = get_reference(obj)
        except TypeError as e:
            logger.error(
                "could not construct reference, will not report event: %s (type %s reason %s)",
                e, event_type, reason,
            )
            return
        if event_type not in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING):
            logger.error(
                "unsupported event type %r for %s/%s, will not report event",
                event_type, ref.get("namespace", ""), ref.get("name", ""),
            )
            return
        event = self._make_event(ref, annotations, event_type, reason, message)
        with self._cond:
            if len(self._queue) >= self._max_queued:
                self._dropped += 1
                dropped = True
            else:
                self._queue.append(event)
                self._cond.notify()
                dropped = False
        if dropped:
            logger.error(
                "unable to record event: too many queued events, dropped event %s/%s "
                "(reason %s: %s)",
                event["metadata"]["namespace"], event["metadata"]["name"], reason, message,
            )

    def _make_event(
        self,
        ref: dict[str, Any],
        annotations: Mapping[str, str] | None,
        event_type: str,
        reason: str,
        message: str,
    ) -> Event:
        wall = self._clock.wall()
        timestamp = format_time(wall)
        # Python's clocks have microsecond resolution (Go's nanosecond): keep the names this
        # recorder generates unique by never reusing a nanosecond value.
        with self._cond:
            nanos = max(unix_nano(wall), self._last_nanos + 1)
            self._last_nanos = nanos
        metadata: dict[str, Any] = {
            "name": generate_event_name(str(ref.get("name", "")), nanos),
            "namespace": ref.get("namespace") or "default",
        }
        if annotations:
            metadata["annotations"] = dict(annotations)
        source = {"component": self.component}
        if self.host:
            source["host"] = self.host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": metadata,
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "count": 1,
            "type": event_type,
            "eventTime": None,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }

    # -- the writer --------------------------------------------------------------------------

    def start(self, stop: threading.Event | None = None) -> None:
        """Start the writer thread; it runs until :meth:`stop` (or ``stop`` is set).

        Events recorded before :meth:`start` wait in the queue. Calling it again (also after
        :meth:`stop`) is a no-op. With ``stop``, a small daemon thread waits on it and then
        stops the writer as :meth:`stop` would (without joining); it stays blocked on
        ``stop`` if the recorder is stopped otherwise.
        """
        with self._cond:
            if self._writer is not None:
                return
            self._writer = threading.Thread(
                target=self._run, name=f"event-recorder-{self.component}", daemon=True
            )
            self._writer.start()
        if stop is not None:
            threading.Thread(
                target=self._stop_when_set,
                args=(stop,),
                name=f"event-recorder-{self.component}-stop",
                daemon=True,
            ).start()

    def _stop_when_set(self, stop: threading.Event) -> None:
        stop.wait()
        self._signal_stop()

    def _signal_stop(self) -> None:
        self._stopped.set()
        with self._cond:
            self._cond.notify_all()

    def stop(self) -> None:
        """Stop the writer and wait for it.

        Events still queued get one try each (no retries, no sleeps: client-go "once the
        broadcaster is shut down, it will only try to record an event in a sink once");
        an event waiting for a retry is given up. Events recorded afterwards stay queued.
        """
        self._signal_stop()
        writer = self._writer
        if writer is not None and writer is not threading.current_thread():
            writer.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopped.is_set():
                    self._cond.wait()
                if self._stopped.is_set():
                    break
                event = self._queue.popleft()
            self._write(event)
        # Drain what is queued now with one try each.
        with self._cond:
            remaining = list(self._queue)
            self._queue.clear()
        for event in remaining:
            self._write(event)

    def _write(self, event: Event) -> None:
        """:meth:`_record_to_sink`, logging (never raising) what it did not expect."""
        try:
            self._record_to_sink(event)
        except Exception:
            logger.exception("event writer failed on %s", event["metadata"].get("name"))

    def _record_to_sink(self, event: Event) -> None:
        """Correlate one event and write it with retries (client-go ``recordToSink``)."""
        result = self._correlator.event_correlate(event)
        if result.skip or result.event is None:
            logger.debug(
                "event %s/%s skipped by the spam filter",
                event["metadata"]["namespace"], event["metadata"]["name"],
            )
            return
        to_write = result.event
        tries = 0
        while True:
            if self._record_event(to_write, result.patch, int(to_write.get("count") or 0) > 1):
                return
            tries += 1
            if tries >= self._max_tries:
                logger.error(
                    "unable to write event %s/%s (retry limit exceeded!)",
                    to_write["metadata"]["namespace"], to_write["metadata"]["name"],
                )
                return
            # Randomise the first sleep so that clients do not all retry in lockstep when the
            # API server comes back.
            delay = self._sleep_duration
            if tries == 1:
                delay *= self._rng.random()
            if self._stopped.is_set() or self._clock.sleep(delay, self._stopped):
                logger.error(
                    "unable to write event %s/%s (recorder is shut down)",
                    to_write["metadata"]["namespace"], to_write["metadata"]["name"],
                )
                return

    def _record_event(self, event: Event, patch: dict[str, Any] | None, update: bool) -> bool:
        """One try: True when written or given up, False to retry (client-go ``recordEvent``)."""
        key = f"{event['metadata']['namespace']}/{event['metadata']['name']}"
        written: Event | None = None
        err: BaseException | None = None
        if update and patch is not None:
            try:
                written = self._sink.patch(event, patch)
            except Exception as e:
                err = e
        if not update or patch is None or (err is not None and status_code(err) == 404):
            # The server may have garbage-collected the event (1 h TTL): create it again.
            event = {**event, "metadata": dict(event["metadata"])}
            event["metadata"].pop("resourceVersion", None)
            err = None
            try:
                written = self._sink.create(event)
            except Exception as e:
                err = e
        if err is None:
            if written is not None:
                self._correlator.update_state(written)
            logger.debug(
                "event %s: %s %s %s", key, event.get("type"), event.get("reason"),
                event.get("message"),
            )
            return True
        if isinstance(err, (TypeError, ValueError)) and not isinstance(err, StatusError):
            logger.error("unable to construct event %s (will not retry!): %s", key, err)
            return True
        code = status_code(err)
        if code and code != 429 and code < 500:
            if _is_already_exists(err) or _is_namespace_terminating(err):
                logger.debug("server rejected event %s (will not retry!): %s", key, err)
            else:
                logger.error("server rejected event %s (will not retry!): %s", key, err)
            return True
        # No answer (ApiConnectionError), 429, 5xx or something unexpected: retry.
        logger.error("unable to write event %s (may retry after sleeping): %r", key, err)
        return False


def _format(fmt: str, args: tuple[Any, ...]) -> str:
    if not args:
        return fmt
    try:
        return fmt % args
    except (TypeError, ValueError) as e:
        return f"{fmt} (formatting {args!r} failed: {e})"


def _is_already_exists(err: BaseException) -> bool:
    return isinstance(err, StatusError) and err.reason == "AlreadyExists"


def _is_namespace_terminating(err: BaseException) -> bool:
    # k8s.io/api/core/v1 NamespaceTerminatingCause
    return isinstance(err, StatusError) and any(
        c.get("reason") == "NamespaceTerminating" for c in err.causes
    )
