"""Sends requests through the official ``kubernetes`` client's configuration and connection
pool: the one transport of :mod:`informers.client`.

The official package supplies the configuration, authentication (bearer tokens with their
refresh hook, client certificates, exec plugins through the kubeconfig loader), TLS and the
urllib3 pool; this module only asks it for the host and headers of a request, sends the bytes
through its pool and hands the raw answer back, never the client's model objects:

* :meth:`Transport.get` opens a GET whose body the caller reads (lists, watches, discovery),
  abortable through a :class:`~informers.list_watch.CancelToken`;
* :meth:`Transport.request` sends one JSON request and returns the decoded answer (writes).

Host and headers are asked for once per :data:`HEADERS_REUSE_SECONDS` per client and content
type (:func:`prepared`); an error answer raises the
:class:`~informers.errors.StatusError` of :func:`informers.client.status.status_error`, no
answer at all :class:`~informers.errors.ApiConnectionError`. urllib3 retries and redirects are
off: a refused connection or a 429 must reach the caller, which has client-go's rules for them.

**Supported ``kubernetes`` versions** (the one place that knows): 29-35, generated with
openapi-generator's ``python-legacy`` template (headers from ``default_headers``, ``cookie``
and ``update_params_for_auth``), and 36 and later, generated with the ``python`` template
(``ApiClient.param_serialize``). :func:`request_target` is where the two differ. With
urllib3 1.x (which the older ``kubernetes`` releases allow), a GET cannot be aborted through
its token; its read timeout bounds each wait instead.
"""

from __future__ import annotations

import http.client
import json
import logging
import weakref
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import urllib3

from informers.client.connection import connection_error, shutdown_socket
from informers.client.credentials import authorization_of, refresh_loader
from informers.client.decoder import decode
from informers.client.status import retry_after, status_error
from informers.clock import REAL_CLOCK, Clock
from informers.errors import ApiConnectionError, StatusError
from informers.list_watch import CancelToken

__all__ = [
    "HEADERS_REUSE_SECONDS",
    "Call",
    "Prepared",
    "Transport",
    "encode_json",
    "forget_prepared",
    "prepared",
    "prepared_if_fresh",
    "refresh_credentials",
    "request_target",
]

logger = logging.getLogger(__name__)

HEADERS_REUSE_SECONDS = 1.0
"""How long a client's host and headers (authentication included) are reused before its
configuration is asked again. The official kubeconfig loader installs a refresh hook that
rebuilds the configuration on every request, which is costly in front of every write;
client-go itself re-reads a token file only once a minute
(``transport.NewCachedFileTokenSource``), so a rotated token is still picked up well within
its period."""

_CANCELLABLE = int(urllib3.__version__.split(".", 1)[0]) >= 2  # urllib3 2.x: _make_request
_AUTH_SETTINGS = ["BearerToken"]  # the official client's name for token/API-key auth

encode_json: Callable[[Any], bytes]
"""The JSON body of a request, compact UTF-8 bytes: ``orjson.dumps`` when the ``fast`` extra is
installed, else the standard library's ``json.dumps`` without spaces (the official client sends
``json.dumps(body)``; the API server reads either). The one encoding of request bodies for the
threaded :class:`Transport` and :class:`informers.aio.transport.AsyncTransport`. Pure."""
try:  # pragma: no cover - which branch runs depends on the environment
    import orjson

    encode_json = orjson.dumps
