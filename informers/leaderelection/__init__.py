"""Leader election on a coordination.k8s.io/v1 Lease (client-go ``tools/leaderelection``).

Typical use::

    lock = LeaseLock(api_client, "kube-system", "my-controller", identity=hostname,
                     request_timeout=10.0)
    elector = LeaderElector(lock, on_started_leading=run_controllers,
                            on_stopped_leading=shut_down, release_on_cancel=True)
    elector.run(stop_event)   # blocks until stop_event is set or leadership is lost

and in the code the lease guards, before each action: ``if not elector.leading(): ...``
(false as soon as the last renewal is older than the renew deadline, e.g. after a pause).
"""

from __future__ import annotations

from informers.leaderelection.leader_elector import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    JITTER_FACTOR,
    LeaderElector,
)
from informers.leaderelection.lease_lock import LeaseLock
from informers.leaderelection.metrics import (
    LeaderMetric,
    MetricsProvider,
    NoopMetricsProvider,
    PrometheusMetricsProvider,
    get_provider,
    set_provider,
)
from informers.leaderelection.resource_lock import LeaderElectionRecord, ResourceLock

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaderMetric",
    "LeaseLock",
    "MetricsProvider",
    "NoopMetricsProvider",
    "PrometheusMetricsProvider",
    "ResourceLock",
    "get_provider",
    "set_provider",
]
