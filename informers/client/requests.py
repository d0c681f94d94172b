"""Builds the requests of :class:`~informers.client.client.Client` and decides its retries,
without sending anything: the part the threaded and the async client share.

Each verb is a function from its arguments to an :class:`ApiRequest` (method, path, JSON body,
content type, query); :func:`target` adds the per-request ``timeout`` parameter, cut by a
reconcile's deadline (:mod:`informers.deadline`); :func:`retry_wait` is client-go
``rest.Request``'s retry rule; :class:`Kinds` resolves ``apiVersion``/``kind`` and
``(group, version, plural)`` to a :class:`~informers.resources.Resource`, from the built-in
table or a discovery document the caller fetched (:func:`discovery_entries` reads one). The
threaded :class:`~informers.client.client.Client` and the async
:class:`informers.aio.client.AsyncClient` send what these build on their own transport, so the
two cannot drift apart.

Pure functions; :class:`Kinds` is safe to share between threads (its fill is idempotent).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode

from informers.errors import ApiConnectionError, StatusError
from informers.resources import BUILTIN_RESOURCES, Resource, lookup

__all__ = [
    "APPLY_PATCH",
    "PATCH_TYPES",
    "ApiRequest",
    "Kinds",
    "PatchType",
    "ResourceRef",
    "apply_request",
    "create_request",
    "delete_request",
    "discovery_entries",
    "discovery_path",
    "finish_list",
    "get_request",
    "list_request",
    "name_of",
    "patch_request",
    "retry_wait",
    "target",
    "update_request",
]

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

ResourceRef = Resource | str | tuple[str, str, str]
"""A resource: a :class:`~informers.resources.Resource`, a built-in name (``"pods"``,
``"deployments.apps"``) or ``(group, version, plural)`` (built in, or found through the
server's discovery: a custom resource)."""

Query = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ApiRequest:
    """One request of the client: ``method path?query`` with a JSON ``body``."""

    method: str
    path: str
    body: Any = None
    content_type: str = "application/json"
    query: Query = ()


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj['metadata']``, ``{}`` when missing or not a mapping."""
    found = obj.get("metadata")
    return found if isinstance(found, Mapping) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    """``metadata.name``.

    Raises:
        ValueError: the object has none.
    """
    name = meta(obj).get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"object of kind {obj.get('kind')!r} has no metadata.name")
    return name


def write_query(field_manager: str | None, dry_run: bool) -> list[tuple[str, str]]:
    """``fieldManager`` and ``dryRun=All`` of a write."""
    query: list[tuple[str, str]] = []
    if field_manager:
        query.append(("fieldManager", field_manager))
    if dry_run:
        query.append(("dryRun", "All"))
    return query


def get_request(res: Resource, name: str, namespace: str | None,
                subresource: str | None = None) -> ApiRequest:
    return ApiRequest("GET", res.path(namespace, name, subresource))


def list_request(res: Resource, namespace: str | None, label_selector: str | None,
                 field_selector: str | None, limit: int | None,
                 continue_: str | None) -> ApiRequest:
    query = tuple((k, v) for k, v in (("labelSelector", label_selector),
                                      ("fieldSelector", field_selector),
                                      ("limit", None if limit is None else str(limit)),
                                      ("continue", continue_)) if v)
    return ApiRequest("GET", res.path(namespace), query=query)


def finish_list(answer: dict[str, Any], res: Resource) -> dict[str, Any]:
    """Give each item of a list answer the list's ``apiVersion`` and ``kind`` back (the
    server leaves them out), as client-go's decoding does; in place, and returned."""
    for item in answer.get("items") or []:
        if isinstance(item, dict):
            item.setdefault("apiVersion", res.api_version)
            item.setdefault("kind", res.kind)
    return answer


def create_request(res: Resource, obj: Mapping[str, Any], namespace: str | None,
                   field_manager: str | None, dry_run: bool) -> ApiRequest:
    ns = namespace or meta(obj).get("namespace")
    return ApiRequest("POST", res.path(ns), obj,
                      query=tuple(write_query(field_manager, dry_run)))