except ImportError:  # pragma: no cover

    def encode_json(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode()


def request_target(api_client: Any, headers: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The host URL and the full headers (``headers`` plus defaults, cookie and
    authentication) of a request through ``api_client``, for every supported version."""
    if hasattr(api_client, "param_serialize"):  # kubernetes >= 36 ("python" generator)
        _, host, full, _, _ = api_client.param_serialize(
            method="GET", resource_path="", header_params=dict(headers),
            auth_settings=_AUTH_SETTINGS)
        return host, dict(full)
    # kubernetes 29-35 ("python-legacy"): default headers plus auth by hand.
    full = dict(headers)
    full.update(getattr(api_client, "default_headers", {}) or {})
    if getattr(api_client, "cookie", None):
        full["Cookie"] = api_client.cookie
    api_client.update_params_for_auth(full, [], _AUTH_SETTINGS)
    return api_client.configuration.host, full


class Prepared:
    """What every request of one client with one content type shares for
    :data:`HEADERS_REUSE_SECONDS`: the host, the headers and, without a proxy, the host's
    urllib3 connection pool itself (skipping the pool manager's per-request URL parsing).
    Requests through it follow no redirects; the API server sends none."""

    __slots__ = ("base_path", "headers", "host", "pool", "valid_until")

    def __init__(self, api_client: Any, content_type: str | None, valid_until: float) -> None:
        headers = {"Accept": "application/json"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        self.host, self.headers = request_target(api_client, headers)
        self.valid_until = valid_until
        self.pool: Any = None
        self.base_path = ""
        manager = api_client.rest_client.pool_manager
        url = urllib3.util.parse_url(self.host)
        if type(manager) is urllib3.PoolManager and url.query is None and url.host:
            self.pool = manager.connection_from_url(self.host)
            self.base_path = (url.path or "").rstrip("/")


# api_client -> {content type or None: its Prepared}
_prepared: weakref.WeakKeyDictionary[Any, dict[str | None, Prepared]] = (
    weakref.WeakKeyDictionary()
)


def prepared(api_client: Any, content_type: str | None, clock: Clock = REAL_CLOCK) -> Prepared:
    """The client's :class:`Prepared` for ``content_type``, made again once it is
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
        entry = per_client[content_type] = Prepared(
            api_client, content_type, now + HEADERS_REUSE_SECONDS)
    return entry


def prepared_if_fresh(api_client: Any, content_type: str | None,
                      clock: Clock = REAL_CLOCK) -> Prepared | None:
    """The client's :class:`Prepared` for ``content_type`` while it is less than
    :data:`HEADERS_REUSE_SECONDS` old, else ``None``: for a caller that must not run the
    configuration's refresh hook (which may run an exec plugin) in its own thread, and calls
    :func:`prepared` elsewhere then (the async transport, from a worker thread)."""
    try:
        entry = (_prepared.get(api_client) or {}).get(content_type)
    except TypeError:  # not weakly referenceable
        return None
    return entry if entry is not None and clock.now() < entry.valid_until else None


def forget_prepared(api_client: Any, authorization: str | None) -> bool:
    """Drop the client's :class:`Prepared` entries, so that the next request asks for host and
    headers again, when they still carry ``authorization`` (the ``Authorization`` header of a
    request the server answered 401); answer whether they did (``True`` also when none are
    kept). Entries prepared since with other credentials are kept: those were already
    rotated. Thread-safe."""
    try:
        per_client = _prepared.get(api_client)
    except TypeError:  # not weakly referenceable: nothing is kept
        return True
    if not per_client:
        return True
    if not any(authorization_of(e.headers) == authorization for e in list(per_client.values())):
        return False
    per_client.clear()
    return True


def refresh_credentials(api_client: Any, sent: dict[str, str]) -> bool:
    """A request through ``api_client`` with the headers ``sent`` was answered 401 (client-go:
    an exec plugin's ``roundTripper``, ``bearerAuthRoundTripper``): unless the client's
    credentials changed since ``sent`` was prepared ("already rotated"), make the next request
    ask for its headers again (:func:`forget_prepared`) and have the configuration's loader
    fetch a new credential (:func:`informers.client.credentials.refresh_loader`: the exec
    plugin run, the token file read). The request itself is not sent again. Answers whether
    the loader fetched; never raises. Runs the plugin in the calling thread."""
    if not forget_prepared(api_client, authorization_of(sent)):
        return False
    return refresh_loader(getattr(api_client, "configuration", None))


class Transport:
    """Requests through one ``ApiClient``. Thread-safe (the pool is).

    Args:
        api_client: a ``kubernetes.client.ApiClient``.
        connect_timeout: seconds to establish a connection.
        clock: decides when host and headers are asked for again.
    """

    def __init__(self, api_client: Any, connect_timeout: float | None = None,
                 clock: Clock = REAL_CLOCK) -> None:
        self.api_client = api_client
        self.connect_timeout = connect_timeout
        self.clock = clock

    def get(self, path: str, query: list[tuple[str, str]], read_timeout: float | None,
            what: str, cancel: CancelToken | None = None) -> Call:
        """Send a GET; return the call (status 200, body not yet read).

        With ``cancel``, cancelling the token aborts the request at any point after the
        connection is established: waiting for the answer's headers or reading its body.
        Establishing the connection is not abortable (the connect timeout bounds it), nor is
        a request through an HTTP proxy (its read timeout bounds each wait). A token already
        cancelled sends nothing.

        Raises:
            StatusError: a non-200 answer.
            ApiConnectionError: no answer, or cancelled.
        """
        target = prepared(self.api_client, None, self.clock)
        url = target.host + path
        if query:
            url += "?" + urlencode(query)
        timeout = urllib3.Timeout(connect=self.connect_timeout, read=read_timeout)
        if cancel is not None and cancel.is_cancelled():
            raise cancelled(what)
        try:
            call = self._send(url, dict(target.headers), timeout, cancel)
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException) as exc:
            if cancel is not None and cancel.is_cancelled():
                raise cancelled(what) from exc
            raise connection_error(exc, what) from exc
        resp = call.response
        if resp.status == 200:
            return call
        read = False
        try:
            body = resp.read()
            read = True
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException):
            body = b""
        finally:
            call.release(reuse=read)
        if resp.status == 401:
            refresh_credentials(self.api_client, target.headers)
        raise status_error(resp.status, body, retry_after(resp.headers))

    def _send(self, url: str, headers: dict[str, str], timeout: Any,
              cancel: CancelToken | None) -> Call:
        pool = self.api_client.rest_client.pool_manager
        if cancel is not None and _CANCELLABLE:
            conn_pool = pool.connection_from_url(url)
            if getattr(conn_pool, "proxy", None) is None:
                return _send_cancellable(conn_pool, url, headers, timeout, cancel)
        # Without a token, through an HTTP proxy, or with urllib3 1.x: the pool manager's own
        # request, which cannot be aborted (its read timeout bounds it). Its response returns the
        # connection to the pool by itself once the body is read, so no callback may hold the
        # socket while the body is read: it could be another request's by then.
        resp = pool.request(
            "GET", url, headers=headers, timeout=timeout, preload_content=False,
            retries=False, redirect=False,
        )
        return Call(resp, cancel, None)

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str = "application/json",
                request_timeout: float | None = None) -> dict[str, Any]:
        """Send ``method path`` with a JSON ``body``; return the decoded JSON answer
        (``{}`` for an empty or non-object answer).

        Raises:
            StatusError: a non-2xx answer, or a 2xx whose body is a ``Status`` other than
                ``Success``.
            ApiConnectionError: no answer (refused, reset, timed out).
        """
        target = prepared(self.api_client, None if body is None else content_type, self.clock)
        timeout = urllib3.Timeout(total=request_timeout) if request_timeout else None
        options: dict[str, Any] = {"body": None if body is None else encode_json(body),
                                   "headers": dict(target.headers), "timeout": timeout,
                                   "preload_content": False}
        what = f"{method} {path}"
        try:
            pool = target.pool
            if pool is not None and pool.pool is not None:  # still open
                response = pool.urlopen(method, target.base_path + path, redirect=False,
                                        assert_same_host=False, retries=False, **options)
            else:
                response = self.api_client.rest_client.pool_manager.request(
                    method, target.host + path, retries=False, **options)
            data = response.read()
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException) as exc:
            raise connection_error(_reason(exc), what) from exc
        if not 200 <= response.status <= 299:
            if response.status == 401:
                refresh_credentials(self.api_client, target.headers)
            raise status_error(response.status, data, retry_after(response.headers))
        if not data:
            return {}
        decoded = decode(data)
        if not isinstance(decoded, dict):
            return {}
        if decoded.get("kind") == "Status" and decoded.get("status") != "Success":
            # client-go rest.Result.Into: "any status besides StatusSuccess is considered an
            # error", whatever the HTTP code (a broken proxy answers 2xx with one)
            raise StatusError(decoded)
        return decoded


