"""Reads and writes Kubernetes objects as plain dicts from async code: the async
:class:`~informers.client.client.Client`.

:class:`AsyncClient` has the threaded client's verbs, arguments and answers (``get``,
``list``, ``create``, ``update``, ``patch`` merge/JSON/strategic, ``apply`` server-side with
a field manager and ``force``, ``delete`` with preconditions and propagation, the ``status``
and ``scale`` subresources, dry-run), each a coroutine. The requests are built, and the retries
decided, by the same functions (:mod:`informers.client.requests`); the answers and errors are
mapped by the same status parser (:func:`informers.client.status.status_error`), so the typed
errors of :mod:`informers.errors` (``NotFound``, ``Conflict``, ``Invalid``...) are the same
and :func:`~informers.errors.ignore_not_found` works on them.

It sends through an :class:`~informers.aio.transport.AsyncTransport`: its own (``async with
AsyncClient(api_client)``, closed when the block ends) or a shared one passed in (not closed
here, e.g. an :class:`~informers.aio.factory.AsyncSharedInformerFactory`'s ``transport``).
Retry waits are ``anyio.sleep``; a reconcile deadline (:mod:`informers.deadline`, a context
variable) cuts each request's timeout as in the threaded client. One event loop; any number of
tasks may share a client.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import anyio

from informers.aio.transport import AsyncTransport
from informers.client import requests as rq
from informers.client.client import DEFAULT_MAX_RETRIES, DEFAULT_REQUEST_TIMEOUT
from informers.client.requests import ApiRequest, Kinds, PatchType, ResourceRef
from informers.deadline import check, remaining
from informers.errors import ApiConnectionError, NotFound, StatusError
from informers.object_type import ObjectT
from informers.resources import Resource

__all__ = ["AsyncClient", "AsyncStatusWriter"]

logger = logging.getLogger(__name__)


class AsyncClient:
    """A dict-native async client (see the module docstring).

    Args:
        api_client: a ``kubernetes.client.ApiClient`` or ``Configuration`` (used for an own
            transport); ignored when ``transport`` is given.
        transport: a shared :class:`AsyncTransport` (its owner closes it).
        field_manager: as :class:`informers.client.Client`'s.
        request_timeout: likewise (:data:`~informers.client.client.DEFAULT_REQUEST_TIMEOUT`).
        dry_run: likewise.
        max_retries: likewise (:data:`~informers.client.client.DEFAULT_MAX_RETRIES`).
        sleep: waits between retries (``anyio.sleep``; tests inject their own).
    """

    def __init__(self, api_client: Any = None, *, transport: AsyncTransport | None = None,
                 field_manager: str | None = None,
                 request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT, dry_run: bool = False,
                 max_retries: int = DEFAULT_MAX_RETRIES,
                 sleep: Callable[[float], Awaitable[None]] = anyio.sleep) -> None:
        if transport is None and api_client is None:
            raise ValueError("an AsyncClient needs an api_client or a transport")
        self._owned = transport is None
        self.transport = transport if transport is not None else AsyncTransport(api_client)
        self.field_manager = field_manager
        self.request_timeout = request_timeout
        self.dry_run = dry_run
        self.max_retries = max_retries
        self.sleep = sleep
        self._kinds = Kinds()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client's own transport (a shared one is left open). Idempotent."""
        if self._owned:
            await self.transport.aclose()

    # -- resources --------------------------------------------------------------------------

    async def resource(self, ref: ResourceRef | None = None,
                       obj: Mapping[str, Any] | None = None) -> Resource:
        """As :meth:`informers.client.Client.resource`: a ``(group, version, plural)``
        tuple or kind not built in is looked up in its group version's discovery document
        (kept per group version, asked again only when it lacks what is looked for).

        Raises:
            NotFound: the server serves no such resource or kind.
        """
        if ref is not None:
            found = self._kinds.known(ref)
            if found is None:
                assert isinstance(ref, tuple)  # only a tuple may need discovery
                await self._discover(Kinds.api_version_of(ref))
                found = self._kinds.known(ref)
                if found is None:
                    raise Kinds.not_served(ref)
            return found
        api_version, kind = Kinds.kind_of(obj)
        found = self._kinds.get(api_version, kind)
        if found is None:
            await self._discover(api_version)
            found = self._kinds.get(api_version, kind)
        if found is None:
            raise Kinds.missing(api_version, kind)
        return found

    async def _discover(self, api_version: str) -> None:
        """As :meth:`informers.client.Client._discover`."""
        try:
            doc = await self._do(ApiRequest("GET", Kinds.discovery_path(api_version)))
        except NotFound:
            return
        self._kinds.add_discovery(api_version, doc)

    # -- reads ------------------------------------------------------------------------------

    async def get(self, resource: ResourceRef, name: str, namespace: str | None = None, *,
                  subresource: str | None = None,
                  object_type: type[ObjectT] | None = None) -> ObjectT:
        """As :meth:`informers.client.Client.get`."""
        res = await self.resource(resource)
        answer: Any = await self._do(rq.get_request(res, name, namespace, subresource))
        return answer

    async def list(self, resource: ResourceRef, namespace: str | None = None, *,
                   label_selector: str | None = None, field_selector: str | None = None,
                   limit: int | None = None, continue_: str | None = None,
                   object_type: type[ObjectT] | None = None) -> ObjectT:
        """As :meth:`informers.client.Client.list`."""
        res = await self.resource(resource)
        answer = await self._do(rq.list_request(res, namespace, label_selector,
                                                field_selector, limit, continue_))
        typed: Any = rq.finish_list(answer, res)
        return typed

    # -- writes -----------------------------------------------------------------------------

    async def create(self, obj: Mapping[str, Any], *, namespace: str | None = None,
                     resource: ResourceRef | None = None,
                     object_type: type[ObjectT] | None = None) -> ObjectT:
        """As :meth:`informers.client.Client.create`."""
        res = await self.resource(resource, obj)
        answer: Any = await self._do(rq.create_request(res, obj, namespace, self.field_manager,
                                                       self.dry_run))
        return answer

    async def update(self, obj: Mapping[str, Any], *, resource: ResourceRef | None = None,
                     subresource: str | None = None,
                     object_type: type[ObjectT] | None = None) -> ObjectT:
        """As :meth:`informers.client.Client.update` (``Conflict`` on a stale
        ``resourceVersion``)."""
        res = await self.resource(resource, obj)
        answer: Any = await self._do(rq.update_request(res, obj, subresource,
                                                       self.field_manager, self.dry_run))
        return answer

    async def update_status(self, obj: Mapping[str, Any], *,
                            resource: ResourceRef | None = None,
                            object_type: type[ObjectT] | None = None) -> ObjectT:
        """PUT the ``status`` subresource."""
        return await self.update(obj, resource=resource, subresource="status",
                                 object_type=object_type)

    async def patch(self, resource: ResourceRef, name: str, patch: Any,
                    namespace: str | None = None, *, patch_type: PatchType = "merge",
                    subresource: str | None = None,
                    object_type: type[ObjectT] | None = None) -> ObjectT:
        """As :meth:`informers.client.Client.patch` (merge, JSON or strategic merge)."""
        res = await self.resource(resource)
        answer: Any = await self._do(rq.patch_request(
            res, name, patch, namespace, patch_type, subresource, self.field_manager,
            self.dry_run))
        return answer

    async def patch_status(self, resource: ResourceRef, name: str, patch: Any,
                           namespace: str | None = None, *, patch_type: PatchType = "merge",
                           object_type: type[ObjectT] | None = None) -> ObjectT:
        """PATCH the ``status`` subresource."""
        return await self.patch(resource, name, patch, namespace, patch_type=patch_type,
                                subresource="status", object_type=object_type)

    async def apply(self, obj: Mapping[str, Any], *, force: bool = False,
                    field_manager: str | None = None, resource: ResourceRef | None = None,
                    subresource: str | None = None,
                    object_type: type[ObjectT] | None = None) -> ObjectT:
        """Server-side apply, as :meth:`informers.client.Client.apply`.

        Raises:
            ValueError: no field manager.
            Conflict: another manager owns a field with another value, without ``force``.
        """
        manager = rq.apply_manager(field_manager or self.field_manager)
        res = await self.resource(resource, obj)
        answer: Any = await self._do(rq.apply_request(res, obj, force, manager, subresource,
                                                      self.dry_run))
        return answer

    async def apply_status(self, obj: Mapping[str, Any], *, force: bool = False,
                           field_manager: str | None = None,
                           resource: ResourceRef | None = None,
                           object_type: type[ObjectT] | None = None) -> ObjectT:
        """Server-side apply to the ``status`` subresource."""
        return await self.apply(obj, force=force, field_manager=field_manager,
                                resource=resource, subresource="status",
                                object_type=object_type)

    async def delete(self, resource: ResourceRef, name: str, namespace: str | None = None, *,
                     uid: str | None = None, resource_version: str | None = None,
                     propagation_policy: Literal["Foreground", "Background", "Orphan"]
                     | None = None,
                     grace_period_seconds: int | None = None) -> dict[str, Any]:
        """As :meth:`informers.client.Client.delete` (``uid``/``resource_version``
        preconditions, propagation, grace period)."""
        res = await self.resource(resource)
        return await self._do(rq.delete_request(res, name, namespace, uid, resource_version,
                                                propagation_policy, grace_period_seconds,
                                                self.dry_run))

    @property
    def status(self) -> AsyncStatusWriter:
        """Writes of the ``status`` subresource by object."""
        return AsyncStatusWriter(self)

    # -- scale ------------------------------------------------------------------------------

    async def get_scale(self, resource: ResourceRef, name: str,
                        namespace: str | None = None) -> dict[str, Any]:
        """The ``autoscaling/v1`` ``Scale`` of a scalable object."""
        return await self.get(resource, name, namespace, subresource="scale")

    async def scale(self, resource: ResourceRef, name: str, replicas: int,
                    namespace: str | None = None) -> dict[str, Any]:
        """Set ``spec.replicas`` through the ``scale`` subresource (a merge patch)."""
        return await self.patch(resource, name, {"spec": {"replicas": replicas}}, namespace,
                                subresource="scale")

    # -- the wire ---------------------------------------------------------------------------

    async def _do(self, request: ApiRequest) -> dict[str, Any]:
        method = request.method
        what = f"{method} {request.path}"
        path, timeout = rq.target(request, self.request_timeout, check(what))
        attempt = 0
        while True:
            try:
                return await self.transport.request(method, path, request.body,
                                                    content_type=request.content_type,
                                                    request_timeout=timeout)
            except (StatusError, ApiConnectionError) as err:
                wait = rq.retry_wait(method, err, attempt, self.max_retries)
                if wait is None:
                    raise
                left = remaining()
                if left is not None and left < wait:
                    raise
            attempt += 1
            logger.debug("%s: retry %d in %gs", what, attempt, wait)
            await self.sleep(wait)


class AsyncStatusWriter:
    """The ``status`` subresource addressed by the object (the async
    :class:`informers.client.client.StatusWriter`)."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def update(self, obj: Mapping[str, Any], *,
                     object_type: type[ObjectT] | None = None) -> ObjectT:
        return await self._client.update(obj, subresource="status", object_type=object_type)

    async def patch(self, obj: Mapping[str, Any], patch: Any, *,
                    patch_type: PatchType = "merge",
                    object_type: type[ObjectT] | None = None) -> ObjectT:
        res = await self._client.resource(None, obj)
        return await self._client.patch(res, rq.name_of(obj), patch,
                                        rq.meta(obj).get("namespace"), patch_type=patch_type,
                                        subresource="status", object_type=object_type)

    async def apply(self, obj: Mapping[str, Any], *, force: bool = False,
                    field_manager: str | None = None,
                    object_type: type[ObjectT] | None = None) -> ObjectT:
        return await self._client.apply(obj, force=force, field_manager=field_manager,
                                        subresource="status", object_type=object_type)
