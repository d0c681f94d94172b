"""metav1.Status failures with kube-apiserver's reasons, codes and messages.

Every builder returns an :class:`informers.errors.StatusError` (raise it, or send its
``.status``). Messages follow ``k8s.io/apimachinery/pkg/api/errors/errors.go`` word for word,
so clients that match on them (client-go's ``isTooLargeResourceVersionError`` does) behave as
against a real server.
"""

from __future__ import annotations

from typing import Any

from informers.errors import StatusError

__all__ = [
    "MAX_REQUEST_BODY_BYTES",
    "NAMESPACE_TERMINATING_CAUSE",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "from_code",
    "internal_error",
    "invalid",
    "method_not_allowed",
    "namespace_terminating",
    "not_found",
    "not_found_path",
    "plain_error",
    "qualified",
    "request_entity_too_large",
    "status_dict",
    "timeout",
    "too_large_resource_version",
    "too_many_requests",
    "unauthorized",
    "unsupported_media_type",
]

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
"""kube-apiserver's default request body limit (``--max-request-body-bytes``, 3 MiB:
``apiserver/pkg/server/config.go`` ``MaxRequestBodyBytes: int64(3 * 1024 * 1024)``)."""


def status_dict(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A ``Status`` object of ``status: Failure`` in kube-apiserver's field order."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        status["details"] = details
    status["code"] = code
    return status


def _error(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> StatusError:
    retry = None
    if details and details.get("retryAfterSeconds"):
        retry = float(details["retryAfterSeconds"])
    return StatusError(status_dict(code, reason, message, details), retry)


def qualified(resource: str, group: str) -> str:
    """``schema.GroupResource.String()``: ``pods`` or ``leases.coordination.k8s.io``."""
    return f"{resource}.{group}" if group else resource


def _details(resource: str, group: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:  # StatusDetails fields are omitempty
        details["name"] = name
    if group:
        details["group"] = group
    if resource:
        details["kind"] = resource  # apimachinery puts the resource in "kind" for these errors
    return details


def not_found(resource: str, group: str, name: str) -> StatusError:
    """404 ``NotFound``: ``pods "x" not found`` (``errors.NewNotFound``)."""
    return _error(
        404, "NotFound", f'{qualified(resource, group)} "{name}" not found',
        _details(resource, group, name),
    )


def not_found_path() -> StatusError:
    """404 for a path no API serves (``errors.NewNotFound`` from the not-found handler)."""
    return _error(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(resource: str, group: str, name: str) -> StatusError:
    """409 ``AlreadyExists``: ``pods "x" already exists`` (``errors.NewAlreadyExists``)."""
    return _error(
        409, "AlreadyExists", f'{qualified(resource, group)} "{name}" already exists',
        _details(resource, group, name),
    )


def conflict(resource: str, group: str, name: str, why: str) -> StatusError:
    """409 ``Conflict``: ``Operation cannot be fulfilled on pods "x": <why>``."""
    return _error(
        409, "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        _details(resource, group, name),
    )


OPTIMISTIC_LOCK_MESSAGE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)
"""``registry/generic/registry/store.go`` ``OptimisticLockErrorMsg``."""


def invalid(
    kind: str, group: str, name: str, causes: list[tuple[str, str, str]]
) -> StatusError:
    """422 ``Invalid`` (``errors.NewInvalid``).

    Args:
        kind: the Kind (``Pod``), qualified by ``group`` in the message
            (``Lease.coordination.k8s.io``).
        group: API group, ``""`` for core.
        name: object name (may be ``""``).
        causes: ``(cause type, field path, error body)`` triples, e.g. ``("FieldValueRequired",
            "metadata.name", "Required value: name or generateName is required")``.
    """
    qualified_kind = f"{kind}.{group}" if group else kind
    # field.ErrorList.ToAggregate: each message once
    rendered = list(dict.fromkeys(f"{field}: {body}" for (_, field, body) in causes))
    if not rendered:
        message = f'{qualified_kind} "{name}" is invalid'
    elif len(rendered) == 1:
        message = f'{qualified_kind} "{name}" is invalid: {rendered[0]}'
    else:
        message = f'{qualified_kind} "{name}" is invalid: [{", ".join(rendered)}]'
    details: dict[str, Any] = {"name": name} if name else {}  # StatusDetails omitempty
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [
        {"reason": ctype, "message": body, "field": field} for (ctype, field, body) in causes
    ]
    return _error(422, "Invalid", message, details)


def expired(message: str) -> StatusError:
    """410 ``Expired`` (``errors.NewResourceExpired``): what both the watch cache ("too old
    resource version: X (Y)") and etcd ("The resourceVersion for the provided list is too old.")
    answer for a compacted version."""
    return _error(410, "Expired", message)


def bad_request(message: str) -> StatusError:
    """400 ``BadRequest`` (``errors.NewBadRequest``)."""
    return _error(400, "BadRequest", message)


def forbidden(
    resource: str, group: str, name: str, why: str,
    causes: list[dict[str, str]] | None = None,
) -> StatusError:
    """403 ``Forbidden``: ``pods "x" is forbidden: <why>``, ``pods is forbidden: <why>``
    without a name, ``forbidden: <why>`` without a resource (``errors.NewForbidden``), with
    ``details.causes`` when given (``metav1.StatusCause`` dicts: ``reason``, ``message``,
    ``field``)."""
    details = _details(resource, group, name)
    if causes:
        details["causes"] = causes
    if not resource:
        message = f"forbidden: {why}"
    elif not name:
        message = f"{qualified(resource, group)} is forbidden: {why}"
    else:
        message = f'{qualified(resource, group)} "{name}" is forbidden: {why}'
    return _error(403, "Forbidden", message, details)


NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"
"""``core/v1`` ``NamespaceTerminatingCause``: the ``reason`` of the cause a create into a
terminating namespace carries (what controllers such as the endpoints controller check)."""


def namespace_terminating(resource: str, group: str, name: str, namespace: str) -> StatusError:
    """403 for a create in a terminating namespace, exactly as the NamespaceLifecycle admission
    plugin answers (``apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go``):
    ``admission.NewForbidden`` plus a ``NamespaceTerminating`` cause on ``metadata.namespace``.

    ``name`` is the object's name, else its ``generateName``, else ``Unknown`` (admission runs
    before names are generated: ``admission/errors.go`` ``extractResourceName``).
    """
    return forbidden(
        resource, group, name,
        f"unable to create new content in namespace {namespace} because it is being terminated",
        [{"reason": NAMESPACE_TERMINATING_CAUSE,
          "message": f"namespace {namespace} is being terminated",
          "field": "metadata.namespace"}],
    )


def method_not_allowed() -> StatusError:
    """405 ``MethodNotAllowed``, as the real server answers a verb a path does not serve."""
    return _error(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource",
        {},
    )


def unsupported_media_type(message: str) -> StatusError:
    """415 ``UnsupportedMediaType`` (``errors.NewUnsupportedMediaType``-style)."""
    return _error(415, "UnsupportedMediaType", message)


def request_entity_too_large(limit: int) -> StatusError:
    """413 ``RequestEntityTooLarge``: ``Request entity too large: limit is 3145728``
    (``endpoints/handlers/rest.go`` ``limitedReadBody``)."""
    return _error(
        413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}"
    )


def too_many_requests(retry_after: int = 1) -> StatusError:
    """429 ``TooManyRequests`` with ``retryAfterSeconds``, as API Priority and Fairness sends
    (``errors.NewTooManyRequests``: "Too many requests, please try again later.")."""
    return _error(
        429, "TooManyRequests", "Too many requests, please try again later.",
        {"retryAfterSeconds": max(int(retry_after), 1)},
    )


def internal_error(message: str) -> StatusError:
    """500 ``InternalError``: ``Internal error occurred: <message>``
    (``errors.NewInternalError``)."""
    return _error(
        500, "InternalError", f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def plain_error(message: str, code: int = 500) -> StatusError:
    """A plain Go error as the handlers answer it: ``code`` 500, the error's text, no reason
    and no details (``responsewriters.ErrorToAPIStatus`` for an error that is not an
    ``APIStatus``)."""
    return StatusError({"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Failure", "message": message, "code": code})


def timeout(message: str, retry_after: int = 0) -> StatusError:
    """504 ``Timeout``: ``Timeout: <message>`` (``errors.NewTimeoutError``)."""
    details: dict[str, Any] = {}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return _error(504, "Timeout", f"Timeout: {message}", details)


def too_large_resource_version(requested: int, current: int) -> StatusError:
    """504 for a resourceVersion newer than the server has (``storage/errors.go``
    ``NewTooLargeResourceVersionError``; the watch cache retries after 1 s,
    ``cacher.go`` ``resourceVersionTooHighRetrySeconds = 1``)."""
    err = timeout(f"Too large resource version: {requested}, current: {current}", 1)
    err.status["details"]["causes"] = [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]
    return err


def unauthorized() -> StatusError:
    """401 ``Unauthorized`` (the authentication filter's response)."""
    return _error(401, "Unauthorized", "Unauthorized")


_DEFAULTS: dict[int, tuple[str, str]] = {
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "Unauthorized"),
    403: ("Forbidden", "the server does not allow access to the requested resource"),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    409: ("Conflict", "the server reported a conflict"),
    410: ("Expired", "The resourceVersion for the provided list is too old."),
    415: ("UnsupportedMediaType", "the server does not support the media type"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: ("TooManyRequests", "Too many requests, please try again later."),
    500: ("InternalError", "an error on the server has prevented the request from succeeding"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted"),
}


def from_code(
    code: int, message: str | None = None, retry_after: int | None = None
) -> StatusError:
    """A Status for an injected failure: the reason kube-apiserver uses for ``code``.

    429 always carries ``retryAfterSeconds`` (default 1); other codes carry it when
    ``retry_after`` is given. Unknown codes get reason ``""`` (``StatusReasonUnknown``).
    """
    if code == 429 and message is None:
        return too_many_requests(retry_after or 1)
    if code == 500 and message is None:
        return internal_error("injected failure")
    reason, default_message = _DEFAULTS.get(code, ("", "injected failure"))
    details: dict[str, Any] | None = None
    if retry_after:
        details = {"retryAfterSeconds": int(retry_after)}
    elif code == 429:
        details = {"retryAfterSeconds": 1}
    return _error(code, reason, message if message is not None else default_message, details)
