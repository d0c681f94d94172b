"""AdmissionReview v1: decoding requests, building responses, and the defaulting and validating
handlers.

controller-runtime ``pkg/webhook/admission`` (``http.go``, ``webhook.go``, ``response.go``,
``defaulter_custom.go``, ``validator_custom.go``) over plain dicts:

* :func:`decode_review` reads an ``admission.k8s.io/v1`` ``AdmissionReview`` exactly (anything
  else, v1beta1 included, is an :class:`AdmissionReviewError` with code 400: this server is
  configured with ``admissionReviewVersions: [v1]``, so kube-apiserver sends only v1);
* :class:`AdmissionResponse` and :func:`allowed`, :func:`denied`, :func:`errored` are
  controller-runtime's ``Allowed``, ``Denied``, ``Errored``; :meth:`AdmissionResponse.review`
  completes a response as ``Response.Complete`` does (the request's ``uid``; ``code`` 200 when
  unset; the JSON patch base64-encoded with ``patchType: JSONPatch``);
* :class:`Mutating` runs a *defaulter* on a deep copy of the object and answers the JSON patch
  from the object kube-apiserver sent to the one the defaulter left (``defaulterForType``);
* :class:`Validating` calls ``validate_create(obj, request)``, ``validate_update(old, new,
  request)`` or ``validate_delete(old, request)`` of a *validator* (``validatorForType``).

A handler denies by raising :class:`AdmissionDenied` (or an :class:`~informers.errors.StatusError`,
whose ``status`` is answered as is, as controller-runtime answers an ``APIStatus`` error). Any
other exception is a bug in the handler: it is logged with the request's uid and answered as a
denial with code 500 and apimachinery's ``NewInternalError`` wording (``Internal error
occurred: ...``); the server keeps serving (controller-runtime ``Webhook.Handle`` recovers
panics likewise).

Handlers run on the server's request threads, possibly several at once: a handler must be
thread-safe. The objects a handler receives are its own (deep copies).
"""

from __future__ import annotations

import base64
import copy
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from informers.errors import StatusError
from informers.webhook.json_patch import create_patch

__all__ = [
    "ADMISSION_API_VERSION",
    "OPERATIONS",
    "AdmissionDenied",
    "AdmissionHandler",
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReviewError",
    "Defaulter",
    "Mutating",
    "Validating",
    "Validator",
    "allowed",
    "decode_review",
    "denied",
    "errored",
    "internal_error",
]

logger = logging.getLogger(__name__)

ADMISSION_API_VERSION = "admission.k8s.io/v1"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
"""``admissionv1.Operation`` values."""


