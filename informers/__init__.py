"""kube-informers: client-go's informer and controller machinery for Python.

The package root only re-exports the public names; each lives in a module named by its noun.
"""

from __future__ import annotations

from informers import fields, labels
from informers.backoff import Backoff
from informers.clock import REAL_CLOCK, Clock, FakeClock, RealClock
from informers.controller import Controller, Result, TerminalError
from informers.decoder import decode, decode_event, strip_managed_fields_bytes
from informers.delta_fifo import (
    Delta,
    DeltaFIFO,
    Deltas,
    DeltaType,
    KeyListerGetter,
    TransformFunc,
)
from informers.errors import (
    ApiConnectionError,
    CacheMutationError,
    FIFOClosedError,
    IndexConflictError,
    IndexFuncError,
    IndexNotFoundError,
    InformersError,
    InformerStartedError,
    InformerStoppedError,
    KeyFuncError,
    LeaderElectionConfigError,
    LeaseNotInitializedError,
    NotFoundError,
    ResponseDecodeError,
    SelectorError,
    StatusError,
    VeryShortWatchError,
    WatchDecodeError,
    is_connection_refused,
    is_expired,
    is_internal_error,
    is_too_large_resource_version,
    is_too_many_requests,
)
from informers.events import EventRecorder
from informers.factory import GenericInformer, SharedInformerFactory
from informers.gc_pause import gc_paused
from informers.handlers import (
    FilteringResourceEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
)
from informers.indexer import Indexer
from informers.keys import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    ExplicitKey,
    Indexers,
    IndexFunc,
    KeyFunc,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_index_func,
    meta_namespace_key_func,
    split_meta_namespace_key,
)
from informers.leaderelection import LeaderElector, LeaseLock
from informers.list_watch import (
    CancelToken,
    ListOptions,
    ListPager,
    ListResult,
    ListWatch,
    WatchEvent,
    WatchStream,
)
from informers.listers import Lister, NamespaceLister
from informers.manager import LeaderElectionConfig, Manager
from informers.mutation_detector import CacheMutationDetector
from informers.processor_listener import ProcessorListener
from informers.reflector import (
    Reflector,
    ReflectorMetrics,
    ReflectorState,
    StoreLike,
    default_watch_error_handler,
)
from informers.resources import BUILTIN_RESOURCES, Resource, lookup
from informers.shared_informer import (
    ResourceEventHandlerRegistration,
    SharedIndexInformer,
    strip_managed_fields,
)
from informers.shared_processor import SharedProcessor
from informers.synchronous_listener import SynchronousListener
from informers.undelta_store import UndeltaStore
from informers.wait import wait_for_cache_sync, wait_for_named_cache_sync
from informers.watch_stream import HttpWatchStream

__all__ = [
    "BUILTIN_RESOURCES",
    "NAMESPACE_INDEX",
    "REAL_CLOCK",
    "ApiConnectionError",
    "Backoff",
    "CacheMutationDetector",
    "CacheMutationError",
    "CancelToken",
    "Clock",
    "Controller",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "EventRecorder",
    "ExplicitKey",
    "FIFOClosedError",
    "FakeClock",
    "FilteringResourceEventHandler",
    "GenericInformer",
    "HttpWatchStream",
    "IndexConflictError",
    "IndexFunc",
    "IndexFuncError",
    "IndexNotFoundError",
    "Indexer",
    "Indexers",
    "InformerStartedError",
    "InformerStoppedError",
    "InformersError",
    "KeyFunc",
    "KeyFuncError",
    "KeyListerGetter",
    "LeaderElectionConfig",
    "LeaderElectionConfigError",
    "LeaderElector",
    "LeaseLock",
    "LeaseNotInitializedError",
    "ListOptions",
    "ListPager",
    "ListResult",
    "ListWatch",
    "Lister",
    "Manager",
    "NamespaceLister",
    "NotFoundError",
    "ProcessorListener",
    "RealClock",
    "Reflector",
    "ReflectorMetrics",
    "ReflectorState",
    "Resource",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "ResponseDecodeError",
    "Result",
    "SelectorError",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "SharedProcessor",
    "StatusError",
    "StoreLike",
    "SynchronousListener",
    "TerminalError",
    "TransformFunc",
    "UndeltaStore",
    "VeryShortWatchError",
    "WatchDecodeError",
    "WatchEvent",
    "WatchStream",
    "decode",
    "decode_event",
    "default_watch_error_handler",
    "deletion_handling_meta_namespace_key_func",
    "fields",
    "gc_paused",
    "is_connection_refused",
    "is_expired",
    "is_internal_error",
    "is_too_large_resource_version",
    "is_too_many_requests",
    "labels",
    "lookup",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "split_meta_namespace_key",
    "strip_managed_fields",
    "strip_managed_fields_bytes",
    "wait_for_cache_sync",
    "wait_for_named_cache_sync",
]
