"""The exception family of ``informers``, named by the step that failed.

Every exception the library raises on purpose derives from :class:`InformersError`, and also
from the built-in exception a Python caller would expect (``ValueError`` for bad input,
``LookupError`` for a missing object), so ``except ValueError`` keeps working.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AlreadyExists",
    "AlreadyOwnedError",
    "AlreadyStartedError",
    "BadRequest",
    "CacheMutationError",
    "CacheSyncTimeoutError",
    "Conflict",
    "DeadlineExceededError",
    "Expired",
    "FIFOClosedError",
    "Forbidden",
    "Gone",
    "IndexConflictError",
    "IndexFuncError",
    "IndexNotFoundError",
    "InformerStartedError",
    "InformerStoppedError",
    "InformersError",
    "InternalError",
    "Invalid",
    "KeyFuncError",
    "LeaderElectionConfigError",
    "LeaderElectionLostError",
    "LeaseNotInitializedError",
    "ListError",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "NotFoundError",
    "RequestEntityTooLarge",
    "ResponseDecodeError",
    "SelectorError",
    "ServerTimeout",
    "ServiceUnavailable",
    "StatusError",
    "StorageReadError",
    "TerminalError",
    "Timeout",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedMediaType",
    "VeryShortWatchError",
    "WatchDecodeError",
    "ignore_already_exists",
    "ignore_not_found",
    "is_already_exists",
    "is_conflict",
    "is_connection_refused",
    "is_expired",
    "is_forbidden",
    "is_internal_error",
    "is_invalid",
    "is_not_found",
    "is_too_large_resource_version",
    "is_too_many_requests",
    "status_error_class",
]


class InformersError(Exception):
    """Base class of every error raised by kube-informers."""


class KeyFuncError(InformersError, ValueError):
    """A key function could not compute a key for an object (client-go ``KeyError``).

    ``obj`` is the offending object; the message names what was missing.
    """

    def __init__(self, message: str, obj: object = None) -> None:
        super().__init__(message)
        self.obj = obj


class IndexNotFoundError(InformersError, KeyError):
    """An index name that was never registered.

    client-go: ``Index with name %s does not exist``.

    Subclasses ``KeyError`` so dict-style lookups keep working.
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"Index with name {name} does not exist")
        self.name = name

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class IndexConflictError(InformersError, ValueError):
    """``add_indexers`` named an index that already exists (client-go: ``indexer conflict``)."""


class IndexFuncError(InformersError, ValueError):
    """An index function raised or returned a non-list (client-go panics: ``unable to calculate
    an index entry for key %q on index %q``). The store is left unchanged."""


class FIFOClosedError(InformersError):
    """``pop`` on a closed queue (client-go ``ErrFIFOClosed``)."""

    def __init__(self, message: str = "DeltaFIFO: manipulating with closed queue") -> None:
        super().__init__(message)


class SelectorError(InformersError, ValueError):
    """Label or field selector text (or a ``LabelSelector`` dict) that does not parse.

    The message names the offending part of the input.
    """


class NotFoundError(InformersError, LookupError):
    """A lister found no object under the key (client-go ``apierrors.NewNotFound``)."""

    def __init__(self, resource: str, name: str) -> None:
        super().__init__(f'{resource} "{name}" not found')
        self.resource = resource
        self.name = name


class CacheMutationError(InformersError, AssertionError):
    """The mutation detector found a cached object changed in place (client-go panics with
    ``cache <name> modified``). Cached objects are shared and read-only; copy before editing."""


class InformerStartedError(InformersError, RuntimeError):
    """A setting that is only allowed before start was changed on a running informer
    (client-go: ``informer has already started``)."""


class InformerStoppedError(InformersError, RuntimeError):
    """A handler or indexer was added to an informer that has stopped (client-go: ``handler
    ... was not added to shared informer because it has stopped already``)."""


