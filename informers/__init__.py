"""kube-informers: client-go's informer and controller machinery for Python.

Newcomers start with :class:`SharedInformerFactory` (one shared, indexed cache per resource,
kept current by list and watch), its listers and event handlers, then
:class:`Controller` and :class:`Manager` to reconcile keys from a work queue. Tests run the
same code against the embedded API server of :mod:`informers.testing`::

    import threading
    from informers import ResourceEventHandlerFuncs, SharedInformerFactory
    from informers.testing import ApiServer

    with ApiServer() as server:
        server.create({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "web", "namespace": "default"},
                       "spec": {"containers": [{"name": "web", "image": "nginx"}]}})
        factory = SharedInformerFactory(server.api_client())
        pods = factory.core().v1().pods()
        pods.informer().add_event_handler(ResourceEventHandlerFuncs(
            on_add=lambda pod: print("added", pod["metadata"]["name"])))
        factory.start()
        factory.wait_for_cache_sync()
        print(pods.lister().pods("default").get("web")["metadata"]["name"])
        factory.shutdown()

The root exports what a user of the library needs; every other name lives in the module of
its component (for example :mod:`informers.client` for HTTP, :mod:`informers.workqueue`,
:mod:`informers.leaderelection`, :mod:`informers.events`, :mod:`informers.controller`).
"""

from __future__ import annotations

from informers import fields, labels
from informers.clock import Clock, FakeClock, RealClock
from informers.controller import Controller, Result, TerminalError
from informers.delta_fifo import DeltaFIFO
from informers.errors import (
    ApiConnectionError,
    CacheSyncTimeoutError,
    InformersError,
    StatusError,
)
from informers.events import EventRecorder
from informers.factory import GenericInformer, SharedInformerFactory
from informers.handlers import (
    FilteringResourceEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
)
from informers.indexer import Indexer
from informers.keys import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_index_func,
    meta_namespace_key_func,
    split_meta_namespace_key,
)
from informers.leaderelection import LeaderElector, LeaseLock
from informers.list_watch import ListOptions, ListWatch
from informers.listers import Lister, NamespaceLister
from informers.manager import LeaderElectionConfig, Manager
from informers.memory import MemoryTuning
from informers.reflector import Reflector
from informers.reflector_options import ReflectorOptions
from informers.resources import Resource, lookup
from informers.shared_informer import (
    ResourceEventHandlerRegistration,
    SharedIndexInformer,
    strip_managed_fields,
)
from informers.wait import wait_for_cache_sync
from informers.workqueue import RateLimitingQueue

__all__ = [
    "NAMESPACE_INDEX",
    "ApiConnectionError",
    "CacheSyncTimeoutError",
    "Clock",
    "Controller",
    "DeletedFinalStateUnknown",
    "DeltaFIFO",
    "EventRecorder",
    "FakeClock",
    "FilteringResourceEventHandler",
    "GenericInformer",
    "Indexer",
    "InformersError",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeaseLock",
    "ListOptions",
    "ListWatch",
    "Lister",
    "Manager",
    "MemoryTuning",
    "NamespaceLister",
    "RateLimitingQueue",
    "RealClock",
    "Reflector",
    "ReflectorOptions",
    "Resource",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "Result",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "StatusError",
    "TerminalError",
    "deletion_handling_meta_namespace_key_func",
    "fields",
    "labels",
    "lookup",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "split_meta_namespace_key",
    "strip_managed_fields",
    "wait_for_cache_sync",
]
