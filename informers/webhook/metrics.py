"""Counts what the webhook server serves, in controller-runtime's webhook metrics.

``pkg/webhook/internal/metrics/metrics.go``, every series labelled by ``webhook`` (the path):

* ``controller_runtime_webhook_requests_total{webhook,code}``: counter by HTTP status code;
* ``controller_runtime_webhook_latency_seconds{webhook}``: histogram of the time from the
  request's first line to its answer (buckets ``ExponentialBuckets(10e-9, 10, 12)``);
* ``controller_runtime_webhook_requests_in_flight{webhook}``: gauge.

:class:`WebhookMetrics` with ``registry=None`` records nothing; with a ``prometheus_client``
registry (the ``metrics`` extra) it exports there. Thread-safe (prometheus_client is).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LATENCY_BUCKETS", "WebhookMetrics"]

LATENCY_BUCKETS: tuple[float, ...] = tuple(10e-9 * 10 ** i for i in range(12))
"""``prometheus.ExponentialBuckets(10e-9, 10, 12)``."""


class WebhookMetrics:
    """The webhook server's metrics on ``registry`` (``None``: no-op).

    Raises:
        ImportError: a registry was given but ``prometheus_client`` is not installed.
    """

    def __init__(self, registry: Any = None) -> None:
        self.enabled = registry is not None
        if not self.enabled:
            return
        try:
            from prometheus_client import Counter, Gauge, Histogram
        except ImportError as error:  # pragma: no cover - exercised only without the extra
            raise ImportError("webhook metrics need prometheus_client: "
                              "pip install 'kube-informers[metrics]'") from error
        self._total = Counter("controller_runtime_webhook_requests_total",
                              "Total number of admission requests by HTTP status code.",
                              ["webhook", "code"], registry=registry)
        self._latency = Histogram("controller_runtime_webhook_latency_seconds",
                                  "Histogram of the latency of processing admission requests",
                                  ["webhook"], buckets=LATENCY_BUCKETS, registry=registry)
        self._in_flight = Gauge("controller_runtime_webhook_requests_in_flight",
                                "Current number of admission requests being served.",
                                ["webhook"], registry=registry)

    def started(self, webhook: str) -> None:
        """A request on ``webhook`` began."""
        if self.enabled:
            self._in_flight.labels(webhook).inc()

    def finished(self, webhook: str, code: int, seconds: float) -> None:
        """A request on ``webhook`` was answered with ``code`` after ``seconds``."""
        if self.enabled:
            self._in_flight.labels(webhook).dec()
            self._total.labels(webhook, str(code)).inc()
            self._latency.labels(webhook).observe(seconds)