class LeaderElectionConfigError(InformersError, ValueError):
    """A ``LeaderElector`` was configured wrongly (client-go ``NewLeaderElector`` errors).

    The message is client-go's, e.g. ``leaseDuration must be greater than renewDeadline``.
    """


class LeaseNotInitializedError(InformersError, RuntimeError):
    """``LeaseLock.update`` before any successful ``get`` or ``create``.

    client-go: ``lease not initialized, call get or create first``.
    """


# -- errors of the controller runtime (informers/controller, manager.py) -------------------------


class TerminalError(InformersError):
    """Raised by a reconcile function: the failure will not go away by retrying.

    controller-runtime ``reconcile.TerminalError``: the controller logs it and counts it in
    ``controller_runtime_terminal_reconcile_errors_total`` (and in the error metrics), forgets
    the key's backoff and does not requeue the key; the next event about the object enqueues it
    again. Wrap the cause with ``raise TerminalError("invalid spec of ns/name") from err``.
    """


class AlreadyOwnedError(InformersError, ValueError):
    """``set_controller_reference`` on an object that another object already controls
    (controller-runtime ``controllerutil.AlreadyOwnedError``).

    Attributes:
        owner: the existing controller reference (a dict).
    """

    def __init__(self, namespace: str, name: str, owner: dict[str, Any]) -> None:
        super().__init__(f"Object {namespace}/{name} is already owned by another "
                         f"{owner.get('kind')} controller {owner.get('name')}")
        self.namespace = namespace
        self.name = name
        self.owner = owner


class DeadlineExceededError(InformersError, TimeoutError):
    """The deadline of the work in progress passed (Go ``context.DeadlineExceeded``), e.g. a
    reconcile ran past the controller's ``reconcile_timeout``: the request was not sent, or
    the reconcile is counted as failed and retried."""


class AlreadyStartedError(InformersError, RuntimeError):
    """A controller or manager was started a second time, or something was added to a manager
    that has started (they run once: their queues and threads are gone after a stop)."""


class LeaderElectionLostError(InformersError, RuntimeError):
    """The manager lost its lease while running and shut down (controller-runtime's manager
    returns ``leader election lost``). The process should exit and be restarted."""


# -- errors of the wire side (list_watch.py, reflector.py) --------------------------------------

# metav1.StatusReason for an HTTP code when the body is not a Status (client-go
# apimachinery/pkg/api/errors NewGenericServerResponse).
_REASON_FOR_CODE = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class StatusError(InformersError):
    """The API server answered with a ``metav1.Status`` failure (client-go ``StatusError``).

    Built from an HTTP error response body, or from the object of an ``ERROR`` watch event.

    Attributes:
        status: the Status dict as decoded (``{"kind": "Status", "code": 410, ...}``).
        code: the HTTP status code (``status["code"]``).
        reason: the machine-readable reason (``"Expired"``, ``"TooManyRequests"``, ...), ``""``
            when absent.
        message: the human-readable message.
        retry_after: seconds the server asked us to wait (``Retry-After`` header, else
            ``status.details.retryAfterSeconds``), or ``None``.
    """

    def __new__(cls, status: dict[str, Any], retry_after: float | None = None) -> StatusError:
        # StatusError(status) is the subclass its reason names (else its code): the class
        # an ``except`` clause catches is apimachinery's ``errors.IsNotFound`` and friends.
        if cls is StatusError and isinstance(status, dict):
            cls = status_error_class(status.get("reason"), status.get("code"))
        return super().__new__(cls)

    def __init__(self, status: dict[str, Any], retry_after: float | None = None) -> None:
        self.status = status
        code = status.get("code")
        self.code: int = code if isinstance(code, int) else 0
        self.reason: str = str(status.get("reason") or "")
        self.message: str = str(status.get("message") or "")
        if retry_after is None:
            details = status.get("details")
            if isinstance(details, dict):
                seconds = details.get("retryAfterSeconds")
                if isinstance(seconds, (int, float)) and seconds > 0:
                    retry_after = float(seconds)
        self.retry_after = retry_after
        super().__init__(
            f"{self.code} {self.reason or 'Unknown'}: {self.message or '(no message)'}"
        )

    @classmethod
    def from_code(
        cls, code: int, message: str = "", retry_after: float | None = None
    ) -> StatusError:
        """A StatusError for an HTTP error whose body was not a Status."""
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": _REASON_FOR_CODE.get(code) or ("InternalError" if code >= 500
                                                      else "Unknown"),
            "message": message,
        }
        return cls(status, retry_after)

    @property
    def causes(self) -> list[dict[str, Any]]:
        """``status.details.causes`` (possibly empty)."""
        details = self.status.get("details")
        if isinstance(details, dict):
            causes = details.get("causes")
            if isinstance(causes, list):
                return [c for c in causes if isinstance(c, dict)]
        return []


