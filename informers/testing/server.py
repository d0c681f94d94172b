"""``ApiServer``: an embedded Kubernetes API server for tests, demos and controller authors.

A real HTTP server, in process, that the official ``kubernetes`` client, ``kubectl`` and our
informers cannot tell from kube-apiserver for the resources it serves, plus what a test needs
that a real cluster lacks: seeding helpers, a request log and fault injection.
"""

from __future__ import annotations

import builtins
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from informers.clock import REAL_CLOCK, Clock
from informers.testing import bootstrap, client_config, status, tls
from informers.testing.admission import Admission
from informers.testing.connections import Connections
from informers.testing.conversion import Conversion
from informers.testing.crd_installer import read_crds
from informers.testing.crds import CRD_RESOURCE, CustomResources
from informers.testing.endpoints import Endpoints, Settings
from informers.testing.faults import Faults, InjectedFailure
from informers.testing.field_validation import FieldValidator
from informers.testing.handler import ApiHTTPServer
from informers.testing.openapi import OpenAPI
from informers.testing.requestlog import RequestLog, RequestRecord
from informers.testing.resources import ResourceRegistry, ResourceType
from informers.testing.schemas import Schemas
from informers.testing.seeding import Seeder
from informers.testing.storage import DEFAULT_HISTORY_LIMIT, Storage
from informers.testing.strategy import Strategy
from informers.testing.watch import EVENT_TYPES, WatchHandle
from informers.testing.webhook_client import WebhookClient

__all__ = ["DEFAULT_NAMESPACES", "FEATURE_GATES", "ApiServer"]

logger = logging.getLogger(__name__)

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
"""The namespaces a new cluster has (kube-apiserver's system namespaces controller)."""

FEATURE_GATES: Mapping[str, bool] = MappingProxyType({"ShardedListAndWatch": True})
"""The feature gates the embedded server knows and their defaults (``ApiServer(feature_gates=)``
overrides them). ``ShardedListAndWatch`` is alpha, off by default, in kube-apiserver v1.36
(``apiserver/pkg/features/kube_features.go``); here it is on, so clients can be tested with it."""


