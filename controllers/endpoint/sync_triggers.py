"""Decides which Service keys the endpoints controller syncs: its informer event handlers.

The Python counterpart of the handlers ``NewEndpointController`` registers in
``pkg/controller/endpoint/endpoints_controller.go`` (k8s.io/kubernetes v1.36.3):
``onServiceUpdate`` (Service add and update), ``onServiceDelete``, ``addPod``, ``updatePod``,
``deletePod`` and ``onEndpointsDelete``. v1.36 resolves a pod event's Services on a second
queue (``podQueue``, ``syncPod``); here the pod handlers resolve them at once, which yields the
same Service keys. Plus this project's ``watch_endpoints_updates`` extension (Endpoints adds and
updates by other writers re-sync their Service), which asks a
:class:`~controllers.endpoint.write_echoes.WriteEchoTracker` whether an event is the echo of
the controller's own write.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from controllers.endpoint.desired import string_map
from controllers.endpoint.event_handler import EventHandler, register
from controllers.endpoint.json_values import as_map as _map
from controllers.endpoint.json_values import meta_of as _meta
from controllers.endpoint.membership import (
    pod_service_memberships,
    services_to_update_on_pod_change,
)
from controllers.endpoint.service_selection import ServiceSelector
from controllers.endpoint.write_echoes import Echo, WriteEchoTracker
from informers.errors import NotFoundError
from informers.keys import (
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key_func,
    split_meta_namespace_key,
)
from informers.workqueue import RateLimitingQueue

__all__ = ["SyncTriggers"]

# The controller's records keep the one logger name operators filter on, whichever module of
# the controller emits them.
logger = logging.getLogger("controllers.endpoint.controller")


class SyncTriggers:
    """The endpoints controller's event handlers; they only enqueue Service keys on ``queue``.

    Service add/update/delete enqueue at once; pod add/update/delete enqueue the Services
    selecting the pod (old and new labels on a label change, nothing unless fields the
    Endpoints depend on changed) after :attr:`batch_period`; Endpoints delete at once. With
    :attr:`watch_endpoints_updates`, an Endpoints added (after the initial list) or updated by
    someone else, whose Service exists and has a selector, is enqueued at once and logged at
    INFO; the echoes of the controller's own writes are told apart by ``echoes`` (logged at
    DEBUG, nothing enqueued). The writer reports the versions ``echoes`` held back that turned
    out foreign through :meth:`foreign_write`.

    **Thread safety**: every method may be called from any thread; they share only
    thread-safe parts (the work queue, the service lister and selector, the echo tracker).
    :attr:`batch_period` and :attr:`watch_endpoints_updates` are plain attributes, read on
    each event.

    Args:
        queue: the controller's work queue of Service keys.
        services: the Service lister (``by_namespace(ns).get(name)``).
        service_selector: finds the Services that may select a pod.
        echoes: the write-echo tracker shared with the controller's writes.
        batch_period: seconds pod-triggered keys wait (``--endpoint-updates-batch-period``).
        watch_endpoints_updates: re-sync on foreign Endpoints adds and updates.
    """

    def __init__(
        self,
        queue: RateLimitingQueue,
        services: Any,
        service_selector: ServiceSelector,
        echoes: WriteEchoTracker,
        *,
        batch_period: float,
        watch_endpoints_updates: bool,
    ) -> None:
        self._queue = queue
        self._services = services
        self._service_selector = service_selector
        self._echoes = echoes
        self.batch_period = batch_period
        self.watch_endpoints_updates = watch_endpoints_updates

    def register(
        self, controller_name: str, service_informer: Any, pod_informer: Any,
        endpoints_informer: Any,
    ) -> list[Any]:
        """Register the handlers on the three informers (synchronously where possible, see
        :func:`~controllers.endpoint.event_handler.register`); their registrations, in the
        order service, pod, endpoints."""
        return [
            register(service_informer, EventHandler(
                controller_name, "service", self.on_service_add, self.on_service_update,
                self.on_service_delete)),
            register(pod_informer, EventHandler(
                controller_name, "pod", self.on_pod_add, self.on_pod_update,
                self.on_pod_delete)),
            register(endpoints_informer, EventHandler(
                controller_name, "endpoints", self.on_endpoints_add, self.on_endpoints_update,
                self.on_endpoints_delete)),
        ]

    def enqueue_service(self, obj: Any) -> None:
        """Enqueue the key of ``obj`` (a Service, an Endpoints or a tombstone of either)."""
        try:
            key = deletion_handling_meta_namespace_key_func(obj)
        except ValueError as err:
            logger.error("Couldn't get key for object %r: %s", obj, err)
            return
        self._queue.add(key)

    def on_service_add(self, obj: Any, _is_in_initial_list: bool) -> None:
        self.enqueue_service(obj)

    def on_service_update(self, _old: Any, new: Any) -> None:
        self.enqueue_service(new)

    def on_service_delete(self, obj: Any) -> None:
        self.enqueue_service(obj)

    def _enqueue_pod_services(self, pod: Any) -> None:
        namespace = _meta(pod).get("namespace")
        namespace = namespace if isinstance(namespace, str) else ""
        services = self._service_selector.candidates(namespace, pod)
        for key in pod_service_memberships(services, string_map(_meta(pod).get("labels"))):
            self._queue.add_after(key, self.batch_period)

    def on_pod_add(self, obj: Any, _is_in_initial_list: bool) -> None:
        self._enqueue_pod_services(obj)

    def on_pod_update(self, old: Any, new: Any) -> None:
        keys = services_to_update_on_pod_change(
            lambda ns: self._service_selector.candidates(ns, old, new), old, new
        )
        for key in keys:
            self._queue.add_after(key, self.batch_period)

    def on_pod_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            if not isinstance(obj.obj, Mapping):
                logger.error("Couldn't get object from tombstone %r", obj)
                return
            obj = obj.obj
        self._enqueue_pod_services(obj)

    def on_endpoints_delete(self, obj: Any) -> None:
        self.enqueue_service(obj)

    def on_endpoints_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if not is_in_initial_list:  # the initial list is covered by the startup sweep
            self._on_endpoints_change(obj)

    def on_endpoints_update(self, old: Any, new: Any) -> None:
        if _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion"):
            self._on_endpoints_change(new)

    def _on_endpoints_change(self, endpoints: Any) -> None:
        if not self.watch_endpoints_updates:
            return
        try:
            key = deletion_handling_meta_namespace_key_func(endpoints)
        except ValueError:
            return
        rv = _meta(endpoints).get("resourceVersion")
        rv = rv if isinstance(rv, str) else None
        verdict = self._echoes.classify(key, rv)
        if verdict is Echo.OWN:
            logger.debug("Endpoints %s: watch echo of our own write (resourceVersion %s)", key, rv)
            return
        if verdict is Echo.PENDING:
            logger.debug("Endpoints %s changed (resourceVersion %s) while our write is in "
                         "flight; deciding when it returns", key, rv)
            return
        namespace, name = split_meta_namespace_key(key)
        try:
            service = self._services.by_namespace(namespace).get(name)
        except NotFoundError:
            return
        spec = _map(_map(service).get("spec"))
        if spec.get("type") == "ExternalName" or spec.get("selector") is None:
            return  # not ours to manage
        self.foreign_write(key, rv)

    def foreign_write(self, key: str, rv: str | None) -> None:
        """Another writer changed the Endpoints ``key`` (to version ``rv``): log it at INFO and
        enqueue the Service."""
        logger.info(
            "Endpoints %s was changed by another writer (resourceVersion %s); syncing it", key, rv
        )
        self._queue.add(key)
