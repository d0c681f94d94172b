"""One test body, three runtimes: adapters that let behavioural tests of the threaded informer
and controller run unchanged against ``informers.aio`` on asyncio and on trio. Each async adapter
runs an event loop in a thread (anyio's blocking portal, :class:`_Loop`); a synchronous handler
object becomes three async handlers calling it on the loop's thread (:func:`async_handlers`).

* :class:`AsyncDriver`: a pods informer of an :class:`~informers.aio.AsyncSharedInformerFactory`
  with the threaded ``ThreadedDriver``'s methods (tests/test_informer_convergence.py): the
  convergence run's ``driver`` and the informer scenarios of tests/test_aio_informer.py.
* :class:`AsyncDrivenInformer`: ``DrivenInformer`` and ``Running`` of
  tests/test_shared_informer.py over an async informer whose reflector is a stub: the test
  writes the queue and plays the reflector's resync tick.

* :class:`AsyncServerInformer` has the methods of ``ServerInformer`` (tests/test_shared_informer.py:
  ``start``, ``wait_synced``, ``stop``, ``api``, and ``informer.add_event_handler``/
  ``get_store``/``last_sync_resource_version``/``has_synced``) over an
  :class:`~informers.aio.AsyncSharedIndexInformer` run in an event loop on a thread (anyio's
  blocking portal). A handler object (``on_add(obj, initial)``, ``on_update``, ``on_delete``,
  e.g. a ``Recorder`` or a ``ResourceEventHandlerFuncs``) becomes three async handlers calling
  it on the loop's thread; the registration's ``has_synced`` is the subscription's (the
  handler finished with the initial list).
* :class:`ControllerDriver` makes a controller from a synchronous ``reconcile(key)`` body: the
  threaded :class:`~informers.controller.Controller` run on a thread, or an
  :class:`~informers.aio.AsyncController` whose reconcile awaits the same body in a worker
  thread (``anyio.to_thread``), so a body may block (an event, a sleep) the same way on every
  runtime while the queue, exclusivity, result rules and drain under test are the async
  runtime's own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import anyio
import anyio.to_thread
from anyio.from_thread import start_blocking_portal

from informers.aio import (
    AsyncController,
    AsyncListWatch,
    AsyncSharedIndexInformer,
    AsyncSharedInformerFactory,
    AsyncTransport,
)
from informers.controller import Controller, Request
from informers.list_watch import ListWatch
from informers.reflector_options import ReflectorOptions
from informers.reflector_rules import ReflectorMetrics
from informers.resources import lookup

DRIVERS = ["threads", "asyncio", "trio"]
WAIT = 10.0


def async_handlers(handler: Any) -> tuple[Any, Any, Any]:
    """``on_add``, ``on_update`` and ``on_delete`` of ``handler`` (a ``Recorder``, a
    ``ResourceEventHandlerFuncs``) as the three async handlers of
    :meth:`AsyncSharedIndexInformer.add_event_handler`."""

    async def on_add(obj: Any, initial: bool) -> None:
        handler.on_add(obj, initial)

    async def on_update(old: Any, new: Any) -> None:
        handler.on_update(old, new)

    async def on_delete(obj: Any) -> None:
        handler.on_delete(obj)

    return on_add, on_update, on_delete


class _Loop:
    """An event loop of ``backend`` on a thread, closed by :meth:`close_loop`."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self._stack = ExitStack()
        self.portal: Any = self._stack.enter_context(start_blocking_portal(backend))

    def stop_informer(self, informer: AsyncSharedIndexInformer, run: Any) -> None:
        """Stop ``informer`` (its handlers deliver what they have) and wait for ``run``, its
        ``run()`` started with ``portal.start_task_soon`` (``None``: never started)."""
        if run is not None:
            self.portal.call(informer.stop)
            run.result(WAIT)

    def close_loop(self) -> None:
        self._stack.close()


class _Registration:
    """A threaded registration's surface over a handler's subscription."""

    def __init__(self, informer: AsyncSharedIndexInformer, sub: Any) -> None:
        self.sub = sub
        self._listener = informer._listeners[sub]  # resync_period, as the threaded one has

    def has_synced(self) -> bool:
        return bool(self.sub.has_synced())


