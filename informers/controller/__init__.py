"""A small reconcile runtime: controllers, enqueue handlers, predicates and their metrics.

Re-exports only; each component lives in a module named by its noun. The shape follows
controller-runtime (``pkg/controller``, ``pkg/reconcile``, ``pkg/handler``, ``pkg/predicate``)
on top of client-go's work queue; :class:`informers.manager.Manager` runs controllers together
with the informers, leader election and the health and metrics endpoints.
"""

from __future__ import annotations

from informers.controller.builder import ControllerBuilder, KindRef, Listers, Reconciler
from informers.controller.controller import (
    DEFAULT_DRAIN_TIMEOUT,
    DEFAULT_MAX_RETRIES,
    LEADERSHIP_POLL,
    Controller,
    HandlerFactory,
    Reconcile,
    Synced,
)
from informers.controller.enqueue import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    EnqueueTarget,
    MapFunc,
)
from informers.controller.metrics import (
    ControllerMetrics,
    ControllerMetricsProvider,
    NoopMetricsProvider,
    PrometheusMetricsProvider,
    get_provider,
    set_provider,
)
from informers.controller.predicates import (
    And,
    AnnotationChangedPredicate,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    Not,
    Or,
    Predicate,
    PredicateFilteredHandler,
    PredicateFuncs,
    ResourceVersionChangedPredicate,
    new_predicate_funcs,
)
from informers.controller.request import Request
from informers.controller.result import Result, TerminalError

__all__ = [
    "DEFAULT_DRAIN_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "LEADERSHIP_POLL",
    "And",
    "AnnotationChangedPredicate",
    "Controller",
    "ControllerBuilder",
    "ControllerMetrics",
    "ControllerMetricsProvider",
    "EnqueueRequestForObject",
    "EnqueueRequestForOwner",
    "EnqueueRequestsFromMapFunc",
    "EnqueueTarget",
    "GenerationChangedPredicate",
    "HandlerFactory",
    "KindRef",
    "LabelChangedPredicate",
    "Listers",
    "MapFunc",
    "NoopMetricsProvider",
    "Not",
    "Or",
    "Predicate",
    "PredicateFilteredHandler",
    "PredicateFuncs",
    "PrometheusMetricsProvider",
    "Reconcile",
    "Reconciler",
    "Request",
    "ResourceVersionChangedPredicate",
    "Result",
    "Synced",
    "TerminalError",
    "get_provider",
    "new_predicate_funcs",
    "set_provider",
]
