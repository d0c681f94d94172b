"""informers.client.Client: every verb against the embedded server and the real kube-apiserver
(``any_api_server``), the error mapping against a raw HTTP server answering each status, and
the retries of throttled requests."""

from __future__ import annotations

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from informers.client import Client
from informers.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Expired,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    MethodNotAllowed,
    NotAcceptable,
    NotFound,
    RequestEntityTooLarge,
    ServerTimeout,
    ServiceUnavailable,
    StatusError,
    StorageReadError,
    Timeout,
    TooManyRequests,
    Unauthorized,
    UnsupportedMediaType,
    ignore_already_exists,
    ignore_not_found,
)
from informers.resources import Resource

MANAGER = "test-client"


@pytest.fixture
def client(any_api_server):
    api = any_api_server.api_client()
    yield Client(api, field_manager=MANAGER)
    api.close()


def configmap(name: str, ns: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": dict(data)}


def deployment(name: str, ns: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                         {"name": "web", "image": "registry.invalid/web:1"}]}}}}


@contextlib.contextmanager
def apply_supported(server):
    """Server-side apply, which both servers answer (the embedded one since issue 16)."""
    yield


# -- verbs, on both servers -------------------------------------------------------------------


def test_create_get_update_delete(any_api_server, client):
    ns = any_api_server.namespace
    created = client.create(configmap("a", ns, k="1"))
    assert created["data"] == {"k": "1"}
    got = client.get("configmaps", "a", ns)
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    got["data"]["k"] = "2"
    updated = client.update(got)
    assert updated["data"] == {"k": "2"}
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    client.delete("configmaps", "a", ns)
    with pytest.raises(NotFound) as info:
        client.get("configmaps", "a", ns)
    assert info.value.code == 404
    assert isinstance(info.value, LookupError)


def test_create_twice_is_already_exists(any_api_server, client):
    ns = any_api_server.namespace
    client.create(configmap("dup", ns))
    with pytest.raises(AlreadyExists) as info:
        client.create(configmap("dup", ns))
    assert (info.value.code, info.value.reason) == (409, "AlreadyExists")
    assert ignore_already_exists(info.value) is None
    assert ignore_not_found(info.value) is info.value


def test_update_with_a_stale_resource_version_is_a_conflict(any_api_server, client):
    ns = any_api_server.namespace
    first = client.create(configmap("c", ns, k="1"))
    second = dict(first, data={"k": "2"})
    client.update(second)
    stale = dict(first, data={"k": "3"})
    with pytest.raises(Conflict) as info:
        client.update(stale)
    assert (info.value.code, info.value.reason) == (409, "Conflict")
    assert client.get("configmaps", "c", ns)["data"] == {"k": "2"}


def test_an_invalid_name_is_invalid_with_its_cause(any_api_server, client):
    ns = any_api_server.namespace
    with pytest.raises(Invalid) as info:
        client.create(configmap("Not_A_Name", ns))
    assert (info.value.code, info.value.reason) == (422, "Invalid")
    assert [c.get("field") for c in info.value.causes] == ["metadata.name"]


def test_patch_types(any_api_server, client):
    ns = any_api_server.namespace
    client.create(configmap("p", ns, a="1", b="2"))
    merged = client.patch("configmaps", "p", {"data": {"b": None, "c": "3"}}, ns)
    assert merged["data"] == {"a": "1", "c": "3"}
    patched = client.patch("configmaps", "p", [{"op": "replace", "path": "/data/a",
                                                "value": "9"}], ns, patch_type="json")
    assert patched["data"] == {"a": "9", "c": "3"}
    strategic = client.patch("configmaps", "p", {"data": {"d": "4"}}, ns,
                             patch_type="strategic")
    assert strategic["data"] == {"a": "9", "c": "3", "d": "4"}


def test_a_merge_patch_with_a_stale_resource_version_is_a_conflict(any_api_server, client):
    ns = any_api_server.namespace
    first = client.create(configmap("rv", ns, a="1"))
    client.patch("configmaps", "rv", {"data": {"a": "2"}}, ns)
    with pytest.raises(Conflict):
        client.patch("configmaps", "rv", {"metadata": {
            "resourceVersion": first["metadata"]["resourceVersion"]}, "data": {"a": "3"}}, ns)