def _add_handler(portal: Any, informer: AsyncSharedIndexInformer, handler: Any,
                 resync_period: float | None = None) -> _Registration:
    async def add() -> _Registration:
        sub = informer.add_event_handler(*async_handlers(handler), resync_period=resync_period)
        return _Registration(informer, sub)

    registration: _Registration = portal.call(add)
    return registration


class _InformerView:
    """The part of ``SharedIndexInformer``'s API the shared tests use."""

    def __init__(self, owner: AsyncServerInformer) -> None:
        self._owner = owner

    def add_event_handler(self, handler: Any, resync_period: float | None = None
                          ) -> _Registration:
        return _add_handler(self._owner.portal, self._owner.async_informer, handler,
                            resync_period)

    def get_store(self) -> Any:
        return self._owner.async_informer.indexer

    def get_indexer(self) -> Any:
        return self._owner.async_informer.indexer

    def last_sync_resource_version(self) -> str:
        return self._owner.async_informer.last_sync_resource_version()

    def has_synced(self) -> bool:
        return self._owner.async_informer.has_synced()


class AsyncServerInformer(_Loop):
    """``ServerInformer``'s interface over an async informer of ``server``'s pods, on
    ``backend``; keyword arguments go to :class:`AsyncSharedIndexInformer`."""

    def __init__(self, server: Any, backend: str, namespace: str | None = None,
                 **kw: Any) -> None:
        self.api = server.api_client()
        super().__init__(backend)
        self.transport: AsyncTransport = self.portal.call(self._open)
        kw.setdefault("name", "pods")
        kw.setdefault("drain_timeout", 2.0)

        async def make() -> AsyncSharedIndexInformer:
            return AsyncSharedIndexInformer(
                AsyncListWatch(self.transport, "pods", namespace, drop_managed_fields=True),
                **kw)

        self.async_informer: AsyncSharedIndexInformer = self.portal.call(make)
        self.informer = _InformerView(self)
        self._run: Any = None
        self.stopped = False

    async def _open(self) -> AsyncTransport:
        transport = AsyncTransport(self.api)
        await transport.__aenter__()
        return transport

    def start(self) -> AsyncServerInformer:
        self._run = self.portal.start_task_soon(self.async_informer.run)
        return self

    def wait_synced(self) -> None:
        async def wait() -> None:
            with anyio.fail_after(WAIT):
                await self.async_informer.wait_synced()

        self.portal.call(wait)

    @property
    def running(self) -> bool:
        return self._run is not None and not self._run.done()

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        try:
            self.stop_informer(self.async_informer, self._run)
            self.portal.call(self.transport.aclose)
        finally:
            self.close_loop()
            self.api.close()


