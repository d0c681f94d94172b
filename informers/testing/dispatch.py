"""Routes one resolved API request to the endpoint that answers its verb.

The per-request half of the embedded server's HTTP handling: given the request's method,
headers, :class:`~informers.testing.request_info.RequestInfo`, query and body (already read,
authenticated and authorized by :class:`~informers.testing.handler.RequestHandler`),
:func:`dispatch` answers discovery paths, applies the injected delay and failure
(:mod:`informers.testing.faults`), refuses verbs and subresources the resource does not serve
(405, 404), decodes write bodies with the ``fieldValidation`` of
:class:`~informers.testing.field_validation.FieldValidator`, and calls the matching method of
:class:`~informers.testing.endpoints.Endpoints` (``/scale`` and ``Table`` requests go to their
own endpoints). It writes nothing to the connection: a watch comes back as the stream to
serve, and the handler owns every byte on the socket. Called on the connection's thread,
inside the request's admission scope; thread-safe as the endpoints are.
"""

from __future__ import annotations

from dataclasses import dataclass

from informers.errors import StatusError
from informers.testing import (
    discovery_endpoint,
    protobuf,
    scale_endpoint,
    status,
    table_endpoint,
    tables,
)
from informers.testing.crds import is_builtin_group
from informers.testing.endpoints import (
    APPLY_PATCH,
    Response,
    decode_body,
    media_type,
    status_response,
)
from informers.testing.field_validation import directive, warning_header
from informers.testing.options import ListOptions
from informers.testing.request_headers import Headers
from informers.testing.request_info import RequestInfo
from informers.testing.requestlog import RequestRecord
from informers.testing.server_app import ServerApp
from informers.testing.watch import WatchStream

__all__ = ["StreamError", "dispatch", "field_manager", "request_record"]

_DELETE_OPTIONS = ("meta.k8s.io/v1", "DeleteOptions")  # the defaults of a delete's body


@dataclass(frozen=True)
class StreamError:
    """An injected failure of a watch that is answered 200 and then streams ``error`` as an
    ``ERROR`` event (``ApiServer.fail_next(..., in_stream=True)``)."""

    error: StatusError


def request_record(
    app: ServerApp, method: str, info: RequestInfo, query: dict[str, str], code: int
) -> RequestRecord:
    """What the request log keeps of a request answered with ``code``."""
    return RequestRecord(
        verb=info.verb if info.is_resource else "",
        resource=info.resource,
        group=info.group,
        version=info.version,
        namespace=info.namespace or "",
        name=info.name,
        subresource=info.subresource,
        query=dict(query),
        status=code,
        time=app.clock.now(),
        method=method,
        path=info.path,
    )


def field_manager(query: dict[str, str], headers: Headers) -> str:
    """The field manager of a write: ``fieldManager``, else the User-Agent up to its
    first ``/`` (apiserver/pkg/endpoints/handlers/create.go ``prefixFromUserAgent``:
    printable characters, at most 128 bytes), else ``unknown``
    (managedfields/internal/buildmanagerinfo.go)."""
    manager = query.get("fieldManager")
    if manager:
        return manager
    agent = (headers.get("User-Agent") or "").split("/")[0]
    prefix = b""
    for char in agent:
        encoded = char.encode()
        if not char.isprintable():
            continue
        if len(prefix) + len(encoded) > 128:  # validation.FieldManagerMaxLength
            break
        prefix += encoded
    return prefix.decode() or "unknown"