def update_request(res: Resource, obj: Mapping[str, Any], subresource: str | None,
                   field_manager: str | None, dry_run: bool) -> ApiRequest:
    path = res.path(meta(obj).get("namespace"), name_of(obj), subresource)
    return ApiRequest("PUT", path, obj, query=tuple(write_query(field_manager, dry_run)))


def patch_request(res: Resource, name: str, patch: Any, namespace: str | None,
                  patch_type: str, subresource: str | None, field_manager: str | None,
                  dry_run: bool) -> ApiRequest:
    """Raises ``ValueError`` for an unknown ``patch_type``."""
    content_type = PATCH_TYPES.get(patch_type)
    if content_type is None:
        raise ValueError(f"patch_type must be one of {sorted(PATCH_TYPES)}, "
                         f"not {patch_type!r}")
    return ApiRequest("PATCH", res.path(namespace, name, subresource), patch, content_type,
                      tuple(write_query(field_manager, dry_run)))


def apply_manager(field_manager: str | None) -> str:
    """The field manager of an apply.

    Raises:
        ValueError: none (the server requires one for apply).
    """
    if not field_manager:
        raise ValueError("server-side apply needs a field_manager (the client's or this "
                         "call's)")
    return field_manager


def apply_request(res: Resource, obj: Mapping[str, Any], force: bool, field_manager: str,
                  subresource: str | None, dry_run: bool) -> ApiRequest:
    path = res.path(meta(obj).get("namespace"), name_of(obj), subresource)
    query = write_query(field_manager, dry_run)
    if force:
        query.append(("force", "true"))
    return ApiRequest("PATCH", path, obj, APPLY_PATCH, tuple(query))