class AdmissionReviewError(ValueError):
    """A request body that is not an AdmissionReview v1 request; ``code`` is the HTTP status
    to answer (400)."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


class AdmissionDenied(Exception):
    """Raised by a handler to deny the request (controller-runtime ``Denied``; with a custom
    ``code``/``reason``, ``validationResponseFromStatus``).

    Args:
        message: why, shown to the client after kube-apiserver's ``admission webhook "<name>"
            denied the request: ``.
        reason: the ``metav1.Status`` reason (default ``Forbidden``, as ``ValidationResponse``).
        code: the HTTP code kube-apiserver answers the client with (default 403).
        warnings: warnings returned with the denial.
    """

    def __init__(self, message: str, *, reason: str = "Forbidden", code: int = 403,
                 warnings: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.code = code
        self.warnings = list(warnings)


@dataclass(frozen=True)
class AdmissionRequest:
    """An ``AdmissionRequest`` (``k8s.io/api/admission/v1``), field by field.

    ``object`` is absent (``None``) on DELETE; ``old_object`` is set on UPDATE and DELETE.
    ``dry_run`` is true when kube-apiserver will not persist the outcome: a handler with side
    effects must then skip them (and declare ``sideEffects: NoneOnDryRun``). ``raw`` is the
    request as decoded.
    """

    uid: str
    kind: dict[str, str]
    resource: dict[str, str]
    operation: str
    name: str = ""
    namespace: str = ""
    sub_resource: str = ""
    request_kind: dict[str, str] | None = None
    request_resource: dict[str, str] | None = None
    request_sub_resource: str = ""
    user_info: dict[str, Any] = field(default_factory=dict)
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False
    options: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


def _check_gvk(value: Any, name: str, keys: Sequence[str]) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(value.get(k, ""), str) for k in keys):
        raise AdmissionReviewError(f"request.{name} must be an object with string fields "
                                   f"{', '.join(keys)}")
    return {k: value.get(k, "") for k in keys}


def decode_review(body: bytes) -> AdmissionRequest:
    """Decode an ``AdmissionReview`` v1 request body.

    Raises:
        AdmissionReviewError: not JSON, not ``admission.k8s.io/v1`` ``AdmissionReview``, no
            ``request``, or a request field of the wrong type; the message says which.
    """
    try:
        review = json.loads(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise AdmissionReviewError(f"the request body is not JSON: {err}") from None
    if not isinstance(review, dict):
        raise AdmissionReviewError("the request body is not a JSON object")
    api_version, kind = review.get("apiVersion"), review.get("kind")
    if api_version != ADMISSION_API_VERSION or kind != "AdmissionReview":
        raise AdmissionReviewError(
            f'expected apiVersion "{ADMISSION_API_VERSION}" and kind "AdmissionReview", got '
            f"apiVersion {json.dumps(api_version)} and kind {json.dumps(kind)}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise AdmissionReviewError("the AdmissionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise AdmissionReviewError("request.uid must be a non-empty string")
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise AdmissionReviewError(f"unknown operation {json.dumps(operation)}")
    objects = {}
    for name in ("object", "oldObject", "options"):
        value = request.get(name)
        if value is not None and not isinstance(value, dict):
            raise AdmissionReviewError(f"request.{name} must be an object or null")
        objects[name] = value
    for name in ("name", "namespace", "subResource", "requestSubResource"):
        if not isinstance(request.get(name, ""), str):
            raise AdmissionReviewError(f"request.{name} must be a string")
    dry_run = request.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise AdmissionReviewError("request.dryRun must be a boolean")
    user_info = request.get("userInfo", {})
    if not isinstance(user_info, dict):
        raise AdmissionReviewError("request.userInfo must be an object")
    gvk, gvr = ("group", "version", "kind"), ("group", "version", "resource")
    return AdmissionRequest(
        uid=uid,
        kind=_check_gvk(request.get("kind"), "kind", gvk),
        resource=_check_gvk(request.get("resource"), "resource", gvr),
        operation=operation,
        name=request.get("name", ""),
        namespace=request.get("namespace", ""),
        sub_resource=request.get("subResource", ""),
        request_kind=(_check_gvk(request["requestKind"], "requestKind", gvk)
                      if request.get("requestKind") is not None else None),
        request_resource=(_check_gvk(request["requestResource"], "requestResource", gvr)
                          if request.get("requestResource") is not None else None),
        request_sub_resource=request.get("requestSubResource", ""),
        user_info=user_info,
        object=objects["object"],
        old_object=objects["oldObject"],
        dry_run=dry_run,
        options=objects["options"],
        raw=request,
    )


@dataclass
class AdmissionResponse:
    """An ``AdmissionResponse`` before it is completed for a request.

    Attributes:
        allowed: whether the request is admitted.
        status: the ``metav1.Status`` result (``code``, ``reason``, ``message``), or ``None``.
        patch: JSON patch operations to apply to the object (mutating webhooks only).
        warnings: shown to the client (``Warning`` headers), at most 120 characters each as
            kube-apiserver truncates them.
        audit_annotations: added to the audit event.
    """

    allowed: bool
    status: dict[str, Any] | None = None
    patch: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)

    def review(self, uid: str) -> dict[str, Any]:
        """The ``AdmissionReview`` v1 answer to the request ``uid`` (``Response.Complete``)."""
        status = dict(self.status or {})
        status.setdefault("metadata", {})
        if not status.get("code"):
            status["code"] = 200
        response: dict[str, Any] = {"uid": uid, "allowed": self.allowed, "status": status}
        if self.patch:
            response["patch"] = base64.b64encode(
                json.dumps(self.patch, separators=(",", ":")).encode()).decode("ascii")
            response["patchType"] = "JSONPatch"
        if self.warnings:
            response["warnings"] = list(self.warnings)
        if self.audit_annotations:
            response["auditAnnotations"] = dict(self.audit_annotations)
        return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview",
                "response": response}


def allowed(message: str = "", warnings: Sequence[str] = ()) -> AdmissionResponse:
    """Admit (``admission.Allowed``): code 200, the message when given."""
    status: dict[str, Any] = {"code": 200}
    if message:
        status["message"] = message
    return AdmissionResponse(True, status, warnings=list(warnings))


def denied(message: str, *, reason: str = "Forbidden", code: int = 403,
           warnings: Sequence[str] = ()) -> AdmissionResponse:
    """Deny (``admission.Denied``): code 403, reason ``Forbidden`` unless given."""
    status: dict[str, Any] = {"code": code, "reason": reason}
    if message:
        status["message"] = message
    return AdmissionResponse(False, status, warnings=list(warnings))


def errored(code: int, message: str) -> AdmissionResponse:
    """Deny for an error (``admission.Errored``): ``code`` and the message, no reason."""
    return AdmissionResponse(False, {"code": code, "message": message})


def internal_error(err: BaseException) -> AdmissionResponse:
    """The denial for a handler that raised: apimachinery ``errors.NewInternalError``
    (code 500, reason ``InternalError``, ``Internal error occurred: <error>``)."""
    text = f"{type(err).__name__}: {err}"
    return AdmissionResponse(False, {
        "code": 500, "reason": "InternalError", "message": f"Internal error occurred: {text}",
        "details": {"causes": [{"message": text}]}})


def _from_exception(err: Exception, request: AdmissionRequest, handler: str) -> AdmissionResponse:
    if isinstance(err, AdmissionDenied):
        return denied(err.message, reason=err.reason, code=err.code, warnings=err.warnings)
    if isinstance(err, StatusError):
        return AdmissionResponse(False, dict(err.status))
    logger.error("webhook %s: handler raised on %s %s %s/%s (uid %s)", handler,
                 request.operation, request.kind.get("kind"), request.namespace, request.name,
                 request.uid, exc_info=err)
    return internal_error(err)


class AdmissionHandler(Protocol):
    """What the server calls for an admission path: ``handle(request) -> response``. It may
    raise: the server then answers :func:`internal_error`."""

    def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Answer one request."""