class AsyncDriver(_Loop):
    """A pods informer of an :class:`AsyncSharedInformerFactory` on ``backend``, with the
    threaded driver's methods (``ThreadedDriver`` in tests/test_informer_convergence.py).
    Handlers are async functions that call the recorder's methods, on the loop's thread;
    ``factory_args`` go to the factory (``compact``, ``detect_mutations``, ...)."""

    def __init__(self, backend: str, resource: str = "pods", **factory_args: Any) -> None:
        super().__init__(backend)
        self.resource = resource
        self.factory_args = factory_args
        self.factory: AsyncSharedInformerFactory | None = None
        self.informer: Any = None

    def start(self, api_client: Any, options: ReflectorOptions | None,
              early: Any = None, timeout: float = WAIT) -> dict[str, bool]:
        async def make() -> AsyncSharedInformerFactory:
            return AsyncSharedInformerFactory(api_client, options=options, **self.factory_args)

        self.factory = self.portal.call(make)
        self._stack.enter_context(self.portal.wrap_async_context_manager(self.factory))

        async def informer() -> Any:
            assert self.factory is not None
            inf = self.factory.informer_for(self.resource)
            if early is not None:
                inf.add_event_handler(*async_handlers(early))
            return inf

        self.informer = self.portal.call(informer)

        async def sync() -> dict[str, bool]:
            assert self.factory is not None
            return await self.factory.wait_for_cache_sync(timeout=timeout)

        result: dict[str, bool] = self.portal.call(sync)
        return result

    def add_handler(self, recorder: Any) -> Callable[[], bool]:
        registration = _add_handler(self.portal, self.informer, recorder)
        return lambda: len(registration.sub) == 0

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``async fn(*args)`` on the loop and return its result."""
        return self.portal.call(fn, *args)

    def indexer(self) -> Any:
        return self.informer.indexer

    def metrics(self) -> Any:
        return self.informer.reflector_metrics

    def shutdown(self) -> None:
        self.close_loop()


class _StubReflector:
    """Stands in for an async informer's reflector: runs until cancelled and never lists or
    watches; the test writes its ``store`` (the informer's queue)."""

    def __init__(self, store: Any, should_resync: Callable[[], bool]) -> None:
        self.store = store
        self.should_resync = should_resync
        self.resync_period = 0.0
        self.metrics = ReflectorMetrics()

    async def run(self) -> None:
        await anyio.sleep_forever()

    def last_sync_resource_version(self) -> str:
        return ""


class _DrivenAsyncInformer(AsyncSharedIndexInformer):
    def _new_reflector(self, store: Any, *_: Any) -> Any:
        return _StubReflector(store, self._processor.should_resync)


def _never(_options: Any) -> Any:
    raise AssertionError("the stub reflector never lists or watches")


class _LoopCalls:
    """An object's methods, each called on the loop (``portal.call``)."""

    def __init__(self, portal: Any, target: Any) -> None:
        self._portal = portal
        self._target = target

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._target, name)
        return lambda *args: self._portal.call(method, *args)


class AsyncDrivenInformer(_Loop):
    """``DrivenInformer`` and its ``Running`` (tests/test_shared_informer.py) over an async
    informer of pods on ``backend`` whose reflector is a stub: :attr:`fifo` writes the queue
    and ``stub.should_resync()`` is the reflector's resync tick, both run on the loop.
    Keyword arguments go to :class:`AsyncSharedIndexInformer` (``name`` "pods" by default).
    """

    def __init__(self, backend: str, **kw: Any) -> None:
        super().__init__(backend)
        kw.setdefault("name", "pods")
        kw.setdefault("drain_timeout", 2.0)

        async def make() -> AsyncSharedIndexInformer:
            return _DrivenAsyncInformer(ListWatch(_never, _never, resource=lookup("pods")),
                                        **kw)

        self.async_informer: AsyncSharedIndexInformer = self.portal.call(make)
        self._run: Any = None
        self._closed = False
        reflector = self.async_informer.reflector
        self.fifo = _LoopCalls(self.portal, reflector.store)
        self.stub = _LoopCalls(self.portal, reflector)

    # -- SharedIndexInformer's surface ----------------------------------------------------------

    def add_event_handler(self, handler: Any, resync_period: float | None = None
                          ) -> _Registration:
        return _add_handler(self.portal, self.async_informer, handler, resync_period)

    @property
    def resync_check_period(self) -> float:
        return self.async_informer.resync_check_period

    def get_store(self) -> Any:
        return self.async_informer.indexer

    get_indexer = get_store

    def has_synced(self) -> bool:
        return self.async_informer.has_synced()

    def wait_for_resource_version(self, rv: str, timeout: float | None) -> bool:
        return bool(self.portal.call(self.async_informer.wait_for_resource_version, rv,
                                     timeout))

    # -- Running's surface ----------------------------------------------------------------------

    @property
    def informer(self) -> AsyncDrivenInformer:
        return self

    def start(self) -> AsyncDrivenInformer:
        self._run = self.portal.start_task_soon(self.async_informer.run)
        return self

    def drain(self) -> None:
        """Apply everything queued now (the drain task's work, on the loop)."""
        self.portal.call(self.async_informer._drain_now)

    def stop(self) -> None:
        """Stop the informer (its handlers deliver what they have) and close the loop; once."""
        if self._closed:
            return
        self._closed = True
        try:
            self.stop_informer(self.async_informer, self._run)
        finally:
            self.close_loop()


