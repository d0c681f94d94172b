"""Shares one async informer per resource among the users of an ``async with`` block.

``async with AsyncSharedInformerFactory(api_client) as factory:`` owns a task group: every
informer asked for (before or inside the block) runs in it, on one
:class:`~informers.aio.transport.AsyncTransport` (one httpx connection pool). Leaving the block
stops every informer (watches end, what is queued is applied, handlers get their
``drain_timeout``), waits for every task and closes every connection; a second ``async with``
of the same factory is an error (make a new one). An exception or a cancellation leaving the
block cancels everything at once.

The threaded counterpart is :class:`informers.factory.SharedInformerFactory`; the informers'
rules are the same (see :mod:`informers.aio.informer`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import anyio

from informers.aio.informer import DEFAULT_DRAIN_TIMEOUT, AsyncSharedIndexInformer
from informers.aio.transport import AsyncListWatch, AsyncTransport
from informers.clock import REAL_CLOCK, Clock
from informers.errors import AlreadyStartedError, CacheSyncTimeoutError
from informers.informer_rules import resync_period_for
from informers.keys import NAMESPACE_INDEX, Indexers, meta_namespace_index_func
from informers.list_watch import DEFAULT_CONNECT_TIMEOUT, TweakFunc
from informers.listers import Lister
from informers.memory import MemoryTuning
from informers.reflector_options import ReflectorOptions
from informers.resources import Resource, lookup
from informers.shared_informer import strip_managed_fields

__all__ = ["AsyncSharedInformerFactory"]

logger = logging.getLogger(__name__)


class AsyncSharedInformerFactory:
    """One :class:`~informers.aio.informer.AsyncSharedIndexInformer` per resource.

    Args:
        api_client: a ``kubernetes.client.ApiClient`` or ``Configuration``.
        namespace: watch one namespace; ``None`` for all.
        label_selector: set on every list and watch.
        field_selector: set on every list and watch.
        tweak: called with a copy of the options of every list and watch.
        options: every reflector's :class:`~informers.reflector_options.ReflectorOptions`.
        resync_period: every informer's default resync period (``0``: none).
        custom_resync: resync period per resource (a :class:`~informers.resources.Resource`,
            ``"pods"`` or ``"deployments.apps"``), overriding ``resync_period`` (client-go
            ``WithCustomResyncConfig``), as for the threaded factory.
        transform: applied once to every incoming object of every informer; default
            :func:`~informers.shared_informer.strip_managed_fields` (then managedFields are
            not even decoded); ``None``: none, and the objects are cached as sent.
        clock: for every informer (backoff, resync, mutation detector); a FakeClock in tests.
        drain_timeout: each informer's, see :data:`~informers.aio.informer.DEFAULT_DRAIN_TIMEOUT`.
        connect_timeout: seconds to establish a connection.
        detect_mutations: the informers' mutation detector (``None``: the
            ``KUBE_CACHE_MUTATION_DETECTOR`` environment variable decides).
        memory_tuning: opt-in, process-wide GC and C-heap tuning for every informer
            (:class:`~informers.memory.MemoryTuning`); ``None`` (default) touches neither.
        compact: every informer keeps a compact cache (objects held as JSON bytes, decoded
            on each read; see :class:`~informers.shared_informer.SharedIndexInformer`).

    Each informer is named by its resource (``"pods"``, ``"deployments.apps"``), as the
    threaded factory's are, so its queue publishes the metrics of
    :mod:`informers.fifo_metrics`.

    Create it and use it from one event loop (its informers make anyio objects).
    """

    def __init__(
        self,
        api_client: Any,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        tweak: TweakFunc | None = None,
        options: ReflectorOptions | None = None,
        resync_period: float = 0.0,
        custom_resync: Mapping[Resource | str, float] | None = None,
        transform: Callable[[Any], Any] | None = strip_managed_fields,
        clock: Clock = REAL_CLOCK,
        drain_timeout: float = DEFAULT_DRAIN_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        detect_mutations: bool | None = None,
        memory_tuning: MemoryTuning | None = None,
        compact: bool = False,
    ) -> None:
        self.api_client = api_client
        self.namespace = namespace or None
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.tweak = tweak
        self.options = options
        self.resync_period = resync_period
        self.custom_resync = dict(custom_resync or {})
        self.transform = transform
        self.clock = clock
        self.drain_timeout = drain_timeout
        self.connect_timeout = connect_timeout
        self.detect_mutations = detect_mutations
        self.memory_tuning = memory_tuning
        self.compact = compact
        self.transport: AsyncTransport | None = None
        self._informers: dict[Resource, AsyncSharedIndexInformer] = {}
        self._task_group: Any = None
        self._stack: AsyncExitStack | None = None
        self._entered = False

    async def __aenter__(self) -> AsyncSharedInformerFactory:
        if self._entered:
            raise AlreadyStartedError("an AsyncSharedInformerFactory runs once; make a new one")
        self._entered = True
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            self.transport = await stack.enter_async_context(
                AsyncTransport(self.api_client, self.connect_timeout))
            self._task_group = await stack.enter_async_context(anyio.create_task_group())
        except BaseException:
            await stack.__aexit__(None, None, None)
            raise
        self._stack = stack
        for informer in self._informers.values():
            self._start(informer)
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> bool | None:
        stack, self._stack = self._stack, None
        assert stack is not None
        try:
            if exc_type is None:
                for informer in self._informers.values():
                    informer.stop()
                return await stack.__aexit__(None, None, None)
            # the block failed or was cancelled: cancel every task, close every connection,
            # and let the block's own exception through (not wrapped in an exception group)
            self._task_group.cancel_scope.cancel()
            await stack.__aexit__(None, None, None)
            return False
        finally:
            self._task_group = None

    def _start(self, informer: AsyncSharedIndexInformer) -> None:
        assert self.transport is not None
        informer.list_watch.transport = self.transport
        self._task_group.start_soon(informer.run, name=f"informer-{informer.name}")

    def informer_for(self, resource: Resource | str | tuple[str, str, str],
                     indexers: Indexers | None = None) -> AsyncSharedIndexInformer:
        """The informer of ``resource`` (made, and started if the block is running, on first
        use), with the ``namespace`` index; ``indexers`` are added on first use only."""
        res = resource if isinstance(resource, Resource) else lookup(resource)
        informer = self._informers.get(res)
        if informer is not None:
            return informer
        list_watch = AsyncListWatch(
            self.transport,  # type: ignore[arg-type]  # set when the block starts it
            res, self.namespace, self.field_selector, self.label_selector, self.tweak,
            # what the default transform drops is never decoded (as in the threaded informer)
            drop_managed_fields=self.transform is strip_managed_fields,
        )
        # the namespace index, as the threaded factory's informers have (listers use it)
        all_indexers = {NAMESPACE_INDEX: meta_namespace_index_func, **(indexers or {})}
        informer = AsyncSharedIndexInformer(
            list_watch, all_indexers, options=self.options,
            resync_period=resync_period_for(res, self.resync_period, self.custom_resync),
            transform=self.transform, clock=self.clock,
            drain_timeout=self.drain_timeout, name=res.group_resource,
            detect_mutations=self.detect_mutations, memory_tuning=self.memory_tuning,
            compact=self.compact)
        self._informers[res] = informer
        if self._task_group is not None:
            self._start(informer)
        return informer

    def lister(self, resource: Resource | str | tuple[str, str, str]) -> Lister:
        """A :class:`~informers.listers.Lister` over the informer's cache (synchronous reads)."""
        informer = self.informer_for(resource)
        assert informer.resource is not None
        return Lister(informer.indexer, informer.resource)

    @property
    def informers(self) -> dict[Resource, AsyncSharedIndexInformer]:
        return dict(self._informers)

    async def wait_for_cache_sync(self, timeout: float | None = None) -> dict[str, bool]:
        """Wait until every informer has synced.

        Returns:
            ``{resource name: True}`` for every informer.

        Raises:
            CacheSyncTimeoutError: ``timeout`` seconds passed first; it names every informer
                that had not synced and its last list-or-watch error.
        """
        informers = dict(self._informers)
        with anyio.move_on_after(timeout):
            for informer in informers.values():
                await informer.wait_synced()
        unsynced = {res.group_resource: inf.last_sync_error for res, inf in informers.items()
                    if not inf.has_synced()}
        if unsynced:
            raise CacheSyncTimeoutError(unsynced, timeout if timeout is not None else 0.0)
        return {name: True for name in sorted(res.group_resource for res in informers)}
