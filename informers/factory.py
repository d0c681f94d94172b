"""Shares one informer per resource among a process's users (client-go ``SharedInformerFactory``).

client-go ``informers/factory.go`` (typed) and ``dynamic/dynamicinformer`` (any resource).
Typical use::

    factory = SharedInformerFactory.from_config()           # kubeconfig or in-cluster
    pods = factory.core().v1().pods()
    pods.informer().add_event_handler(handler)
    factory.start(stop)
    factory.wait_for_cache_sync(stop)                        # {"pods": True}
    pods.lister().pods("default").get("web-0")
    ...
    factory.shutdown()
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from informers.client import list_watch_for_resource, list_watch_from_client
from informers.clock import REAL_CLOCK, Clock
from informers.delta_fifo import TransformFunc
from informers.informer_rules import resync_period_for
from informers.keys import NAMESPACE_INDEX, meta_namespace_index_func
from informers.list_watch import ListOptions, ListWatch
from informers.memory import MemoryTuning
from informers.object_type import ObjectT
from informers.reflector_options import ReflectorOptions
from informers.resources import Resource, lookup
from informers.shared_informer import _DEFAULT_TRANSFORM, SharedIndexInformer
from informers.typed_informers import (
    AppsInformers,
    BatchInformers,
    CoordinationInformers,
    CoreInformers,
    DiscoveryInformers,
    GenericInformer,
)
from informers.wait import wait_for_cache_sync

__all__ = ["GenericInformer", "SharedInformerFactory"]

logger = logging.getLogger(__name__)

_STOP_POLL = 0.1
"""Real seconds between the stop watcher's checks of the callers' stop events: how late a set
event may be noticed (client-go's ``WaitForCacheSync`` polls at the same period). Nothing else
waits for it: :meth:`SharedInformerFactory.shutdown` wakes the watcher at once."""

ResourceRef = Resource | str | tuple[str, str, str]

_GVR = tuple[str, str, str]


def _gvr(resource: Resource) -> _GVR:
    return (resource.group, resource.version, resource.plural)


class SharedInformerFactory:
    """Creates informers on demand, one per resource, and runs them together.

    Contract:

    * **Sharing.** Every request for the same resource (group, version, plural) returns the
      same :class:`~informers.shared_informer.SharedIndexInformer`, built with this factory's
      namespace, list options tweak, resync period, transform and clock, and with the
      ``namespace`` index (client-go gives typed informers ``{namespace:
      MetaNamespaceIndexFunc}``).
    * :meth:`start` starts, on one daemon thread each, the informers not started yet;
      idempotent; does nothing once :meth:`shutdown` was called. Informers requested later
      need another :meth:`start`.
    * :meth:`wait_for_cache_sync` waits for the *started* informers only.
    * :meth:`shutdown` stops every informer (it does not need the caller's stop event to be
      set, unlike client-go) and joins every thread the factory started; it can be called
      any number of times, concurrently. Informers stop in parallel; each stops its reflector
      first (aborting the list or watch request in flight), then lets its handlers drain
      their queues (a handler that never returns blocks shutdown).
    * **Stop events.** Each informer runs on a stop event of its own, set by
      :meth:`shutdown`, or when the event given to :meth:`start` is set: that one is noticed
      by the factory's one watcher thread (``informer-factory-stop-watch``, running only while
      such an event is pending) within 0.1 s. It polls because a thread blocked on the
      caller's event could be woken by nothing but setting that event (not the factory's to
      set), so :meth:`shutdown` could not join it; between checks it waits on the factory's
      own shutdown event, so :meth:`shutdown` ends it at once.
    * **Reset.** After :meth:`shutdown`, :meth:`reset` makes the factory startable again
      with a new informer per resource (what :meth:`Manager.start
      <informers.manager.Manager.start>` does when run again).
    * Thread-safe.

    Args:
        api_client: a ``kubernetes.client.ApiClient``.
        resync_period: default resync period of the informers (seconds, ``0``: none).
        namespace: watch only this namespace (``None``: all).
        tweak_list_options: changes the options of every list and watch
            (client-go ``WithTweakListOptions``).
        transform: applied once to every incoming object of every informer; default
            :func:`~informers.shared_informer.strip_managed_fields` (then managedFields are
            not even decoded); ``None``: none.
        clock: for every informer.
        custom_resync: resync period per resource (a :class:`Resource`, ``"pods"`` or
            ``"deployments.apps"``), overriding ``resync_period`` (``WithCustomResyncConfig``).
        detect_mutations: the informers' mutation detector (``None``: the environment).
        reflector_options: for every informer's reflector
            (:class:`~informers.reflector_options.ReflectorOptions`; default client-go's).
        memory_tuning: opt-in, process-wide GC and C-heap tuning for every informer
            (:class:`~informers.memory.MemoryTuning`); ``None`` (default) touches neither.
        compact: every informer keeps a compact cache (objects held as JSON bytes, decoded
            on each read; see :class:`~informers.shared_informer.SharedIndexInformer`).
    """

    def __init__(
        self,
        api_client: Any,
        resync_period: float = 0.0,
        namespace: str | None = None,
        tweak_list_options: Callable[[ListOptions], None] | None = None,
        transform: TransformFunc | None = _DEFAULT_TRANSFORM,
        *,
        clock: Clock = REAL_CLOCK,
        custom_resync: Mapping[Resource | str, float] | None = None,
        detect_mutations: bool | None = None,
        reflector_options: ReflectorOptions | None = None,
        memory_tuning: MemoryTuning | None = None,
        compact: bool = False,
    ) -> None:
        self.api_client = api_client
        self.compact = compact
        self.resync_period = resync_period
        self.namespace = namespace or None
        self.tweak_list_options = tweak_list_options
        self.wrap_list_watch: Callable[[ListWatch], ListWatch] | None = None
        """Applied to the ListWatch of every informer created from now on (e.g.
        :meth:`ShardCoordinator.list_watch
        <informers.shard.coordinator.ShardCoordinator.list_watch>`)."""
        self._transform = transform
        self._clock = clock
        self._custom_resync = dict(custom_resync or {})
        self._detect_mutations = detect_mutations
        self._reflector_options = reflector_options
        self.memory_tuning = memory_tuning
        self._lock = threading.Lock()
        self._informers: dict[_GVR, SharedIndexInformer[Any]] = {}
        self._list_watches: dict[_GVR, ListWatch] = {}  # what reset() builds informers on
        self._resources: dict[_GVR, Resource] = {}
        self._started: set[_GVR] = set()
        self._threads: list[threading.Thread] = []
        self._stops: dict[_GVR, threading.Event] = {}  # each started informer's stop event
        self._watched: list[tuple[threading.Event, threading.Event]] = []  # (caller's, ours)
        self._watcher: threading.Thread | None = None
        self._shutdown = threading.Event()
        self._shutting_down = False
        self._owns_client = False
        self._client_closed = False

    # -- construction from configuration -------------------------------------------------------

    @classmethod
    def from_config(
        cls, kubeconfig: str | None = None, context: str | None = None, **kwargs: Any
    ) -> SharedInformerFactory:
        """A factory on a new ``ApiClient`` loaded by the official ``kubernetes.config``.

        With ``kubeconfig`` or ``context`` given, or ``$KUBECONFIG`` set, or ``~/.kube/config``
        present, the kubeconfig is loaded; otherwise the in-cluster service account
        configuration. The factory owns the client and closes it on :meth:`shutdown`.

        Args:
            kubeconfig: path of a kubeconfig file.
            context: a context of it (default: its current context).
            **kwargs: the other constructor arguments.
        """
        from kubernetes import client, config

        configuration = client.Configuration()
        use_kubeconfig = (
            kubeconfig is not None
            or context is not None
            or bool(os.environ.get("KUBECONFIG"))
            or os.path.exists(os.path.expanduser("~/.kube/config"))
            or not os.environ.get("KUBERNETES_SERVICE_HOST")
        )
        if use_kubeconfig:
            config.load_kube_config(
                # kubernetes.config reads $KUBECONFIG only at import time: pass it explicitly
                config_file=kubeconfig or os.environ.get("KUBECONFIG") or None,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        else:
            config.load_incluster_config(client_configuration=configuration)
        factory = cls(client.ApiClient(configuration), **kwargs)
        factory._owns_client = True
        return factory

    # -- informers -----------------------------------------------------------------------------

    def _new_informer(self, resource: Resource, list_watch: ListWatch
                      ) -> SharedIndexInformer[Any]:
        return SharedIndexInformer(
            list_watch,
            resync_period_for(resource, self.resync_period, self._custom_resync),
            {NAMESPACE_INDEX: meta_namespace_index_func},
            clock=self._clock,
            transform=self._transform,
            name=resource.group_resource,
            detect_mutations=self._detect_mutations,
            memory_tuning=self.memory_tuning,
            reflector_options=self._reflector_options,
            compact=self.compact,
        )

    def informer_for(self, resource: ResourceRef, *,
                     object_type: type[ObjectT] | None = None) -> SharedIndexInformer[ObjectT]:
        """The shared informer of ``resource`` (a :class:`Resource` or a built-in's name).

        The first request creates it (client-go ``InformerFor``). ``object_type`` (a
        ``TypedDict`` such as :class:`informers.types.core_v1.Pod`) types its objects for
        type checkers only: the informer is the same and holds plain dicts.

        Raises:
            KeyError: an unknown built-in name (use :meth:`for_resource` for others).
        """
        res = resource if isinstance(resource, Resource) else lookup(resource)
        key = _gvr(res)
        with self._lock:
            inf = self._informers.get(key)
            if inf is None:
                lw: ListWatch = list_watch_from_client(
                    self.api_client, res, namespace=self.namespace, tweak=self.tweak_list_options
                )
                if self.wrap_list_watch is not None:
                    lw = self.wrap_list_watch(lw)
                inf = self._new_informer(res, lw)
                self._informers[key] = inf
                self._list_watches[key] = lw
                self._resources[key] = res
            return inf

    def resources(self) -> tuple[Resource, ...]:
        """The resources whose informers were requested so far, in request order (what
        the factory will list and watch; read by :mod:`informers.crdgen.rbac`)."""
        with self._lock:
            return tuple(self._resources.values())

    def for_resource(
        self,
        group: str,
        version: str,
        plural: str,
        *,
        kind: str | None = None,
        namespaced: bool | None = None,
        object_type: type[ObjectT] | None = None,
    ) -> GenericInformer[ObjectT]:
        """A :class:`GenericInformer` for any resource (client-go ``ForResource``).

        A built-in resource gets the same informer as its typed accessor. For any other,
        ``kind`` and ``namespaced`` are taken from the arguments when both are given, else
        from the server's discovery document (``GET /apis/<group>/<version>``, at most once
        per resource; if discovery fails it is taken as namespaced with an unknown kind).
        ``object_type`` (a ``TypedDict``: ``Website``) types the objects for type checkers
        only.
        """
        key = (group, version, plural)
        with self._lock:
            known = self._resources.get(key)
        if known is not None:
            return GenericInformer(self, known)
        try:
            res = lookup(key)
        except KeyError:
            if kind is not None and namespaced is not None:
                res = Resource(group, version, plural, kind, namespaced)
            else:
                lw = list_watch_for_resource(
                    self.api_client,
                    group,
                    version,
                    plural,
                    namespace=self.namespace,
                    tweak=self.tweak_list_options,
                    kind=kind,
                    namespaced=namespaced,
                )
                assert lw.resource is not None
                wrapped = lw if self.wrap_list_watch is None else self.wrap_list_watch(lw)
                with self._lock:
                    if key not in self._informers:
                        self._informers[key] = self._new_informer(lw.resource, wrapped)
                        self._list_watches[key] = wrapped
                        self._resources[key] = lw.resource
                    res = self._resources[key]
        return GenericInformer(self, res)

    def core(self) -> CoreInformers:
        return CoreInformers(self)

    def apps(self) -> AppsInformers:
        return AppsInformers(self)

    def coordination(self) -> CoordinationInformers:
        return CoordinationInformers(self)

    def discovery(self) -> DiscoveryInformers:
        return DiscoveryInformers(self)

    def batch(self) -> BatchInformers:
        return BatchInformers(self)

    def informers(self) -> dict[str, SharedIndexInformer[Any]]:
        """Every informer created so far, by resource name (``"pods"``, ``"deployments.apps"``)."""
        with self._lock:
            return {self._resources[k].group_resource: v for k, v in self._informers.items()}

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, stop_event: threading.Event | None = None) -> None:
        """Start every informer not started yet, each on its own daemon thread.

        Non-blocking and idempotent; does nothing after :meth:`shutdown`.

        Args:
            stop_event: stops the informers started by this call when set; ``None``: they
                run until :meth:`shutdown`.
        """
        with self._lock:
            if self._shutting_down:
                return
            for key, inf in self._informers.items():
                if key in self._started:
                    continue
                self._started.add(key)
                own = threading.Event()
                self._stops[key] = own
                if stop_event is not None:
                    if stop_event.is_set():
                        own.set()
                    else:
                        self._watched.append((stop_event, own))
                thread = threading.Thread(
                    target=inf.run,
                    args=(own,),
                    name=f"informer-{inf.name}",
                    daemon=True,
                )
                self._threads.append(thread)
                thread.start()
            if self._watched and self._watcher is None:
                self._watcher = threading.Thread(
                    target=self._watch_stop_events,
                    name="informer-factory-stop-watch",
                    daemon=True,
                )
                self._threads.append(self._watcher)
                self._watcher.start()

    def _watch_stop_events(self) -> None:
        """The watcher thread: stop the informers whose caller's event is set; end when none
        is left to watch or at shutdown."""
        while True:
            with self._lock:
                self._watched = [(c, o) for c, o in self._watched if not o.is_set()]
                if not self._watched or self._shutting_down:
                    self._watcher = None
                    return
                watched = list(self._watched)
            for caller, own in watched:
                if caller.is_set():
                    own.set()
            REAL_CLOCK.wait_event(self._shutdown, _STOP_POLL)

    def wait_for_cache_sync(
        self, stop_event: threading.Event | None = None, timeout: float | None = None
    ) -> dict[str, bool]:
        """Wait until every started informer has synced, ``stop_event`` is set, the timeout
        passes (on the factory's clock) or the factory shuts down.

        Returns:
            ``{resource name: synced}`` for every started informer, e.g. ``{"pods": True}``
            (``False`` for those not synced when the wait was stopped).

        Raises:
            CacheSyncTimeoutError: the timeout passed first; it names every informer that had
                not synced and its last list-or-watch error.
        """
        with self._lock:
            started = {
                self._resources[k].group_resource: self._informers[k] for k in self._started
            }
        stop = stop_event if stop_event is not None else self._shutdown
        informers = [inf for _, inf in sorted(started.items())]
        wait_for_cache_sync(stop, *(inf.has_synced for inf in informers), clock=self._clock,
                            timeout=timeout)
        return {name: inf.has_synced() for name, inf in sorted(started.items())}

    def shutdown(self) -> None:
        """Stop every informer and join every thread the factory started. Idempotent."""
        with self._lock:
            self._shutting_down = True
            threads = list(self._threads)
            stops = list(self._stops.values())
        self._shutdown.set()  # also wakes the stop watcher
        for event in stops:
            event.set()
        for thread in threads:
            thread.join()
        with self._lock:
            close = self._owns_client and not self._client_closed
            self._client_closed = True
        if close:
            self.api_client.close()

    def reset(self) -> dict[SharedIndexInformer, SharedIndexInformer]:
        """Make a factory that was shut down usable again: each informer it had is replaced by
        a new, unstarted one of the same resource, list-watch and options (an empty cache, no
        handlers), and :meth:`start` starts them. Informers and listers taken before keep
        the old, stopped cache: take them again. A factory made by :meth:`from_config` closes
        its client again at the next :meth:`shutdown`.

        Returns:
            ``{old informer: its replacement}``.

        Raises:
            RuntimeError: :meth:`shutdown` was not called.
        """
        with self._lock:
            if not self._shutting_down:
                raise RuntimeError("reset() needs a factory that was shut down")
            replaced = {}
            for key, old in self._informers.items():
                new = self._new_informer(self._resources[key], self._list_watches[key])
                self._informers[key] = new
                replaced[old] = new
            self._started = set()
            self._threads = []
            self._stops = {}
            self._watched = []
            self._watcher = None
            self._shutdown = threading.Event()
            self._shutting_down = False
            self._client_closed = False
        return replaced

    def __enter__(self) -> SharedInformerFactory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