def dispatch(
    app: ServerApp, method: str, headers: Headers, info: RequestInfo, query: dict[str, str],
    raw: bytes,
) -> Response | WatchStream | StreamError:
    """Answer one request: discovery for a non-resource path; else, after the injected delay
    and failure, the endpoint of its verb (and subresource). Raises ``StatusError`` for a
    request answered with a ``Status``. A watch is answered with the stream to serve after
    the 200, an injected in-stream failure with the error to stream; the caller writes both.
    """
    if not info.is_resource:
        return discovery_endpoint.serve(
            method, info.path, query, headers.get("Accept", ""),
            headers.get("If-None-Match", ""), openapi=app.openapi,
            registry=app.registry, endpoints=app.endpoints,
            server_address=app.server_address, now=app.clock.wall())
    if info.unknown or info.extra_parts or info.rt is None:
        if info.group and not is_builtin_group(info.group):
            # No API installed for the group (a CRD's group once it is gone, a CRD
            # version not served): the request falls through to Go's http.NotFound.
            return Response(404, b"404 page not found\n", [
                ("Content-Type", "text/plain; charset=utf-8"),
                ("X-Content-Type-Options", "nosniff")])
        raise status.not_found_path()
    rt = info.rt
    if info.subresource and info.subresource not in rt.subresources:
        raise status.not_found_path()
    verb = info.verb
    delay = app.faults.delay_for(verb, info.resource)
    if delay > 0:
        app.clock.sleep(delay, app.stopping)
    failure = app.faults.take_failure(
        verb, info.resource, lambda: request_record(app, method, info, query, 0)
    )
    if failure is not None:
        err = status.from_code(failure.code, failure.message, failure.retry_after)
        if failure.as_ok:
            return Response(200, status_response(err).body)
        if failure.in_stream and verb == "watch":
            return StreamError(err)
        raise err
    endpoints = app.endpoints
    if info.subresource == "status" and verb not in ("get", "update", "patch"):
        raise status.method_not_allowed()
    if info.subresource == "finalize" and verb != "update":
        raise status.method_not_allowed()
    if verb not in rt.verbs:
        raise status.method_not_allowed()
    if info.subresource == "scale":
        return scale_endpoint.serve(
            endpoints, app.field_validator, info, query, raw,
            media_type(headers.get("Content-Type")), field_manager(query, headers))
    if verb in ("get", "list") and tables.wants_table(headers.get("Accept", "")):
        return table_endpoint.serve(app.endpoints, info, query, app.clock.wall())
    if verb == "get":
        return endpoints.get(info, query)
    if verb == "list":
        return endpoints.list(info, ListOptions.parse(query))
    if verb == "watch":
        return endpoints.watch(info, ListOptions.parse(query, force_watch=True))
    content_type = media_type(headers.get("Content-Type"))
    if verb in ("create", "update"):
        if (verb == "create") == bool(info.name):
            raise status.method_not_allowed()
        if not content_type:
            # negotiation.NegotiateInputSerializer: no Content-Type means the first
            # supported media type, JSON (the official Python client sends none).
            content_type = "application/json"
        mode = directive(query, verb)
        warnings: list[str] = []
        if content_type in ("application/json", "application/yaml"):
            body, warnings = app.field_validator.decode(raw, content_type, rt, mode)
        elif content_type == protobuf.CONTENT_TYPE and rt.builtin:
            body = protobuf.decode_object(raw, (rt.api_version, rt.kind), rt.kind)
        else:  # custom resources have no protobuf form (kube-apiserver lists it, then fails)
            raise status.unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json, application/yaml"
                + (f", {protobuf.CONTENT_TYPE}" if rt.builtin else "")
            )
        if verb == "create":
            response = endpoints.create(info, query, body, field_manager(query, headers))
        else:
            response = endpoints.update(info, query, body, field_manager(query, headers))
        response.headers.extend(map(warning_header, warnings))
        return response
    if verb == "patch":
        endpoints.check_patch_type(content_type)
        if content_type == APPLY_PATCH:
            return endpoints.apply(info, query, raw, app.field_validator.schemas.fields(rt)
                                   if rt.builtin and app.field_validator.schemas.complete
                                   else None)
        mode = directive(query, verb)
        patch, duplicates = app.field_validator.decode_patch(raw, content_type, rt, mode)
        warnings = []
        response = endpoints.patch(
            info, query, content_type, patch, app.field_validator.patched_check(
                rt, content_type, patch, duplicates, mode, warnings),
            field_manager(query, headers))
        response.headers.extend(map(warning_header, warnings))
        return response
    if verb in ("delete", "deletecollection"):
        body = None
        if raw.strip():  # DeleteOptions
            body = (protobuf.decode_object(raw, _DELETE_OPTIONS, registered=("DeleteOptions",))
                    if content_type == protobuf.CONTENT_TYPE
                    else decode_body(raw, "application/json"))
        if verb == "delete":
            return endpoints.delete(info, query, body)
        return endpoints.deletecollection(info, query, ListOptions.parse(query), body)
    raise status.method_not_allowed()
