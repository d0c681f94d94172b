"""Sends one JSON request through the official client's ApiClient and decodes the answer to a dict.

The leader-election lock and the event sink write a handful of small objects; they need exact
control of the JSON on the wire (MicroTime strings, ``resourceVersion`` for optimistic
concurrency, a strategic-merge-patch content type) and no model objects. This module builds
the request's URL and headers with ``ApiClient.param_serialize`` (so authentication, default
headers and the host come from the caller's configuration), encodes the body itself (orjson
when installed) and sends it through the client's urllib3 pool, as the client's REST layer
does, but without the client's recursive ``sanitize_for_serialization`` of the body and with
the answer decoded by :func:`informers.decoder.decode` (for a 5 KB, 25-address Endpoints,
encoding the body and decoding the answer take 14 instead of 164 us). Failures map onto the
library's error family:

* an HTTP error answer becomes :class:`~informers.errors.StatusError` (the ``metav1.Status``
  body when there is one, else one built from the code: client-go
  ``apierrors.NewGenericServerResponse``);
* a request that got no answer (refused, reset, timed out) becomes
  :class:`~informers.errors.ApiConnectionError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import urllib3

from informers.decoder import decode
from informers.errors import ApiConnectionError, StatusError

__all__ = ["api_call", "status_code"]

_dumps: Callable[[Any], bytes]
try:  # pragma: no cover - which branch runs depends on the environment
    import orjson

    _dumps = orjson.dumps
except ImportError:  # pragma: no cover

    def _dumps(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode()


# The official client's name for its bearer-token/API-key authentication settings.
_AUTH_SETTINGS = ["BearerToken"]


def status_code(err: BaseException | None) -> int:
    """The HTTP code of a :class:`StatusError` (or of the official client's ``ApiException``),
    0 for anything else."""
    if isinstance(err, StatusError):
        return err.code
    code = getattr(err, "status", None)
    return code if isinstance(code, int) else 0


def api_call(
    api_client: Any,
    method: str,
    path: str,
    body: Any = None,
    *,
    content_type: str = "application/json",
    request_timeout: float | None = None,
) -> dict[str, Any]:
    """Send ``method path`` with a JSON ``body`` and return the decoded JSON answer.

    Args:
        api_client: a ``kubernetes.client.ApiClient``.
        method: ``GET``, ``POST``, ``PUT``, ``PATCH`` or ``DELETE``.
        path: the URL path, e.g. ``/api/v1/namespaces/default/events``.
        body: a JSON-serialisable value, or ``None``.
        content_type: the request's content type (e.g.
            ``application/strategic-merge-patch+json`` for a PATCH).
        request_timeout: total seconds for the request (urllib3 timeout), ``None`` for the
            client's default.

    Raises:
        StatusError: the server answered with a non-2xx code.
        ApiConnectionError: no answer (connection refused or reset, timeout).
    """
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = content_type
    req_method, url, req_headers, _, _ = api_client.param_serialize(
        method=method,
        resource_path=path,
        header_params=headers,
        auth_settings=_AUTH_SETTINGS,
    )
    timeout = urllib3.Timeout(total=request_timeout) if request_timeout else None
    try:
        response = api_client.rest_client.pool_manager.request(
            req_method,
            url,
            body=None if body is None else _dumps(body),
            headers=req_headers,
            timeout=timeout,
            preload_content=False,
        )
        data = response.read()
    except urllib3.exceptions.HTTPError as e:
        raise _connection_error(method, path, e) from e
    except OSError as e:
        raise ApiConnectionError(f"{method} {path}: {e}") from e
    if not 200 <= response.status <= 299:
        raise _status_error(response.status, data, response.headers)
    if not data:
        return {}
    decoded = decode(data)
    return decoded if isinstance(decoded, dict) else {}


def _connection_error(
    method: str, path: str, err: urllib3.exceptions.HTTPError
) -> ApiConnectionError:
    reason: BaseException = err
    if isinstance(err, urllib3.exceptions.MaxRetryError) and err.reason is not None:
        reason = err.reason
    refused = isinstance(reason, (urllib3.exceptions.NewConnectionError, ConnectionRefusedError))
    timeout = isinstance(reason, urllib3.exceptions.TimeoutError)
    return ApiConnectionError(f"{method} {path}: {reason}", refused=refused, timeout=timeout)


def _status_error(code: int, data: bytes | None, headers: Any) -> StatusError:
    retry_after: float | None = None
    raw_retry = headers.get("Retry-After") if headers is not None else None
    if raw_retry:
        try:
            retry_after = float(raw_retry)
        except ValueError:
            retry_after = None
    if data:
        try:
            status = json.loads(data)
        except ValueError:
            status = None
        if isinstance(status, dict) and status.get("kind") == "Status":
            if not isinstance(status.get("code"), int):
                status["code"] = code
            return StatusError(status, retry_after)
    text = data.decode("utf-8", "replace")[:200] if data else ""
    return StatusError.from_code(code, text, retry_after)