def _reason(exc: BaseException) -> BaseException:
    """The underlying failure of a urllib3 ``MaxRetryError``, else ``exc``."""
    reason = getattr(exc, "reason", None)
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and isinstance(reason, BaseException):
        return reason
    return exc


def _send_cancellable(conn_pool: Any, url: str, headers: dict[str, str], timeout: Any,
                      cancel: CancelToken) -> Call:
    """Send a GET on a connection of ``conn_pool`` whose socket ``cancel`` can shut down.

    The steps of urllib3's ``HTTPConnectionPool.urlopen`` without retries, redirects and
    proxies, made by hand so that the connection is known before the request is sent:
    ``urlopen`` picks it internally and gives no way to reach it until the headers arrived.
    The response does not release the connection by itself (``response_conn=None``):
    :meth:`Call.release` does, after unregistering the callback, so the callback can never
    shut down the socket of a connection that went back to the pool.
    """
    from urllib3.util import Retry, parse_url

    conn = conn_pool._get_conn()
    unregister: Callable[[], bool] | None = None
    try:
        conn.timeout = timeout.connect_timeout
        if conn.is_closed:
            conn.connect()
        sock = conn.sock
        unregister = cancel.on_cancel(lambda: shutdown_socket(sock))
        resp = conn_pool._make_request(
            conn, "GET", parse_url(url).request_uri, timeout=timeout, headers=headers,
            retries=Retry.from_int(False), response_conn=None, preload_content=False,
            decode_content=True,
        )
    except BaseException:
        if unregister is not None:
            unregister()
        conn.close()  # never reuse a connection in an unknown state
        conn_pool._put_conn(None)  # give its slot back, as urlopen does
        raise
    return Call(resp, cancel, unregister, conn, conn_pool)