class _AsyncSynced:
    """An informer's sync, as ``AsyncController`` waits for it, over ``has_synced()``."""

    def __init__(self, synced: Any) -> None:
        self.synced = synced

    def has_synced(self) -> bool:
        return bool(self.synced.has_synced())

    async def wait_synced(self) -> None:
        while not self.synced.has_synced():
            await anyio.sleep(0.01)


class ControllerDriver:
    """Makes controllers on one runtime (``"threads"``, ``"asyncio"``, ``"trio"``) from a
    synchronous ``reconcile(key)`` body; ``start``/``stop`` run them (see the module
    docstring)."""

    def __init__(self, runtime: str) -> None:
        self.runtime = runtime
        self._stack = ExitStack()
        self.portal: Any = None
        if runtime != "threads":
            self.portal = self._stack.enter_context(start_blocking_portal(runtime))
        self.controller: Any = None
        self._thread: threading.Thread | None = None
        self._stop_event = threading.Event()
        self._run: Any = None

    def make(self, name: str, reconcile: Callable[[str], Any], *, synced: Any = None,
             **kw: Any) -> Any:
        """A controller named ``name`` reconciling with ``reconcile``; ``kw`` go to its
        constructor (those both runtimes take: workers, rate_limiter, max_retries,
        drain_timeout, metrics). ``synced`` (an object with ``has_synced()``) stands for the
        informer the controller waits for."""
        if synced is not None:
            kw["informers"] = [synced if self.runtime == "threads" else _AsyncSynced(synced)]
        if self.runtime == "threads":
            self.controller = Controller(name, reconcile, **kw)
            return self.controller

        async def body(request: Request) -> Any:
            # abandon_on_cancel: a drain timeout cancels the reconcile's task at once (a
            # thread cannot be); the test releases the body itself
            return await anyio.to_thread.run_sync(reconcile, request.key,
                                                  abandon_on_cancel=True)

        async def make() -> AsyncController:
            return AsyncController(name, body, **kw)

        self.controller = self.portal.call(make)
        return self.controller

    def enqueue(self, key: str) -> None:
        if self.portal is None:
            self.controller.enqueue(key)
        else:
            self.portal.call(self.controller.enqueue, key)

    def num_requeues(self, key: str) -> int:
        if self.portal is None:
            return int(self.controller.queue.num_requeues(key))
        return int(self.portal.call(self.controller.queue.num_requeues, key))

    def queue_length(self) -> int:
        if self.portal is None:
            return len(self.controller.queue)
        return int(self.portal.call(len, self.controller.queue))

    def on_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` where the controller lives: here for threads, on the event loop's
        thread otherwise (``fn`` may be a coroutine function)."""
        return fn(*args) if self.portal is None else self.portal.call(fn, *args)

    def take(self) -> str:
        """The next key of the controller's queue, as a worker takes it (``done`` is the
        caller's)."""
        if self.portal is None:
            return str(self.controller.queue.get()[0])
        return str(self.portal.call(self.controller.queue.get))

    def start(self) -> None:
        if self.portal is None:
            self._thread = threading.Thread(target=self.controller.run,
                                            args=(self._stop_event,), daemon=True,
                                            name="test-controller-run")
            self._thread.start()
        else:
            self._run = self.portal.start_task_soon(self.controller.run)

    def stop(self, timeout: float = WAIT) -> None:
        """Ask the controller to stop and wait until its run returned.

        Raises:
            TimeoutError: it did not return within ``timeout`` seconds.
        """
        if self._thread is not None:
            self._stop_event.set()
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise TimeoutError("the controller did not stop")
        elif self._run is not None:
            self.portal.call(self.controller.stop)
            try:
                self._run.result(timeout)
            except TimeoutError:
                raise TimeoutError("the controller did not stop") from None

    def close(self) -> None:
        try:
            if self._run is not None and not self._run.done():
                self._run.cancel()
        finally:
            self._stack.close()
