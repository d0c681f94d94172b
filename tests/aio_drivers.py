"""Runs ``informers.aio`` from synchronous test code: an event loop (asyncio or trio) in a
thread (anyio's blocking portal), so behavioural tests written once for the threaded informer
also drive the async one (the convergence run's ``driver``; the informer scenarios of
tests/test_aio_informer.py)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from anyio.from_thread import start_blocking_portal

from informers.aio import AsyncSharedInformerFactory
from informers.reflector_options import ReflectorOptions


class AsyncDriver:
    """A pods informer of an :class:`AsyncSharedInformerFactory` on ``backend``, with the
    threaded driver's methods (see ``ThreadedDriver`` in tests/test_informer_convergence.py).
    Handlers are async functions that call the recorder's methods, on the loop's thread."""

    def __init__(self, backend: str, resource: str = "pods") -> None:
        self.backend = backend
        self.resource = resource
        self._stack = ExitStack()
        self.portal: Any = None
        self.factory: AsyncSharedInformerFactory | None = None
        self.informer: Any = None

    def start(self, api_client: Any, options: ReflectorOptions | None,
              early: Any = None, timeout: float = 10.0, **factory_args: Any) -> dict[str, bool]:
        self.portal = self._stack.enter_context(start_blocking_portal(self.backend))

        async def make() -> AsyncSharedInformerFactory:
            return AsyncSharedInformerFactory(api_client, options=options, **factory_args)

        self.factory = self.portal.call(make)
        self._stack.enter_context(self.portal.wrap_async_context_manager(self.factory))

        async def informer() -> Any:
            assert self.factory is not None
            inf = self.factory.informer_for(self.resource)
            if early is not None:
                _add(inf, early)
            return inf

        self.informer = self.portal.call(informer)

        async def sync() -> dict[str, bool]:
            assert self.factory is not None
            return await self.factory.wait_for_cache_sync(timeout=timeout)

        result: dict[str, bool] = self.portal.call(sync)
        return result

    def add_handler(self, recorder: Any) -> Callable[[], bool]:
        async def add() -> Any:
            return _add(self.informer, recorder)

        sub = self.portal.call(add)
        return lambda: len(sub) == 0

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``async fn(*args)`` on the loop and return its result."""
        return self.portal.call(fn, *args)

    def indexer(self) -> Any:
        return self.informer.indexer

    def metrics(self) -> Any:
        return self.informer.reflector_metrics

    def shutdown(self) -> None:
        self._stack.close()


def _add(informer: Any, recorder: Any) -> Any:
    async def on_add(obj: Any, initial: bool) -> None:
        recorder.on_add(obj, initial)

    async def on_update(old: Any, new: Any) -> None:
        recorder.on_update(old, new)

    async def on_delete(obj: Any) -> None:
        recorder.on_delete(obj)

    return informer.add_event_handler(on_add, on_update, on_delete)