class ApiServer:
    """An embedded kube-apiserver: HTTP/1.1 on ``host:port`` (port 0: a free port), and the
    same API over HTTPS on :attr:`https_port` (a fixed test certificate, see
    :mod:`informers.testing.tls`) because ``kubectl`` only sends credentials over TLS.

    Use as a context manager (``with ApiServer() as server:``) or call :meth:`start` /
    :meth:`stop`. Every request needs ``Authorization: Bearer <token>``: other credentials
    answer 401 and a request without any is anonymous, as on kube-apiserver with its default
    ``--anonymous-auth`` and RBAC: it may GET ``/healthz``, ``/livez``, ``/readyz`` and
    ``/version`` (the ``system:public-info-viewer`` role) and is answered 403 otherwise;
    :meth:`api_client` (plain HTTP unless ``secure=True``) and :meth:`write_kubeconfig`
    (HTTPS) carry it. Thread-safe throughout. Each request runs on its own daemon thread;
    :meth:`stop` cuts every connection and waits for them.

    What it serves, and how it differs from a real cluster:

    * ``/version`` answers as kube-apiserver v1.36.3 (the release the project's real-control-
      plane tests run);
    * the built-in kinds of :data:`~informers.testing.resources.BUILTIN_RESOURCES` (every kind
      of :data:`informers.resources.BUILTIN_RESOURCES`), the ``CustomResourceDefinition``
      objects written to it (:mod:`informers.testing.crds`: schemas, CEL rules, status
      subresource, several versions) and any kind added with :meth:`register_resource`;
      JSON responses only (request bodies in JSON, YAML or, for built-in kinds, protobuf:
      :mod:`informers.testing.protobuf`); server-side apply and ``managedFields``
      (:mod:`informers.testing.apply`); strategic merge patch by the published patch
      strategies and merge keys (:mod:`informers.testing.strategic_merge`; on custom
      resources, a JSON merge patch); kubectl's ``Table`` answers for get, list and watch
      (:mod:`informers.testing.tables`);
    * one cluster-wide resourceVersion counter; list and watch resourceVersion semantics,
      pagination, bookmarks, ``sendInitialEvents`` and 410s as the API Concepts page documents
      for kube-apiserver v1.36 with its watch cache (``watch_cache=False`` makes
      ``resourceVersion=0`` lists honour ``limit``, like a server without the watch cache).
      As there, a watch from ``""``/``"0"`` is a streaming watch (WatchList defaulting: with
      ``allowWatchBookmarks`` it gets the ``initial-events-end`` bookmark), and periodic
      BOOKMARKs only come once the cluster's resourceVersion has moved past the watch's start
      (a write of any kind moves it);
    * ``/openapi/v3`` and ``/openapi/v2``: the OpenAPI documents of every served resource
      (:mod:`informers.testing.openapi`), and the ``fieldValidation`` of writes
      (:mod:`informers.testing.field_validation`): unknown fields (of built-in kinds, from
      their Go types; of custom resources, only in ``metadata``) are dropped, and they and
      duplicate JSON fields get a ``Warning`` header (``Warn``, the default) or a 400
      (``Strict``, kubectl's default), as on kube-apiserver;
    * the v1 defaults of the built-in kinds on every create, update and patch
      (:mod:`informers.testing.defaults`: a pod's ``restartPolicy``, ``dnsPolicy``,
      grace period, containers' pull policies..., a Deployment's strategy and limits, a
      Service's type, affinity, ports and IP families, a Secret's type...), a pod's
      ``qosClass``, and the mutating admission of the ``DefaultTolerationSeconds`` and
      ``Priority`` plugins, NamespaceLifecycle, the admission webhooks of ``Validating``/
      ``MutatingWebhookConfiguration`` objects and ``ValidatingAdmissionPolicy``
      (:mod:`informers.testing.admission`; API requests only, not the seeding helpers), and no
      other admission; validation of names,
      labels and annotations (every kind), of an Endpoints' subsets
      (:mod:`informers.testing.validation`) and of the content of pods, ConfigMaps, Secrets,
      Services and the apps workloads, on create and update (:mod:`informers.testing
      .kind_validation`), with kube-apiserver's 422 causes; the namespace's
      ``kubernetes.io/metadata.name`` label and a pod's ``status.podIP``/``podIPs``, which
      fill each other as the v1 conversion does (a pod written with ``podIP`` only has
      ``podIPs``); the seeding helpers may change a pod's spec (bind it to a node), which
      the API refuses as kube-apiserver does; no managedFields
      bookkeeping, no garbage collector (``propagationPolicy`` is accepted and ignored) and no
      controllers but the namespace controller (below); ``kubectl`` reads work, and so do
      its imperative creates of built-in kinds (protobuf). Two registry rules a client can
      tell apart are kept: a Service that is not ``ExternalName`` gets a ``clusterIP`` (and
      ``clusterIPs``) from 10.0.0.0/24 (kube-apiserver's default range) and keeps it when an
      update leaves it out; and empty values of ``omitempty`` fields are not stored, as Go's
      encoding drops them (``metadata.labels: {}``, a Service's ``selector: {}``, which is
      thus no selector, an Endpoints' ``subsets: []``, a ConfigMap's ``data: {}``...);
    * compaction (:meth:`compact`) forgets the history at once, for lists and watches alike.
      On kube-apiserver an etcd compaction does not reach the watch cache, which keeps serving
      watches (and exact lists, from its snapshots) from older versions until it
      re-initialises (after its etcd watch breaks), answering 429 meanwhile; only then do old
      versions answer 410;
    * deletion: an object with finalizers is marked (``deletionTimestamp``) and removed when an
      update drops the last finalizer. Pods are deleted as kube-apiserver deletes them: every
      delete first writes ``deletionTimestamp``/``deletionGracePeriodSeconds`` (a MODIFIED
      event), then, if the period is 0, removes the pod (DELETED). The period is the request's
      ``gracePeriodSeconds``, else ``spec.terminationGracePeriodSeconds`` (which
      kube-apiserver defaults to 30 and this server leaves absent: absent means 0), and 0 for a
      pod bound to no node or in a terminal phase. A pod marked with a period > 0 stays until
      a delete with a shorter one (``gracePeriodSeconds=0``: what the kubelet sends).
      Deleting a namespace marks it (``deletionTimestamp``, ``status.phase: Terminating``;
      creates in it then answer 403 with a ``NamespaceTerminating`` cause) and does the
      namespace controller's work within the same request: every object in it is deleted as
      above (objects with finalizers stay until those are removed), then the ``kubernetes``
      spec finalizer goes and with it the namespace (``PUT .../finalize`` removes other spec
      finalizers). No ``NamespaceDeletion*`` conditions are written. ``default``,
      ``kube-system`` and ``kube-public`` cannot be deleted;
    * at start the Service ``kubernetes`` exists in ``default`` (if that namespace does) as
      kube-apiserver makes it: ``10.0.0.1``, port ``https`` 443 to the secure (HTTPS) port
      (:mod:`informers.testing.bootstrap`); no Endpoints for it, as on a kube-apiserver run
      with ``--endpoint-reconciler-type=none``;
    * creates through the API reset the status of kinds with a status subresource (pods start
      ``Pending``), as the registry strategies do; the seeding helpers (:meth:`create`,
      :meth:`update`) keep the status you give them.

    Args:
        host: interface to listen on.
        port: TCP port; 0 picks a free one (see :attr:`port`).
        https_port: TCP port of the HTTPS listener; 0 picks a free one.
        token: the bearer token clients must send (default: random).
        clock: time for bookmarks, watch timeouts, injected delays, timestamps and the request
            log. With a ``FakeClock`` a test steps time to trigger bookmarks and timeouts.
        bookmark_interval: seconds between BOOKMARK events on watches that allow them
            (kube-apiserver sends one about every minute: ``cacher.go`` ``bookmarkFrequency``).
        history_limit: watch events retained per resource; older resourceVersions answer 410.
        min_request_timeout: a watch without ``timeoutSeconds`` lasts a random time in
            ``[t, 2t)`` (kube-apiserver ``--min-request-timeout``, default 1800 s).
        fresh_wait: how long a request for a resourceVersion newer than the server's waits
            before "Too large resource version" (the watch cache blocks up to 3 s:
            ``watch_cache.go`` ``blockTimeout``).
        watch_cache: serve ``resourceVersion=0`` lists ignoring ``limit``, as the watch cache does.
        max_request_body_bytes: larger bodies answer 413 (kube-apiserver default 3 MiB).
        header_read_timeout: seconds a connection has to send a request's line and headers
            (the first request's from the moment it connects, TLS handshake included)
            before it is closed unanswered (kube-apiserver: 32 s, Go's ``ReadHeaderTimeout``
            in ``k8s.io/apiserver/pkg/server/secure_serving.go``).
        idle_timeout: seconds a kept-alive connection may wait for its next request (the
            same file: ``IdleTimeout`` 90 s).
        namespaces: namespaces that exist at start.
        crds: CRD manifests installed at start: files, or folders whose ``.yaml``, ``.yml``
            and ``.json`` files are read (envtest's ``CRDDirectoryPaths``; see
            :func:`informers.testing.crd_installer.read_crds`). A missing path raises
            ``FileNotFoundError``, an invalid CRD the API's 422 ``StatusError``.
        webhook_services: where webhook ``clientConfig.service`` references go, since no
            cluster DNS resolves them in a test process: ``"<namespace>/<name>:<port>"`` (or
            ``"<namespace>/<name>"``) to a base URL such as ``https://127.0.0.1:9443``; the
            service's ``path`` is appended (:mod:`informers.testing.webhook_client`).
        feature_gates: kube-apiserver feature gates to turn on or off, by name, over
            :data:`FEATURE_GATES` (the defaults). Only ``ShardedListAndWatch`` (KEP-5866, alpha
            in v1.36) is known: on by default here (kube-apiserver's default is off), it makes
            list, watch and deletecollection honour ``shardSelector`` (see
            :mod:`informers.sharding`) and lists echo it in ``metadata.shardInfo``; off, the
            parameter is ignored as by a server without the gate. An unknown name raises
            ``ValueError`` (kube-apiserver: ``unrecognized feature gate``).
    """

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 0, https_port: int = 0,
        token: str | None = None,
        clock: Clock = REAL_CLOCK, bookmark_interval: float = 60.0,
        history_limit: int = DEFAULT_HISTORY_LIMIT, min_request_timeout: float = 1800.0,
        fresh_wait: float = 3.0, watch_cache: bool = True,
        max_request_body_bytes: int = status.MAX_REQUEST_BODY_BYTES,
        header_read_timeout: float = 32.0, idle_timeout: float = 90.0,
        namespaces: Iterable[str] = DEFAULT_NAMESPACES,
        crds: Iterable[str | os.PathLike[str]] = (),
        webhook_services: Mapping[str, str] | None = None,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        gates = dict(FEATURE_GATES)
        for gate, enabled in (feature_gates or {}).items():
            if gate not in gates:
                raise ValueError(f"unrecognized feature gate: {gate}")
            gates[gate] = bool(enabled)
        self.feature_gates = gates
        if header_read_timeout <= 0 or idle_timeout <= 0:
            raise ValueError("header_read_timeout and idle_timeout must be > 0, got "
                             f"{header_read_timeout} and {idle_timeout}")
        self.host = host
        self.port = port
        self.https_port = https_port
        self.token = token if token is not None else secrets.token_urlsafe(24)
        self.clock = clock
        self.max_request_body_bytes = max_request_body_bytes
        self.header_read_timeout = header_read_timeout
        self.idle_timeout = idle_timeout
        self.registry = ResourceRegistry()
        self.storage = Storage(history_limit=history_limit, clock=clock)
        self.strategy = Strategy(self.storage, self.registry, clock)
        self.custom_resources = CustomResources(self.registry, self.storage)
        self.strategy.custom = self.custom_resources
        self.custom_resources.attach(self.strategy)
        self._seeder = Seeder(self.registry, self.storage, self.strategy)
        webhook_client = WebhookClient(webhook_services)
        self.admission = Admission(self.storage, self.registry, webhook_client)
        self.admission.install()
        self.strategy.admission = self.admission
        self.conversion = Conversion(webhook_client)
        self.strategy.conversion = self.conversion
        self.faults = Faults()
        self.request_log_store = RequestLog()
        self.endpoints = Endpoints(
            storage=self.storage, registry=self.registry, strategy=self.strategy, clock=clock,
            faults=self.faults,
            settings=Settings(
                bookmark_interval=bookmark_interval, min_request_timeout=min_request_timeout,
                fresh_wait=fresh_wait, watch_cache=watch_cache,
                sharded_list_and_watch=gates["ShardedListAndWatch"],
            ),
        )
        self.schemas = Schemas.shared()
        self.openapi = OpenAPI(self.registry, self.schemas)
        self.field_validator = FieldValidator(self.schemas)
        self.stopping = threading.Event()
        self.connections = Connections(self.storage, self.stopping)
        self._lifecycle = threading.Lock()
        self._listeners: builtins.list[tuple[ApiHTTPServer, threading.Thread]] = []
        namespaces_rt = self.registry.find("namespaces")
        for name in namespaces:
            self.strategy.create(namespaces_rt, "", {"metadata": {"name": name}}, seeding=True)
        for crd in read_crds(crds):
            self.strategy.create(CRD_RESOURCE, "", crd)

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (valid after :meth:`start`)."""
        return f"http://{self.host}:{self.port}"

    @property
    def https_url(self) -> str:
        """``https://127.0.0.1:<https_port>``: the same API over TLS (valid after start)."""
        return f"https://{self.host}:{self.https_port}"

    @property
    def server_address(self) -> str:
        return f"{self.host}:{self.port}"

    def __enter__(self) -> ApiServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ApiServer:
        """Listen and serve in background threads. Idempotent."""
        with self._lifecycle:
            if self._listeners:
                return self
            self.stopping.clear()
            self._listen()
            bootstrap.ensure_kubernetes_service(self.strategy, self.storage, self.registry,
                                                self.https_port)
            self.connections.start_reaper()
            logger.info("embedded API server listening on %s", self.url)
        return self

    def _listen(self) -> None:
        plain = ApiHTTPServer((self.host, self.port), self)
        self.port = plain.server_address[1]
        secure = ApiHTTPServer((self.host, self.https_port), self, tls.server_context())
        self.https_port = secure.server_address[1]
        for httpd, name in ((plain, "informers-testing-apiserver"),
                            (secure, "informers-testing-apiserver-tls")):
            thread = threading.Thread(
                target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name=name,
                daemon=True,
            )
            thread.start()
            self._listeners.append((httpd, thread))

    def _close_listener(self) -> None:
        listeners, self._listeners = self._listeners, []
        for httpd, thread in listeners:
            httpd.shutdown()
            httpd.server_close()
            thread.join()

    def stop(self) -> None:
        """Stop listening, cut every connection and wait (up to 5 s) for them to close."""
        with self._lifecycle:
            if not self._listeners:
                return
            self.stopping.set()
            self._close_listener()
            self.connections.cut()
            self.connections.wait_closed(5.0)
            self.connections.stop_reaper()
            logger.info("embedded API server on port %d stopped", self.port)

    def restart(self) -> None:
        """Keep every object and the history; close the listener and every connection, then
        listen again on the same port (clients see their connections reset, then reconnect)."""
        with self._lifecycle:
            if not self._listeners:
                raise RuntimeError("restart() needs a started server")
            self._close_listener()
            self.connections.cut()
            self.connections.wait_for_watch_count(lambda n: n == 0, None, 5.0)
            self._listen()
            bootstrap.ensure_kubernetes_service(self.strategy, self.storage, self.registry,
                                                self.https_port)

    # -- connections and watches (called by the handler) ---------------------------------------

    def connection_opened(self, connection: socket.socket) -> None:
        self.connections.connection_opened(connection)

    def connection_closed(self, connection: socket.socket) -> None:
        self.connections.connection_closed(connection)

    def watch_opened(self, handle: WatchHandle) -> None:
        self.connections.watch_opened(handle)
        if self.faults.hung:
            self.storage.notify_all()

    def watch_closed(self, handle: WatchHandle) -> None:
        self.connections.watch_closed(handle)

    # -- clients -------------------------------------------------------------------------------

    def api_client(self, *, secure: bool = False) -> Any:
        """A new ``kubernetes.client.ApiClient`` for this server (host and bearer token);
        over HTTPS, verifying the test CA, when ``secure`` is set."""
        if secure:
            return client_config.api_client(self.https_url, self.token, tls.ca_file())
        return client_config.api_client(self.url, self.token)

    def kubeconfig(self, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig (as a dict) for the HTTPS listener, trusting the test CA."""
        return client_config.kubeconfig(
            "informers-testing", self.https_url, tls.CA_CERT_PEM.encode(), self.token, namespace)

    def write_kubeconfig(self, path: str | os.PathLike[str], namespace: str = "default") -> str:
        """Write :meth:`kubeconfig` to ``path`` (mode 0600) for ``kubectl --kubeconfig``."""
        return client_config.write_kubeconfig(path, self.kubeconfig(namespace))

    def register_resource(
        self, group: str, version: str, plural: str, kind: str, namespaced: bool = True, *,
        has_status: bool = False, short_names: Iterable[str] = (),
    ) -> ResourceType:
        """Serve a custom resource without a schema (a shortcut for a CRD with
        ``x-kubernetes-preserve-unknown-fields``): list items keep ``kind``/``apiVersion``,
        ``metadata.generation`` is maintained, ``has_status`` adds the status subresource."""
        return self.registry.add(ResourceType(
            group, version, plural, kind, namespaced=namespaced, has_status=has_status,
            has_generation=True, builtin=False, short_names=tuple(short_names),
            create_status=None,
        ))

    # -- seeding helpers (no HTTP; watchers see the changes) -----------------------------------

    def create(
        self, obj: dict[str, Any], resource: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]:
        """Create ``obj`` (a copy is stored); the resource comes from ``kind``/``apiVersion``
        unless ``resource`` is given; the namespace is ``namespace``, else the object's, else
        ``default``.

        Returns the stored object. Raises ``StatusError`` as the API would (409, 404...).
        """
        return self._seeder.create(obj, resource, namespace)

    def update(
        self, obj: dict[str, Any], resource: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]:
        """Replace an object unconditionally, status included (its ``resourceVersion`` is
        ignored). Returns the stored object."""
        return self._seeder.update(obj, resource, namespace)

    def patch(
        self, resource: str, namespace: str | None, name: str, patch: Any, *,
        patch_type: str = "merge", subresource: str = "*",
    ) -> dict[str, Any]:
        """Apply a merge patch (``patch_type="merge"``) or JSON patch (``"json"``); by default
        the status may change too. Returns the stored object."""
        return self._seeder.patch(resource, namespace, name, patch, patch_type=patch_type,
                                 subresource=subresource)

    def delete(
        self, resource: str, namespace: str | None, name: str, *,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any]:
        """Delete like the API (finalizers and graceful pods are only marked). Returns the
        object as answered (the final state, or the marked one)."""
        return self._seeder.delete(resource, namespace, name,
                                  grace_period_seconds=grace_period_seconds)

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The stored object (a copy, with ``kind``/``apiVersion``), or ``None``."""
        return self._seeder.get(resource, namespace, name)

    def list(
        self, resource: str, namespace: str | None = None, *, label_selector: str = "",
        field_selector: str = "",
    ) -> builtins.list[dict[str, Any]]:
        """Copies of the stored objects in key order, optionally filtered."""
        return self._seeder.list(resource, namespace, label_selector=label_selector,
                                field_selector=field_selector)

    @property
    def resource_version(self) -> str:
        """The current cluster-wide resourceVersion."""
        return str(self.storage.rv)

    # -- request log ---------------------------------------------------------------------------

    @property
    def requests(self) -> builtins.list[RequestRecord]:
        """Every answered request, oldest first (a copy)."""
        return self.request_log_store.records()

    def request_log(
        self, verb: str | None = None, resource: str | None = None
    ) -> builtins.list[RequestRecord]:
        """The answered requests, filtered by verb and/or resource."""
        return self.request_log_store.records(verb, resource)

    def clear_request_log(self) -> None:
        self.request_log_store.clear()

    def wait_for_requests(
        self, count: int, verb: str | None = None, resource: str | None = None,
        timeout: float = 5.0,
    ) -> bool:
        """Wait (real seconds) until at least ``count`` matching requests were answered."""
        def enough(records: builtins.list[RequestRecord]) -> bool:
            return sum(
                1 for r in records
                if (verb is None or r.verb == verb) and (resource is None or r.resource == resource)
            ) >= count

        return self.request_log_store.wait_for(enough, timeout)

    # -- open watches --------------------------------------------------------------------------

    def watch_count(self, resource: str | None = None) -> int:
        """Open watches (of ``resource``, a plural, if given)."""
        return self.connections.watch_count(resource)

    def wait_for_watches(
        self, count: int, resource: str | None = None, timeout: float = 5.0
    ) -> bool:
        """Wait (real seconds) until at least ``count`` watches are open. A watch counts once
        its 200 is sent and its starting point is fixed: changes made after this returns
        ``True`` reach it."""
        return self.connections.wait_for_watch_count(lambda n: n >= count, resource, timeout)

    def wait_for_no_watches(self, resource: str | None = None, timeout: float = 5.0) -> bool:
        """Wait (real seconds) until no watch (of ``resource``) is open, e.g. after a drop."""
        return self.connections.wait_for_watch_count(lambda n: n == 0, resource, timeout)

    # -- fault injection -----------------------------------------------------------------------

    def drop_watches(self, resource: str | None = None) -> int:
        """Cut every open watch (of ``resource`` if given) abruptly: the socket is shut down
        without ending the chunked body, as when a connection or the apiserver dies. Also ends
        :meth:`hang_watches`. Returns how many watches were dropped."""
        self.faults.hung = False
        handles = self.connections.watches(resource)
        for handle in handles:
            handle.drop()
        self.storage.notify_all()
        return len(handles)

    def fail_next(
        self, count: int, status: int, verb: str | None = None, resource: str | None = None,
        retry_after: int | None = None, *, message: str | None = None, in_stream: bool = False,
        match: Callable[[RequestRecord], bool] | None = None, as_ok: bool = False,
    ) -> None:
        """Fail the next ``count`` API requests matching ``verb``/``resource`` with ``status``
        (the real reason for the code: 429 ``TooManyRequests`` with ``Retry-After``, 410
        ``Expired``, 500 ``InternalError``, 504 ``Timeout``...). Discovery is never failed.
        ``in_stream=True`` makes a failed watch answer 200 and send the Status as an ``ERROR``
        event, as kube-apiserver reports errors found after a watch started. ``as_ok=True``
        answers ``200 OK`` with the failure ``Status`` (its ``code`` is ``status``) as the
        whole body, also for a watch (``Content-Length``, not chunked): what a broken proxy
        does; the two exclude each other (``ValueError``).

        ``match`` narrows the rule further: a predicate over the request as a
        :class:`RequestRecord` (query, namespace, name...; ``status`` is 0), called on the
        request's thread for requests whose verb and resource match; requests it refuses are
        served normally and do not use up the count. For example, fail only the pages of a
        paginated list after the first (requests that carry a continue token)::

            server.fail_next(1, 410, verb="list", resource="pods",
                             match=lambda r: "continue" in r.query)
        """
        self.faults.add_failure(InjectedFailure(
            remaining=count, code=status, verb=verb, resource=resource,
            retry_after=retry_after, message=message, in_stream=in_stream, match=match,
            as_ok=as_ok,
        ))

    def delay(self, seconds: float, verb: str | None = None, resource: str | None = None) -> None:
        """Delay matching API requests by ``seconds`` of the server clock before serving them;
        ``delay(0)`` clears every delay."""
        self.faults.set_delay(seconds, verb, resource)

    def hang_watches(self) -> None:
        """Open and new watches stop sending anything (new ones still get their 200 headers)
        and never end, until :meth:`resume_watches` or :meth:`drop_watches`."""
        self.faults.hung = True
        self.storage.notify_all()

    def resume_watches(self) -> None:
        """End :meth:`hang_watches`: streams continue where they stopped."""
        self.faults.hung = False
        self.storage.notify_all()

    def inject_malformed_watch_line(self) -> int:
        """Every open watch writes one line that is not JSON next, then carries on. Returns
        the number of watches affected."""
        handles = self.connections.watches()
        for handle in handles:
            handle.inject_malformed()
        self.storage.notify_all()
        return len(handles)

    def garble_watch_events(
        self, count: int = 1, event_type: str | None = None, resource: str | None = None
    ) -> int:
        """Every open watch (of ``resource``, a plural, if given) cuts its next ``count`` real
        events (of ``event_type``: ``ADDED``, ``MODIFIED`` or ``DELETED``; ``None``: any) in
        the middle of their JSON line, then carries on with the events after them: the event
        is lost to a client that skips a line it cannot decode and moves on (a cut
        ``DELETED`` of ``a`` followed by an ``ADDED`` of ``d`` leaves ``a`` in its cache).
        Watches opened later are not affected, nor are bookmarks. Returns the number of
        watches affected."""
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        if event_type is not None and event_type not in EVENT_TYPES:
            raise ValueError(f"event_type must be one of {EVENT_TYPES} or None, got "
                             f"{event_type!r}")
        handles = self.connections.watches(resource)
        for handle in handles:
            handle.garble(count, event_type)
        return len(handles)

    def compact(self) -> str:
        """Forget all history (etcd compaction): lists and watches at older resourceVersions and
        continue tokens issued before now answer 410; watchers that are behind get an ERROR
        event. Returns the resourceVersion compacted at."""
        return str(self.storage.compact())

    def clear_faults(self) -> None:
        """Forget injected failures and delays and end a hang."""
        self.faults.clear()
        self.storage.notify_all()

