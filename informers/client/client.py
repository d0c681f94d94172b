"""Reads and writes Kubernetes objects as plain dicts: the library's client for controllers.

:class:`Client` is controller-runtime's ``client.Client`` (and client-go's dynamic client)
on this library's :class:`~informers.client.transport.Transport`: dicts in, dicts out, no
model objects. Every verb of the API a controller needs is here: ``get``, ``list``,
``create``, ``update``, ``patch`` (merge, JSON and strategic merge), ``apply`` (server-side
apply), ``delete`` (with preconditions and propagation), and the ``status`` and ``scale``
subresources. What client-go configures once per client is configured once here: the field
manager, the timeout of each request, dry-run, and the retries of throttled requests.

Errors are the typed :class:`~informers.errors.StatusError` subclasses (``NotFound``,
``AlreadyExists``, ``Conflict``, ``Invalid`` with its field ``causes``...), chosen by the
answer's ``metav1.Status`` reason as apimachinery's ``errors.Is*`` functions do;
:func:`~informers.errors.ignore_not_found` and ``contextlib.suppress(NotFound)`` ignore them.

Thread-safe: one client may be shared by every worker (the transport's pool is; the
resource cache below is filled idempotently).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from informers.client import requests as rq
from informers.client.requests import (
    APPLY_PATCH,
    PATCH_TYPES,
    ApiRequest,
    Kinds,
    PatchType,
    ResourceRef,
)
from informers.client.transport import Transport
from informers.clock import REAL_CLOCK, Clock
from informers.deadline import check, remaining
from informers.errors import ApiConnectionError, NotFound, StatusError
from informers.object_type import ObjectT
from informers.resources import Resource

__all__ = [
    "APPLY_PATCH",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_REQUEST_TIMEOUT",
    "PATCH_TYPES",
    "Client",
    "PatchType",
    "ResourceRef",
    "StatusWriter",
]

logger = logging.getLogger(__name__)

DEFAULT_REQUEST_TIMEOUT = 30.0
"""Seconds for one request, sent as the ``timeout`` query parameter too, in whole seconds
rounded up (client-go ``rest.Request.Timeout``; 30 s is kubectl's and controller-runtime's
usual per-call deadline; ``None`` for none). Inside a reconcile with a timeout
(:mod:`informers.deadline`) the time left is the limit when it is shorter."""

DEFAULT_MAX_RETRIES = 10
"""Retries of a request answered 429 or 5xx with a ``Retry-After`` header, waiting what it
says (client-go ``rest.Request``: ``maxRetries: 10``, ``checkWait``). A GET whose connection
was reset is retried after 1 s too; writes are not (they may have happened)."""


class Client:
    """A dict-native client over one ``kubernetes.client.ApiClient``.

    Args:
        api_client: the official client's ``ApiClient`` (configuration, authentication, TLS,
            connection pool); only its transport is used.
        field_manager: the ``fieldManager`` of every write (required by :meth:`apply`);
            ``None`` lets the server pick one for non-apply writes.
        request_timeout: seconds per request (:data:`DEFAULT_REQUEST_TIMEOUT`).
        dry_run: send every write with ``dryRun=All`` (validated and admitted, not stored).
        max_retries: see :data:`DEFAULT_MAX_RETRIES`.
        clock: waits between retries.

    Objects passed in are never modified; every answer is a new dict owned by the caller.

    The methods that answer an object take ``object_type``, a ``TypedDict`` such as
    :class:`informers.types.apps_v1.Deployment` or a CRD's generated one, that types the
    answer for type checkers (default ``dict[str, Any]``); nothing checks it at run time.
    """

    def __init__(self, api_client: Any, *, field_manager: str | None = None,
                 request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT, dry_run: bool = False,
                 max_retries: int = DEFAULT_MAX_RETRIES, clock: Clock = REAL_CLOCK) -> None:
        self.api_client = api_client
        self.field_manager = field_manager
        self.request_timeout = request_timeout
        self.dry_run = dry_run
        self.max_retries = max_retries
        self.clock = clock
        self._transport = Transport(api_client, clock=clock)
        self._kinds = Kinds()

    # -- resources --------------------------------------------------------------------------

    def resource(self, ref: ResourceRef | None = None,
                 obj: Mapping[str, Any] | None = None) -> Resource:
        """The :class:`Resource` of ``ref``, else of ``obj``'s ``apiVersion`` and ``kind``.

        A built-in resource is known statically; any other ``(group, version, plural)``
        tuple (a custom resource) or kind is looked up in the server's discovery document of
        its group version (``GET /apis/<group>/<version>``, as the informers' discovery and
        client-go's RESTMapper read it), kept per group version and asked again only when
        it lacks what is looked for.

        Raises:
            ValueError: neither given, or an object without ``apiVersion``/``kind``.
            KeyError: a name string (``"pods"``, ``"deployments.apps"``) not built in.
            NotFound: the server serves no such resource or kind (the message names the
                group, version and plural, or the apiVersion and kind).
        """
        if ref is not None:
            found = self._kinds.known(ref)
            if found is None:
                assert isinstance(ref, tuple)  # only a tuple may need discovery
                self._discover(Kinds.api_version_of(ref))
                found = self._kinds.known(ref)
                if found is None:
                    raise Kinds.not_served(ref)
            return found
        api_version, kind = Kinds.kind_of(obj)
        found = self._kinds.get(api_version, kind)
        if found is None:
            self._discover(api_version)
            found = self._kinds.get(api_version, kind)
        if found is None:
            raise Kinds.missing(api_version, kind)
        return found

    def _discover(self, api_version: str) -> None:
        """Read ``api_version``'s discovery document into the cache; a group version the
        server does not serve (404) adds nothing."""
        try:
            doc = self._do(ApiRequest("GET", Kinds.discovery_path(api_version)))
        except NotFound:
            return
        self._kinds.add_discovery(api_version, doc)

    # -- reads ------------------------------------------------------------------------------

    def get(self, resource: ResourceRef, name: str, namespace: str | None = None, *,
            subresource: str | None = None, object_type: type[ObjectT] | None = None) -> ObjectT:
        """The object (client-go ``Get``), live from the server.

        Raises:
            NotFound: no such object.
        """
        answer: Any = self._do(rq.get_request(self.resource(resource), name, namespace,
                                              subresource))
        return answer

    def list(self, resource: ResourceRef, namespace: str | None = None, *,
             label_selector: str | None = None, field_selector: str | None = None,
             limit: int | None = None, continue_: str | None = None,
             object_type: type[ObjectT] | None = None) -> ObjectT:
        """The list object (``items``, ``metadata.resourceVersion``/``continue``); all
        namespaces when ``namespace`` is ``None``. Each item gets the list's ``apiVersion``
        and ``kind`` back (the server leaves them out), as client-go's decoding does.
        ``object_type`` is the list's type (``PodList``)."""
        res = self.resource(resource)
        answer = self._do(rq.list_request(res, namespace, label_selector, field_selector,
                                          limit, continue_))
        typed: Any = rq.finish_list(answer, res)
        return typed

    # -- writes -----------------------------------------------------------------------------

    def create(self, obj: Mapping[str, Any], *, namespace: str | None = None,
               resource: ResourceRef | None = None,
               object_type: type[ObjectT] | None = None) -> ObjectT:
        """POST ``obj``; the namespace is ``namespace``, else the object's.

        Raises:
            AlreadyExists: the name is taken.
            Invalid: the object failed validation (``causes`` names the fields).
        """
        res = self.resource(resource, obj)
        answer: Any = self._do(rq.create_request(res, obj, namespace, self.field_manager,
                                                 self.dry_run))
        return answer

    def update(self, obj: Mapping[str, Any], *, resource: ResourceRef | None = None,
               subresource: str | None = None, object_type: type[ObjectT] | None = None) -> ObjectT:
        """PUT ``obj`` (client-go ``Update``). Its ``metadata.resourceVersion`` is the
        precondition: a stale one raises :class:`~informers.errors.Conflict`; without one
        the write is unconditional.

        Raises:
            Conflict: the object changed since ``obj`` was read.
            NotFound: it is gone.
        """
        res = self.resource(resource, obj)
        answer: Any = self._do(rq.update_request(res, obj, subresource, self.field_manager,
                                                 self.dry_run))
        return answer

    def update_status(self, obj: Mapping[str, Any], *, resource: ResourceRef | None = None,
                      object_type: type[ObjectT] | None = None) -> ObjectT:
        """PUT the ``status`` subresource (only ``status`` is written)."""
        return self.update(obj, resource=resource, subresource="status",
                           object_type=object_type)

    def patch(self, resource: ResourceRef, name: str, patch: Any,
              namespace: str | None = None, *, patch_type: PatchType = "merge",
              subresource: str | None = None, object_type: type[ObjectT] | None = None) -> ObjectT:
        """PATCH with a JSON merge patch (a dict; RFC 7386), a JSON patch (a list of
        operations; RFC 6902) or a strategic merge patch (a dict; built-in kinds only).

        A merge patch carrying ``metadata.resourceVersion`` is conditional on it
        (controller-runtime ``client.MergeFromWithOptimisticLock``); a JSON patch may
        ``test`` it.

        Raises:
            UnsupportedMediaType: a strategic merge patch of a custom resource.
        """
        res = self.resource(resource)
        answer: Any = self._do(rq.patch_request(res, name, patch, namespace, patch_type,
                                                subresource, self.field_manager, self.dry_run))
        return answer

    def patch_status(self, resource: ResourceRef, name: str, patch: Any,
                     namespace: str | None = None, *, patch_type: PatchType = "merge",
                     object_type: type[ObjectT] | None = None) -> ObjectT:
        """PATCH the ``status`` subresource."""
        return self.patch(resource, name, patch, namespace, patch_type=patch_type,
                          subresource="status", object_type=object_type)

    def apply(self, obj: Mapping[str, Any], *, force: bool = False,
              field_manager: str | None = None, resource: ResourceRef | None = None,
              subresource: str | None = None, object_type: type[ObjectT] | None = None) -> ObjectT:
        """Server-side apply ``obj``, the fields this manager wants to own (client-go
        ``Apply``; controller-runtime ``client.Apply``). ``obj`` needs ``apiVersion``,
        ``kind`` and ``metadata.name``; the object is created when missing.

        Args:
            force: take over fields another manager owns instead of failing with a conflict
                (controllers should: ``client.ForceOwnership``).
            field_manager: this call's manager, else the client's.

        Raises:
            ValueError: no field manager (the server requires one for apply).
            Conflict: another manager owns a field with another value, without ``force``;
                ``causes`` names each field.
        """
        manager = rq.apply_manager(field_manager or self.field_manager)
        res = self.resource(resource, obj)
        answer: Any = self._do(rq.apply_request(res, obj, force, manager, subresource,
                                                self.dry_run))
        return answer

    def apply_status(self, obj: Mapping[str, Any], *, force: bool = False,
                     field_manager: str | None = None,
                     resource: ResourceRef | None = None,
               object_type: type[ObjectT] | None = None) -> ObjectT:
        """Server-side apply to the ``status`` subresource."""
        return self.apply(obj, force=force, field_manager=field_manager, resource=resource,
                          subresource="status", object_type=object_type)

    def delete(self, resource: ResourceRef, name: str, namespace: str | None = None, *,
               uid: str | None = None, resource_version: str | None = None,
               propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None,
               grace_period_seconds: int | None = None) -> dict[str, Any]:
        """DELETE with ``DeleteOptions``; answers the deleted object, or the object marked
        for deletion when finalizers hold it (or a ``Status``).

        Args:
            uid: a precondition (``DeleteOptions.preconditions``): the delete fails with
                :class:`~informers.errors.Conflict` unless the object has this uid.
            resource_version: a precondition likewise, on the ``resourceVersion``.
            propagation_policy: what happens to dependents (the server's default per kind
                when ``None``).
            grace_period_seconds: pods' termination grace period.

        Raises:
            NotFound: already gone.
        """
        return self._do(rq.delete_request(self.resource(resource), name, namespace, uid,
                                          resource_version, propagation_policy,
                                          grace_period_seconds, self.dry_run))

    @property
    def status(self) -> StatusWriter:
        """Writes of the ``status`` subresource by object (controller-runtime
        ``client.Status()``)."""
        return StatusWriter(self)

    # -- scale ------------------------------------------------------------------------------

    def get_scale(self, resource: ResourceRef, name: str,
                  namespace: str | None = None) -> dict[str, Any]:
        """The ``autoscaling/v1`` ``Scale`` of a scalable object (Deployment, ReplicaSet,
        StatefulSet, a CRD with a scale subresource)."""
        return self.get(resource, name, namespace, subresource="scale")

    def scale(self, resource: ResourceRef, name: str, replicas: int,
              namespace: str | None = None) -> dict[str, Any]:
        """Set ``spec.replicas`` through the ``scale`` subresource (a merge patch, as
        ``kubectl scale`` does); answers the new ``Scale``."""
        return self.patch(resource, name, {"spec": {"replicas": replicas}}, namespace,
                          subresource="scale")

    # -- the wire ---------------------------------------------------------------------------

    def _do(self, request: ApiRequest) -> dict[str, Any]:
        """Send ``request`` with the timeout and retries of :mod:`informers.client.requests`."""
        method = request.method
        what = f"{method} {request.path}"
        path, timeout = rq.target(request, self.request_timeout, check(what))
        attempt = 0
        while True:
            try:
                return self._transport.request(method, path, request.body,
                                               content_type=request.content_type,
                                               request_timeout=timeout)
            except (StatusError, ApiConnectionError) as err:
                wait = rq.retry_wait(method, err, attempt, self.max_retries)
                if wait is None:
                    raise
                left = remaining()
                if left is not None and left < wait:
                    raise  # no time left for the wait (client-go: the context ends retries)
            attempt += 1
            logger.debug("%s: retry %d in %gs", what, attempt, wait)
            self.clock.sleep(wait)


class StatusWriter:
    """Writes an object's ``status`` subresource, addressed by the object itself
    (controller-runtime ``client.SubResourceWriter``); got from :attr:`Client.status`.
    Only ``status`` is written; the rest of the object is ignored by the server."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def update(self, obj: Mapping[str, Any], *,
               object_type: type[ObjectT] | None = None) -> ObjectT:
        """PUT the status; ``obj``'s ``resourceVersion`` is the precondition."""
        return self._client.update(obj, subresource="status", object_type=object_type)

    def patch(self, obj: Mapping[str, Any], patch: Any, *, patch_type: PatchType = "merge",
              object_type: type[ObjectT] | None = None) -> ObjectT:
        """PATCH the status of ``obj`` with ``patch`` (e.g. ``{"status": {...}}``)."""
        return self._client.patch(self._client.resource(None, obj), rq.name_of(obj), patch,
                                  rq.meta(obj).get("namespace"), patch_type=patch_type,
                                  subresource="status", object_type=object_type)

    def apply(self, obj: Mapping[str, Any], *, force: bool = False,
              field_manager: str | None = None,
              object_type: type[ObjectT] | None = None) -> ObjectT:
        """Server-side apply ``obj``'s status (``apiVersion``, ``kind``, ``metadata.name``
        and the ``status`` fields this manager owns)."""
        return self._client.apply(obj, force=force, field_manager=field_manager,
                                  subresource="status", object_type=object_type)