# -- StatusError by reason (apimachinery pkg/api/errors: IsNotFound, IsConflict, ...) ----------


class Unauthorized(StatusError):
    """401: the request carried no valid credentials (``errors.IsUnauthorized``)."""


class Forbidden(StatusError):
    """403: the user may not do this (``errors.IsForbidden``); also creates in a namespace
    being deleted (cause ``NamespaceTerminating``)."""


class NotFound(StatusError, LookupError):
    """404: no such object or resource (``errors.IsNotFound``)."""


class AlreadyExists(StatusError):
    """409 with reason ``AlreadyExists``: a create of a name in use (``errors.IsAlreadyExists``)."""


class Conflict(StatusError):
    """409 with reason ``Conflict``: a write whose ``resourceVersion`` or ``uid``
    precondition no longer holds (``errors.IsConflict``); get the object again and retry."""


class Gone(StatusError):
    """410 with reason ``Gone`` (``errors.IsGone``)."""


class Expired(StatusError):
    """410 with reason ``Expired``: a resourceVersion or continue token too old
    (``errors.IsResourceExpired``)."""


class Invalid(StatusError, ValueError):
    """422: the object failed validation (``errors.IsInvalid``); :attr:`causes` holds one
    ``{"reason": "FieldValueInvalid", "message": ..., "field": "spec.x"}`` per field."""


class ServerTimeout(StatusError):
    """500 with reason ``ServerTimeout``: the server gave up and the request may be retried
    (``errors.IsServerTimeout``, which checks the reason only)."""


class StorageReadError(StatusError):
    """500 with reason ``StorageReadError``: an object in storage could not be read
    (``errors.IsStoreReadError``)."""


class Timeout(StatusError):
    """504: the request did not finish in time and may still be processed
    (``errors.IsTimeout``)."""


class TooManyRequests(StatusError):
    """429: throttled; :attr:`retry_after` says when to retry (``errors.IsTooManyRequests``)."""


class BadRequest(StatusError, ValueError):
    """400: a malformed request (``errors.IsBadRequest``)."""


class MethodNotAllowed(StatusError):
    """405: the resource does not support this verb (``errors.IsMethodNotSupported``)."""


class NotAcceptable(StatusError):
    """406: no acceptable response content type (``errors.IsNotAcceptable``)."""


class RequestEntityTooLarge(StatusError):
    """413: the request body is too large (``errors.IsRequestEntityTooLargeError``, which
    also matches the code alone)."""


class UnsupportedMediaType(StatusError):
    """415: the request's content type is not supported, e.g. a patch type the resource
    does not take (``errors.IsUnsupportedMediaType``)."""


class InternalError(StatusError):
    """500 with reason ``InternalError`` (``errors.IsInternalError``)."""


class ServiceUnavailable(StatusError):
    """503 (``errors.IsServiceUnavailable``)."""


