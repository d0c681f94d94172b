"""Runs the webhook operator: the Website controller (``controller.py``) and its webhooks
(``webhooks.py``) in one Manager, until Ctrl-C or ``--duration``.

In a cluster, behind the Service that ``config/`` names, with cert-manager issuing the
serving certificate into ``--cert-dir`` and injecting its CA into the configurations::

    kubectl apply -f examples/08-webhook-operator/config/crd/ \\
        -f examples/08-webhook-operator/config/rbac/ -f examples/08-webhook-operator/config/webhook/
    python examples/08-webhook-operator/main.py --kubeconfig ~/.kube/config --cert-dir DIR

For development, with a cluster that reaches this machine at ``URL``: ``--webhook-url URL``
installs the CRD from ``config/crd`` (its conversion stanza left out) and keeps the webhook
configurations and the CRD's conversion pointing at ``URL`` with the CA bundle of
``DIR/ca.crt`` (a throwaway CA without ``--cert-dir``), as envtest installs webhooks::

    python examples/08-webhook-operator/main.py --kubeconfig ~/.kube/config \\
        --host 0.0.0.0 --webhook-url https://192.168.1.10:9443

``--webhook-only`` serves the webhooks alone (no controller, no cluster connection).

Without ``--kubeconfig`` it runs on an embedded API server with the CRD installed (without
its conversion stanza: the demo does not need an API server that calls webhooks), sends the
webhook server the reviews kube-apiserver would send (a Website to default, one to deny, one
to convert), creates a Website and prints the status the controller wrote.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import ssl
import sys
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from controller import GROUP, MANAGER, build_manager, websites
from webhooks import make_server

from informers.certificates import CertificateAuthority
from informers.client import Client
from informers.testing import connect
from informers.testing.runner import eventually, run_manager
from informers.webhook import WebhookServer
from informers.webhook.server import DEFAULT_PORT
from informers.yaml_loader import load_all_yaml

HERE = Path(__file__).resolve().parent


def crds(group: str = GROUP) -> list[dict[str, Any]]:
    """The CRDs of ``config/crd`` without their conversion stanza (the one there names the
    in-cluster Service; :func:`~controller.keep_configured` applies one with the webhook's
    URL), under ``group`` (tests install them under a group of their own)."""
    found = []
    for path in sorted((HERE / "config" / "crd").glob("*.yaml")):
        for crd in load_all_yaml(path.read_text()):
            crd["spec"].pop("conversion", None)
            crd["metadata"].pop("annotations", None)
            if group != GROUP:
                crd["spec"]["group"] = group
                crd["metadata"]["name"] = f"{crd['spec']['names']['plural']}.{group}"
            found.append(crd)
    return found


@contextlib.contextmanager
def certificates(cert_dir: str | None, host: str) -> Iterator[tuple[str, bytes | None]]:
    """``(cert_dir, None)`` when given; else a throwaway CA's serving certificate for
    ``host`` in a temporary directory (``tls.crt``, ``tls.key`` and ``ca.crt``, as a
    cert-manager Secret has them) and the CA's PEM."""
    if cert_dir is not None:
        yield cert_dir, None
        return
    ca = CertificateAuthority()
    with tempfile.TemporaryDirectory(prefix="website-webhook-") as made:
        ca.issue([host]).write(made)
        (Path(made) / "ca.crt").write_bytes(ca.cert_pem)
        yield made, ca.cert_pem


