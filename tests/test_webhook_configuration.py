"""``ManagedConfiguration`` (informers.webhook.configuration) on both servers: it applies the
webhook configurations and a CRD's conversion stanza with the CA bundle of its file, applies
again only when the file changes (or when forced), and under ``run`` retries a failed apply at
the next poll (a fake clock steps the polls).

The configurations match only a group of the test's own, and everything cluster-wide is
deleted in ``finally``.
"""

from __future__ import annotations

import base64
import secrets
import threading
from typing import Any

from informers.certificates import CertificateAuthority
from informers.client import Client
from informers.clock import FakeClock
from informers.errors import NotFound
from informers.testing.runner import eventually
from informers.webhook import (
    AdmissionWebhook,
    HubAndSpoke,
    ManagedConfiguration,
    Rule,
    WebhookServer,
)

CRD_KIND = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}


def _crd(group: str) -> dict[str, Any]:
    def version(name: str, storage: bool) -> dict[str, Any]:
        return {"name": name, "served": True, "storage": storage, "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}

    return {**CRD_KIND, "metadata": {"name": f"gadgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget",
                               "listKind": "GadgetList"},
                     "versions": [version("v1", True), version("v1beta1", False)]}}


def _server(group: str) -> WebhookServer:
    server = WebhookServer(host="127.0.0.1", port=9443)  # never started: only rendered
    rules = [Rule([group], ["v1"], ["gadgets"])]
    server.mutating("/default", lambda obj, request: None,
                    AdmissionWebhook(f"default.gadgets.{group}", rules))
    server.validating("/validate", object(),  # type: ignore[arg-type]
                      AdmissionWebhook(f"validate.gadgets.{group}", rules))
    server.conversion(HubAndSpoke(group, "Gadget", "v1"), crd=f"gadgets.{group}")
    return server


def _bundles(client: Client, managed: ManagedConfiguration) -> list[str]:
    """The caBundle of every live clientConfig that ``managed`` applies."""
    found = []
    for obj in managed.objects(b""):
        live = client.get(client.resource(obj=obj), obj["metadata"]["name"])
        configs = ([w["clientConfig"] for w in live["webhooks"]] if "webhooks" in live
                   else [live["spec"]["conversion"]["webhook"]["clientConfig"]])
        found += [c.get("caBundle", "") for c in configs]
    return found


def _delete(client: Client, objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        try:
            client.delete(client.resource(obj=obj), obj["metadata"]["name"])
        except NotFound:
            pass


def test_sync_applies_when_the_ca_changes_and_run_retries_a_failed_apply(any_api_server,
                                                                          tmp_path):
    api = any_api_server.api_client()
    client = Client(api, field_manager="managed-configuration-test")
    group = f"m{secrets.token_hex(4)}.kube-informers.io"
    name = f"gadgets-{group}"
    first, second = CertificateAuthority(), CertificateAuthority()
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(first.cert_pem)
    clock = FakeClock()
    managed = ManagedConfiguration(client, _server(group).registrations, name,
                                   ca_file=str(ca_file), url="https://127.0.0.1:9443",
                                   interval=10.0, clock=clock)
    crd = _crd(group)
    made = [{"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
             "metadata": {"name": name}}
            for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")]
    stop = threading.Event()
    runner = threading.Thread(target=managed.run, args=(stop,))
    try:
        # No CRD yet: the partial CRD cannot be applied; run() logs it and polls again.
        runner.start()
        assert clock.wait_for_waiters(1)
        made_crd = client.create(crd)
        assert made_crd["spec"]["conversion"] == {"strategy": "None"}  # kube-apiserver's default
        clock.step(10.0)
        eventually(lambda: _bundles(client, managed) == [first.ca_bundle] * 3)
        stop.set()
        runner.join(5)
        assert not runner.is_alive()

        assert managed.sync() is False  # the file did not change
        ca_file.write_bytes(second.cert_pem)
        assert managed.sync() is True
        assert _bundles(client, managed) == [second.ca_bundle] * 3
        assert managed.sync() is False
        assert managed.sync(force=True) is True
        live = client.get(client.resource(obj=crd), crd["metadata"]["name"])
        assert live["spec"]["conversion"] == {
            "strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                                               "clientConfig": {
                "url": "https://127.0.0.1:9443/convert",
                "caBundle": base64.b64encode(second.cert_pem).decode()}}}
    finally:
        stop.set()
        if runner.ident is not None:
            runner.join(5)
        _delete(client, [*made, crd])
        api.close()
