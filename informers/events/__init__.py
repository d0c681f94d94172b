"""Event recording (client-go ``tools/record``): a non-blocking recorder, the correlator, sinks.

Typical use::

    recorder = EventRecorder(api_client, "endpoint-controller", host=pod_name)
    recorder.start(stop_event)
    recorder.eventf(service, "Warning", "FailedToUpdateEndpoint",
                    "Failed to update endpoint %s/%s: %s", ns, name, err)
"""

from __future__ import annotations

from informers.events.correlator import (
    CorrelateResult,
    CorrelatorOptions,
    EventAggregator,
    EventCorrelator,
    EventLogger,
    EventSourceObjectSpamFilter,
    TokenBucket,
    event_aggregator_by_reason_func,
    event_aggregator_by_reason_message_func,
    generate_event_name,
    get_event_key,
    get_spam_key,
)
from informers.events.recorder import (
    EVENT_TYPE_NORMAL,
    EVENT_TYPE_WARNING,
    ApiEventSink,
    EventRecorder,
    EventSink,
    get_reference,
)

__all__ = [
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "ApiEventSink",
    "CorrelateResult",
    "CorrelatorOptions",
    "EventAggregator",
    "EventCorrelator",
    "EventLogger",
    "EventRecorder",
    "EventSink",
    "EventSourceObjectSpamFilter",
    "TokenBucket",
    "event_aggregator_by_reason_func",
    "event_aggregator_by_reason_message_func",
    "generate_event_name",
    "get_event_key",
    "get_reference",
    "get_spam_key",
]
