"""The endpoints controller: keeps each selector Service's core/v1 Endpoints equal to its pods.

Re-exports only. :class:`EndpointController` is the controller; the pure functions it is
built from (:func:`compute_subsets`, :func:`repack_subsets`, :func:`truncate_subsets`,
:class:`TriggerTimeTracker`, ...) are usable and tested on their own.
"""

from __future__ import annotations

from controllers.endpoint.controller import (
    CONTROLLER_NAME,
    HEADLESS_SERVICE_LABEL,
    LEADER_ELECTION_ANNOTATION,
    MAX_RETRIES,
    EndpointController,
    NotLeadingError,
    StaleEndpointsCacheError,
)
from controllers.endpoint.desired import (
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    desired_endpoints,
    endpoints_up_to_date,
    labels_correct_for_endpoints,
)
from controllers.endpoint.membership import (
    pod_endpoints_changed,
    pod_service_memberships,
    services_to_update_on_pod_change,
)
from controllers.endpoint.metrics import SYNC_RESULTS, SyncMetrics, SyncMetricsSnapshot
from controllers.endpoint.repack import (
    repack_subsets,
    sort_subsets,
    subsets_equal_ignore_resource_version,
)
from controllers.endpoint.stale_tracker import StaleEndpointsTracker
from controllers.endpoint.subsets import (
    ComputedSubsets,
    compute_subsets,
    find_port,
    is_pod_ready,
    is_service_ip_set,
    pod_to_endpoint_address,
    should_pod_be_in_endpoints,
    should_set_hostname,
)
from controllers.endpoint.trigger_time import (
    TRIGGER_TIME_ANNOTATION,
    TriggerTimeTracker,
    format_rfc3339_nano,
    parse_rfc3339,
)
from controllers.endpoint.truncate import (
    MAX_CAPACITY,
    OVER_CAPACITY_ANNOTATION,
    TRUNCATED,
    capacity_annotation_set_correctly,
    truncate_subsets,
)
from controllers.endpoint.write_echoes import Echo, WriteEchoTracker
from controllers.endpoint.writer import EndpointsWriter, EventRecorderLike

__all__ = [
    "CONTROLLER_NAME",
    "HEADLESS_SERVICE_LABEL",
    "LEADER_ELECTION_ANNOTATION",
    "MANAGED_BY_LABEL",
    "MANAGED_BY_VALUE",
    "MAX_CAPACITY",
    "MAX_RETRIES",
    "OVER_CAPACITY_ANNOTATION",
    "SYNC_RESULTS",
    "TRIGGER_TIME_ANNOTATION",
    "TRUNCATED",
    "ComputedSubsets",
    "Echo",
    "EndpointController",
    "EndpointsWriter",
    "EventRecorderLike",
    "NotLeadingError",
    "StaleEndpointsCacheError",
    "StaleEndpointsTracker",
    "SyncMetrics",
    "SyncMetricsSnapshot",
    "TriggerTimeTracker",
    "WriteEchoTracker",
    "capacity_annotation_set_correctly",
    "compute_subsets",
    "desired_endpoints",
    "endpoints_up_to_date",
    "find_port",
    "format_rfc3339_nano",
    "is_pod_ready",
    "is_service_ip_set",
    "labels_correct_for_endpoints",
    "parse_rfc3339",
    "pod_endpoints_changed",
    "pod_service_memberships",
    "pod_to_endpoint_address",
    "repack_subsets",
    "services_to_update_on_pod_change",
    "should_pod_be_in_endpoints",
    "should_set_hostname",
    "sort_subsets",
    "subsets_equal_ignore_resource_version",
    "truncate_subsets",
]
