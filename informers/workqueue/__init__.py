"""Work queues for controllers: client-go's ``util/workqueue`` in Python.

Re-exports only; each component lives in a module named by its noun.
"""

from __future__ import annotations

from informers.workqueue.delaying_queue import DelayingQueue
from informers.workqueue.metrics import (
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    MetricsProvider,
    NoopMetricsProvider,
    SettableGaugeMetric,
    get_provider,
    set_provider,
)
from informers.workqueue.parallelizer import parallelize_until
from informers.workqueue.prometheus_metrics import PrometheusMetricsProvider
from informers.workqueue.queue import Queue
from informers.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from informers.workqueue.rate_limiting_queue import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "CounterMetric",
    "DelayingQueue",
    "GaugeMetric",
    "HistogramMetric",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "MetricsProvider",
    "NoopMetricsProvider",
    "PrometheusMetricsProvider",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "SettableGaugeMetric",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
    "get_provider",
    "parallelize_until",
    "set_provider",
]