def test_delete_preconditions(any_api_server, client):
    ns = any_api_server.namespace
    created = client.create(configmap("d", ns))
    with pytest.raises(Conflict) as info:
        client.delete("configmaps", "d", ns, uid="00000000-0000-0000-0000-000000000000")
    assert info.value.code == 409
    with pytest.raises(Conflict):
        client.delete("configmaps", "d", ns, resource_version="1")
    client.delete("configmaps", "d", ns, uid=created["metadata"]["uid"],
                  resource_version=created["metadata"]["resourceVersion"],
                  propagation_policy="Background")
    with pytest.raises(NotFound):
        client.get("configmaps", "d", ns)
    with pytest.raises(NotFound) as info:
        client.delete("configmaps", "d", ns)
    assert ignore_not_found(info.value) is None


def test_status_subresource(any_api_server, client):
    ns = any_api_server.namespace
    created = client.create(deployment("s", ns))
    created["status"] = {"observedGeneration": 1, "replicas": 0}
    created["spec"]["replicas"] = 5  # ignored by a status write
    written = client.update_status(created)
    assert written["status"]["observedGeneration"] == 1
    assert written["spec"]["replicas"] == 1
    patched = client.patch_status("deployments", "s", {"status": {"observedGeneration": 2}}, ns)
    assert patched["status"]["observedGeneration"] == 2
    assert client.get("deployments", "s", ns)["status"]["observedGeneration"] == 2
    by_object = client.status.patch(patched, {"status": {"observedGeneration": 3}})
    assert by_object["status"]["observedGeneration"] == 3
    by_object["status"]["replicas"] = 2
    assert client.status.update(by_object)["status"]["replicas"] == 2


def test_list_with_a_label_selector(any_api_server, client):
    ns = any_api_server.namespace
    for name, tier in (("l1", "web"), ("l2", "db"), ("l3", "web")):
        obj = configmap(name, ns)
        obj["metadata"]["labels"] = {"tier": tier}
        client.create(obj)
    answer = client.list("configmaps", ns, label_selector="tier=web")
    items = answer["items"]
    assert sorted(i["metadata"]["name"] for i in items) == ["l1", "l3"]
    assert {(i["apiVersion"], i["kind"]) for i in items} == {("v1", "ConfigMap")}
    assert answer["metadata"]["resourceVersion"]


def test_resource_from_an_object_of_an_unknown_kind_is_not_found(any_api_server, client):
    with pytest.raises(NotFound):
        client.create({"apiVersion": "v1", "kind": "NoSuchKind",
                       "metadata": {"name": "x", "namespace": any_api_server.namespace}})


# -- server-side apply, on both servers ---------------------------------------------------------


def test_apply_creates_then_updates_and_conflicts_without_force(any_api_server, client):
    ns = any_api_server.namespace
    with apply_supported(any_api_server):
        first = client.apply(configmap("ap", ns, a="1"))
    assert first["data"] == {"a": "1"}
    managers = {e["manager"] for e in first["metadata"].get("managedFields", [])}
    assert managers == {MANAGER}
    assert client.apply(configmap("ap", ns, a="2"))["data"] == {"a": "2"}
    other = Client(client.api_client, field_manager="other")
    with pytest.raises(Conflict) as info:
        other.apply(configmap("ap", ns, a="3"))
    assert info.value.code == 409
    assert [c.get("field") for c in info.value.causes] == [".data.a"]
    forced = other.apply(configmap("ap", ns, a="3"), force=True)
    assert forced["data"] == {"a": "3"}


def test_apply_status(any_api_server, client):
    ns = any_api_server.namespace
    client.create(deployment("as", ns))
    with apply_supported(any_api_server):
        applied = client.status.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                                       "metadata": {"name": "as", "namespace": ns},
                                       "status": {"observedGeneration": 4}}, force=True)
    assert applied["status"]["observedGeneration"] == 4
    assert applied["spec"]["replicas"] == 1


def test_apply_needs_a_field_manager(any_api_server):
    api = any_api_server.api_client()
    try:
        with pytest.raises(ValueError, match="field_manager"):
            Client(api).apply(configmap("x", any_api_server.namespace))
    finally:
        api.close()


# -- real kube-apiserver only: dry-run and the scale subresource ----------------------------------


@pytest.mark.real_apiserver
def test_dry_run_writes_nothing(real_api_server):
    from servers import RealServer

    server = RealServer(real_api_server)
    try:
        api = server.api_client()
        dry = Client(api, field_manager=MANAGER, dry_run=True)
        answer = dry.create(configmap("dry", server.namespace, a="1"))
        assert answer["data"] == {"a": "1"}
        with pytest.raises(NotFound):
            Client(api).get("configmaps", "dry", server.namespace)
        api.close()
    finally:
        server.close()


