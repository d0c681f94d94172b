"""Lists and watches over HTTP from async code: httpx's ``AsyncClient`` on anyio, with the
configuration, authentication and TLS of the official ``kubernetes`` package.

* :class:`AsyncTransport` sends requests: host and headers (bearer token, its refresh hook, the
  token an exec plugin produced through the kubeconfig loader) come from the ``ApiClient``
  exactly as for the threaded transport (:func:`informers.client.transport.prepared`, reused
  for :data:`~informers.client.transport.HEADERS_REUSE_SECONDS`); TLS (CA, client certificate,
  ``verify_ssl``, ``tls_server_name``) and the proxy from its ``Configuration``
  (:func:`ssl_context`). Error answers raise the :class:`~informers.errors.StatusError` of
  :func:`informers.client.status.status_error`, no answer
  :class:`~informers.errors.ApiConnectionError` (``refused``/``timeout`` flagged as the
  reflector's rules need). No retries, no redirects.
* :class:`AsyncListWatch` is the async :class:`~informers.list_watch.ListWatch` of a resource:
  a list answer is fed to the same :class:`~informers.client.list_decoder.ListDecoder` as it
  arrives; a watch answer is read by :class:`AsyncWatchStream` with the same
  :class:`~informers.client.watch_lines.WatchLineDecoder` as the threaded stream.

Cancellation is anyio's: cancelling the task that awaits a request or reads a stream aborts it
and closes its connection (``ListOptions.cancel`` is not used). Every object here belongs to one
event loop.
"""

from __future__ import annotations

import dataclasses
import logging
import ssl
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx

from informers.client.connection import is_refused
from informers.client.decoder import decode
from informers.client.list_decoder import ListDecoder, list_result
from informers.client.list_watch_client import (
    LIST_READ_SIZE,
    discovery_failed,
    discovery_path,
    kind_in_discovery,
)
from informers.client.status import retry_after, status_error
from informers.client.transport import (
    encode_json,
    prepared,
    prepared_if_fresh,
    refresh_credentials,
)
from informers.client.watch_lines import WatchLineDecoder
from informers.clock import REAL_CLOCK, Clock
from informers.errors import ApiConnectionError, ResponseDecodeError, StatusError
from informers.list_watch import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_LIST_READ_TIMEOUT,
    ListOptions,
    ListResult,
    TweakFunc,
    WatchEvent,
    watch_read_timeout,
)
from informers.resources import Resource, lookup

