"""Wires an async controller from what it reconciles and what it watches (controller-runtime
``pkg/builder``), for an :class:`~informers.aio.manager.AsyncManager`.

::

    controller = (AsyncControllerBuilder(manager)
                  .for_(("example.com", "v1", "websites"))  # the primary kind: its events
                  .owns("configmaps")                  # events of the objects it controls
                  .with_options(workers=8, reconcile_timeout=30, priority_queue=True)
                  .complete(reconcile))                # async def reconcile(request)

The shape, the rules and the parts are :class:`informers.controller.ControllerBuilder`'s: the
informers come from the manager's :class:`~informers.aio.factory.AsyncSharedInformerFactory`
(one per kind, shared by every controller); each watch enqueues through the threaded
controller's handlers (``for_``: ``EnqueueRequestForObject``; ``owns``:
``EnqueueRequestForOwner`` of the primary kind, controller owner only; ``watches``:
``EnqueueRequestsFromMapFunc``), filtered by its predicates and by
:meth:`~informers.controller.builder_options.BuilderOptions.with_event_filter`'s; the reconcile
reads from :class:`~informers.controller.builder.Listers` over the async caches (synchronous
reads), and ``complete`` accepts ``reconcile`` or a ``make(listers)`` factory as the threaded
one does. ``with_options``, ``named`` and ``with_event_filter`` are the threaded builder's own
(:class:`~informers.controller.builder_options.BuilderOptions`); ``clock`` is not an option
here (the async controller's time is the event loop's).

**Kinds** are what the threaded builder takes (:data:`~informers.controller.builder.KindRef`):
a :class:`~informers.resources.Resource`, a built-in name, or ``(group, version, plural)``,
whose kind and scope come from the server's discovery document by the threaded rule
(:func:`~informers.aio.transport.resolve_resource`; a failed discovery is a warning and a
namespaced resource of unknown kind). Discovery must be awaited, so a controller with such a
kind resolves it when it starts (the ``setup`` of its
:class:`~informers.aio.controller.AsyncController`, through the factory's transport):
only then are its watches added and its informers made (controller-runtime's
``Controller.Start`` starts its sources likewise), and its default name (the primary kind in
lower case) set. Until then its listers cannot be read (a clear error); the reconcile can.

**Priority queue** (``with_options(priority_queue=True)``, controller-runtime v0.23): every
watch's handler is wrapped in :class:`~informers.controller.builder.LowPriorityWhenUnchanged`,
so initial-list adds and resyncs of unchanged objects wait in the
:class:`~informers.aio.workqueue.AsyncWorkQueue`'s low-priority lane.

``reconcile_timeout`` (controller-runtime ``ReconciliationTimeout``) sets the
:mod:`informers.deadline` of the reconcile, so the requests of an
:class:`~informers.aio.client.AsyncClient` are cut to the time left, and cancels the reconcile
when it is up (a task can be cancelled, as Go's context cancels its calls): the key is retried
through the rate limiter with :class:`~informers.errors.DeadlineExceededError`.

A builder is used once, before the manager runs, from its event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Generic, Protocol, cast

import anyio

from informers.aio.controller import AsyncController, AsyncReconcile
from informers.aio.factory import AsyncSharedInformerFactory
from informers.aio.transport import AsyncTransport, resolve_resource
from informers.controller.builder import (
    KindRef,
    Listers,
    Watch,
    add_watches,
    is_reconciler_factory,
)
from informers.controller.builder_options import BuilderOptions, default_controller_name
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

__all__ = ["AsyncControllerBuilder"]


class _Manager(Protocol):
    """What the builder needs of :class:`informers.aio.manager.AsyncManager`."""

    factory: AsyncSharedInformerFactory

    def add(self, controller: AsyncController, needs_leader: bool = True) -> None: ...


class AsyncControllerBuilder(BuilderOptions, Generic[ObjectT]):
    """Builds one :class:`~informers.aio.controller.AsyncController` for ``manager``
    (controller-runtime ``builder.Builder``); generic over the primary kind's static type as
    :class:`~informers.controller.ControllerBuilder` is.

    Args:
        manager: the :class:`~informers.aio.manager.AsyncManager` whose factory supplies the
            informers and which runs the controller (leader-only when it elects a leader, as
            controller-runtime's).
    """

    UNSUPPORTED = {"clock": "the async controller's time is the event loop's (anyio)"}

    def __init__(self, manager: _Manager) -> None:
        super().__init__()
        self._manager = manager
        self._factory = manager.factory
        self._primary: Resource | None = None
        self._watches: list[Watch] = []
        self._listers: Listers[Any] | None = None
        self._built = False
        self._unresolved: set[Resource] = set()
        """Stand-ins (kind ``""``) of ``(group, version, plural)`` kinds discovery resolves."""

    def _indexer_of(self, res: Resource) -> Indexer:
        if res in self._unresolved:
            raise ValueError(
                f"the lister of {res.group_resource} ({res.group}/{res.version}) is not "
                "there yet: its kind is resolved through discovery when the controller "
                "starts (read it from the reconcile)")
        return self._factory.informer_for(res).indexer

    def _resource(self, kind: KindRef) -> Resource:
        if isinstance(kind, Resource):
            return kind
        if isinstance(kind, tuple):
            try:
                return lookup(kind)
            except KeyError:
                stand_in = Resource(*kind, "", True)
                self._unresolved.add(stand_in)
                return stand_in
        return lookup(kind)

    def _listen(self, res: Resource) -> None:
        if self._listers is not None and res not in self._unresolved:
            self._listers._add(res)

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
        self._listen(res)
        self._watches.insert(0, Watch(res, EnqueueRequestForObject, predicates))
        return cast("AsyncControllerBuilder[OtherObjectT]", self)

    def owns(self, kind: KindRef, *predicates: Predicate) -> AsyncControllerBuilder[ObjectT]:
        """Objects of ``kind`` whose controller owner is the primary kind enqueue that owner
        (``Owns``); call after :meth:`for_`."""
        self._need_primary("owns")
        res = self._resource(kind)
        self._listen(res)

        def handler(controller: AsyncController) -> EnqueueRequestForOwner:
            primary = self._need_primary("owns")  # resolved by now
            return EnqueueRequestForOwner(controller, primary.kind,  # type: ignore[arg-type]
                                          primary.api_version,
                                          owner_namespaced=primary.namespaced)

        self._watches.append(Watch(res, handler, predicates))
        return self

    def watches(self, kind: KindRef, map_fn: Callable[[Any], Iterable[str]],
                *predicates: Predicate) -> AsyncControllerBuilder[ObjectT]:
        """Objects of ``kind`` enqueue the keys ``map_fn(obj)`` returns (``Watches`` with
        ``EnqueueRequestsFromMapFunc``)."""
        res = self._resource(kind)
        self._listen(res)

        def handler(controller: AsyncController) -> EnqueueRequestsFromMapFunc:
            return EnqueueRequestsFromMapFunc(controller, map_fn)  # type: ignore[arg-type]

        self._watches.append(Watch(res, handler, predicates))
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
        With a ``(group, version, plural)`` kind that needs discovery, the watches are added
        when the controller starts (see the module docstring).

        Raises:
            ValueError: no :meth:`for_`, or the builder was used already.
        """
        if self._built:
            raise ValueError("this builder already built its controller")
        primary = self._need_primary("complete")
        listers = self.listers
        fn: AsyncReconcile = (reconcile(listers)  # type: ignore[assignment,arg-type]
                              if is_reconciler_factory(reconcile) else reconcile)
        timeout = self.reconcile_timeout
        run = fn if timeout is None else _timed(fn, timeout)
        # a kind still to discover has no name yet: a stand-in until the controller starts
        controller = AsyncController(self.controller_name(primary), run,
                                     setup=self._resolve if self._unresolved else None,
                                     **self.controller_options)
        if not self._unresolved:
            self._add_watches(controller)
        self._built = True
        self._manager.add(controller)
        return controller

    async def _resolve(self, controller: AsyncController) -> None:
        """Resolve the ``(group, version, plural)`` kinds through discovery, then add every
        watch (and the default name, from the primary's kind)."""
        transport = self._factory.transport
        if transport is not None:
            resolved = await self._discover(transport)
        else:  # the factory is not running yet: a transport of its own for discovery
            async with AsyncTransport(self._factory.api_client,
                                      self._factory.connect_timeout) as own:
                resolved = await self._discover(own)
        self._unresolved.clear()
        for watch in self._watches:
            watch.resource = resolved.get(watch.resource, watch.resource)
            self.listers._add(watch.resource)
        primary = self._primary = self._watches[0].resource
        self.listers.primary_resource = primary
        if self.name is None:
            controller.name = default_controller_name(primary)
        self._add_watches(controller)

    async def _discover(self, transport: AsyncTransport) -> dict[Resource, Resource]:
        return {stand_in: await resolve_resource(transport, stand_in.group, stand_in.version,
                                                 stand_in.plural)
                for stand_in in self._unresolved}

    def _add_watches(self, controller: AsyncController) -> None:
        add_watches(controller, self._factory.informer_for, self._watches, self)

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
