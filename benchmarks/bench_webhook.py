"""Benchmarks the webhook server: admission requests per second with one client worker, and
the latency percentiles at that rate, beside a bare HTTPS echo server.

Run ``python -m benchmarks.bench_webhook`` (5 s per server) or add ``--seconds N``. Each server
runs in a subprocess of its own (so the client's work does not share its GIL):

* ``webhook``: :class:`informers.webhook.WebhookServer` with one defaulting handler (adds a
  label; the answer carries a JSON patch) and one validating handler (admits), TLS 1.2+ with
  a certificate from :mod:`informers.certificates`;
* ``echo``: the same stdlib ``ThreadingHTTPServer`` behind the same TLS context, answering the
  body back unparsed: the floor of HTTPS request handling in Python on this machine.

One client connection (kept alive) sends an AdmissionReview v1 of a ConfigMap (about 1 KB),
waits for the answer, and sends the next, for the given time: requests per second is what
one worker sustains, the percentiles are per request at that rate. Report ratios: the
figures depend on the machine's load.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from informers.certificates import CertificateAuthority


def _review(i: int) -> bytes:
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": f"cm-{i}", "namespace": "bench", "labels": {"app": "bench"}},
           "data": {f"key{k}": "v" * 40 for k in range(16)}}
    return json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": f"uid-{i}", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                    "resource": {"group": "", "version": "v1", "resource": "configmaps"},
                    "name": f"cm-{i}", "namespace": "bench", "operation": "CREATE",
                    "userInfo": {"username": "bench"}, "object": obj, "dryRun": False}}).encode()


def _serve(kind: str, cert_dir: str) -> None:
    """Child process: serve ``kind`` and print the port; stop when stdin closes."""
    if kind == "webhook":
        from informers.webhook import WebhookServer

        server = WebhookServer(host="127.0.0.1", port=0, cert_dir=cert_dir)

        def default(obj: dict[str, Any], request: Any) -> None:
            obj["metadata"].setdefault("labels", {})["defaulted"] = "true"

        class Allow:
            def validate_create(self, obj: Any, request: Any) -> None:
                return None

            def validate_update(self, old: Any, obj: Any, request: Any) -> None:
                return None

            def validate_delete(self, old: Any, request: Any) -> None:
                return None

        server.mutating("/mutate", default)
        server.validating("/validate", Allow())
        server.start()
        print(server.port, flush=True)
        sys.stdin.read()
        server.stop()
        return
    from informers.webhook.certificate_watcher import CertificateWatcher

    context = CertificateWatcher(os.path.join(cert_dir, "tls.crt"),
                                 os.path.join(cert_dir, "tls.key")).context

    class Echo(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as the webhook server's handler

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    httpd.daemon_threads = True
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    import threading

    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    print(httpd.server_address[1], flush=True)
    sys.stdin.read()
    httpd.shutdown()


def _measure(port: int, ca_pem: bytes, path: str, seconds: float) -> dict[str, float]:
    context = ssl.create_default_context(cadata=ca_pem.decode())
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    bodies = [_review(i) for i in range(64)]
    headers = {"Content-Type": "application/json"}
    for body in bodies[:20]:  # warm up (handshake, first requests)
        conn.request("POST", path, body, headers)
        conn.getresponse().read()
    latencies: list[float] = []
    start = time.perf_counter()
    end = start + seconds
    i = 0
    while True:
        t0 = time.perf_counter()
        if t0 >= end:
            break
        conn.request("POST", path, bodies[i % len(bodies)], headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"{path}: HTTP {response.status}")
        latencies.append(time.perf_counter() - t0)
        i += 1
    elapsed = time.perf_counter() - start
    conn.close()
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    return {"rps": len(latencies) / elapsed, "p50_ms": pct(0.50), "p99_ms": pct(0.99)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--serve", choices=["webhook", "echo"], help=argparse.SUPPRESS)
    parser.add_argument("--cert-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        _serve(args.serve, args.cert_dir)
        return
    ca = CertificateAuthority()
    with tempfile.TemporaryDirectory() as cert_dir:
        ca.issue(["127.0.0.1"]).write(cert_dir)
        results: dict[str, dict[str, float]] = {}
        for kind, path in (("echo", "/echo"), ("webhook", "/validate"),
                           ("webhook", "/mutate")):
            child = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.bench_webhook", "--serve", kind,
                 "--cert-dir", cert_dir], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                text=True)
            try:
                assert child.stdout is not None
                port = int(child.stdout.readline())
                results[f"{kind} {path}"] = _measure(port, ca.cert_pem, path, args.seconds)
            finally:
                assert child.stdin is not None
                child.stdin.close()
                child.wait(30)
    echo = results["echo /echo"]
    print(f"{'server':<20}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'req/s vs echo':>16}")
    for name, r in results.items():
        print(f"{name:<20}{r['rps']:>10.0f}{r['p50_ms']:>10.2f}{r['p99_ms']:>10.2f}"
              f"{r['rps'] / echo['rps']:>16.2f}")


if __name__ == "__main__":
    main()
