"""Server-neutral test servers: the embedded ApiServer and the real control plane, one surface.

The ``any_api_server`` fixture (tests/conftest.py) yields a :class:`TestServer` for each of
``embedded`` (a fresh :class:`informers.testing.ApiServer` per test) and ``real`` (the session's
kube-apiserver on etcd, :mod:`informers.testing.control_plane`). Either way the test gets a
fresh namespace of its own (:attr:`TestServer.namespace`), so tests sharing the session control
plane never see each other's objects, as long as their informers are scoped to it.

The seeding helpers (``create``/``get``/``update``/``patch``/``delete``/``list``) take the
embedded server's signatures. On the real server they go through the official client's
``ApiClient.call_api`` as plain JSON, and a write that sets the status of a kind with a status
subresource is two writes (the object, then ``/status``), as it must be there: a watcher sees
an ``ADDED`` (or ``MODIFIED``) and then a ``MODIFIED`` where the embedded server's seeding
helpers make one event. Errors are raised as :class:`informers.errors.StatusError` on both.

Features only the embedded server has (request log, fault injection, ``compact``...) are on
:attr:`TestServer.embedded` (``None`` on the real server); features only the real one has
(etcd, kube-controller-manager) on :attr:`TestServer.plane` (``None`` on the embedded one).
"""

from __future__ import annotations

import copy
import json
import secrets
from typing import Any

from informers.errors import StatusError
from informers.testing.resources import ResourceRegistry, ResourceType

EMBEDDED = "embedded"
REAL = "real"

_REGISTRY = ResourceRegistry()  # the built-in kinds: plural, kind, scope, status subresource


def _rt(resource: str | None, obj: dict[str, Any] | None = None) -> ResourceType:
    if resource is not None:
        return _REGISTRY.find(resource)
    assert obj is not None
    return _REGISTRY.for_object(obj)


def _namespace_of(rt: ResourceType, obj: dict[str, Any] | None, namespace: str | None,
                  default: str) -> str:
    if not rt.namespaced:
        return ""
    return namespace or ((obj or {}).get("metadata") or {}).get("namespace") or default


