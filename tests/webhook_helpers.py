"""Shared pieces of the webhook tests: a certificate directory, a started server, HTTPS calls."""

from __future__ import annotations

import http.client
import json
import ssl
from typing import Any

from informers.certificates import CertificateAuthority


def admission_review(operation: str = "CREATE", obj: Any = None, old: Any = None,
                     uid: str = "705ab4f5-6393-11e8-b7cc-42010a800002",
                     dry_run: bool = False) -> dict[str, Any]:
    """An AdmissionReview v1 request for a ConfigMap, as kube-apiserver sends it."""
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "requestKind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "requestResource": {"group": "", "version": "v1", "resource": "configmaps"},
        "name": "cm", "namespace": "ns", "operation": operation,
        "userInfo": {"username": "admin", "groups": ["system:masters"]},
        "object": obj, "oldObject": old, "dryRun": dry_run,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def client_context(ca: CertificateAuthority) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.cert_pem.decode())


def post(port: int, ca: CertificateAuthority, path: str, body: bytes | dict[str, Any], *,
         content_type: str = "application/json",
         timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """One HTTPS request on a new connection: (status, headers, body)."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=client_context(ca),
                                       timeout=timeout)
    try:
        conn.request("POST", path, data, {"Content-Type": content_type})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()
