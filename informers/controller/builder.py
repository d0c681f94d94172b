"""Wires a controller from what it reconciles and what it watches (controller-runtime
``pkg/builder``: ``ControllerManagedBy(mgr).For(..).Owns(..).Watches(..).Complete(r)``).

::

    controller = (ControllerBuilder(manager)
                  .for_(WEBSITES)                      # the primary kind: its events enqueue it
                  .owns("deployments")                 # events of the objects it controls
                  .owns("configmaps")
                  .with_options(workers=2, reconcile_timeout=30)
                  .complete(reconcile))                # reconcile(request) -> Result | None

The builder takes the informers from the manager's factory (one shared informer per kind,
created on first use, reused by every controller), registers one handler per watched kind,
builds the :class:`~informers.controller.controller.Controller` and adds it to the manager.
The reconcile gets a :class:`~informers.controller.request.Request` (a key string with
``namespace`` and ``name``) and reads the world from :attr:`ControllerBuilder.listers`:
``listers.get(request)`` is the primary object from the cache (``None`` once deleted),
``listers["deployments"]`` the lister of an owned kind.

What each watch enqueues (controller-runtime's handlers):

* ``for_(kind)``: the object's own key (``EnqueueRequestForObject``);
* ``owns(kind)``: the key of the object's controller owner when that owner is of the
  primary kind (``EnqueueRequestForOwner`` with ``OnlyControllerOwner``);
* ``watches(kind, map_fn)``: the keys ``map_fn(obj)`` returns
  (``EnqueueRequestsFromMapFunc``).

Predicates given to a watch filter its events; :meth:`ControllerBuilder.with_event_filter`
adds predicates to every watch (controller-runtime ``WithEventFilter``). A builder is used
once, from one thread, before the manager starts.
"""

from __future__ import annotations

import builtins
import inspect
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, cast, overload

from informers.clock import Clock
from informers.controller.builder_options import BuilderOptions
from informers.controller.controller import DEFAULT_MAX_RETRIES, Controller
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
from informers.factory import SharedInformerFactory
from informers.indexer import Indexer
from informers.listers import Lister
from informers.object_type import ObjectT, OtherObjectT
from informers.resources import Resource, lookup

__all__ = [
    "ControllerBuilder",
    "KindRef",
    "Listers",
    "LowPriorityWhenUnchanged",
    "QueueOwner",
    "Reconciler",
    "Watch",
    "add_watches",
    "is_reconciler_factory",
]

KindRef = Resource | str | tuple[str, str, str]
"""A kind to watch: a :class:`~informers.resources.Resource` (any kind, custom ones
included), a built-in name (``"deployments"``, ``"deployments.apps"``) or ``(group,
version, plural)`` (kind and scope then come from the server's discovery)."""

Reconciler = Callable[[Request], "Result | None"]
"""``reconcile(request) -> Result | None``; see
:class:`~informers.controller.controller.Controller` for what the result does."""


class _Manager(Protocol):
    """What the builder needs of :class:`informers.manager.Manager`."""

    @property
    def factory(self) -> SharedInformerFactory | None: ...

    def add(self, controller: Controller, needs_leader: bool = True) -> None: ...


