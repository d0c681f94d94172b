"""Sends list, watch and discovery requests through the official ApiClient, decoding raw bytes.

The official ``kubernetes`` package supplies the configuration, authentication (bearer tokens
with their refresh hook, client certificates), TLS and the urllib3 connection pool; this module
only builds URLs, sends GETs through that pool and reads the raw response bytes, never the
client's model objects:

* a list answer is decoded while it arrives (:class:`informers.list_decoder.ListDecoder`);
* a watch answer is read incrementally by :class:`~informers.watch_stream.HttpWatchStream`
  (re-exported here);
* an HTTP error answer raises :class:`~informers.errors.StatusError` built from the
  ``metav1.Status`` body (``Retry-After`` honoured); no answer at all (refused, reset, timed
  out) raises :class:`~informers.errors.ApiConnectionError`.
* a request whose :class:`~informers.list_watch.ListOptions` carry a ``cancel`` token is
  aborted when the token is cancelled, whether it waits for the answer's headers or reads its
  body: the connection's socket is shut down and the call raises ``ApiConnectionError``
  ("cancelled"). Establishing the connection is not abortable (the connect timeout bounds
  it); neither is a request through an HTTP proxy or with urllib3 1.x (its read timeout
  bounds each wait).

urllib3 retries configured on the ``ApiClient`` (and the client's own ``client_go_retries``)
are bypassed (``retries=False``): a refused connection or a 429 must reach the reflector, which
has client-go's rules for them.
"""

from __future__ import annotations

import copy
import dataclasses
import http.client
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from informers.decoder import decode
from informers.errors import ApiConnectionError, ResponseDecodeError, StatusError
from informers.gc_pause import gc_paused
from informers.http_connection import connection_error, shutdown_socket
from informers.list_decoder import ListDecoder
from informers.list_watch import (
    DEFAULT_WATCH_READ_TIMEOUT,
    WATCH_READ_TIMEOUT_MARGIN,
    CancelToken,
    ListOptions,
    ListResult,
    TweakFunc,
)
from informers.resources import Resource
from informers.watch_stream import HttpWatchStream

__all__ = ["ClientListWatch", "HttpWatchStream", "discover"]

logger = logging.getLogger(__name__)

LIST_READ_SIZE = 1 << 18
"""Bytes read from a list response at a time (256 KiB), each decoded as far as it completes
items (:class:`~informers.list_decoder.ListDecoder`) while the server sends the next ones."""

def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    if value is None:
        return None
    try:
        seconds = int(str(value).strip())
    except ValueError:
        return None  # an HTTP-date: client-go ignores those too
    return float(seconds) if seconds > 0 else None


class _Transport:
    """GET requests through an ``ApiClient``'s configuration and connection pool."""

    def __init__(self, api_client: Any, connect_timeout: float) -> None:
        self.api_client = api_client
        self.connect_timeout = connect_timeout

    def _url_and_headers(self, path: str) -> tuple[str, dict[str, str]]:
        client = self.api_client
        headers = {"Accept": "application/json"}
        if hasattr(client, "param_serialize"):  # kubernetes >= 36 (openapi-generator "python")
            _, url, headers, _, _ = client.param_serialize(
                "GET", path, header_params=headers, auth_settings=["BearerToken"]
            )
            return url, dict(headers)
        # kubernetes <= 35 ("python-legacy"): default headers plus auth by hand.
        headers.update(getattr(client, "default_headers", {}) or {})
        if getattr(client, "cookie", None):
            headers["Cookie"] = client.cookie
        client.update_params_for_auth(headers, [], ["BearerToken"])
        return client.configuration.host + path, headers

    def get(self, path: str, query: list[tuple[str, str]], read_timeout: float | None,
            what: str, cancel: CancelToken | None = None) -> _Call:
        """Send the GET; return the call (status 200, body not yet read).

        With ``cancel``, cancelling the token aborts the request at any point after the
        connection is established: waiting for the answer's headers or reading its body (see
        the module docstring for the exceptions). A token already cancelled sends nothing.
        """
        import urllib3

        url, headers = self._url_and_headers(path)
        if query:
            url += "?" + urlencode(query)
        timeout = urllib3.Timeout(connect=self.connect_timeout, read=read_timeout)
        if cancel is not None and cancel.is_cancelled():
            raise _cancelled(what)
        try:
            call = self._send(url, headers, timeout, cancel)
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException) as exc:
            if cancel is not None and cancel.is_cancelled():
                raise _cancelled(what) from exc
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
        raise _status_error(resp.status, body, _retry_after(resp.headers))

    def _send(self, url: str, headers: dict[str, str], timeout: Any,
              cancel: CancelToken | None) -> _Call:
        import urllib3

        pool = self.api_client.rest_client.pool_manager
        if cancel is not None and int(urllib3.__version__.split(".", 1)[0]) >= 2:
            conn_pool = pool.connection_from_url(url)
            if getattr(conn_pool, "proxy", None) is None:
                return _send_cancellable(conn_pool, url, headers, timeout, cancel)
        # Without a token, through an HTTP proxy, or with urllib3 1.x: the pool manager's own
        # request, which cannot be aborted (its read timeout bounds it). Its response returns
        # the connection to the pool by itself once the body is read, so no callback may
        # hold the socket while the body is read: it could be another request's by then.
        resp = pool.request(
            "GET", url, headers=headers, timeout=timeout, preload_content=False,
            retries=False, redirect=False,
        )
        return _Call(resp, cancel, None)


