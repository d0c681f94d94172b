"""Lists and watches a resource over HTTP: the :class:`~informers.list_watch.ListWatch` of
client-go's ``NewFilteredListWatchFromClient``, on :mod:`informers.client.transport`.

* :func:`list_watch_from_client` builds one for a built-in (or fully described) resource,
  :func:`list_watch_for_resource` for any group/version/plural, asking the server's discovery
  for the kind and scope when they are not given;
* a list answer is decoded while it arrives (:class:`~informers.client.list_decoder.ListDecoder`);
* a watch answer is read incrementally by
  :class:`~informers.client.watch_stream.HttpWatchStream`;
* a request whose :class:`~informers.list_watch.ListOptions` carry a ``cancel`` token is
  aborted when the token is cancelled (see :meth:`Transport.get
  <informers.client.transport.Transport.get>`) and raises ``ApiConnectionError``
  ("cancelled").

The response bytes are decoded straight to dicts (:mod:`informers.client.decoder`), never to
the official client's model objects.
"""

from __future__ import annotations

import copy
import dataclasses
import http.client
import logging
from typing import Any

from informers.client.decoder import decode
from informers.client.list_decoder import ListDecoder, list_result
from informers.client.requests import discovery_entries, discovery_path
from informers.client.transport import Transport, cancelled
from informers.client.watch_stream import HttpWatchStream
from informers.errors import ResponseDecodeError
from informers.list_watch import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_LIST_READ_TIMEOUT,
    ListOptions,
    ListResult,
    ListWatch,
    TweakFunc,
    watch_read_timeout,
)
from informers.resources import Resource, lookup

__all__ = [
    "ClientListWatch",
    "discover",
    "discovery_failed",
    "discovery_path",
    "kind_in_discovery",
    "list_watch_for_resource",
    "list_watch_from_client",
]

logger = logging.getLogger(__name__)

LIST_READ_SIZE = 1 << 18
"""Bytes read from a list response at a time (256 KiB), each decoded as far as it completes
items (:class:`~informers.client.list_decoder.ListDecoder`) while the server sends the next ones."""


def kind_in_discovery(doc: Any, plural: str, what: str, path: str) -> tuple[str, bool]:
    """``plural``'s kind and scope in the discovery document ``doc`` read from ``path``; not
    there: a warning, and a namespaced resource of unknown kind (``("", True)``). The rule of
    the threaded and the async discovery."""
    for name, kind, namespaced in discovery_entries(doc):
        if name == plural:
            return kind, namespaced
    logger.warning("%s: %s not in %s; assuming a namespaced resource of unknown kind",
                   what, plural, path)
    return "", True


def discovery_failed(what: str, exc: BaseException) -> tuple[str, bool]:
    """Discovery is best effort (the informer must still be buildable): a warning, and a
    namespaced resource of unknown kind."""
    logger.warning("%s failed (%s); assuming a namespaced resource of unknown kind", what, exc)
    return "", True


def discover(api_client: Any, group: str, version: str, plural: str,
             connect_timeout: float, read_timeout: float) -> tuple[str, bool]:
    """``plural``'s kind and scope from the server's discovery document
    (:func:`kind_in_discovery`, :func:`discovery_failed`)."""
    path = discovery_path(group, version)
    what = f"discovery of {plural}.{group}/{version}"
    try:
        call = Transport(api_client, connect_timeout).get(path, [], read_timeout, what)
        read = False
        try:
            doc = decode(call.response.read())
            read = True
        finally:
            call.release(reuse=read)
    except Exception as exc:
        return discovery_failed(what, exc)
    return kind_in_discovery(doc, plural, what, path)