class Listers(Generic[ObjectT]):
    """The listers of a built controller's kinds, over the manager's shared caches.

    Objects from them are shared with every other reader: copy before changing one
    (``copy.deepcopy``). Caches can be stale; a reconcile that acts on what it read writes
    with a ``resourceVersion`` precondition or server-side apply. Generic over the primary
    kind's static type (``for_``'s ``object_type``; default ``dict[str, Any]``).
    """

    def __init__(self, primary: Resource, factory: SharedInformerFactory | None = None, *,
                 indexer_of: Callable[[Resource], Indexer] | None = None) -> None:
        self.primary_resource = primary
        if indexer_of is None:
            if factory is None:
                raise ValueError("Listers needs a factory or an indexer_of function")
            indexer_of = lambda res: factory.informer_for(res).get_indexer()  # noqa: E731
        self._indexer_of = indexer_of
        self._by_resource: dict[Resource, Lister[Any]] = {}

    def _add(self, res: Resource) -> Lister[Any]:
        lister = self._by_resource.get(res)
        indexer = self._indexer_of(res)
        if lister is None or lister.indexer is not indexer:
            # new, or the factory was reset (a restarted manager): follow the new cache
            lister = self._by_resource[res] = Lister(indexer, res)
        return lister

    @property
    def primary(self) -> Lister[ObjectT]:
        """The lister of the ``for_`` kind."""
        return self._add(self.primary_resource)

    def __getitem__(self, kind: KindRef) -> Lister:
        """The lister of a watched kind (``"deployments"``, a Resource...).

        Raises:
            KeyError: the controller does not watch that kind.
        """
        for res in list(self._by_resource):
            if kind == res or kind in (res.plural, res.group_resource,
                                       (res.group, res.version, res.plural)):
                return self._add(res)
        raise KeyError(f"the controller does not watch {kind!r}")

    def lister(self, kind: KindRef, object_type: type[OtherObjectT] | None = None
               ) -> Lister[OtherObjectT]:
        """``self[kind]``, its objects typed as ``object_type`` (a ``TypedDict`` such as
        :class:`informers.types.apps_v1.Deployment`; for type checkers only).

        Raises:
            KeyError: the controller does not watch that kind.
        """
        lister: Lister[Any] = self[kind]
        return lister

    @overload
    def get(self, request: str, kind: None = None) -> ObjectT | None: ...

    @overload
    def get(self, request: str, kind: KindRef, object_type: None = None
            ) -> dict[str, Any] | None: ...

    @overload
    def get(self, request: str, kind: KindRef, object_type: type[OtherObjectT]
            ) -> OtherObjectT | None: ...

    def get(self, request: str, kind: KindRef | None = None,
            object_type: type[Mapping[str, Any]] | None = None) -> Any:
        """The object named by ``request`` from the cache of the primary kind (or of
        ``kind``), ``None`` when absent (a deleted primary: its dependents go with the garbage
        collector, its finalizers ran before). ``object_type`` types an object of ``kind``
        for type checkers (``get(request, "deployments", Deployment)``)."""
        lister = self.primary if kind is None else self[kind]
        found: Any = lister.indexer.get_by_key(Request.from_key(request).key)
        return found if isinstance(found, dict) else None


@dataclass
class Watch:
    """One watch of a builder: the kind, the enqueue handler's factory (called with the
    controller) and the watch's own predicates."""

    resource: Resource
    handler: Callable[[Any], Any]
    predicates: tuple[Predicate, ...]


def add_watches(controller: Any, informer_for: Callable[[Resource], Any],
                watches: Iterable[Watch], options: BuilderOptions) -> None:
    """Register each watch on ``controller`` (a :class:`Controller` or an
    :class:`~informers.aio.AsyncController`), on the informer ``informer_for`` gives, behind
    its predicates and the builder's event filters, its handler wrapped in
    :class:`LowPriorityWhenUnchanged` with ``priority_queue``; shared by both builders."""
    for watch in watches:
        handler: Any = watch.handler
        if options.priority_queue:
            handler = LowPriorityWhenUnchanged(controller, watch.handler)
        controller.watch(informer_for(watch.resource), handler, *watch.predicates,
                         *options.event_filters)


