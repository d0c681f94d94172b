"""Wires an async controller from what it reconciles and what it watches (controller-runtime
``pkg/builder``), for an :class:`~informers.aio.manager.AsyncManager`.

::

    controller = (AsyncControllerBuilder(manager)
                  .for_(WEBSITES)                      # the primary kind: its events enqueue it
                  .owns("configmaps")                  # events of the objects it controls
                  .with_options(workers=8, reconcile_timeout=30)
                  .complete(reconcile))                # async def reconcile(request)

The shape, the rules and the parts are :class:`informers.controller.ControllerBuilder`'s: the
informers come from the manager's :class:`~informers.aio.factory.AsyncSharedInformerFactory`
(one per kind, shared by every controller); each watch enqueues through the threaded
controller's handlers (``for_``: ``EnqueueRequestForObject``; ``owns``:
``EnqueueRequestForOwner`` of the primary kind, controller owner only; ``watches``:
``EnqueueRequestsFromMapFunc``), filtered by its predicates and by
:meth:`~AsyncControllerBuilder.with_event_filter`'s; the reconcile reads from
:class:`~informers.controller.builder.Listers` over the async caches (synchronous reads), and
``complete`` accepts ``reconcile`` or a ``make(listers)`` factory as the threaded one does.

``reconcile_timeout`` (controller-runtime ``ReconciliationTimeout``) sets the
:mod:`informers.deadline` of the reconcile, so the requests of an
:class:`~informers.aio.client.AsyncClient` are cut to the time left, and cancels the reconcile
when it is up (a task can be cancelled, as Go's context cancels its calls): the key is retried
through the rate limiter with :class:`~informers.errors.DeadlineExceededError`.

A builder is used once, before the manager runs, from its event loop. Not supported here:
``(group, version, plural)`` kinds that need discovery (give a
:class:`~informers.resources.Resource`) and the priority queue.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, cast

import anyio

from informers.aio.controller import AsyncController, AsyncReconcile
from informers.aio.factory import AsyncSharedInformerFactory
from informers.controller.builder import KindRef, Listers, is_reconciler_factory
from informers.controller.enqueue import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
)
from informers.controller.predicates import Predicate
from informers.controller.request import Request
from informers.controller.result import Result
from informers.deadline import deadline
from informers.errors import DeadlineExceededError
from informers.indexer import Indexer
from informers.object_type import ObjectT, OtherObjectT
from informers.resources import Resource, lookup
from informers.workqueue.rate_limiters import RateLimiter

__all__ = ["AsyncControllerBuilder"]


class _Unset:
    pass


_UNSET = _Unset()


class _Manager(Protocol):
    """What the builder needs of :class:`informers.aio.manager.AsyncManager`."""

    factory: AsyncSharedInformerFactory

    def add(self, controller: AsyncController, needs_leader: bool = True) -> None: ...


@dataclass
class _Watch:
    resource: Resource
    handler: Callable[[Any], Any]  # called with the controller
    predicates: tuple[Predicate, ...]


class AsyncControllerBuilder(Generic[ObjectT]):
    """Builds one :class:`~informers.aio.controller.AsyncController` for ``manager``
    (controller-runtime ``builder.Builder``); generic over the primary kind's static type as
    :class:`~informers.controller.ControllerBuilder` is.

    Args:
        manager: the :class:`~informers.aio.manager.AsyncManager` whose factory supplies the
            informers and which runs the controller (leader-only when it elects a leader, as
            controller-runtime's).
    """

    def __init__(self, manager: _Manager) -> None:
        self._manager = manager
        self._factory = manager.factory
        self._primary: Resource | None = None
        self._watches: list[_Watch] = []
        self._filters: list[Predicate] = []
        self._options: dict[str, Any] = {}
        self._name: str | None = None
        self._listers: Listers[Any] | None = None
        self._built = False

    def _indexer_of(self, res: Resource) -> Indexer:
        return self._factory.informer_for(res).indexer

    @staticmethod
    def _resource(kind: KindRef) -> Resource:
        return kind if isinstance(kind, Resource) else lookup(kind)

    # -- what to watch ----------------------------------------------------------------------

    def for_(self, kind: KindRef, *predicates: Predicate,
             object_type: type[OtherObjectT] | None = None
             ) -> AsyncControllerBuilder[OtherObjectT]:
        """The kind this controller reconciles (``For``); once.

        Raises:
            ValueError: called twice.
        """
        if self._primary is not None:
            raise ValueError("for_() was already called: a controller reconciles one kind "
                             "(use watches() for more)")
        res = self._resource(kind)
        self._primary = res
        self._listers = Listers(res, indexer_of=self._indexer_of)
        self._listers._add(res)
        self._watches.insert(0, _Watch(res, EnqueueRequestForObject, predicates))
        return cast("AsyncControllerBuilder[OtherObjectT]", self)

    def owns(self, kind: KindRef, *predicates: Predicate) -> AsyncControllerBuilder[ObjectT]:
        """Objects of ``kind`` whose controller owner is the primary kind enqueue that owner
        (``Owns``); call after :meth:`for_`."""
        primary = self._need_primary("owns")
        res = self._resource(kind)
        self.listers._add(res)

        def handler(controller: AsyncController) -> EnqueueRequestForOwner:
            return EnqueueRequestForOwner(controller, primary.kind,  # type: ignore[arg-type]
                                          primary.api_version,
                                          owner_namespaced=primary.namespaced)

        self._watches.append(_Watch(res, handler, predicates))
        return self

    def watches(self, kind: KindRef, map_fn: Callable[[Any], Iterable[str]],
                *predicates: Predicate) -> AsyncControllerBuilder[ObjectT]:
        """Objects of ``kind`` enqueue the keys ``map_fn(obj)`` returns (``Watches`` with
        ``EnqueueRequestsFromMapFunc``)."""
        res = self._resource(kind)
        if self._listers is not None:
            self._listers._add(res)

        def handler(controller: AsyncController) -> EnqueueRequestsFromMapFunc:
            return EnqueueRequestsFromMapFunc(controller, map_fn)  # type: ignore[arg-type]

        self._watches.append(_Watch(res, handler, predicates))
        return self

    def with_event_filter(self, *predicates: Predicate) -> AsyncControllerBuilder[ObjectT]:
        """Predicates every watch's events must pass (``WithEventFilter``)."""
        self._filters.extend(predicates)
        return self

    def with_options(self, *, workers: int | None = None,
                     rate_limiter: RateLimiter | None = None,
                     reconcile_timeout: float | None = None,
                     max_retries: int | _Unset | None = _UNSET,
                     drain_timeout: float | None = None,
                     name: str | None = None, metrics: Any = None
                     ) -> AsyncControllerBuilder[ObjectT]:
        """The controller's options (``WithOptions``): ``workers`` (concurrent reconciles,
        controller-runtime ``MaxConcurrentReconciles``, default 1), ``rate_limiter``,
        ``reconcile_timeout`` (seconds; see the module docstring), ``max_retries`` (default
        :data:`~informers.controller.controller.DEFAULT_MAX_RETRIES`; ``None``: forever),
        ``drain_timeout``, ``name`` (default: the primary kind in lower case, as
        controller-runtime's), ``metrics``.

        Raises:
            ValueError: a ``reconcile_timeout`` that is not positive.
        """
        if workers is not None:
            self._options["workers"] = workers
        if rate_limiter is not None:
            self._options["rate_limiter"] = rate_limiter
        if reconcile_timeout is not None:
            if reconcile_timeout <= 0:
                raise ValueError(f"reconcile_timeout must be positive, got {reconcile_timeout}")
            self._options["reconcile_timeout"] = reconcile_timeout
        if not isinstance(max_retries, _Unset):
            self._options["max_retries"] = max_retries
        if drain_timeout is not None:
            self._options["drain_timeout"] = drain_timeout
        if metrics is not None:
            self._options["metrics"] = metrics
        if name is not None:
            self._name = name
        return self

    def named(self, name: str) -> AsyncControllerBuilder[ObjectT]:
        """The controller's name (``Named``)."""
        self._name = name
        return self

    # -- building ---------------------------------------------------------------------------

    @property
    def listers(self) -> Listers[ObjectT]:
        """The listers of the watched kinds (after :meth:`for_`)."""
        if self._listers is None:
            raise ValueError("for_() has not been called")
        return self._listers

    def complete(self, reconcile: AsyncReconcile
                 | Callable[[Listers[ObjectT]], AsyncReconcile]) -> AsyncController:
        """Build the controller around ``reconcile`` (``async def reconcile(request)``, or a
        factory ``make(listers)`` returning one) and add it to the manager (``Complete``).

        Raises:
            ValueError: no :meth:`for_`, or the builder was used already.
        """
        if self._built:
            raise ValueError("this builder already built its controller")
        primary = self._need_primary("complete")
        listers = self.listers
        fn: AsyncReconcile = (reconcile(listers)  # type: ignore[assignment,arg-type]
                              if is_reconciler_factory(reconcile) else reconcile)
        options = dict(self._options)
        timeout: float | None = options.pop("reconcile_timeout", None)
        name = self._name or primary.kind.lower() or primary.plural
        run = fn if timeout is None else _timed(fn, timeout)
        controller = AsyncController(name, run, **options)
        for watch in self._watches:
            informer = self._factory.informer_for(watch.resource)
            controller.watch(informer, watch.handler, *watch.predicates, *self._filters)
        self._built = True
        self._manager.add(controller)
        return controller

    def _need_primary(self, what: str) -> Resource:
        if self._primary is None:
            raise ValueError(f"{what}() needs for_() first: the kind the controller reconciles")
        return self._primary


def _timed(fn: AsyncReconcile, timeout: float) -> Callable[[Request],
                                                            Awaitable[Result | None]]:
    async def run(request: Request) -> Result | None:
        with deadline(timeout):
            try:
                with anyio.fail_after(timeout):
                    return await fn(request)
            except TimeoutError:
                raise DeadlineExceededError(
                    f"reconcile of {request.key} ran past its {timeout:g}s timeout") from None

    return run