def delete_request(res: Resource, name: str, namespace: str | None, uid: str | None,
                   resource_version: str | None, propagation_policy: str | None,
                   grace_period_seconds: int | None, dry_run: bool) -> ApiRequest:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
    preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version))
                     if v is not None}
    if preconditions:
        body["preconditions"] = preconditions
    if propagation_policy is not None:
        body["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        body["gracePeriodSeconds"] = grace_period_seconds
    if dry_run:
        body["dryRun"] = ["All"]
    return ApiRequest("DELETE", res.path(namespace, name), body)


def target(request: ApiRequest, request_timeout: float | None,
           deadline_left: float | None) -> tuple[str, float | None]:
    """The request's path with its query, and its timeout: ``request_timeout``, cut to the
    time left before a reconcile's deadline; sent as the ``timeout`` query parameter too, in
    whole seconds rounded up (client-go ``rest.Request.Timeout``)."""
    query = list(request.query)
    timeout = request_timeout
    if deadline_left is not None:
        timeout = deadline_left if timeout is None else min(timeout, deadline_left)
    if timeout:
        query.append(("timeout", f"{max(1, math.ceil(timeout))}s"))
    return request.path + ("?" + urlencode(query) if query else ""), timeout


def retry_wait(method: str, err: StatusError | ApiConnectionError, attempt: int,
               max_retries: int) -> float | None:
    """Seconds to wait before retrying a request that failed with ``err`` (``attempt``
    retries made so far), ``None`` for no retry (client-go ``rest.Request``, ``checkWait``):
    a 429 or 5xx answer with a ``Retry-After`` header waits what it says; a GET whose
    connection was reset (not refused, not timed out) waits 1 s; writes are not retried on a
    lost connection (they may have happened)."""
    if attempt >= max_retries:
        return None
    if isinstance(err, StatusError):
        return err.retry_after if (err.code == 429 or err.code >= 500) else None
    if method != "GET" or err.refused or err.timeout:
        return None
    return 1.0


def discovery_path(group: str, version: str) -> str:
    """The discovery document of a group version: ``/apis/<group>/<version>``, ``/api/v1``."""
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def discovery_entries(doc: Any) -> Iterator[tuple[str, str, bool]]:
    """``(name, kind, namespaced)`` of each resource of a group version's discovery document
    (an ``APIResourceList``; subresources are named ``<plural>/<sub>``; ``namespaced``
    defaults to true, ``kind`` to ``""``). The one reading of that document: the client's
    :class:`Kinds` and the informers' discovery
    (:func:`informers.client.list_watch_client.kind_in_discovery`) both use it."""
    for entry in (doc.get("resources") if isinstance(doc, Mapping) else None) or []:
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            yield (entry["name"], str(entry.get("kind") or ""),
                   bool(entry.get("namespaced", True)))


class Kinds:
    """``(apiVersion, kind)`` and ``(apiVersion, plural)`` -> :class:`Resource`: the built-in
    table, plus each discovery document :meth:`add_discovery` is given (the caller fetches
    the one of a group version when :meth:`get` or :meth:`known` does not know a resource
    yet, so each group version is asked once while its resources are found, and again when
    one is missing: a custom resource may have been installed since)."""

    def __init__(self) -> None:
        self._kinds: dict[tuple[str, str], Resource] = {
            (r.api_version, r.kind): r for r in BUILTIN_RESOURCES}
        self._plurals: dict[tuple[str, str], Resource] = {}
        self._lock = threading.Lock()

    def known(self, ref: ResourceRef) -> Resource | None:
        """``ref``'s :class:`Resource`: itself, a built-in one, or a ``(group, version,
        plural)`` tuple's from a discovery document already read; ``None``: a tuple whose
        group version's discovery document is to be read (:meth:`api_version_of`).

        Raises:
            KeyError: a name (``"pods"``, ``"deployments.apps"``) that is not built in.
        """
        if isinstance(ref, Resource):
            return ref
        if not isinstance(ref, tuple):
            return lookup(ref)
        try:
            return lookup(ref)
        except KeyError:
            pass
        group, version, plural = ref
        return self._plurals.get((f"{group}/{version}" if group else version, plural))

    @staticmethod
    def api_version_of(ref: tuple[str, str, str]) -> str:
        """The ``apiVersion`` of a ``(group, version, plural)`` tuple."""
        return f"{ref[0]}/{ref[1]}" if ref[0] else ref[1]

    @staticmethod
    def kind_of(obj: Mapping[str, Any] | None) -> tuple[str, str]:
        """``obj``'s ``(apiVersion, kind)``.

        Raises:
            ValueError: no object, or one without ``apiVersion``/``kind``.
        """
        if obj is None:
            raise ValueError("a resource or an object is needed")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
            raise ValueError(f"object {meta(obj).get('name')!r} has no apiVersion and kind")
        return api_version, kind

    def get(self, api_version: str, kind: str) -> Resource | None:
        return self._kinds.get((api_version, kind))

    @staticmethod
    def discovery_path(api_version: str) -> str:
        group, _, version = api_version.rpartition("/")
        return discovery_path(group, version)

    def add_discovery(self, api_version: str, doc: Mapping[str, Any]) -> None:
        """Learn every top-level resource of a group version's discovery document (a
        resource already known keeps its entry)."""
        group, _, version = api_version.rpartition("/")
        with self._lock:
            for name, kind, namespaced in discovery_entries(doc):
                if "/" in name:
                    continue
                res = self._plurals.setdefault((api_version, name), Resource(
                    group, version, name, kind, namespaced))
                if kind:
                    self._kinds.setdefault((api_version, kind), res)

    @staticmethod
    def missing(api_version: str, kind: str) -> StatusError:
        """The 404 ``NotFound`` of a kind the server does not serve."""
        return StatusError.from_code(404, f"no kind {kind!r} in {api_version}")

    @staticmethod
    def not_served(ref: tuple[str, str, str]) -> StatusError:
        """The 404 ``NotFound`` of a ``(group, version, plural)`` the server does not serve."""
        group, version, plural = ref
        return StatusError.from_code(
            404, f"the server does not serve {plural!r} in {Kinds.api_version_of(ref)} "
            f"(group {group!r}, version {version!r}, plural {plural!r})")