def post(server: WebhookServer, ca_pem: bytes, path: str, review: dict[str, Any]) -> Any:
    """POST a review to ``server`` as kube-apiserver does; the decoded answer."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    try:
        conn.request("POST", path, json.dumps(review), {"Content-Type": "application/json"})
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def admission_review(operation: str, obj: dict[str, Any]) -> dict[str, Any]:
    group, version = obj["apiVersion"].split("/")
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": f"demo-{obj['metadata']['name']}", "operation": operation,
        "kind": {"group": group, "version": version, "kind": "Website"},
        "resource": {"group": group, "version": version, "resource": "websites"},
        "name": obj["metadata"]["name"], "namespace": "default",
        "userInfo": {"username": "demo"}, "object": obj}}


def demo(client: Client, hooks: WebhookServer, ca_pem: bytes) -> None:
    """What kube-apiserver would ask the webhooks, then a Website and its status."""
    alpha: dict[str, Any] = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Website",
                             "metadata": {"name": "demo", "namespace": "default"},
                             "spec": {"image": "nginx:1.27", "replicas": 1}}
    answer = post(hooks, ca_pem, "/mutate-website", admission_review("CREATE", alpha))
    patch = json.loads(base64.b64decode(answer["response"]["patch"]))
    print(f"defaulting webhook, v1alpha1 Website default/demo: {json.dumps(patch)}")

    latest = {"apiVersion": f"{GROUP}/v1", "kind": "Website",
              "metadata": {"name": "edge", "namespace": "default"},
              "spec": {"image": "nginx:latest", "replicas": 0}}
    answer = post(hooks, ca_pem, "/validate-website", admission_review("CREATE", latest))
    response = answer["response"]
    print(f"validating webhook, Website default/edge: allowed={response['allowed']}, "
          f"{response['status']['message']!r}, warnings {response['warnings']}")

    alpha["spec"]["message"] = "Welcome to demo"
    answer = post(hooks, ca_pem, "/convert", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "demo-convert", "desiredAPIVersion": f"{GROUP}/v1",
                    "objects": [alpha]}})
    (converted,) = answer["response"]["convertedObjects"]
    print(f"conversion webhook, v1alpha1 spec {alpha['spec']} is v1 spec {converted['spec']}")

    resource = websites()
    site = client.create({**converted, "metadata": {"name": "demo", "namespace": "default"}})
    print(f"created Website default/demo with the schema's defaults: {site['spec']}")

    def reported() -> dict[str, Any]:
        status = (client.get(resource, "demo", "default") or {}).get("status") or {}
        assert status.get("conditions"), status
        return status

    status = eventually(reported)
    ready = status["conditions"][0]["status"]
    print(f"status: {status['replicas']} replica(s), selector {status['selector']}, "
          f"Ready={ready}")


def serve_webhooks(args: argparse.Namespace, cert_dir: str, ca_pem: bytes | None) -> None:
    """``--webhook-only``: the webhook server alone."""
    port = DEFAULT_PORT if args.port is None else args.port
    with make_server(host=args.host, port=port, cert_dir=cert_dir) as hooks:
        print(f"serving the webhooks on {hooks.url}", flush=True)
        if ca_pem is not None:
            print(f"CA bundle: {cert_dir}/ca.crt", flush=True)
        threading.Event().wait(args.duration)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The Website operator and its webhooks.")
    parser.add_argument("--kubeconfig", help="use this cluster (default: an embedded API server)")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds to run after the demo (default: until Ctrl-C)")
    parser.add_argument("--webhook-only", action="store_true",
                        help="serve the webhooks alone, without the controller")
    parser.add_argument("--cert-dir", help="holds tls.crt, tls.key (and ca.crt for "
                                           "--webhook-url); default: a throwaway CA's")
    parser.add_argument("--host", default="127.0.0.1", help="the webhook server's address")
    parser.add_argument("--port", type=int, default=None,
                        help=f"the webhook server's port (default {DEFAULT_PORT}; 0: any "
                             "free one, the default of the embedded demo)")
    parser.add_argument("--webhook-url",
                        help="where the cluster reaches the webhook server: install the CRD "
                             "and keep the webhook configurations applied with this URL")
    args = parser.parse_args(argv)
    host = urllib.parse.urlsplit(args.webhook_url).hostname if args.webhook_url else None
    with certificates(args.cert_dir, host or args.host) as (cert_dir, ca_pem):
        if args.webhook_only:
            serve_webhooks(args, cert_dir, ca_pem)
            return 0
        with connect(args.kubeconfig) as (api_client, server):
            client = Client(api_client, field_manager=MANAGER)
            if server is not None or args.webhook_url:
                for crd in crds():
                    client.apply(crd, force=True)
            port = args.port if args.port is not None else 0 if server else DEFAULT_PORT
            hooks = make_server(host=args.host, port=port, cert_dir=cert_dir)
            manager = build_manager(api_client, leader_election=server is None,
                                    webhook_server=hooks,
                                    manage_webhooks=bool(args.webhook_url),
                                    webhook_url=args.webhook_url)
            with run_manager(manager):
                if server is not None:
                    assert ca_pem is not None or args.cert_dir is not None
                    demo(client, hooks, ca_pem or (Path(cert_dir) / "ca.crt").read_bytes())
                threading.Event().wait(args.duration)
    return 0


if __name__ == "__main__":
    sys.exit(main())
