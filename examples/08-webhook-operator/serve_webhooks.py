"""Serves the Backup webhooks (``webhooks.py``) until Ctrl-C or ``--duration``.

    python examples/08-webhook-operator/serve_webhooks.py --port 9443 --cert-dir /etc/webhook/certs

Without ``--cert-dir`` it makes a throwaway CA and serving certificate for ``--host``, prints
the CA bundle to put in the webhook configurations, and sends itself one AdmissionReview as a
demo (a v1alpha1 Backup without a schedule: the answer is the defaulting patch).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import ssl
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from webhooks import GROUP, make_server

from informers.certificates import CertificateAuthority


def demo(port: int, ca_pem: bytes) -> list[dict[str, object]]:
    """POST one AdmissionReview to the defaulting webhook; return the patch it answers."""
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "demo", "operation": "CREATE",
        "kind": {"group": GROUP, "version": "v1alpha1", "kind": "Backup"},
        "resource": {"group": GROUP, "version": "v1alpha1", "resource": "backups"},
        "object": {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Backup",
                   "metadata": {"name": "nightly"}, "spec": {"source": "pvc/data"}}}}
    context = ssl.create_default_context(cadata=ca_pem.decode())
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    conn.request("POST", "/mutate-backup", json.dumps(review),
                 {"Content-Type": "application/json"})
    answer = json.loads(conn.getresponse().read())
    conn.close()
    patch: list[dict[str, object]] = json.loads(base64.b64decode(answer["response"]["patch"]))
    return patch


def main(argv: list[str] | None = None, stop: threading.Event | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the Backup webhooks.")
    parser.add_argument("--cert-dir", help="holds tls.crt/tls.key (default: a throwaway pair)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9443)
    parser.add_argument("--duration", type=float, help="stop after this many seconds")
    args = parser.parse_args(argv)
    stop = stop or threading.Event()
    ca: CertificateAuthority | None = None
    cert_dir = args.cert_dir
    if cert_dir is None:
        ca = CertificateAuthority()
        cert_dir = tempfile.mkdtemp(prefix="backup-webhook-")
        ca.issue([args.host]).write(cert_dir)
        print(f"caBundle: {ca.ca_bundle}")
    with make_server(host=args.host, port=args.port, cert_dir=cert_dir) as server:
        print(f"serving on {server.url}", flush=True)
        if ca is not None:
            for op in demo(server.port, ca.cert_pem):
                print(f"demo patch: {json.dumps(op)}", flush=True)
        try:
            stop.wait(args.duration)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
