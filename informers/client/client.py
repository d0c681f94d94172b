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

import builtins
import logging
import math
import threading
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlencode

from informers.client.transport import Transport
from informers.clock import REAL_CLOCK, Clock
from informers.deadline import check, remaining
from informers.errors import ApiConnectionError, StatusError
from informers.object_type import ObjectT
from informers.resources import BUILTIN_RESOURCES, Resource, lookup

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

PatchType = Literal["merge", "json", "strategic"]

PATCH_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
"""The content type of each patch type (apimachinery ``types.PatchType``)."""

APPLY_PATCH = "application/apply-patch+yaml"
"""Server-side apply's content type (``types.ApplyPatchType``); the body is sent as JSON,
which is YAML."""

DEFAULT_REQUEST_TIMEOUT = 30.0
"""Seconds for one request, sent as the ``timeout`` query parameter too, in whole seconds
rounded up (client-go ``rest.Request.Timeout``; 30 s is kubectl's and controller-runtime's
usual per-call deadline; ``None`` for none). Inside a reconcile with a timeout
(:mod:`informers.deadline`) the time left is the limit when it is shorter."""

DEFAULT_MAX_RETRIES = 10
"""Retries of a request answered 429 or 5xx with a ``Retry-After`` header, waiting what it
says (client-go ``rest.Request``: ``maxRetries: 10``, ``checkWait``). A GET whose connection
was reset is retried after 1 s too; writes are not (they may have happened)."""

