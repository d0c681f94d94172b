"""The Manager runs a webhook server in controller-runtime's order: after the health server
and before the informers start; stopped after the informers and before the health server;
and again when the Manager is started again."""

from __future__ import annotations

import http.client
import json
import threading

import pytest
from test_manager import ManagerThread, RecordingFactory, status, wait_until
from webhook_helpers import admission_review, client_context, post

from informers.certificates import CertificateAuthority
from informers.errors import AlreadyStartedError
from informers.manager import Manager
from informers.testing.runner import run_manager
from informers.webhook import WebhookServer


def _webhook_status(server: WebhookServer, ca: CertificateAuthority) -> int | str:
    try:
        conn = http.client.HTTPSConnection("127.0.0.1", server.port,
                                           context=client_context(ca), timeout=5)
        conn.request("GET", "/readyz")
        code = conn.getresponse().status
        conn.close()
        return code
    except OSError:
        return "refused"


def test_webhook_server_starts_before_the_informers_and_stops_after_them(tmp_path):
    ca = CertificateAuthority()
    ca.issue(["127.0.0.1"]).write(str(tmp_path))
    record: list[tuple] = []
    factory = RecordingFactory(record)
    m = Manager(factory=factory, health_address="127.0.0.1:0")

    class Recorded(WebhookServer):
        def stop(self) -> None:
            record.append(("webhook.stop", status(m.health_server.url + "/healthz")))
            super().stop()

    hooks = Recorded(host="127.0.0.1", port=0, cert_dir=str(tmp_path))
    m.add_webhook_server(hooks)
    factory.on_wait = lambda: record.append(("factory.wait", _webhook_status(hooks, ca)))
    factory.on_shutdown = lambda: record.append(("factory.shutdown", _webhook_status(hooks, ca)))
    mt = ManagerThread(m)
    wait_until(lambda: m.elected.is_set())
    with pytest.raises(AlreadyStartedError):
        m.add_webhook_server(WebhookServer())
    mt.stop()
    assert mt.error is None
    assert record == [("factory.start",), ("factory.wait", 200), ("factory.shutdown", 200),
                      ("webhook.stop", 200)]
    assert _webhook_status(hooks, ca) == "refused"


def test_a_manager_with_a_webhook_server_serves_stops_and_serves_again(tmp_path):
    """A restarted Manager restarts its webhook server (with port 0, on the port the OS gives
    each run); every thread of both runs is joined."""
    ca = CertificateAuthority()
    ca.issue(["127.0.0.1"]).write(str(tmp_path))
    hooks = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(tmp_path))
    hooks.validating("/validate", _Admit())
    manager = Manager(shutdown_timeout=2.0)
    manager.add_webhook_server(hooks)
    before = set(threading.enumerate())
    for _ in range(2):
        with run_manager(manager):
            status, _, body = post(hooks.port, ca, "/validate", admission_review(
                obj={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}))
            assert (status, json.loads(body)["response"]["allowed"]) == (200, True)
            assert _webhook_status(hooks, ca) == 200
        assert _webhook_status(hooks, ca) == "refused"
        assert set(threading.enumerate()) == before


class _Admit:
    def validate_create(self, obj, request):
        return None

    def validate_update(self, old, obj, request):
        return None

    def validate_delete(self, old, request):
        return None