class ClientListWatch(ListWatch):
    """A ListWatch over HTTP (made by :func:`list_watch_from_client`).

    Thread-safe: each call makes its own request on the ``ApiClient``'s pool. With
    ``drop_managed_fields``, list bodies and watch lines are decoded without
    ``metadata.managedFields`` (:func:`informers.client.decoder.decode`'s option of that
    name).
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
        super().__init__(None, None, resource=resource)
        self.transport = Transport(api_client, connect_timeout)
        self._drop = drop_managed_fields
        self.resource = resource
        self.path = resource.path(namespace)
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.tweak = tweak
        self.list_read_timeout = list_read_timeout
        self.what = str(resource) + (f" in {namespace}" if namespace and resource.namespaced
                                     else "")

    @property
    def drop_managed_fields(self) -> bool:
        return self._drop

    @property
    def supports_drop_managed_fields(self) -> bool:
        return True

    def with_drop_managed_fields(self, drop: bool = True) -> ClientListWatch:
        """A copy with ``drop_managed_fields`` set (sharing the transport); this one is left
        as it is (it may be shared)."""
        clone = copy.copy(self)
        clone._drop = drop
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
        decoder = ListDecoder(drop_managed_fields=self._drop, item_hook=opts.item_hook)
        read = False
        progress = opts.progress
        try:
            while chunk := call.response.read(LIST_READ_SIZE):
                decoder.feed(chunk)
                if progress is not None:
                    progress(decoder.items_decoded)
            read = True
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException) as exc:
            raise call.error(exc, what) from exc
        finally:
            call.release(reuse=read)
        try:
            doc = decoder.finish()
        except ValueError as exc:
            raise ResponseDecodeError(f"{what}: list response is not JSON: {exc}") from None
        return list_result(doc, what)

    def watch(self, options: ListOptions) -> HttpWatchStream:
        opts = self._options(options)
        read_timeout = watch_read_timeout(opts)
        what = f"watch {self.what} at rv={opts.resource_version or '(latest)'}"
        call = self.transport.get(self.path, opts.to_query(watch=True), read_timeout, what,
                                  opts.cancel)
        # From here on the stream's close() aborts it (the reflector closes it on stop).
        if not call.detach():
            call.release(reuse=False)
            raise cancelled(what)
        return HttpWatchStream(call.response, what, release=call.release,
                               drop_managed_fields=self._drop)


def list_watch_from_client(
    api_client: Any,
    resource: Resource | str | tuple[str, str, str],
    namespace: str | None = None,
    field_selector: str | None = None,
    label_selector: str | None = None,
    tweak: TweakFunc | None = None,
    *,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    list_read_timeout: float = DEFAULT_LIST_READ_TIMEOUT,
    drop_managed_fields: bool = False,
) -> ClientListWatch:
    """A ListWatch over HTTP for a built-in (or explicitly described) resource.

    client-go ``NewFilteredListWatchFromClient``: the selectors are set on every list and
    watch, then ``tweak`` may change any option (client-go's ``tweakListOptions``).

    Args:
        api_client: a ``kubernetes.client.ApiClient`` (configuration, auth, TLS, pool).
        resource: a :class:`~informers.resources.Resource` or a name for
            :func:`informers.resources.lookup`.
        namespace: limit to one namespace; ``None`` or ``""`` for all namespaces.
        field_selector: e.g. ``"spec.nodeName=node-1"``.
        label_selector: e.g. ``"app=web"``.
        tweak: called with a copy of the options of every list and watch.
        connect_timeout: seconds to establish a connection.
        list_read_timeout: seconds a list may wait for the next bytes of its answer.
        drop_managed_fields: leave ``metadata.managedFields`` out of every listed item and
            watched object, without decoding it where possible (the server's bookkeeping of
            who set which field, a large part of a typical object's JSON). The objects are
            otherwise exactly as decoded in full. A SharedIndexInformer switches it on by
            itself when its transform is the default one, which drops them anyway.

    Raises:
        KeyError: an unknown resource name.
    """
    res = resource if isinstance(resource, Resource) else lookup(resource)
    return ClientListWatch(
        api_client, res, namespace or None, field_selector, label_selector, tweak,
        connect_timeout, list_read_timeout, drop_managed_fields,
    )


def list_watch_for_resource(
    api_client: Any,
    group: str,
    version: str,
    plural: str,
    namespace: str | None = None,
    field_selector: str | None = None,
    label_selector: str | None = None,
    tweak: TweakFunc | None = None,
    *,
    kind: str | None = None,
    namespaced: bool | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    list_read_timeout: float = DEFAULT_LIST_READ_TIMEOUT,
    drop_managed_fields: bool = False,
) -> ClientListWatch:
    """A ListWatch for any resource, custom ones included.

    The kind and scope come from ``kind``/``namespaced`` when given, else from the built-in
    table, else from the server's discovery document (``GET /apis/<group>/<version>``). If
    discovery fails, a warning is logged and the resource is taken as namespaced with an
    unknown kind (``""``, which disables the reflector's kind check). The other arguments are
    :func:`list_watch_from_client`'s.
    """
    try:
        res: Resource | None = lookup((group, version, plural))
    except KeyError:
        res = None
    if res is None or kind is not None or namespaced is not None:
        if kind is None or namespaced is None:
            if res is not None:
                found_kind, found_ns = res.kind, res.namespaced
            else:
                found_kind, found_ns = discover(api_client, group, version, plural,
                                                connect_timeout, list_read_timeout)
            kind = found_kind if kind is None else kind
            namespaced = found_ns if namespaced is None else namespaced
        res = Resource(group, version, plural, kind, namespaced)
    return list_watch_from_client(
        api_client, res, namespace, field_selector, label_selector, tweak,
        connect_timeout=connect_timeout, list_read_timeout=list_read_timeout,
        drop_managed_fields=drop_managed_fields,
    )