class ControllerBuilder(BuilderOptions, Generic[ObjectT]):
    """Builds one controller for ``manager`` (controller-runtime ``builder.Builder``).

    Generic over the primary kind's static type, set by :meth:`for_`'s ``object_type``
    (``for_(WEBSITES, object_type=Website)``: ``listers.get(request)`` is then a
    ``Website``); default ``dict[str, Any]``. Static only: objects stay dicts.

    :meth:`~BuilderOptions.with_options`, :meth:`~BuilderOptions.named` and
    :meth:`~BuilderOptions.with_event_filter` are
    :class:`~informers.controller.builder_options.BuilderOptions`', shared with the async
    builder.

    Args:
        manager: the :class:`~informers.manager.Manager` whose factory supplies the
            informers and which runs the controller (leader-only, as controller-runtime's).

    Raises:
        ValueError: the manager has no factory (neither ``api_client`` nor ``factory``).
    """

    def __init__(self, manager: _Manager) -> None:
        if manager.factory is None:
            raise ValueError("the manager has no informer factory: create it with an "
                             "api_client or a factory")
        super().__init__()
        self._manager = manager
        self._factory = manager.factory
        self._primary: Resource | None = None
        self._watches: list[Watch] = []
        self._listers: Listers[Any] | None = None
        self._built = False

    # -- what to watch ----------------------------------------------------------------------

    def _resource(self, kind: KindRef) -> Resource:
        if isinstance(kind, Resource):
            return kind
        if isinstance(kind, tuple):
            return self._factory.for_resource(*kind).resource
        return lookup(kind)

    def for_(self, kind: KindRef, *predicates: Predicate,
             object_type: type[OtherObjectT] | None = None
             ) -> ControllerBuilder[OtherObjectT]:
        """The kind this controller reconciles (``For``); once. ``object_type`` (a
        ``TypedDict``) types its objects for type checkers.

        Raises:
            ValueError: called twice.
        """
        if self._primary is not None:
            raise ValueError("for_() was already called: a controller reconciles one kind "
                             "(use watches() for more)")
        res = self._resource(kind)
        self._primary = res
        self._listers = Listers(res, self._factory)
        self._listers._add(res)
        self._watches.insert(0, Watch(res, EnqueueRequestForObject, predicates))
        return cast("ControllerBuilder[OtherObjectT]", self)

    def owns(self, kind: KindRef, *predicates: Predicate) -> ControllerBuilder[ObjectT]:
        """Objects of ``kind`` whose controller owner is the primary kind enqueue that owner
        (``Owns``); call after :meth:`for_`."""
        primary = self._need_primary("owns")
        res = self._resource(kind)
        self._require(self._listers)._add(res)

        def handler(controller: Controller) -> EnqueueRequestForOwner:
            return EnqueueRequestForOwner(controller, primary.kind, primary.api_version,
                                          owner_namespaced=primary.namespaced)

        self._watches.append(Watch(res, handler, predicates))
        return self

    def watches(self, kind: KindRef, map_fn: Callable[[Any], Iterable[str]],
                *predicates: Predicate) -> ControllerBuilder[ObjectT]:
        """Objects of ``kind`` enqueue the keys (or Requests) ``map_fn(obj)`` returns
        (``Watches`` with ``EnqueueRequestsFromMapFunc``)."""
        res = self._resource(kind)
        if self._listers is not None:
            self._listers._add(res)

        def handler(controller: Controller) -> EnqueueRequestsFromMapFunc:
            return EnqueueRequestsFromMapFunc(controller, map_fn)

        self._watches.append(Watch(res, handler, predicates))
        return self

    # -- building ---------------------------------------------------------------------------

    @property
    def listers(self) -> Listers[ObjectT]:
        """The listers of the watched kinds (after :meth:`for_`)."""
        return self._require(self._listers)

    def complete(self, reconcile: Reconciler | Callable[[Listers[ObjectT]], Reconciler]
                 ) -> Controller:
        """Build the controller around ``reconcile`` and add it to the manager (``Complete``).

        ``reconcile`` is ``reconcile(request)``, or a factory ``make(listers)`` returning
        one (told apart by its one parameter's annotation being :class:`Listers` or its
        name being ``listers``).

        Raises:
            ValueError: no :meth:`for_`, or the builder was used already.
        """
        if self._built:
            raise ValueError("this builder already built its controller")
        primary = self._need_primary("complete")
        listers = self._require(self._listers)
        fn: Reconciler = reconcile(listers) if is_reconciler_factory(reconcile) else reconcile  # type: ignore[assignment,arg-type]
        options = dict(self.controller_options)
        timeout = self.reconcile_timeout
        clock = options.get("clock")
        max_retries = options.pop("max_retries", DEFAULT_MAX_RETRIES)
        name = self.controller_name(primary)

        def run(key: str) -> Result | None:
            request = Request.from_key(key)
            if timeout is None:
                return fn(request)
            started = (clock or _real()).now()
            with deadline(timeout, clock or _real()):
                result = fn(request)
            if (clock or _real()).now() - started > timeout:
                raise DeadlineExceededError(
                    f"reconcile of {request.key} ran past its {timeout:g}s timeout")
            return result

        controller = Controller(name, run, max_retries=max_retries, **options)
        add_watches(controller, self._factory.informer_for, self._watches, self)
        self._built = True
        self._manager.add(controller)
        return controller

    # -- helpers ----------------------------------------------------------------------------

    def _need_primary(self, what: str) -> Resource:
        if self._primary is None:
            raise ValueError(f"{what}() needs for_() first: the kind the controller reconciles")
        return self._primary

    @staticmethod
    def _require(listers: Listers[Any] | None) -> Listers[Any]:
        if listers is None:
            raise ValueError("for_() has not been called")
        return listers


