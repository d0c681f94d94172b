"""The options of a controller builder, one implementation for the threaded
:class:`~informers.controller.ControllerBuilder` and the async
:class:`~informers.aio.AsyncControllerBuilder` (controller-runtime ``pkg/builder``
``WithOptions``, ``Named``, ``WithEventFilter``), so that what an option means, its checks and
its default cannot differ between the two.

A builder subclasses :class:`BuilderOptions` and reads, in its ``complete``,
:attr:`BuilderOptions.controller_options` (the keyword arguments of its controller),
:meth:`BuilderOptions.reconcile_timeout`, :meth:`BuilderOptions.controller_name`,
:attr:`BuilderOptions.priority_queue` and :attr:`BuilderOptions.event_filters`. An option a
driver cannot honour is named in its :attr:`BuilderOptions.UNSUPPORTED` with the reason, and
asking for it is a clear error rather than a silent no-op. One thread (or one event loop), as
the builders are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from informers.clock import Clock
from informers.controller.predicates import Predicate
from informers.resources import Resource
from informers.workqueue.rate_limiters import RateLimiter

if TYPE_CHECKING:  # typing.Self is Python 3.11+; type checkers bring typing_extensions
    from typing_extensions import Self

__all__ = ["BuilderOptions", "default_controller_name"]


class _Unset:
    pass


_UNSET = _Unset()


def default_controller_name(primary: Resource) -> str:
    """A controller's name when none is given: its primary kind in lower case
    (controller-runtime ``builder.getControllerName``: ``strings.ToLower(gvk.Kind)``), or the
    plural when the kind is unknown (a resource whose discovery failed)."""
    return primary.kind.lower() or primary.plural


class BuilderOptions:
    """``with_options``, ``named`` and ``with_event_filter`` of a controller builder."""

    UNSUPPORTED: ClassVar[Mapping[str, str]] = {}
    """Options this builder's controller has no use for: option name -> why (the error)."""

    def __init__(self) -> None:
        self.controller_options: dict[str, Any] = {}
        """The controller's keyword arguments set so far (``workers``, ``rate_limiter``,
        ``max_retries``, ``drain_timeout``, ``clock``, ``metrics``)."""
        self.event_filters: list[Predicate] = []
        self.priority_queue = False
        self._reconcile_timeout: float | None = None
        self._name: str | None = None

    def with_options(self, *, workers: int | None = None,
                     rate_limiter: RateLimiter | None = None,
                     reconcile_timeout: float | None = None,
                     max_retries: int | _Unset | None = _UNSET,
                     drain_timeout: float | None = None,
                     name: str | None = None, clock: Clock | None = None,
                     metrics: Any = None, priority_queue: bool | None = None) -> Self:
        """The controller's options (``WithOptions``); an option not given keeps its value.

        * ``workers``: concurrent reconciles (controller-runtime ``MaxConcurrentReconciles``,
          default 1);
        * ``rate_limiter``: the work queue's (default client-go
          ``DefaultControllerRateLimiter``);
        * ``reconcile_timeout``: seconds (controller-runtime ``ReconciliationTimeout``): the
          requests a reconcile sends through the client are cut to the time left and fail
          once it is up, and a reconcile still running then counts as failed;
        * ``max_retries``: default
          :data:`~informers.controller.controller.DEFAULT_MAX_RETRIES`; ``None``: forever;
        * ``drain_timeout``: seconds a stop waits for the reconciles in flight
          (:data:`~informers.controller.controller.DEFAULT_DRAIN_TIMEOUT`);
        * ``name``: as :meth:`named`;
        * ``clock``: the controller's time source (threaded builder only);
        * ``metrics``: the controller metrics provider (default the process-wide one);
        * ``priority_queue``: controller-runtime v0.23 ``UsePriorityQueue`` with
          ``WithLowPriorityWhenUnchanged`` on every watch: adds from an informer's initial
          list and resyncs of unchanged objects (updates whose ``resourceVersion`` did not
          move) wait in the queue's low-priority lane, after the keys of fresh changes
          (:class:`~informers.controller.builder.LowPriorityWhenUnchanged`).

        Raises:
            ValueError: a ``reconcile_timeout`` that is not positive, or an option in
                :attr:`UNSUPPORTED`.
        """
        given = {"workers": workers, "rate_limiter": rate_limiter,
                 "drain_timeout": drain_timeout, "clock": clock, "metrics": metrics}
        if not isinstance(max_retries, _Unset):
            given["max_retries"] = max_retries
        for option in self.UNSUPPORTED:
            if given.get(option) is not None:
                raise ValueError(f"{type(self).__name__}: {option} is not an option here: "
                                 f"{self.UNSUPPORTED[option]}")
        if reconcile_timeout is not None:
            if reconcile_timeout <= 0:
                raise ValueError(f"reconcile_timeout must be positive, got {reconcile_timeout}")
            self._reconcile_timeout = reconcile_timeout
        for option, value in given.items():
            if value is not None or option == "max_retries":
                self.controller_options[option] = value
        if name is not None:
            self._name = name
        if priority_queue is not None:
            self.priority_queue = priority_queue
        return self

    def named(self, name: str) -> Self:
        """The controller's name (``Named``): logs, metrics and the queue; default
        :func:`default_controller_name` of the primary kind."""
        self._name = name
        return self

    def with_event_filter(self, *predicates: Predicate) -> Self:
        """Predicates every watch's events must pass (``WithEventFilter``)."""
        self.event_filters.extend(predicates)
        return self

    @property
    def reconcile_timeout(self) -> float | None:
        """The ``reconcile_timeout`` given, or ``None``."""
        return self._reconcile_timeout

    @property
    def name(self) -> str | None:
        """The name given (:meth:`named` or ``with_options(name=)``), or ``None``."""
        return self._name

    def controller_name(self, primary: Resource) -> str:
        """The name given, else :func:`default_controller_name` of ``primary``."""
        return self._name or default_controller_name(primary)