class Call:
    """A GET whose answer is being read: the urllib3 response and, for a request made with a
    CancelToken, its registration there (the callback shuts the connection's socket down) and
    the connection it owns until :meth:`release`.

    One thread uses it; the token's callback may run on another.
    """

    __slots__ = ("_cancel", "_conn", "_conn_pool", "_released", "_unregister", "response")

    def __init__(self, response: Any, cancel: CancelToken | None,
                 unregister: Callable[[], bool] | None, conn: Any = None,
                 conn_pool: Any = None) -> None:
        self.response = response
        self._cancel = cancel
        self._unregister = unregister
        self._conn = conn  # None: the response releases its connection itself
        self._conn_pool = conn_pool
        self._released = False

    def detach(self) -> bool:
        """Unregister from the token. ``False`` if its callback ran: the socket is shut down."""
        unregister, self._unregister = self._unregister, None
        return unregister() if unregister is not None else True

    def error(self, exc: BaseException, what: str) -> ApiConnectionError:
        """The error to raise for ``exc``, met while reading the answer."""
        if self._cancel is not None and self._cancel.is_cancelled():
            return cancelled(what)
        return connection_error(exc, what)

    def release(self, reuse: bool) -> None:
        """Detach, then give the connection back to the pool; it is closed first unless
        ``reuse`` (the body was read in full) and the token's callback never touched it.
        Idempotent."""
        if not self.detach():
            reuse = False
        if self._released:
            return
        self._released = True
        resp, conn = self.response, self._conn
        try:
            if conn is None:
                if not reuse:
                    resp.close()
                resp.release_conn()
            elif reuse:
                self._conn_pool._put_conn(conn)
            else:
                resp.close()
                conn.close()  # never reuse a half-read or shut-down connection
                self._conn_pool._put_conn(None)
        except Exception:  # releasing must never raise into the caller
            logger.debug("error releasing a connection", exc_info=True)


def cancelled(what: str) -> ApiConnectionError:
    """The error of a request aborted through its CancelToken."""
    return ApiConnectionError(f"{what}: cancelled")
