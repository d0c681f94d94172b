"""Sends one JSON request through the official client's ApiClient and decodes the answer to a dict.

The leader-election lock and the event sink write a handful of small objects; they need exact
control of the JSON on the wire (MicroTime strings, ``resourceVersion`` for optimistic
concurrency, a strategic-merge-patch content type) and no model objects. This module takes
the host and headers from ``ApiClient.param_serialize`` (so authentication, default headers
and the host come from the caller's configuration; asked again every
:data:`HEADERS_REUSE_SECONDS`), encodes the body itself (orjson when installed) and sends it
through the client's urllib3 pool, as the client's REST layer does, but without the client's
recursive ``sanitize_for_serialization`` of the body and with the answer decoded by
:func:`informers.decoder.decode` (for a 5 KB, 25-address Endpoints, encoding the body and
decoding the answer take 14 instead of 164 us; with the reuse, the time from the call to the
first byte sent went from 260-280 to 90 us on an idle machine). Failures map onto the
library's error family:

* an HTTP error answer becomes :class:`~informers.errors.StatusError` (the ``metav1.Status``
  body when there is one, else one built from the code: client-go
  ``apierrors.NewGenericServerResponse``);
* a request that got no answer (refused, reset, timed out) becomes
  :class:`~informers.errors.ApiConnectionError`.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from typing import Any

import urllib3

from informers.clock import REAL_CLOCK, Clock
from informers.decoder import decode
from informers.errors import ApiConnectionError, StatusError

__all__ = ["HEADERS_REUSE_SECONDS", "api_call", "status_code"]

HEADERS_REUSE_SECONDS = 1.0
"""How long :func:`api_call` reuses a client's host and headers (authentication included)
before asking its configuration again. The official client's kubeconfig loader installs a
refresh hook that rebuilds the configuration on every request (re-setting ``host`` scans the
environment for proxies): 65 us a request on an idle machine, about 0.2 ms on a busy one, in
front of every Endpoints write. client-go itself re-reads a token file only once a minute
(``transport.NewCachedFileTokenSource``)."""

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
    clock: Clock = REAL_CLOCK,
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
        clock: decides when the client's host and headers are asked for again
            (:data:`HEADERS_REUSE_SECONDS`).

    Raises:
        StatusError: the server answered with a non-2xx code.
        ApiConnectionError: no answer (connection refused or reset, timeout).
    """
    prepared = _prepare(api_client, None if body is None else content_type, clock)
    timeout = urllib3.Timeout(total=request_timeout) if request_timeout else None
    encoded = None if body is None else _dumps(body)
    options: dict[str, Any] = {"body": encoded, "headers": dict(prepared.headers),
                               "timeout": timeout, "preload_content": False}
    try:
        pool = prepared.pool
        if pool is not None and pool.pool is not None:  # still open
            response = pool.urlopen(method, prepared.base_path + path, redirect=False,
                                    assert_same_host=False, **options)
        else:
            response = api_client.rest_client.pool_manager.request(
                method, prepared.host + path, **options)
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


class _Prepared:
    """What every request of one client with one content type shares, for
    :data:`HEADERS_REUSE_SECONDS`: the host and headers ``param_serialize`` gives (default
    headers, cookie, bearer token) and, without a proxy, the host's urllib3 connection pool
    itself: the pool manager's per-request work (parsing the URL, normalising the pool key)
    took 0.1 ms of a 0.4 ms pre-send on a busy machine. Requests through it follow no
    redirects; the API server sends none."""

    __slots__ = ("base_path", "headers", "host", "pool", "valid_until")

    def __init__(self, api_client: Any, content_type: str | None, valid_until: float) -> None:
        headers = {"Accept": "application/json"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        _, host, req_headers, _, _ = api_client.param_serialize(
            method="GET", resource_path="", header_params=headers, auth_settings=_AUTH_SETTINGS)
        self.valid_until = valid_until
        self.host: str = host
        self.headers: dict[str, str] = req_headers
        self.pool: Any = None
        self.base_path = ""
        manager = api_client.rest_client.pool_manager
        url = urllib3.util.parse_url(host)
        if type(manager) is urllib3.PoolManager and url.query is None and url.host:
            self.pool = manager.connection_from_url(host)
            self.base_path = (url.path or "").rstrip("/")


# api_client -> {content type or None: its _Prepared}
_prepared: weakref.WeakKeyDictionary[Any, dict[str | None, _Prepared]] = (
    weakref.WeakKeyDictionary()
)


def _prepare(api_client: Any, content_type: str | None, clock: Clock) -> _Prepared:
    """The client's :class:`_Prepared` for ``content_type``, made again once it is
    :data:`HEADERS_REUSE_SECONDS` old. Thread-safe: a race only makes it twice."""
    now = clock.now()
    per_client = _prepared.get(api_client)
    if per_client is None:
        per_client = {}
        try:
            _prepared[api_client] = per_client
        except TypeError:  # not weakly referenceable: made for every request
            pass
    entry = per_client.get(content_type)
    if entry is None or now >= entry.valid_until:
        entry = per_client[content_type] = _Prepared(
            api_client, content_type, now + HEADERS_REUSE_SECONDS)
    return entry


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
