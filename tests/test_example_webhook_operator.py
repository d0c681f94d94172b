"""examples/08-webhook-operator on the real kube-apiserver, installed by the managed mode:
defaulting, validation with warnings and a protected delete, v1alpha1 <-> v1 conversion, and
the configurations re-applied when the CA bundle changes.

The CRD is hand-written here (a minimal structural schema) until the example's generated CRD
exists; its group is unique per test, and everything cluster-wide is deleted in ``finally``.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from informers.certificates import CertificateAuthority
from informers.client import Client
from informers.errors import Forbidden, NotFound
from informers.webhook import ManagedConfiguration

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "08-webhook-operator"


def load():
    spec = importlib.util.spec_from_file_location("backup_webhooks", EXAMPLE / "webhooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["backup_webhooks"] = module
    spec.loader.exec_module(module)
    return module


webhooks = load()


def crd(group: str) -> dict[str, Any]:
    def version(name: str, storage: bool, retention: dict[str, Any]) -> dict[str, Any]:
        spec = {"source": {"type": "string"}, "schedule": {"type": "string"}, **retention}
        return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": spec}}}}}

    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"backups.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "backups", "singular": "backup", "kind": "Backup",
                               "listKind": "BackupList"},
                     "versions": [
                         version("v1alpha1", False, {"keepDays": {"type": "integer"}}),
                         version("v1", True, {"retention": {
                             "type": "object",
                             "properties": {"days": {"type": "integer"}}}})]}}


def _raw(api: Any, method: str, path: str, body: Any = None) -> tuple[int, list[str], Any]:
    method, url, headers, body, _ = api.param_serialize(
        method, path, header_params={"Content-Type": "application/json",
                                     "Accept": "application/json"},
        body=body, auth_settings=["BearerToken"])
    response = api.call_api(method, url, headers, body, _request_timeout=30)
    data = response.read()
    warnings = [v for k, v in response.getheaders().items() if k.lower() == "warning"]
    return response.status, warnings, json.loads(data)


def _until(fn, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = fn()
            if result:
                return result
        except Exception:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.2)


def test_main_serves_and_demos_the_defaulting_patch(capsys):
    spec = importlib.util.spec_from_file_location("backup_main", EXAMPLE / "serve_webhooks.py")
    assert spec is not None and spec.loader is not None
    main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(main)
    assert main.main(["--port", "0", "--duration", "0"]) == 0
    out = [line for line in capsys.readouterr().out.splitlines()
           if not line.startswith(("caBundle: ", "serving on "))]
    assert out == ['demo patch: {"op": "add", "path": "/spec/schedule", "value": "@daily"}',
                   'demo patch: {"op": "add", "path": "/spec/keepDays", "value": 7}']


@pytest.mark.real_apiserver
def test_backup_webhooks_on_kube_apiserver(real_api_server, tmp_path):
    from servers import RealServer

    plane = RealServer(real_api_server)
    api = plane.api_client()
    client = Client(api, field_manager="backup-test")
    ns = plane.namespace
    group = f"b{uuid.uuid4().hex[:8]}.kube-informers.io"
    ca = CertificateAuthority()
    ca.issue(["127.0.0.1"]).write(str(tmp_path))
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    server = webhooks.make_server(
        group=group, host="127.0.0.1", port=0, cert_dir=str(tmp_path),
        namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": ns}})
    definition = crd(group)
    base = f"/apis/{group}"
    with server:
        managed = ManagedConfiguration(client, server.registrations, f"backups-{group}",
                                       ca_file=str(tmp_path / "ca.crt"), url=server.url)
        try:
            client.create(definition)
            assert managed.sync() is True
            assert managed.sync() is False  # the CA did not change
            stored = client.get(client.resource(obj=definition), definition["metadata"]["name"])
            assert stored["spec"]["conversion"]["strategy"] == "Webhook"

            alpha = {"apiVersion": f"{group}/v1alpha1", "kind": "Backup",
                     "metadata": {"name": "nightly", "namespace": ns,
                                  "annotations": {webhooks.PROTECTED: "true"}},
                     "spec": {"source": "pvc/data"}}

            def create() -> Any:
                status, _, body = _raw(api, "POST", f"{base}/v1alpha1/namespaces/{ns}/backups",
                                       alpha)
                return body if status == 201 and "keepDays" in body["spec"] else None

            created = _until(create)
            assert created["spec"] == {"source": "pvc/data", "schedule": "@daily",
                                       "keepDays": 7}
            _, _, as_v1 = _raw(api, "GET", f"{base}/v1/namespaces/{ns}/backups/nightly")
            assert as_v1["spec"] == {"source": "pvc/data", "schedule": "@daily",
                                     "retention": {"days": 7}}

            bad = {**alpha, "metadata": {"name": "bad", "namespace": ns},
                   "spec": {"source": "pvc/data", "keepDays": 0}}
            status, _, body = _raw(api, "POST", f"{base}/v1alpha1/namespaces/{ns}/backups", bad)
            assert (status, body["message"]) == (
                403, f'admission webhook "validate.{group}" denied the request: the retention '
                     "must be 1 to 365 days, not 0")
            long = {"apiVersion": f"{group}/v1", "kind": "Backup",
                    "metadata": {"name": "yearly", "namespace": ns},
                    "spec": {"source": "pvc/logs", "retention": {"days": 200}}}
            status, warnings, _ = _raw(api, "POST", f"{base}/v1/namespaces/{ns}/backups", long)
            assert (status, warnings) == (201, ['299 - "a retention of 200 days keeps many '
                                                'copies"'])
            status, _, body = _raw(api, "DELETE", f"{base}/v1/namespaces/{ns}/backups/nightly")
            assert (status, body["message"]) == (
                403, f'admission webhook "validate.{group}" denied the request: backup nightly '
                     f"is protected; remove the {webhooks.PROTECTED} annotation first")
            with pytest.raises(Forbidden):
                client.delete(client.resource(obj=long), "nightly", ns)

            # A new CA: the managed configuration re-applies every caBundle.
            rotated = CertificateAuthority()
            (tmp_path / "ca.crt").write_bytes(rotated.cert_pem)
            assert managed.sync() is True
            bundle = base64.b64encode(rotated.cert_pem).decode()
            for obj in managed.objects(rotated.cert_pem):
                live = client.get(client.resource(obj=obj), obj["metadata"]["name"])
                configs = ([w["clientConfig"] for w in live["webhooks"]] if "webhooks" in live
                           else [live["spec"]["conversion"]["webhook"]["clientConfig"]])
                assert [c["caBundle"] for c in configs] == [bundle] * len(configs)
            # Back to the serving CA, so the CRD's cleanup can still convert its objects.
            (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
            assert managed.sync() is True
        finally:
            for obj in [*managed.objects(ca.cert_pem)[:-1], definition]:
                try:
                    client.delete(client.resource(obj=obj), obj["metadata"]["name"])
                except NotFound:
                    pass
            plane.close()
            api.close()
