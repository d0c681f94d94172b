"""The informers for async code (asyncio or trio, through anyio): the same caches, listers and
client-go rules as the threaded ones, driven by tasks.

* :class:`AsyncSharedInformerFactory` (``async with``): informers per resource,
  ``await wait_for_cache_sync()``, listers;
* :class:`AsyncSharedIndexInformer`: async handlers and :class:`Subscription` async iterators
  of typed events (:class:`Added`, :class:`Updated`, :class:`Deleted`);
* :class:`AsyncController`: ``async def reconcile(request)`` on worker tasks, with the threaded
  controller's result rules, per-key exclusivity and rate limiting (:class:`AsyncWorkQueue`);
* :class:`AsyncControllerBuilder`: controller-runtime's builder (``for_``, ``owns``,
  ``watches``, predicates, options) for an :class:`~informers.aio.manager.AsyncManager`;
* :class:`AsyncClient`: the threaded :class:`~informers.client.Client`'s verbs as coroutines;
* :func:`create_or_update`, :func:`create_or_patch`, :class:`AsyncFinalizers`: the
  controllerutil helpers with the async client;
* :class:`AsyncLeaderElector` on an :class:`AsyncLeaseLock`: the threaded elector's
  decisions (:mod:`informers.leaderelection.election`) on tasks;
* :class:`AsyncReflector`: the reflector's shared rules (:mod:`informers.reflector_rules`) on
  anyio;
* :class:`AsyncTransport`, :class:`AsyncListWatch`: httpx with the official ``kubernetes``
  package's configuration, authentication and TLS.

Needs the ``async`` extra (``pip install kube-informers[async]``: anyio and httpx). Nothing in
the threaded core imports this package.
"""

from __future__ import annotations

from informers.aio.builder import AsyncControllerBuilder
from informers.aio.client import AsyncClient, AsyncStatusWriter
from informers.aio.controller import AsyncController, AsyncReconcile
from informers.aio.create_or_update import create_or_patch, create_or_update
from informers.aio.events import (
    Added,
    Deleted,
    InformerEvent,
    Subscription,
    SubscriptionOverflowError,
    Updated,
)
from informers.aio.factory import AsyncSharedInformerFactory
from informers.aio.finalizers import AsyncCleanup, AsyncFinalizers
from informers.aio.informer import AsyncSharedIndexInformer
from informers.aio.leaderelection import AsyncLeaderElector, AsyncLeaseLock
from informers.aio.reflector import AsyncReflector
from informers.aio.transport import AsyncListWatch, AsyncTransport, AsyncWatchStream
from informers.aio.workqueue import AsyncWorkQueue

__all__ = [
    "Added",
    "AsyncCleanup",
    "AsyncClient",
    "AsyncController",
    "AsyncControllerBuilder",
    "AsyncFinalizers",
    "AsyncLeaderElector",
    "AsyncLeaseLock",
    "AsyncListWatch",
    "AsyncReconcile",
    "AsyncReflector",
    "AsyncSharedIndexInformer",
    "AsyncSharedInformerFactory",
    "AsyncStatusWriter",
    "AsyncTransport",
    "AsyncWatchStream",
    "AsyncWorkQueue",
    "Deleted",
    "InformerEvent",
    "Subscription",
    "SubscriptionOverflowError",
    "Updated",
    "create_or_patch",
    "create_or_update",
]