@pytest.mark.real_apiserver
def test_scale_subresource(real_api_server):
    from servers import RealServer

    server = RealServer(real_api_server)
    try:
        api = server.api_client()
        c = Client(api, field_manager=MANAGER)
        c.create(deployment("sc", server.namespace, replicas=2))
        scale = c.get_scale("deployments", "sc", server.namespace)
        assert (scale["kind"], scale["spec"]["replicas"]) == ("Scale", 2)
        assert c.scale("deployments", "sc", 4, server.namespace)["spec"]["replicas"] == 4
        assert c.get("deployments", "sc", server.namespace)["spec"]["replicas"] == 4
        api.close()
    finally:
        server.close()


# -- the error mapping: a raw server answering each status --------------------------------------


class Answers:
    """A raw HTTP server answering queued (code, headers, body) triples, then 200 ``{}``."""

    def __init__(self) -> None:
        self.queue: list[tuple[int, dict[str, str], bytes]] = []
        self.requests: list[tuple[str, str]] = []
        answers = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                answers.requests.append((self.command, self.path))
                code, headers, body = (answers.queue.pop(0) if answers.queue
                                       else (200, {}, b"{}"))
                self.send_response(code)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def api_client(self) -> Any:
        from kubernetes import client

        config = client.Configuration()
        config.host = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        return client.ApiClient(config)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def answers():
    a = Answers()
    yield a
    a.close()


def status(code: int, reason: str) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "code": code, "reason": reason, "message": f"{reason} happened"}).encode()


# Each (code, reason) pair kube-apiserver answers (apimachinery pkg/api/errors New*), its class.
STATUSES = [
    (400, "BadRequest", BadRequest),
    (401, "Unauthorized", Unauthorized),
    (403, "Forbidden", Forbidden),
    (404, "NotFound", NotFound),
    (405, "MethodNotAllowed", MethodNotAllowed),
    (406, "NotAcceptable", NotAcceptable),
    (409, "AlreadyExists", AlreadyExists),
    (409, "Conflict", Conflict),
    (410, "Gone", Gone),
    (410, "Expired", Expired),
    (413, "RequestEntityTooLarge", RequestEntityTooLarge),
    (415, "UnsupportedMediaType", UnsupportedMediaType),
    (422, "Invalid", Invalid),
    (429, "TooManyRequests", TooManyRequests),
    (500, "InternalError", InternalError),
    (500, "ServerTimeout", ServerTimeout),
    (500, "StorageReadError", StorageReadError),
    (503, "ServiceUnavailable", ServiceUnavailable),
    (504, "Timeout", Timeout),
]


@pytest.mark.parametrize(("code", "reason", "cls"), STATUSES,
                         ids=[f"{c}-{r}" for c, r, _ in STATUSES])
def test_each_status_raises_its_class(answers, code, reason, cls):
    answers.queue.append((code, {"Content-Type": "application/json"}, status(code, reason)))
    api = answers.api_client()
    with pytest.raises(cls) as info:
        Client(api, max_retries=0).get("pods", "p", "ns")
    api.close()
    assert type(info.value) is cls
    assert (info.value.code, info.value.reason, info.value.message) == (
        code, reason, f"{reason} happened")


# Bodies that are not a Status: the class comes from the code (errors.NewGenericServerResponse
# and the Is* functions' code fallback).
BARE = [(400, BadRequest), (401, Unauthorized), (403, Forbidden), (404, NotFound),
        (405, MethodNotAllowed), (406, NotAcceptable), (409, Conflict), (410, Gone),
        (413, RequestEntityTooLarge), (415, UnsupportedMediaType), (422, Invalid),
        (429, TooManyRequests), (500, InternalError), (502, InternalError),
        (503, ServiceUnavailable), (504, Timeout), (418, StatusError)]


@pytest.mark.parametrize(("code", "cls"), BARE, ids=[str(c) for c, _ in BARE])
def test_a_bare_error_code_raises_its_class(answers, code, cls):
    answers.queue.append((code, {"Content-Type": "text/plain"}, b"proxy says no"))
    api = answers.api_client()
    with pytest.raises(cls) as info:
        Client(api, max_retries=0).get("pods", "p", "ns")
    api.close()
    assert type(info.value) is cls
    assert (info.value.code, info.value.message) == (code, "proxy says no")


class RecordingClock:
    """A clock whose sleeps return at once and are recorded (time is injectable)."""

    def __init__(self) -> None:
        from informers.clock import FakeClock

        self.fake = FakeClock()
        self.sleeps: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fake, name)

    def sleep(self, seconds: float, stop: Any = None) -> bool:
        self.sleeps.append(seconds)
        return False