__all__ = [
    "AsyncListWatch",
    "AsyncTransport",
    "AsyncWatchStream",
    "api_client_of",
    "resolve_resource",
    "ssl_context",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_CONNECTIONS = 100
"""Connections an :class:`AsyncTransport` keeps open at most: one per watch, plus lists and
writes (the official client's urllib3 pool allows ``connection_pool_maxsize``, default
``cpu_count * 5``; a factory's watches must not wait for a connection)."""


def api_client_of(api_client_or_config: Any) -> Any:
    """A ``kubernetes.client.ApiClient``: the argument itself, or a new one for a
    ``kubernetes.client.Configuration``."""
    if hasattr(api_client_or_config, "rest_client") or hasattr(api_client_or_config,
                                                                 "param_serialize"):
        return api_client_or_config
    from kubernetes import client

    if isinstance(api_client_or_config, client.Configuration):
        return client.ApiClient(api_client_or_config)
    raise TypeError("expected a kubernetes.client.ApiClient or Configuration, got "
                    f"{type(api_client_or_config).__name__}")


def ssl_context(configuration: Any) -> ssl.SSLContext | bool:
    """The TLS settings of a ``kubernetes.client.Configuration`` as httpx's ``verify``.

    As the official ``rest.RESTClientObject`` does: verify with ``ssl_ca_cert`` (else the
    system's CAs) unless ``verify_ssl`` is off; present ``cert_file``/``key_file``; check the
    host name unless ``assert_hostname`` is ``False``.
    """
    if not getattr(configuration, "verify_ssl", True):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx = ssl.create_default_context(cafile=getattr(configuration, "ssl_ca_cert", None))
        if getattr(configuration, "assert_hostname", None) is False:
            ctx.check_hostname = False
    cert = getattr(configuration, "cert_file", None)
    if cert:
        ctx.load_cert_chain(cert, getattr(configuration, "key_file", None))
    return ctx


def _refused(exc: BaseException) -> bool:
    """Whether ``exc`` is a refused connection, looking also into exception groups: trio
    reports a failed connect as ``OSError("all attempts to connect ... failed")`` caused by a
    group of each attempt's error."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        cur = todo.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        if is_refused(cur):
            return True
        todo.extend(getattr(cur, "exceptions", ()))
        for nxt in (cur.__cause__, cur.__context__):
            if nxt is not None:
                todo.append(nxt)
    return False


def _connection_error(exc: BaseException, what: str) -> ApiConnectionError:
    return ApiConnectionError(f"{what}: {exc}", refused=_refused(exc),
                              timeout=isinstance(exc, (httpx.TimeoutException, TimeoutError)))


class AsyncTransport:
    """Requests through one ``ApiClient``'s configuration, on one ``httpx.AsyncClient``.

    Use ``async with`` (or call :meth:`aclose`): the connections are closed when it ends.

    Args:
        api_client: a ``kubernetes.client.ApiClient`` or ``Configuration``.
        connect_timeout: seconds to establish a connection (client-go's dialer: 30 s).
        clock: decides when host and headers are asked for again.
        max_connections: see :data:`DEFAULT_MAX_CONNECTIONS`.
    """

    def __init__(self, api_client: Any, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 clock: Clock = REAL_CLOCK,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        self.api_client = api_client_of(api_client)
        self.connect_timeout = connect_timeout
        self.clock = clock
        cfg = self.api_client.configuration
        self._sni = getattr(cfg, "tls_server_name", None)
        proxy = getattr(cfg, "proxy", None)
        # A TLS context only for an https host: one with the system's CAs costs ~20 MB of RSS
        # (urllib3 likewise makes one only when it opens an https connection).
        secure = str(getattr(cfg, "host", "") or "").lower().startswith("https")
        self._client = httpx.AsyncClient(
            verify=ssl_context(cfg) if secure else False, proxy=proxy or None,
            trust_env=False,
            follow_redirects=False,
            limits=httpx.Limits(max_connections=max_connections,
                                max_keepalive_connections=max_connections),
        )

    async def __aenter__(self) -> AsyncTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every connection. Idempotent."""
        with anyio.CancelScope(shield=True):
            await self._client.aclose()

    @property
    def is_closed(self) -> bool:
        return self._client.is_closed

    async def _request(self, method: str, path: str, query: list[tuple[str, str]],
                       content_type: str | None, content: bytes | None,
                       timeout: httpx.Timeout) -> tuple[httpx.Request, dict[str, str]]:
        """The request and the headers it carries. Host and headers are asked of the
        configuration in a worker thread when they are due (its refresh hook may run an exec
        plugin: the event loop goes on meanwhile)."""
        target = prepared_if_fresh(self.api_client, content_type, self.clock)
        if target is None:
            target = await anyio.to_thread.run_sync(prepared, self.api_client, content_type,
                                                    self.clock)
        url = target.host + path
        if query:
            url += "?" + urlencode(query)
        extensions = {"sni_hostname": self._sni} if self._sni else None
        request = self._client.build_request(method, url, headers=target.headers,
                                             content=content, timeout=timeout,
                                             extensions=extensions)
        return request, target.headers

    async def _unauthorized(self, sent: dict[str, str]) -> None:
        """A 401: the credential is fetched again before the next request (client-go's exec
        and token-file round trippers; :func:`informers.client.transport.
        refresh_credentials`), in a worker thread (it may run the exec plugin)."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(refresh_credentials, self.api_client, sent)

    async def open(self, path: str, query: list[tuple[str, str]], read_timeout: float | None,
                   what: str) -> httpx.Response:
        """Send a GET; return its response (status 200, body not yet read). The caller must
        ``await response.aclose()``.

        Raises:
            StatusError: a non-200 answer.
            ApiConnectionError: no answer.
        """
        timeout = httpx.Timeout(self.connect_timeout, read=read_timeout, pool=None)
        request, sent = await self._request("GET", path, query, None, None, timeout)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TransportError as exc:
            raise _connection_error(exc, what) from exc
        if response.status_code == 200:
            return response
        try:
            body = await response.aread()
        except httpx.TransportError:
            body = b""
        finally:
            await response.aclose()
        if response.status_code == 401:
            await self._unauthorized(sent)
        raise status_error(response.status_code, body, retry_after(response.headers))

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json",
                      request_timeout: float | None = None) -> dict[str, Any]:
        """Send ``method path`` with a JSON ``body``; the decoded JSON answer (``{}`` for an
        empty or non-object one). Raises as
        :meth:`informers.client.transport.Transport.request` does."""
        timeout = httpx.Timeout(request_timeout if request_timeout else None,
                                connect=self.connect_timeout)
        what = f"{method} {path}"
        request, sent = await self._request(
            method, path, [], None if body is None else content_type,
            None if body is None else encode_json(body), timeout)
        try:
            response = await self._client.send(request)
        except httpx.TransportError as exc:
            raise _connection_error(exc, what) from exc
        data = response.content
        if not 200 <= response.status_code <= 299:
            if response.status_code == 401:
                await self._unauthorized(sent)
            raise status_error(response.status_code, data, retry_after(response.headers))
        if not data:
            return {}
        decoded = decode(data)
        if not isinstance(decoded, dict):
            return {}
        if decoded.get("kind") == "Status" and decoded.get("status") != "Success":
            raise StatusError(decoded)
        return decoded


class AsyncWatchStream:
    """Reads a watch answer incrementally: ``async for event in stream``.

    The rules of :class:`~informers.client.watch_stream.HttpWatchStream`: a line that is not an
    event ends the stream with one last ERROR event; a broken connection or an expired read
    timeout ends it normally (``error`` holds the :class:`ApiConnectionError`); a last line cut
    by the end of the body is no error. :meth:`aclose` closes the connection (the reflector
    calls it, also when its task is cancelled). One task reads it.
    """

    def __init__(self, response: httpx.Response, description: str = "watch", *,
                 drop_managed_fields: bool = False) -> None:
        self._response = response
        self.description = description
        self._lines = WatchLineDecoder(description, drop_managed_fields=drop_managed_fields)
        self.error: ApiConnectionError | None = None
        self._closed = False
        self._iterator = self._events()

    @property
    def events(self) -> int:
        return self._lines.events

    @property
    def decode_errors(self) -> int:
        return self._lines.decode_errors

    @property
    def closed(self) -> bool:
        return self._closed

    def __aiter__(self) -> AsyncWatchStream:
        return self

    async def __anext__(self) -> WatchEvent:
        return await self._iterator.__anext__()

    async def aclose(self) -> None:
        """Close the connection; iteration ends. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await self._response.aclose()

    async def _events(self) -> Any:
        lines = self._lines
        try:
            async for chunk in self._response.aiter_bytes():
                for event in lines.feed(chunk):
                    yield event
                    if lines.failed or self._closed:
                        return
            if not self._closed:
                last = lines.finish()
                if last is not None:
                    yield last
        except (httpx.TransportError, httpx.StreamError) as exc:
            if not self._closed:
                self.error = _connection_error(exc, self.description)
                logger.info("%s: watch stream ended: %s", self.description, exc)
        finally:
            await self.aclose()


class AsyncListWatch:
    """The async ListWatch of one resource (client-go ``NewFilteredListWatchFromClient``):
    ``await list(options)`` and ``await watch(options)``, the selectors set on every request,
    then ``tweak`` applied to a copy of the options.

    Args:
        transport: the :class:`AsyncTransport` (shared; not closed here).
        resource: a :class:`~informers.resources.Resource` or a name for
            :func:`~informers.resources.lookup`.
        namespace: as for :func:`informers.client.list_watch_from_client`.
        field_selector: likewise.
        label_selector: likewise.
        tweak: likewise.
        list_read_timeout: likewise.
        drop_managed_fields: likewise.
    """

    def __init__(
        self,
        transport: AsyncTransport,
        resource: Resource | str | tuple[str, str, str],
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        tweak: TweakFunc | None = None,
        *,
        list_read_timeout: float = DEFAULT_LIST_READ_TIMEOUT,
        drop_managed_fields: bool = False,
    ) -> None:
        res = resource if isinstance(resource, Resource) else lookup(resource)
        self.transport = transport
        self.resource = res
        namespace = namespace or None
        self.path = res.path(namespace)
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.tweak = tweak
        self.list_read_timeout = list_read_timeout
        self.drop_managed_fields = drop_managed_fields
        self.what = str(res) + (f" in {namespace}" if namespace and res.namespaced else "")

    def _options(self, options: ListOptions) -> ListOptions:
        opts = dataclasses.replace(options)
        if self.field_selector:
            opts.field_selector = self.field_selector
        if self.label_selector:
            opts.label_selector = self.label_selector
        if self.tweak is not None:
            self.tweak(opts)
        return opts

    async def list(self, options: ListOptions) -> ListResult:
        """One list request (one page), decoded as it arrives."""
        opts = self._options(options)
        what = f"list {self.what}"
        response = await self.transport.open(self.path, opts.to_query(watch=False),
                                             opts.read_timeout or self.list_read_timeout, what)
        decoder = ListDecoder(drop_managed_fields=self.drop_managed_fields,
                              item_hook=opts.item_hook)
        progress = opts.progress
        try:
            # the threaded client's read size: httpcore hands over 64 KiB at most, and each
            # smaller feed is one more decode run and one more trip through the event loop
            async for chunk in response.aiter_bytes(LIST_READ_SIZE):
                decoder.feed(chunk)
                if progress is not None:
                    progress(decoder.items_decoded)
        except (httpx.TransportError, httpx.StreamError) as exc:
            raise _connection_error(exc, what) from exc
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
        try:
            doc = decoder.finish()
        except ValueError as exc:
            raise ResponseDecodeError(f"{what}: list response is not JSON: {exc}") from None
        return list_result(doc, what)

    async def watch(self, options: ListOptions) -> AsyncWatchStream:
        """Open a watch; the stream must be closed (``aclose``) by the caller."""
        opts = self._options(options)
        what = f"watch {self.what} at rv={opts.resource_version or '(latest)'}"
        response = await self.transport.open(self.path, opts.to_query(watch=True),
                                             watch_read_timeout(opts), what)
        return AsyncWatchStream(response, what, drop_managed_fields=self.drop_managed_fields)


async def resolve_resource(transport: AsyncTransport, group: str, version: str, plural: str,
                           read_timeout: float = DEFAULT_LIST_READ_TIMEOUT) -> Resource:
    """The :class:`~informers.resources.Resource` of ``(group, version, plural)``: a built-in
    one, else kind and scope from the server's discovery document (``GET
    /apis/<group>/<version>``), by the threaded rule
    (:func:`informers.client.list_watch_client.kind_in_discovery`; a failed discovery is a
    warning and a namespaced resource of unknown kind, as
    :func:`~informers.client.list_watch_client.discover`'s)."""
    try:
        return lookup((group, version, plural))
    except KeyError:
        pass
    path = discovery_path(group, version)
    what = f"discovery of {plural}.{group}/{version}"
    try:
        doc = await transport.request("GET", path, request_timeout=read_timeout)
    except Exception as exc:
        kind, namespaced = discovery_failed(what, exc)
    else:
        kind, namespaced = kind_in_discovery(doc, plural, what, path)
    return Resource(group, version, plural, kind, namespaced)
