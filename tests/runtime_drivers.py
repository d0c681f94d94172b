"""One test body, three runtimes: adapters that let behavioural tests of the threaded informer
and controller run unchanged against ``informers.aio`` on asyncio and on trio.

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

from informers.aio import AsyncController, AsyncListWatch, AsyncSharedIndexInformer, AsyncTransport
from informers.controller import Controller, Request

DRIVERS = ["threads", "asyncio", "trio"]
WAIT = 10.0


class _Registration:
    def __init__(self, sub: Any) -> None:
        self.sub = sub

    def has_synced(self) -> bool:
        return bool(self.sub.has_synced())


class _InformerView:
    """The part of ``SharedIndexInformer``'s API the shared tests use."""

    def __init__(self, owner: AsyncServerInformer) -> None:
        self._owner = owner

    def add_event_handler(self, handler: Any) -> _Registration:
        informer = self._owner.async_informer

        async def on_add(obj: Any, initial: bool) -> None:
            handler.on_add(obj, initial)

        async def on_update(old: Any, new: Any) -> None:
            handler.on_update(old, new)

        async def on_delete(obj: Any) -> None:
            handler.on_delete(obj)

        async def add() -> _Registration:
            return _Registration(informer.add_event_handler(on_add, on_update, on_delete))

        registration: _Registration = self._owner.portal.call(add)
        return registration

    def get_store(self) -> Any:
        return self._owner.async_informer.indexer

    def get_indexer(self) -> Any:
        return self._owner.async_informer.indexer

    def last_sync_resource_version(self) -> str:
        return self._owner.async_informer.last_sync_resource_version()

    def has_synced(self) -> bool:
        return self._owner.async_informer.has_synced()


class AsyncServerInformer:
    """``ServerInformer``'s interface over an async informer of ``server``'s pods, on
    ``backend``; keyword arguments go to :class:`AsyncSharedIndexInformer`."""

    def __init__(self, server: Any, backend: str, namespace: str | None = None,
                 **kw: Any) -> None:
        self.api = server.api_client()
        self._stack = ExitStack()
        self.portal: Any = self._stack.enter_context(start_blocking_portal(backend))
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
            if self._run is not None:
                self.portal.call(self.async_informer.stop)
                self._run.result(WAIT)
            self.portal.call(self.transport.aclose)
        finally:
            self._stack.close()
            self.api.close()


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
