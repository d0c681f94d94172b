"""The webhook server called by an API server, on both servers (the embedded one calls
webhooks as kube-apiserver does): defaulting, denial with warnings, conversion between two CRD
versions, and certificate rotation without a failed request.

The real control plane is shared by the session: every configuration selects only the test's
namespace (``kubernetes.io/metadata.name``), the CRD has a group of its own, and both are
deleted in ``finally``.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
import uuid
from typing import Any

import pytest
from webhook_helpers import admission_review, post

from informers.certificates import CertificateAuthority
from informers.client import Client
from informers.errors import Forbidden, NotFound, StatusError
from informers.webhook import (
    AdmissionDenied,
    AdmissionWebhook,
    ClientConfig,
    HubAndSpoke,
    Rule,
    WebhookServer,
    conversion_stanza,
    mutating_configuration,
    validating_configuration,
)

MANAGER = "webhook-test"


@pytest.fixture
def plane_ns(any_api_server):
    """Either server, with a namespace of the test's own."""
    return any_api_server


@pytest.fixture
def certs(tmp_path):
    ca = CertificateAuthority()
    ca.issue(["127.0.0.1"]).write(str(tmp_path))
    return ca, str(tmp_path)


def _raw(api: Any, method: str, path: str, body: Any) -> tuple[int, list[str], dict[str, Any]]:
    """One request through the official client: status, Warning headers, decoded body."""
    method, url, headers, body, _ = api.param_serialize(
        method, path, header_params={"Content-Type": "application/json",
                                     "Accept": "application/json"},
        body=body, auth_settings=["BearerToken"])
    response = api.call_api(method, url, headers, body, _request_timeout=30)
    data = response.read()
    warnings = [v for k, v in response.getheaders().items() if k.lower() == "warning"]
    return response.status, warnings, json.loads(data)


def _configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": data}


class _Validator:
    def validate_create(self, obj, request):
        if "forbidden" in (obj.get("data") or {}):
            raise AdmissionDenied("data.forbidden is not allowed",
                                  warnings=["forbidden keys are checked on create"])
        return ["configmap created through the test webhook"]

    def validate_update(self, old, obj, request):
        return None

    def validate_delete(self, old, request):
        return None


def _delete(client: Client, objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        try:
            client.delete(client.resource(obj=obj), obj["metadata"]["name"])
        except NotFound:
            pass


def _wait_until_active(client: Client, namespace: str, label: str) -> None:
    """kube-apiserver picks up a new configuration within a moment: dry-run creates until the
    defaulting shows."""
    deadline = time.monotonic() + 15
    while True:
        probe = client.create(_configmap(f"probe-{uuid.uuid4().hex[:6]}", namespace),
                              namespace=namespace)
        if label in (probe["metadata"].get("labels") or {}):
            return
        assert time.monotonic() < deadline, "the webhook configuration never took effect"
        time.sleep(0.1)


def test_defaulting_denial_and_warnings_through_the_api_server(plane_ns, certs):
    ca, cert_dir = certs
    ns = plane_ns.namespace
    name = f"wh-{uuid.uuid4().hex[:8]}"
    api = plane_ns.api_client()
    client = Client(api, field_manager=MANAGER)
    dry = Client(api, field_manager=MANAGER, dry_run=True)
    seen_dry_run: list[bool] = []
    made: list[dict[str, Any]] = []

    def default(obj: dict[str, Any], request: Any) -> None:
        seen_dry_run.append(request.dry_run)
        obj["metadata"].setdefault("labels", {})["example.com/defaulted"] = "true"
        obj.setdefault("data", {}).setdefault("size", "small")

    rules = [Rule([""], ["v1"], ["configmaps"], ["CREATE", "UPDATE"])]
    selector = {"matchLabels": {"kubernetes.io/metadata.name": ns}}
    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=cert_dir)
    server.mutating("/default", default, AdmissionWebhook(
        f"default.{name}.kube-informers.io", rules, namespace_selector=selector))
    server.validating("/validate", _Validator(), AdmissionWebhook(
        f"validate.{name}.kube-informers.io", rules, namespace_selector=selector))
    with server:
        config = ClientConfig(ca.cert_pem, url=server.url)
        try:
            for obj in (mutating_configuration(name, server.registrations, config),
                        validating_configuration(name, server.registrations, config)):
                made.append(obj)
                client.create(obj)
            _wait_until_active(dry, ns, "example.com/defaulted")

            labelled = _configmap("a", ns, color="blue")
            labelled["metadata"]["labels"] = {"app": "x"}  # the patch adds .../example.com~1...
            created = client.create(labelled, namespace=ns)
            assert created["metadata"]["labels"] == {"app": "x", "example.com/defaulted": "true"}
            assert created["data"] == {"color": "blue", "size": "small"}
            assert seen_dry_run[-1] is False
            dry.create(_configmap("dry", ns), namespace=ns)
            assert seen_dry_run[-1] is True

            status, warnings, body = _raw(api, "POST", f"/api/v1/namespaces/{ns}/configmaps",
                                          _configmap("b", ns, forbidden="x"))
            assert status == 403
            assert (body["reason"], body["code"], body["message"]) == (
                "Forbidden", 403, f'admission webhook "validate.{name}.kube-informers.io" '
                'denied the request: data.forbidden is not allowed')
            assert warnings == ['299 - "forbidden keys are checked on create"']
            with pytest.raises(Forbidden):
                client.create(_configmap("c", ns, forbidden="x"), namespace=ns)

            status, warnings, body = _raw(api, "POST", f"/api/v1/namespaces/{ns}/configmaps",
                                          _configmap("d", ns))
            assert status == 201
            assert warnings == ['299 - "configmap created through the test webhook"']
        finally:
            _delete(client, made)
    api.close()