def _send_cancellable(conn_pool: Any, url: str, headers: dict[str, str], timeout: Any,
                      cancel: CancelToken) -> _Call:
    """Send a GET on a connection of ``conn_pool`` whose socket ``cancel`` can shut down.

    The steps of urllib3's ``HTTPConnectionPool.urlopen`` without retries, redirects and
    proxies, made by hand so that the connection is known before the request is sent:
    ``urlopen`` picks it internally and gives no way to reach it until the headers arrived.
    The response does not release the connection by itself (``response_conn=None``):
    :meth:`_Call.release` does, after unregistering the callback, so the callback can never
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
    return _Call(resp, cancel, unregister, conn, conn_pool)


class _Call:
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
            return _cancelled(what)
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


def _cancelled(what: str) -> ApiConnectionError:
    return ApiConnectionError(f"{what}: cancelled")


def _status_error(code: int, body: bytes, retry_after: float | None) -> StatusError:
    try:
        status = decode(body) if body else None
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status":
        if not isinstance(status.get("code"), int):
            status["code"] = code
        return StatusError(status, retry_after)
    text = body[:200].decode("utf-8", "replace")
    return StatusError.from_code(code, text, retry_after)


def _list_result(doc: Any, what: str) -> ListResult:
    if not isinstance(doc, dict):
        raise ResponseDecodeError(f"{what}: list response is not a JSON object")
    if doc.get("kind") == "Table":
        raise ResponseDecodeError(
            f"{what}: unsupported list gvk {doc.get('apiVersion')}, Kind=Table"
        )
    items = doc.get("items")
    if items is None:
        items = []
    elif not isinstance(items, list):
        raise ResponseDecodeError(f"{what}: list response 'items' is not a list")
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    remaining = meta.get("remainingItemCount")
    return ListResult(
        items=items,
        resource_version=str(meta.get("resourceVersion") or ""),
        continue_=meta.get("continue") or None,
        remaining_item_count=remaining if isinstance(remaining, int) else None,
    )


def discover(api_client: Any, group: str, version: str, plural: str,
              connect_timeout: float, read_timeout: float) -> tuple[str, bool]:
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    what = f"discovery of {plural}.{group}/{version}"
    try:
        call = _Transport(api_client, connect_timeout).get(path, [], read_timeout, what)
        read = False
        try:
            doc = decode(call.response.read())
            read = True
        finally:
            call.release(reuse=read)
        for entry in doc.get("resources") or []:
            if isinstance(entry, dict) and entry.get("name") == plural:
                return str(entry.get("kind") or ""), bool(entry.get("namespaced", True))
        logger.warning("%s: %s not in %s; assuming a namespaced resource of unknown kind",
                       what, plural, path)
    except Exception as exc:  # discovery is best effort: the informer must still be buildable
        logger.warning("%s failed (%s); assuming a namespaced resource of unknown kind",
                       what, exc)
    return "", True


class ClientListWatch:
    """The list and watch functions of :meth:`ListWatch.from_client`.

    With ``drop_managed_fields``, list bodies and watch lines are decoded without
    ``metadata.managedFields`` (:func:`informers.decoder.decode`'s option of that name).
    """

    def __init__(
        self,
        api_client: Any,
        resource: Resource,
        namespace: str | None,
        field_selector: str | None,
        label_selector: str | None,
        tweak: TweakFunc | None,
        connect_timeout: float,
        list_read_timeout: float,
        drop_managed_fields: bool = False,
    ) -> None:
        self.transport = _Transport(api_client, connect_timeout)
        self.drop_managed_fields = drop_managed_fields
        self.resource = resource
        self.path = resource.path(namespace)
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.tweak = tweak
        self.list_read_timeout = list_read_timeout
        self.what = str(resource) + (f" in {namespace}" if namespace and resource.namespaced
                                     else "")

    def with_drop_managed_fields(self, drop: bool) -> ClientListWatch:
        """A copy with ``drop_managed_fields`` set (sharing the transport)."""
        clone = copy.copy(self)
        clone.drop_managed_fields = drop
        return clone

    def _options(self, options: ListOptions) -> ListOptions:
        opts = dataclasses.replace(options)
        if self.field_selector:
            opts.field_selector = self.field_selector
        if self.label_selector:
            opts.label_selector = self.label_selector
        if self.tweak is not None:
            self.tweak(opts)
        return opts

    def list(self, options: ListOptions) -> ListResult:
        import urllib3

        opts = self._options(options)
        read_timeout = opts.read_timeout or self.list_read_timeout
        what = f"list {self.what}"
        call = self.transport.get(self.path, opts.to_query(watch=False), read_timeout, what,
                                  opts.cancel)
        decoder = ListDecoder(drop_managed_fields=self.drop_managed_fields)
        read = False
        with gc_paused():
            try:
                while chunk := call.response.read(LIST_READ_SIZE):
                    decoder.feed(chunk)
                read = True
            except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException) as exc:
                raise call.error(exc, what) from exc
            finally:
                call.release(reuse=read)
            try:
                doc = decoder.finish()
            except ValueError as exc:
                raise ResponseDecodeError(f"{what}: list response is not JSON: {exc}") from None
            return _list_result(doc, what)

    def watch(self, options: ListOptions) -> HttpWatchStream:
        opts = self._options(options)
        if opts.read_timeout is not None:
            read_timeout = opts.read_timeout
        elif opts.timeout_seconds:
            read_timeout = opts.timeout_seconds + WATCH_READ_TIMEOUT_MARGIN
        else:
            read_timeout = DEFAULT_WATCH_READ_TIMEOUT
        what = f"watch {self.what} at rv={opts.resource_version or '(latest)'}"
        call = self.transport.get(self.path, opts.to_query(watch=True), read_timeout, what,
                                  opts.cancel)
        # From here on the stream's close() aborts it (the reflector closes it on stop).
        if not call.detach():
            call.release(reuse=False)
            raise _cancelled(what)
        return HttpWatchStream(call.response, what, release=call.release,
                               drop_managed_fields=self.drop_managed_fields)