class TestServer:
    """What a server-neutral test may use. Not thread-safe for the namespace bookkeeping;
    the object helpers are as thread-safe as the server."""

    __test__ = False  # not a pytest test class

    kind: str = ""
    namespace: str = ""
    embedded: Any = None
    plane: Any = None

    # -- clients -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        raise NotImplementedError

    @property
    def https_url(self) -> str:
        """The TLS address (the one kubeconfigs name)."""
        raise NotImplementedError

    @property
    def ca_file(self) -> str:
        """The CA certificate that verifies :attr:`https_url`."""
        raise NotImplementedError

    def api_client(self) -> Any:
        """A new ``kubernetes.client.ApiClient`` (the caller closes it)."""
        raise NotImplementedError

    def write_kubeconfig(self, path: Any, namespace: str | None = None) -> str:
        """A kubeconfig whose context namespace is ``namespace`` (default: the test's)."""
        raise NotImplementedError

    # -- namespaces ----------------------------------------------------------------------------

    def new_namespace(self, prefix: str = "t") -> str:
        """Create another namespace with a random name for this test; returns its name."""
        name = f"{prefix}-{secrets.token_hex(4)}"
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self._namespaces.append(name)
        return name

    _namespaces: list[str]

    def close(self) -> None:
        raise NotImplementedError

    # -- objects (the embedded server's seeding-helper signatures) -----------------------------

    def create(self, obj: dict[str, Any], resource: str | None = None,
               namespace: str | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def update(self, obj: dict[str, Any], resource: str | None = None,
               namespace: str | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def patch(self, resource: str, namespace: str | None, name: str,
              patch: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def delete(self, resource: str, namespace: str | None, name: str, *,
               grace_period_seconds: int | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        raise NotImplementedError

    @property
    def resource_version(self) -> str:
        """The current cluster-wide resourceVersion."""
        raise NotImplementedError


class EmbeddedServer(TestServer):
    """A started ``ApiServer`` of the test's own; its seeding helpers, defaulting the
    namespace to :attr:`namespace` instead of ``default``."""

    kind = EMBEDDED

    def __init__(self, server: Any) -> None:
        self.embedded = server
        self._namespaces = []
        self.namespace = self.new_namespace()

    @property
    def url(self) -> str:
        return str(self.embedded.url)

    @property
    def https_url(self) -> str:
        return str(self.embedded.https_url)

    @property
    def ca_file(self) -> str:
        from informers.testing import tls

        return tls.ca_file()

    def api_client(self) -> Any:
        return self.embedded.api_client()

    def write_kubeconfig(self, path: Any, namespace: str | None = None) -> str:
        return str(self.embedded.write_kubeconfig(path, namespace or self.namespace))

    def close(self) -> None:
        self.embedded.stop()

    def create(self, obj, resource=None, namespace=None):
        rt = _rt(resource, obj)
        return self.embedded.create(obj, resource,
                                    _namespace_of(rt, obj, namespace, self.namespace) or None)

    def get(self, resource, namespace, name):
        return self.embedded.get(resource, namespace, name)

    def update(self, obj, resource=None, namespace=None):
        rt = _rt(resource, obj)
        return self.embedded.update(obj, resource,
                                    _namespace_of(rt, obj, namespace, self.namespace) or None)

    def patch(self, resource, namespace, name, patch):
        return self.embedded.patch(resource, namespace, name, patch)

    def delete(self, resource, namespace, name, *, grace_period_seconds=None):
        return self.embedded.delete(resource, namespace, name,
                                    grace_period_seconds=grace_period_seconds)

    def list(self, resource, namespace=None):
        return self.embedded.list(resource, namespace)

    @property
    def resource_version(self) -> str:
        return str(self.embedded.resource_version)


class RealServer(TestServer):
    """The session's ``ControlPlane``; objects are written with the official client."""

    kind = REAL

    def __init__(self, plane: Any) -> None:
        self.plane = plane
        self._api = plane.api_client()
        self._namespaces = []
        self.namespace = self.new_namespace()

    @property
    def url(self) -> str:
        return str(self.plane.url)

    @property
    def https_url(self) -> str:
        return str(self.plane.url)

    @property
    def ca_file(self) -> str:
        return str(self.plane.ca_file)

    def api_client(self) -> Any:
        return self.plane.api_client()

    def write_kubeconfig(self, path: Any, namespace: str | None = None) -> str:
        return str(self.plane.write_kubeconfig(path, namespace or self.namespace))

    def close(self) -> None:
        # Without kube-controller-manager's namespace controller the namespaces stay
        # Terminating (their objects with them); no new object can be made in them.
        for name in self._namespaces:
            try:
                self._call("DELETE", f"/api/v1/namespaces/{name}")
            except StatusError:
                pass
        self._api.close()

    # -- HTTP ----------------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: Any = None, query: list | None = None,
              content_type: str = "application/json") -> Any:
        method, url, headers, body, _ = self._api.param_serialize(
            method, path, query_params=query or [],
            header_params={"Content-Type": content_type, "Accept": "application/json"},
            body=body, auth_settings=["BearerToken"],
        )
        response = self._api.call_api(method, url, headers, body, _request_timeout=30)
        data = response.read()
        if not 200 <= response.status < 300:
            try:
                status = json.loads(data)
            except ValueError:
                raise StatusError.from_code(response.status, data.decode(errors="replace")
                                            ) from None
            raise StatusError(status)
        return json.loads(data)

    def _write_status(self, rt: ResourceType, stored: dict[str, Any],
                      status: Any) -> dict[str, Any]:
        if status is None or stored.get("status") == status:
            return stored
        body = copy.deepcopy(stored)
        body["status"] = status
        meta = stored["metadata"]
        return self._call("PUT", rt.path(meta.get("namespace"), meta["name"], "status"), body)

    # -- objects -------------------------------------------------------------------------------

    def create(self, obj, resource=None, namespace=None):
        rt = _rt(resource, obj)
        ns = _namespace_of(rt, obj, namespace, self.namespace)
        body = copy.deepcopy(obj)
        body.setdefault("apiVersion", rt.api_version)
        body.setdefault("kind", rt.kind)
        if rt.namespaced:
            body.setdefault("metadata", {})["namespace"] = ns
        created = self._call("POST", rt.path(ns or None), body)
        if rt.has_status and "status" in obj:
            created = self._write_status(rt, created, obj["status"])
        return created

    def get(self, resource, namespace, name):
        rt = _rt(resource)
        try:
            return self._call("GET", rt.path(namespace or None, name))
        except StatusError as err:
            if err.code == 404:
                return None
            raise

    def update(self, obj, resource=None, namespace=None):
        rt = _rt(resource, obj)
        ns = _namespace_of(rt, obj, namespace, self.namespace)
        name = obj["metadata"]["name"]
        current = self._call("GET", rt.path(ns or None, name))
        body = copy.deepcopy(obj)
        body.setdefault("apiVersion", rt.api_version)
        body.setdefault("kind", rt.kind)
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        if rt.namespaced:
            body["metadata"]["namespace"] = ns
        updated = self._call("PUT", rt.path(ns or None, name), body)
        if rt.has_status and "status" in obj:
            updated = self._write_status(rt, updated, obj["status"])
        return updated

    def patch(self, resource, namespace, name, patch):
        rt = _rt(resource)
        merge = "application/merge-patch+json"
        rest = {k: v for k, v in patch.items() if not (rt.has_status and k == "status")}
        result = None
        if rest:
            result = self._call("PATCH", rt.path(namespace or None, name), rest, content_type=merge)
        if rt.has_status and "status" in patch:
            result = self._call("PATCH", rt.path(namespace or None, name, "status"),
                                {"status": patch["status"]}, content_type=merge)
        assert result is not None, "an empty patch"
        return result

    def delete(self, resource, namespace, name, *, grace_period_seconds=None):
        rt = _rt(resource)
        body = {} if grace_period_seconds is None else {
            "gracePeriodSeconds": grace_period_seconds}
        return self._call("DELETE", rt.path(namespace or None, name), body)

    def list(self, resource, namespace=None):
        rt = _rt(resource)
        answer = self._call("GET", rt.path(namespace or None))
        items = answer["items"]
        for item in items:  # as the embedded server's helper answers them
            item.setdefault("apiVersion", rt.api_version)
            item.setdefault("kind", rt.kind)
        return sorted(items, key=lambda o: (o["metadata"].get("namespace", ""),
                                            o["metadata"]["name"]))

    @property
    def resource_version(self) -> str:
        # A consistent list: the resourceVersion of etcd's newest write (of any kind).
        answer = self._call("GET", "/api/v1/namespaces", query=[("limit", 1)])
        return str(answer["metadata"]["resourceVersion"])