def _crd(group: str, config: ClientConfig) -> dict[str, Any]:
    def version(name: str, field: str, storage: bool) -> dict[str, Any]:
        return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {
                "type": "object", "properties": {field: {"type": "string"}}}}}}}

    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                               "listKind": "WidgetList"},
                     "versions": [version("v1alpha1", "colour", False),
                                  version("v1", "color", True)],
                     "conversion": conversion_stanza("/convert", config)}}


_CRD_KIND = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}


def _established(client: Client, name: str) -> None:
    deadline = time.monotonic() + 15
    while True:
        crd = client.get(client.resource(obj=_CRD_KIND), name)
        status = crd.get("status") or {}  # kube-apiserver answers "conditions": null at first
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
        if conditions.get("Established") == "True":
            return
        assert time.monotonic() < deadline, f"CRD {name} never established"
        time.sleep(0.1)


def test_conversion_between_two_versions_on_write_and_read(plane_ns, certs):
    ca, cert_dir = certs
    ns = plane_ns.namespace
    group = f"wh{uuid.uuid4().hex[:8]}.kube-informers.io"
    api = plane_ns.api_client()
    client = Client(api, field_manager=MANAGER)
    calls: list[str] = []

    def to_hub(obj: dict[str, Any]) -> dict[str, Any]:
        calls.append("to_hub")
        spec = obj.get("spec", {})
        obj["spec"] = {"color": spec["colour"]} if "colour" in spec else {}
        return obj

    def from_hub(obj: dict[str, Any]) -> dict[str, Any]:
        calls.append("from_hub")
        spec = obj.get("spec", {})
        obj["spec"] = {"colour": spec["color"]} if "color" in spec else {}
        return obj

    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=cert_dir)
    server.conversion(HubAndSpoke(group, "Widget", "v1").spoke("v1alpha1", to_hub, from_hub))
    with server:
        config = ClientConfig(ca.cert_pem, url=server.url)
        crd = _crd(group, config)
        try:
            client.create(crd)
            _established(client, crd["metadata"]["name"])
            base = f"/apis/{group}"
            widget = {"apiVersion": f"{group}/v1alpha1", "kind": "Widget",
                      "metadata": {"name": "w1", "namespace": ns}, "spec": {"colour": "red"}}
            deadline = time.monotonic() + 15
            while True:  # the new CRD's storage and handlers appear within a moment
                try:
                    status, _, created = _raw(api, "POST",
                                              f"{base}/v1alpha1/namespaces/{ns}/widgets", widget)
                except Exception:
                    status, created = 0, {}
                if status == 201 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert status == 201, created
            assert (created["apiVersion"], created["spec"]) == (f"{group}/v1alpha1",
                                                                {"colour": "red"})
            assert "to_hub" in calls  # written in v1, the storage version
            _, _, as_v1 = _raw(api, "GET", f"{base}/v1/namespaces/{ns}/widgets/w1", None)
            assert (as_v1["apiVersion"], as_v1["spec"]) == (f"{group}/v1", {"color": "red"})
            _, _, as_alpha = _raw(api, "GET", f"{base}/v1alpha1/namespaces/{ns}/widgets/w1",
                                  None)
            assert (as_alpha["apiVersion"], as_alpha["spec"]) == (f"{group}/v1alpha1",
                                                                  {"colour": "red"})
            assert as_alpha["metadata"]["uid"] == as_v1["metadata"]["uid"]
            _, _, listed = _raw(api, "GET", f"{base}/v1alpha1/namespaces/{ns}/widgets", None)
            assert [w["spec"] for w in listed["items"]] == [{"colour": "red"}]
        finally:
            _delete(client, [crd])
    api.close()


