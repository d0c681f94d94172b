"""Counts what each controller does: reconciles by result, errors, durations and workers.

The names, labels, help texts and buckets are controller-runtime's
(``pkg/internal/controller/metrics/metrics.go``), every series labelled by ``controller`` (the
controller's name):

* ``controller_runtime_reconcile_total{controller,result}``: counter; ``result`` is
  ``success``, ``error``, ``requeue`` or ``requeue_after``;
* ``controller_runtime_reconcile_errors_total{controller}``: counter of reconciles that raised
  (terminal errors included, as in controller-runtime);
* ``controller_runtime_terminal_reconcile_errors_total{controller}``: counter of
  :class:`~informers.errors.TerminalError` s;
* ``controller_runtime_reconcile_time_seconds{controller}``: histogram of reconcile durations;
* ``controller_runtime_max_concurrent_reconciles{controller}``: gauge, the worker count;
* ``controller_runtime_active_workers{controller}``: gauge, workers inside a reconcile now.

One more series is ours, because controller-runtime retries forever and has no such metric:

* ``controller_runtime_reconcile_dropped_total{controller}``: counter of keys given up after
  ``max_retries`` failed retries.

The controller's work queue reports the work-queue metrics (``workqueue_depth``,
``workqueue_adds_total``, ``workqueue_queue_duration_seconds``, ...; label ``name`` = the
controller's name) through :meth:`ControllerMetricsProvider.workqueue_metrics_provider`.

The process-wide provider (:func:`get_provider`) is a no-op until :func:`set_provider` is
called; :class:`PrometheusMetricsProvider` exports to a ``prometheus_client`` registry (the
``metrics`` extra). As in controller-runtime, every series of a controller is created at zero
when the controller is built, so it exists before the first reconcile.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from informers.global_provider import GlobalProvider
from informers.workqueue.metrics import MetricsProvider as WorkqueueMetricsProvider
from informers.workqueue.metrics import NoopMetricsProvider as NoopWorkqueueMetricsProvider

__all__ = [
    "ACTIVE_WORKERS_METRIC",
    "MAX_CONCURRENT_RECONCILES_METRIC",
    "RECONCILE_DROPPED_METRIC",
    "RECONCILE_ERRORS_METRIC",
    "RECONCILE_TIME_BUCKETS",
    "RECONCILE_TIME_METRIC",
    "RECONCILE_TOTAL_METRIC",
    "RESULTS",
    "RESULT_ERROR",
    "RESULT_REQUEUE",
    "RESULT_REQUEUE_AFTER",
    "RESULT_SUCCESS",
    "TERMINAL_RECONCILE_ERRORS_METRIC",
    "ControllerMetrics",
    "ControllerMetricsProvider",
    "NoopMetricsProvider",
    "PrometheusMetricsProvider",
    "get_provider",
    "set_provider",
]

RECONCILE_TOTAL_METRIC = "controller_runtime_reconcile_total"
RECONCILE_ERRORS_METRIC = "controller_runtime_reconcile_errors_total"
TERMINAL_RECONCILE_ERRORS_METRIC = "controller_runtime_terminal_reconcile_errors_total"
RECONCILE_TIME_METRIC = "controller_runtime_reconcile_time_seconds"
MAX_CONCURRENT_RECONCILES_METRIC = "controller_runtime_max_concurrent_reconciles"
ACTIVE_WORKERS_METRIC = "controller_runtime_active_workers"
RECONCILE_DROPPED_METRIC = "controller_runtime_reconcile_dropped_total"

# Values of the ``result`` label (controller-runtime controller.go labelSuccess, ...).
RESULT_SUCCESS = "success"
RESULT_ERROR = "error"
RESULT_REQUEUE = "requeue"
RESULT_REQUEUE_AFTER = "requeue_after"
RESULTS = (RESULT_ERROR, RESULT_REQUEUE_AFTER, RESULT_REQUEUE, RESULT_SUCCESS)

RECONCILE_TIME_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
    40, 50, 60,
)  # fmt: skip
"""Buckets of the reconcile-time histogram, 5 ms to 60 s (controller-runtime metrics.go)."""


class ControllerMetrics(Protocol):
    """The metrics of one controller. Called from its worker threads: must be thread-safe."""

    def reconciled(self, result: str, seconds: float) -> None:
        """One reconcile ended with ``result`` (one of :data:`RESULTS`) after ``seconds``."""
        ...

    def reconcile_error(self, terminal: bool) -> None:
        """One reconcile raised; ``terminal`` for a :class:`~informers.errors.TerminalError`."""
        ...

    def dropped(self) -> None:
        """A key was given up after its last allowed retry."""
        ...

    def active_workers(self, delta: int) -> None:
        """``delta`` (+1 or -1) workers entered or left a reconcile."""
        ...


class ControllerMetricsProvider(Protocol):
    """Creates the metrics of each controller (the counterpart of the work queue's provider)."""

    def new_controller_metrics(self, controller: str, workers: int) -> ControllerMetrics:
        """The metrics of ``controller``, every series initialised (max concurrent reconciles
        set to ``workers``, the rest to zero). Called once per controller."""
        ...

    def workqueue_metrics_provider(self) -> WorkqueueMetricsProvider:
        """The provider the controller's work queue reports to."""
        ...


class _NoopControllerMetrics:
    __slots__ = ()

    def reconciled(self, result: str, seconds: float) -> None:
        pass

    def reconcile_error(self, terminal: bool) -> None:
        pass

    def dropped(self) -> None:
        pass

    def active_workers(self, delta: int) -> None:
        pass


_NOOP = _NoopControllerMetrics()


class NoopMetricsProvider:
    """The default: no controller metrics and no work-queue metrics (so no queue metrics
    thread either)."""

    def new_controller_metrics(self, controller: str, workers: int) -> ControllerMetrics:
        return _NOOP

    def workqueue_metrics_provider(self) -> WorkqueueMetricsProvider:
        return NoopWorkqueueMetricsProvider()


class _PrometheusControllerMetrics:
    __slots__ = ("_active", "_dropped", "_errors", "_terminal", "_time", "_total")

    def __init__(self, families: _Families, controller: str, workers: int) -> None:
        self._total = {r: families.total.labels(controller, r) for r in RESULTS}
        self._errors = families.errors.labels(controller)
        self._terminal = families.terminal.labels(controller)
        self._time = families.time.labels(controller)
        self._active = families.active.labels(controller)
        self._dropped = families.dropped.labels(controller)
        # controller-runtime initMetrics: every series exists (at 0) before the first event.
        for counter in self._total.values():
            counter.inc(0)
        self._errors.inc(0)
        self._terminal.inc(0)
        self._dropped.inc(0)
        self._active.set(0)
        families.max_concurrent.labels(controller).set(workers)

    def reconciled(self, result: str, seconds: float) -> None:
        self._total[result].inc()
        self._time.observe(seconds)

    def reconcile_error(self, terminal: bool) -> None:
        self._errors.inc()
        if terminal:
            self._terminal.inc()

    def dropped(self) -> None:
        self._dropped.inc()

    def active_workers(self, delta: int) -> None:
        self._active.inc(delta)


class _Families:
    """The metric families registered in one registry."""

    __slots__ = (
        "active",
        "dropped",
        "errors",
        "max_concurrent",
        "registry",
        "terminal",
        "time",
        "total",
        "workqueue",
    )

    def __init__(self, pc: Any, registry: Any, workqueue: WorkqueueMetricsProvider | None) -> None:
        self.registry = registry
        self.total = pc.Counter(
            RECONCILE_TOTAL_METRIC,
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=registry,
        )
        self.errors = pc.Counter(
            RECONCILE_ERRORS_METRIC,
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=registry,
        )
        self.terminal = pc.Counter(
            TERMINAL_RECONCILE_ERRORS_METRIC,
            "Total number of terminal reconciliation errors per controller",
            ["controller"],
            registry=registry,
        )
        self.time = pc.Histogram(
            RECONCILE_TIME_METRIC,
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.max_concurrent = pc.Gauge(
            MAX_CONCURRENT_RECONCILES_METRIC,
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=registry,
        )
        self.active = pc.Gauge(
            ACTIVE_WORKERS_METRIC,
            "Number of currently used workers per controller",
            ["controller"],
            registry=registry,
        )
        self.dropped = pc.Counter(
            RECONCILE_DROPPED_METRIC,
            "Total number of keys dropped after their last allowed retry per controller",
            ["controller"],
            registry=registry,
        )
        if workqueue is None:
            from informers.workqueue.prometheus_metrics import (
                PrometheusMetricsProvider as PrometheusWorkqueueMetricsProvider,
            )

            workqueue = PrometheusWorkqueueMetricsProvider(registry)
        self.workqueue = workqueue


class PrometheusMetricsProvider:
    """Controller and work-queue metrics in a ``prometheus_client`` registry.

    The families are registered once per registry: every provider on the same registry shares
    them (and the work-queue provider), so controllers with the same name share their series.
    Thread-safe. Needs the ``metrics`` extra (``pip install 'kube-informers[metrics]'``).

    Args:
        registry: a ``prometheus_client.CollectorRegistry``; ``None`` for the default
            ``prometheus_client.REGISTRY``.
        workqueue_provider: the work-queue provider to use, for a registry where
            :class:`informers.workqueue.PrometheusMetricsProvider` was already created (a
            second one on the same registry fails with a duplicate registration); ``None``
            creates one the first time this registry is seen. Ignored when the registry's
            families exist already.

    Raises:
        ImportError: ``prometheus_client`` is not installed (the message names the extra).
    """

    _families: dict[int, _Families] = {}
    _families_lock = threading.Lock()

    def __init__(
        self, registry: Any = None, workqueue_provider: WorkqueueMetricsProvider | None = None
    ) -> None:
        try:
            import prometheus_client
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError(
                "PrometheusMetricsProvider needs the prometheus_client package; install the "
                "metrics extra: pip install 'kube-informers[metrics]'"
            ) from err
        if registry is None:
            registry = prometheus_client.REGISTRY
        with self._families_lock:
            families = self._families.get(id(registry))
            if families is None or families.registry is not registry:
                families = _Families(prometheus_client, registry, workqueue_provider)
                self._families[id(registry)] = families
        self.registry = registry
        self._f = families

    def new_controller_metrics(self, controller: str, workers: int) -> ControllerMetrics:
        return _PrometheusControllerMetrics(self._f, controller, workers)

    def workqueue_metrics_provider(self) -> WorkqueueMetricsProvider:
        return self._f.workqueue


_provider: GlobalProvider[ControllerMetricsProvider] = GlobalProvider(NoopMetricsProvider())


def set_provider(provider: ControllerMetricsProvider) -> ControllerMetricsProvider:
    """Set the provider of controllers created afterwards without ``metrics=``.

    Returns:
        The provider that was set before (a later call replaces it, as in
        :func:`informers.workqueue.set_provider`).
    """
    return _provider.set(provider)


def get_provider() -> ControllerMetricsProvider:
    """The process-wide provider (a :class:`NoopMetricsProvider` until :func:`set_provider`)."""
    return _provider.get()