ResourceRef = Resource | str | tuple[str, str, str]
"""A resource: a :class:`~informers.resources.Resource`, a built-in name (``"pods"``,
``"deployments.apps"``) or ``(group, version, plural)``."""


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
        self._kinds: dict[tuple[str, str], Resource] = {
            (r.api_version, r.kind): r for r in BUILTIN_RESOURCES}
        self._lock = threading.Lock()

    # -- resources --------------------------------------------------------------------------

    def resource(self, ref: ResourceRef | None = None,
                 obj: Mapping[str, Any] | None = None) -> Resource:
        """The :class:`Resource` of ``ref``, else of ``obj``'s ``apiVersion`` and ``kind``
        (built-in, else from the server's discovery document, asked once per group version).

        Raises:
            ValueError: neither given, or an object without ``apiVersion``/``kind``.
            NotFound: the server serves no such kind.
        """
        if isinstance(ref, Resource):
            return ref
        if ref is not None:
            return lookup(ref)
        if obj is None:
            raise ValueError("a resource or an object is needed")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
            raise ValueError(f"object {_meta(obj).get('name')!r} has no apiVersion and kind")
        found = self._kinds.get((api_version, kind))
        if found is None:
            self._discover(api_version)
            found = self._kinds.get((api_version, kind))
        if found is None:
            raise StatusError.from_code(404, f"no kind {kind!r} in {api_version}")
        return found

    def _discover(self, api_version: str) -> None:
        group, _, version = api_version.rpartition("/")
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        doc = self._send("GET", path)
        with self._lock:
            for entry in doc.get("resources") or []:
                name = entry.get("name") if isinstance(entry, dict) else None
                if isinstance(name, str) and "/" not in name and entry.get("kind"):
                    self._kinds.setdefault((api_version, str(entry["kind"])), Resource(
                        group, version, name, str(entry["kind"]),
                        bool(entry.get("namespaced", True))))

    # -- reads ------------------------------------------------------------------------------

    def get(self, resource: ResourceRef, name: str, namespace: str | None = None, *,
            subresource: str | None = None, object_type: type[ObjectT] | None = None) -> ObjectT:
        """The object (client-go ``Get``), live from the server.

        Raises:
            NotFound: no such object.
        """
        answer: Any = self._send("GET", self.resource(resource).path(namespace, name,
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
        query = [(k, v) for k, v in (("labelSelector", label_selector),
                                     ("fieldSelector", field_selector),
                                     ("limit", None if limit is None else str(limit)),
                                     ("continue", continue_)) if v]
        answer = self._send("GET", res.path(namespace), query=query)
        for item in answer.get("items") or []:
            if isinstance(item, dict):
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
        typed: Any = answer
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
        ns = namespace or _meta(obj).get("namespace")
        answer: Any = self._send("POST", res.path(ns), obj, query=self._write_query())
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
        meta = _meta(obj)
        path = res.path(meta.get("namespace"), _name_of(obj), subresource)
        answer: Any = self._send("PUT", path, obj, query=self._write_query())
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
        content_type = PATCH_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"patch_type must be one of {sorted(PATCH_TYPES)}, "
                             f"not {patch_type!r}")
        path = self.resource(resource).path(namespace, name, subresource)
        answer: Any = self._send("PATCH", path, patch, content_type=content_type,
                                 query=self._write_query())
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
        manager = field_manager or self.field_manager
        if not manager:
            raise ValueError("server-side apply needs a field_manager (the client's or this "
                             "call's)")
        res = self.resource(resource, obj)
        path = res.path(_meta(obj).get("namespace"), _name_of(obj), subresource)
        query = self._write_query(manager)
        if force:
            query.append(("force", "true"))
        answer: Any = self._send("PATCH", path, obj, content_type=APPLY_PATCH, query=query)
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
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version))
                         if v is not None}
        if preconditions:
            body["preconditions"] = preconditions
        if propagation_policy is not None:
            body["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if self.dry_run:
            body["dryRun"] = ["All"]
        return self._send("DELETE", self.resource(resource).path(namespace, name), body)

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

    def _write_query(self, field_manager: str | None = None) -> builtins.list[tuple[str, str]]:
        query: builtins.list[tuple[str, str]] = []
        manager = field_manager or self.field_manager
        if manager:
            query.append(("fieldManager", manager))
        if self.dry_run:
            query.append(("dryRun", "All"))
        return query

    def _send(self, method: str, path: str, body: Any = None, *,
              content_type: str = "application/json",
              query: builtins.list[tuple[str, str]] | None = None) -> dict[str, Any]:
        query = list(query or ())
        timeout = self.request_timeout
        left = check(f"{method} {path}")
        if left is not None:  # a reconcile's deadline (informers.deadline) cuts the timeout
            timeout = left if timeout is None else min(timeout, left)
        if timeout:
            query.append(("timeout", f"{max(1, math.ceil(timeout))}s"))
        target = path + ("?" + urlencode(query) if query else "")
        attempt = 0
        while True:
            try:
                return self._transport.request(method, target, body, content_type=content_type,
                                               request_timeout=timeout)
            except StatusError as err:
                wait = err.retry_after if (err.code == 429 or err.code >= 500) else None
                if wait is None or attempt >= self.max_retries:
                    raise
            except ApiConnectionError as err:
                # client-go retries a GET whose connection was reset (not refused, not timed
                # out), with an artificial Retry-After of 1 s.
                if method != "GET" or err.refused or err.timeout or attempt >= self.max_retries:
                    raise
                wait = 1.0
            attempt += 1
            left = remaining()
            if left is not None and left < wait:
                raise  # no time left for the wait (client-go: the context ends the retries)
            logger.debug("%s %s: retry %d in %gs", method, path, attempt, wait)
            self.clock.sleep(wait)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _name_of(obj: Mapping[str, Any]) -> str:
    name = _meta(obj).get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"object of kind {obj.get('kind')!r} has no metadata.name")
    return name


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
        meta = _meta(obj)
        return self._client.patch(self._client.resource(None, obj), _name_of(obj), patch,
                                  meta.get("namespace"), patch_type=patch_type,
                                  subresource="status", object_type=object_type)

    def apply(self, obj: Mapping[str, Any], *, force: bool = False,
              field_manager: str | None = None,
              object_type: type[ObjectT] | None = None) -> ObjectT:
        """Server-side apply ``obj``'s status (``apiVersion``, ``kind``, ``metadata.name``
        and the ``status`` fields this manager owns)."""
        return self._client.apply(obj, force=force, field_manager=field_manager,
                                  subresource="status", object_type=object_type)