def test_certificate_rotation_fails_no_request(plane_ns, certs):
    ca, cert_dir = certs
    ns = plane_ns.namespace
    name = f"wh-{uuid.uuid4().hex[:8]}"
    api = plane_ns.api_client()
    client = Client(api, field_manager=MANAGER)
    dry = Client(api, field_manager=MANAGER, dry_run=True)

    def default(obj: dict[str, Any], request: Any) -> None:
        obj["metadata"].setdefault("labels", {})["rotated"] = "yes"

    rules = [Rule([""], ["v1"], ["configmaps"], ["CREATE"])]
    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=cert_dir,
                           cert_watch_interval=0.05)
    server.mutating("/default", default, AdmissionWebhook(
        f"rotate.{name}.kube-informers.io", rules,
        namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": ns}}))
    failures: list[str] = []
    done = threading.Event()
    count = [0]

    def loop() -> None:
        while not done.is_set():
            try:
                made = dry.create(_configmap(f"r{count[0]}", ns), namespace=ns)
                if made["metadata"].get("labels") != {"rotated": "yes"}:
                    failures.append(f"not defaulted: {made['metadata']}")
            except StatusError as err:
                failures.append(str(err))
            count[0] += 1

    direct = [0]

    def handshakes() -> None:
        """A new connection (a new handshake) per request, beside kube-apiserver's kept-alive
        ones."""
        review = admission_review(obj=_configmap("x", ns))
        while not done.is_set():
            try:
                status, _, body = post(server.port, ca, "/default", review)
                if status != 200 or not json.loads(body)["response"]["allowed"]:
                    failures.append(f"direct: {status} {body!r}")
            except OSError as err:
                failures.append(f"direct: {err!r}")
            direct[0] += 1

    with server:
        config = mutating_configuration(name, server.registrations,
                                        ClientConfig(ca.cert_pem, url=server.url))
        try:
            client.create(config)
            _wait_until_active(dry, ns, "rotated")
            assert server.watcher is not None
            threads = [threading.Thread(target=loop), threading.Thread(target=handshakes)]
            for thread in threads:
                thread.start()
            try:
                for _ in range(3):
                    before = server.watcher.reloads
                    pair = ca.issue(["127.0.0.1"])
                    pair.write(cert_dir)
                    deadline = time.monotonic() + 5
                    while server.watcher.reloads == before and time.monotonic() < deadline:
                        time.sleep(0.02)
                    served = ssl.get_server_certificate(("127.0.0.1", server.port))
                    assert ssl.PEM_cert_to_DER_cert(served) == ssl.PEM_cert_to_DER_cert(
                        pair.cert_pem.decode())
                    time.sleep(0.3)
            finally:
                done.set()
                for thread in threads:
                    thread.join()
            assert server.watcher.reloads == 3
            assert failures == []
            assert count[0] > 10 and direct[0] > 10
        finally:
            _delete(client, [config])
    api.close()
