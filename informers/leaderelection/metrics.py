"""Leader-election metrics: the provider hook, its no-op default and a Prometheus provider.

Mirrors client-go ``tools/leaderelection/metrics.go``; names and labels come from
component-base ``metrics/prometheus/clientgo/leaderelection/metrics.go``:

* ``leader_election_master_status{name}``: gauge, 1 while this process leads the named lease,
  0 otherwise (set to 0 when an elector is constructed);
* ``leader_election_slowpath_total{name}``: counter of renewals by the leader that had to
  re-read the lease (the optimistic update failed, or the fast path was not possible).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Protocol

from informers.global_provider import GlobalProvider

__all__ = [
    "MASTER_STATUS_METRIC",
    "SLOWPATH_METRIC",
    "LeaderMetric",
    "MetricsProvider",
    "NoopMetricsProvider",
    "PrometheusMetricsProvider",
    "get_provider",
    "set_provider",
]

MASTER_STATUS_METRIC = "leader_election_master_status"
SLOWPATH_METRIC = "leader_election_slowpath_total"


class LeaderMetric(Protocol):
    """The metrics of leader election (client-go ``LeaderMetric``). Must be thread-safe."""

    def on(self, name: str) -> None:
        """This process leads the lease ``name``."""
        ...

    def off(self, name: str) -> None:
        """This process does not lead the lease ``name``."""
        ...

    def slowpath_exercised(self, name: str) -> None:
        """The leader renewed ``name`` through the slow path (Get, then Update)."""
        ...


class MetricsProvider(Protocol):
    """Creates the metric object of each elector (client-go ``MetricsProvider``)."""

    def new_leader_metric(self) -> LeaderMetric: ...


class _NoopMetric:
    __slots__ = ()

    def on(self, name: str) -> None:
        pass

    def off(self, name: str) -> None:
        pass

    def slowpath_exercised(self, name: str) -> None:
        pass


class NoopMetricsProvider:
    """The default: no metrics (client-go ``noopMetricsProvider``)."""

    def new_leader_metric(self) -> LeaderMetric:
        return _NoopMetric()


class _PrometheusMetric:
    __slots__ = ("_slowpath", "_status")

    def __init__(self, status: Any, slowpath: Any) -> None:
        self._status = status
        self._slowpath = slowpath

    def on(self, name: str) -> None:
        self._status.labels(name=name).set(1)

    def off(self, name: str) -> None:
        self._status.labels(name=name).set(0)

    def slowpath_exercised(self, name: str) -> None:
        self._slowpath.labels(name=name).inc()


class PrometheusMetricsProvider:
    """Leader-election metrics in a ``prometheus_client`` registry.

    The two metric families are registered once per registry (a second provider on the same
    registry shares them). Needs ``pip install kube-informers[metrics]``.

    Args:
        registry: a ``prometheus_client.CollectorRegistry``; ``None`` for the default one.
    """

    _families: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()
    _families_lock = threading.Lock()

    def __init__(self, registry: Any = None) -> None:
        try:
            import prometheus_client
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError(
                "PrometheusMetricsProvider needs prometheus_client: "
                "pip install kube-informers[metrics]"
            ) from e
        if registry is None:
            registry = prometheus_client.REGISTRY
        with self._families_lock:
            families = self._families.get(registry)
            if families is None:
                status = prometheus_client.Gauge(
                    MASTER_STATUS_METRIC,
                    "Gauge of if the reporting system is master of the relevant lease, "
                    "0 indicates backup, 1 indicates master. 'name' is the string used to "
                    "identify the lease. Please make sure to group by name.",
                    ["name"],
                    registry=registry,
                )
                slowpath = prometheus_client.Counter(
                    SLOWPATH_METRIC,
                    "Total number of slow path exercised in renewing leader leases. 'name' "
                    "is the string used to identify the lease. Please make sure to group by "
                    "name.",
                    ["name"],
                    registry=registry,
                )
                families = (status, slowpath)
                self._families[registry] = families
        self._status: Any = families[0]
        self._slowpath: Any = families[1]

    def new_leader_metric(self) -> LeaderMetric:
        return _PrometheusMetric(self._status, self._slowpath)


_provider: GlobalProvider[MetricsProvider] = GlobalProvider(NoopMetricsProvider())


def set_provider(provider: MetricsProvider) -> MetricsProvider:
    """Set the provider used by electors created afterwards without ``metrics_provider``.

    Unlike client-go's ``SetProvider`` (only the first call counts), a later call replaces
    the provider. Returns the previous provider.
    """
    return _provider.set(provider)


def get_provider() -> MetricsProvider:
    """The process-wide provider (no-op by default)."""
    return _provider.get()