def test_throttled_requests_are_retried_after_retry_after(answers):
    throttled = (429, {"Retry-After": "2", "Content-Type": "application/json"},
                 status(429, "TooManyRequests"))
    answers.queue += [throttled, throttled]
    clock = RecordingClock()
    api = answers.api_client()
    assert Client(api, clock=clock).create(configmap("x", "ns")) == {}  # type: ignore[arg-type]
    api.close()
    assert clock.sleeps == [2.0, 2.0]
    assert [m for m, _ in answers.requests] == ["POST"] * 3


def test_retries_stop_after_max_retries(answers):
    answers.queue += [(503, {"Retry-After": "1"}, b"")] * 3
    clock = RecordingClock()
    api = answers.api_client()
    with pytest.raises(ServiceUnavailable):
        Client(api, max_retries=2, clock=clock).get("pods", "p", "ns")  # type: ignore[arg-type]
    api.close()
    assert clock.sleeps == [1.0, 1.0]
    assert len(answers.requests) == 3


def test_errors_without_retry_after_are_not_retried(answers):
    answers.queue.append((500, {}, status(500, "InternalError")))
    clock = RecordingClock()
    api = answers.api_client()
    with pytest.raises(InternalError):
        Client(api, clock=clock).get("pods", "p", "ns")  # type: ignore[arg-type]
    api.close()
    assert clock.sleeps == []


def test_write_query_parameters(answers):
    api = answers.api_client()
    c = Client(api, field_manager="mgr", request_timeout=7, dry_run=True)
    c.create(configmap("x", "ns"))
    c.apply(configmap("x", "ns"), force=True)
    c.delete("configmaps", "x", "ns")
    api.close()
    assert answers.requests == [
        ("POST", "/api/v1/namespaces/ns/configmaps?fieldManager=mgr&dryRun=All&timeout=7s"),
        ("PATCH", "/api/v1/namespaces/ns/configmaps/x?fieldManager=mgr&dryRun=All&force=true"
                  "&timeout=7s"),
        ("DELETE", "/api/v1/namespaces/ns/configmaps/x?timeout=7s"),
    ]


# -- custom resources by (group, version, plural): discovery ---------------------------------------


def test_a_custom_resource_tuple_is_resolved_by_discovery(any_api_server, client):
    from test_testing_crds import crd_body, install, new_group, uninstall

    s, ns = any_api_server, any_api_server.namespace
    group = new_group()
    crd = crd_body(group, subresources={"status": {}})
    install(s, crd)
    try:
        ref = (group, "v1", "widgets")
        widget = {"apiVersion": f"{group}/v1", "kind": "Widget",
                  "metadata": {"name": "w", "namespace": ns}, "spec": {"size": 1}}
        assert client.resource(ref) == Resource(group, "v1", "widgets", "Widget", True)
        created = client.create(widget, resource=ref)
        assert created["spec"] == {"size": 1, "color": "red"}
        assert client.get(ref, "w", ns)["metadata"]["uid"] == created["metadata"]["uid"]
        listed = client.list(ref, ns)
        assert [(i["kind"], i["metadata"]["name"]) for i in listed["items"]] == [("Widget", "w")]
        assert client.patch(ref, "w", {"spec": {"size": 2}}, ns)["spec"]["size"] == 2
        applied = client.apply({**widget, "status": {"ready": True}}, resource=ref,
                               subresource="status")
        assert applied["status"] == {"ready": True}
        client.delete(ref, "w", ns)
        with pytest.raises(NotFound):
            client.get(ref, "w", ns)
        if s.embedded is not None:  # one discovery request: the group version is kept
            asked = [r for r in s.embedded.requests if r.path == f"/apis/{group}/v1"]
            assert len(asked) == 1
        # a plural the group version does not serve, and a group the server does not serve
        with pytest.raises(NotFound) as info:
            client.get((group, "v1", "gadgets"), "w", ns)
        assert (info.value.code, info.value.message) == (
            404, f"the server does not serve 'gadgets' in {group}/v1 (group {group!r}, "
            "version 'v1', plural 'gadgets')")
        with pytest.raises(NotFound) as info:
            client.list(("nope." + group, "v1", "widgets"), ns)
        assert info.value.message == (
            f"the server does not serve 'widgets' in nope.{group}/v1 (group 'nope.{group}', "
            "version 'v1', plural 'widgets')")
    finally:
        uninstall(s, crd["metadata"]["name"])