def _real() -> Clock:
    from informers.clock import REAL_CLOCK

    return REAL_CLOCK


def is_reconciler_factory(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` is ``make(listers)`` rather than ``reconcile(request)``: one parameter,
    named ``listers`` or annotated :class:`Listers` (shared with the async builder)."""
    try:
        params = builtins.list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if len(params) != 1:
        return False
    annotation = params[0].annotation
    if isinstance(annotation, str):  # "Listers" or "Listers[Website]" (postponed annotations)
        annotation = annotation.partition("[")[0]
    return (params[0].name == "listers" or annotation in (Listers, "Listers")
            or getattr(annotation, "__origin__", None) is Listers)


class _LaneQueue(Protocol):
    def add(self, key: str, low_priority: bool = False) -> None: ...


class QueueOwner(Protocol):
    """A controller whose work queue has a low-priority lane (threaded or async)."""

    @property
    def queue(self) -> _LaneQueue: ...


class LowPriorityWhenUnchanged:
    """Wraps an enqueue handler so that the keys it enqueues for an object that did not
    change go into the work queue's low-priority lane (controller-runtime v0.23
    ``handler.WithLowPriorityWhenUnchanged``): an add from the informer's initial list, and
    an update whose old and new ``resourceVersion`` are equal (a resync). Everything else
    (fresh adds, real updates, deletes) enqueues normally. ``controller`` is a
    :class:`~informers.controller.Controller` or an
    :class:`~informers.aio.AsyncController` (their queues take ``low_priority``). Handlers of
    one registration run on one thread (the async ones on the event loop's, each call
    synchronous); the flag that says which lane is per thread."""

    def __init__(self, controller: QueueOwner,
                 inner: Callable[[Any], Any]) -> None:
        self._controller = controller
        self._local = threading.local()
        self.inner = inner(self)

    def add(self, key: str) -> None:
        """The inner handler's enqueue: into the lane this event chose (of the controller's
        current queue: :meth:`Controller.reset` replaces it)."""
        self._controller.queue.add(key, low_priority=getattr(self._local, "low", False))

    def _with(self, low: bool, fn: Callable[..., None], *args: Any) -> None:
        self._local.low = low
        try:
            fn(*args)
        finally:
            self._local.low = False

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._with(is_in_initial_list, self.inner.on_add, obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        unchanged = _rv(old) is not None and _rv(old) == _rv(new)
        self._with(unchanged, self.inner.on_update, old, new)

    def on_delete(self, obj: Any) -> None:
        self._with(False, self.inner.on_delete, obj)


def _rv(obj: Any) -> str | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return rv if isinstance(rv, str) and rv else None