_CLASS_FOR_REASON: dict[str, type[StatusError]] = {
    c.__name__: c for c in (
        Unauthorized, Forbidden, NotFound, AlreadyExists, Conflict, Gone, Expired, Invalid,
        ServerTimeout, StorageReadError, Timeout, TooManyRequests, BadRequest,
        MethodNotAllowed, NotAcceptable, RequestEntityTooLarge, UnsupportedMediaType,
        InternalError, ServiceUnavailable)
}
# An unknown reason falls back to the code, as apimachinery's Is* functions do when the reason
# is not one of its knownReasons (409 is Conflict there; 413 and 429 match by code alone).
_CLASS_FOR_CODE: dict[int, type[StatusError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    406: NotAcceptable, 409: Conflict, 410: Gone, 413: RequestEntityTooLarge,
    415: UnsupportedMediaType, 422: Invalid, 429: TooManyRequests, 500: InternalError,
    503: ServiceUnavailable, 504: Timeout,
}


def status_error_class(reason: object, code: object) -> type[StatusError]:
    """The :class:`StatusError` subclass of a ``metav1.Status`` reason and code: by the reason
    when it is one of ``metav1.StatusReason*``, else by the code, else StatusError itself."""
    found = _CLASS_FOR_REASON.get(reason) if isinstance(reason, str) else None
    if found is None and isinstance(code, int):
        found = _CLASS_FOR_CODE.get(code)
    return found or StatusError


def is_not_found(err: BaseException | None) -> bool:
    """A 404 :class:`NotFound`, or a lister's :class:`NotFoundError`."""
    return isinstance(_unwrap(err), (NotFound, NotFoundError))


def is_already_exists(err: BaseException | None) -> bool:
    """An :class:`AlreadyExists` (``errors.IsAlreadyExists``)."""
    return isinstance(_unwrap(err), AlreadyExists)


def is_conflict(err: BaseException | None) -> bool:
    """A :class:`Conflict` (``errors.IsConflict``)."""
    return isinstance(_unwrap(err), Conflict)


def is_invalid(err: BaseException | None) -> bool:
    """An :class:`Invalid` (``errors.IsInvalid``)."""
    return isinstance(_unwrap(err), Invalid)


def is_forbidden(err: BaseException | None) -> bool:
    """A :class:`Forbidden` (``errors.IsForbidden``)."""
    return isinstance(_unwrap(err), Forbidden)


def ignore_not_found(err: BaseException | None) -> BaseException | None:
    """``None`` for a not-found error, else ``err`` (controller-runtime
    ``client.IgnoreNotFound``). In a ``with`` block, ``contextlib.suppress(NotFound)`` does
    the same."""
    return None if is_not_found(err) else err


def ignore_already_exists(err: BaseException | None) -> BaseException | None:
    """``None`` for :class:`AlreadyExists`, else ``err`` (``client.IgnoreAlreadyExists``)."""
    return None if is_already_exists(err) else err


class ApiConnectionError(InformersError, ConnectionError):
    """The request never got an HTTP answer: connection refused or reset, or a read timeout.

    Attributes:
        refused: ``True`` when the connection was refused (the API server is down); the
            reflector then re-watches after a backoff instead of relisting (client-go
            ``utilnet.IsConnectionRefused``).
        timeout: ``True`` when a connect or read timeout expired.
    """

    def __init__(self, message: str, *, refused: bool = False, timeout: bool = False) -> None:
        super().__init__(message)
        self.refused = refused
        self.timeout = timeout


class ResponseDecodeError(InformersError, ValueError):
    """A response body that is not the JSON we expect (e.g. a list without ``items``)."""


class WatchDecodeError(ResponseDecodeError):
    """A watch stream line that is not JSON, or an event without ``type`` or ``object``.

    It ends the watch (apimachinery ``watch.StreamWatcher``): the HTTP watch stream turns it
    into a final ERROR event, and a reflector whose stream raises it ends that watch with it
    and relists. ``line_prefix`` holds the first bytes of the offending line.
    """

    def __init__(self, message: str, line_prefix: bytes = b"") -> None:
        super().__init__(message)
        self.line_prefix = line_prefix


class VeryShortWatchError(InformersError):
    """A watch closed in under a second without any event (client-go ``VeryShortWatchError``).

    The reflector relists after a backoff.
    """

    def __init__(self, name: str) -> None:
        super().__init__(
            f"very short watch: {name}: Unexpected watch close - "
            "watch lasted less than a second and no items received"
        )
        self.name = name


class ListError(InformersError):
    """A reflector's list failed: client-go reflector.go ``list`` returns
    ``fmt.Errorf("failed to list %v: %w", r.typeDescription, err)``, which
    ``DefaultWatchErrorHandler`` logs as "Failed to watch".

    The ``is_*`` predicates of this module look through it to :attr:`err`, as Go's
    ``errors.As`` looks through ``%w``.

    Attributes:
        err: the list's own error (also ``__cause__``).
    """

    def __init__(self, type_description: str, err: BaseException) -> None:
        super().__init__(f"failed to list {type_description}: {err}")
        self.err = err
        self.__cause__ = err


def _unwrap(err: BaseException | None) -> BaseException | None:
    while isinstance(err, ListError):
        err = err.err
    return err


def is_expired(err: BaseException | None) -> bool:
    """410: the requested resource version is gone (reason ``Expired`` or ``Gone``).

    client-go reflector.go ``isExpiredError`` (``IsResourceExpired || IsGone``).
    """
    err = _unwrap(err)
    if not isinstance(err, StatusError):
        return False
    return err.reason in ("Expired", "Gone") or err.code == 410


def is_too_large_resource_version(err: BaseException | None) -> bool:
    """The requested resource version is newer than the server knows.

    client-go reflector.go ``isTooLargeResourceVersionError``: a cause of type
    ``ResourceVersionTooLarge``, or (servers before 1.18.6) a ``Timeout`` whose cause message
    is ``"Too large resource version"`` or whose message contains it.
    """
    err = _unwrap(err)
    if not isinstance(err, StatusError):
        return False
    causes = err.causes
    if any(c.get("reason") == "ResourceVersionTooLarge" for c in causes):
        return True
    if err.reason != "Timeout" and err.code != 504:
        return False
    if any(c.get("message") == "Too large resource version" for c in causes):
        return True
    return "Too large resource version" in err.message


def is_too_many_requests(err: BaseException | None) -> bool:
    """429 Too Many Requests (client-go ``apierrors.IsTooManyRequests``)."""
    err = _unwrap(err)
    return isinstance(err, StatusError) and (
        err.reason == "TooManyRequests" or err.code == 429
    )


def is_internal_error(err: BaseException | None) -> bool:
    """500 InternalError (client-go ``apierrors.IsInternalError``)."""
    err = _unwrap(err)
    return isinstance(err, StatusError) and (err.reason == "InternalError" or err.code == 500)


def is_connection_refused(err: BaseException | None) -> bool:
    """The API server refused the connection (client-go ``utilnet.IsConnectionRefused``)."""
    err = _unwrap(err)
    return isinstance(err, ApiConnectionError) and err.refused


class CacheSyncTimeoutError(InformersError, TimeoutError):
    """Caches did not sync within the time allowed (controller-runtime's
    ``CacheSyncTimeout``: "timed out waiting for cache to be synced").

    The message names every cache that had not synced and its reflector's last error.

    Attributes:
        unsynced: name -> the last list-or-watch error of each cache that had not synced
            (``None`` where there was none, e.g. a list still in progress).
        timeout: the seconds that were allowed.
    """

    def __init__(self, unsynced: dict[str, BaseException | None], timeout: float) -> None:
        self.unsynced = dict(unsynced)
        self.timeout = timeout
        parts = [
            name + (f" (last error: {err})" if err is not None else " (no error yet)")
            for name, err in sorted(self.unsynced.items())
        ]
        super().__init__(
            f"timed out after {timeout:g}s waiting for caches to sync: " + "; ".join(parts))