Defaulter = Callable[[dict[str, Any], AdmissionRequest], Any]
"""``default(obj, request)``: set defaults on ``obj`` in place (a deep copy of the request's
object) and return ``None``, or return a new object (controller-runtime ``CustomDefaulter``)."""


class Mutating:
    """A defaulting handler: the JSON patch from the request's object to the defaulted one
    (``defaulterForType``).

    DELETE is admitted without a call (there is no object to default). CONNECT likewise.
    The defaulter may raise :class:`AdmissionDenied` to deny.
    """

    def __init__(self, defaulter: Defaulter, name: str = "") -> None:
        self.defaulter = defaulter
        self.name = name or getattr(defaulter, "__qualname__", repr(defaulter))

    def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Default ``request.object`` and answer the patch (empty: allowed without one)."""
        if request.operation in ("DELETE", "CONNECT"):
            return allowed()
        if request.object is None:
            return errored(400, "there is no content to decode")
        original = request.object
        obj = copy.deepcopy(original)
        try:
            returned = self.defaulter(obj, request)
        except Exception as err:
            return _from_exception(err, request, self.name)
        if isinstance(returned, Mapping):
            obj = dict(returned)
        return AdmissionResponse(True, {"code": 200}, patch=create_patch(original, obj))


class Validator(Protocol):
    """controller-runtime ``CustomValidator`` over dicts. Each method returns warnings
    (``None`` for none) to admit, or raises :class:`AdmissionDenied` to deny."""

    def validate_create(self, obj: dict[str, Any],
                        request: AdmissionRequest) -> Sequence[str] | None:
        """Validate a new object."""

    def validate_update(self, old: dict[str, Any], obj: dict[str, Any],
                        request: AdmissionRequest) -> Sequence[str] | None:
        """Validate a change from ``old`` to ``obj``."""

    def validate_delete(self, old: dict[str, Any],
                        request: AdmissionRequest) -> Sequence[str] | None:
        """Validate deleting ``old``."""


class Validating:
    """A validating handler over a :class:`Validator` (``validatorForType``): CREATE gets the
    object, UPDATE the old and the new object, DELETE the old object; CONNECT is admitted."""

    def __init__(self, validator: Validator, name: str = "") -> None:
        self.validator = validator
        self.name = name or type(validator).__qualname__

    def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Call the validator's method for the operation and answer its verdict."""
        op = request.operation
        if op == "CONNECT":
            return allowed()
        new, old = request.object, request.old_object
        if (op in ("CREATE", "UPDATE") and new is None) or (
                op in ("UPDATE", "DELETE") and old is None):
            return errored(400, "there is no content to decode")
        try:
            if op == "CREATE":
                warnings = self.validator.validate_create(copy.deepcopy(new or {}), request)
            elif op == "UPDATE":
                warnings = self.validator.validate_update(
                    copy.deepcopy(old or {}), copy.deepcopy(new or {}), request)
            else:
                warnings = self.validator.validate_delete(copy.deepcopy(old or {}), request)
        except Exception as err:
            return _from_exception(err, request, self.name)
        return allowed(warnings=list(warnings or ()))
