"""The HTTPS listener of the embedded API server (informers/testing/tls.py)."""

from __future__ import annotations

import socket
import ssl

from kubernetes import client

from informers.testing import tls


def test_https_listener_verifies_against_the_test_ca(api_server):
    secure = client.CoreV1Api(api_server.api_client(secure=True))
    assert secure.read_namespace("kube-system").metadata.name == "kube-system"
    context = ssl.create_default_context(cafile=tls.ca_file())
    with socket.create_connection(("127.0.0.1", api_server.https_port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as conn:
        assert conn.getpeercert()["subject"] == ((("commonName",
                                                   "informers-testing-apiserver"),),)


def test_a_failed_handshake_does_not_disturb_the_server(api_server):
    with socket.create_connection(("127.0.0.1", api_server.https_port), timeout=5) as raw:
        raw.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")  # plain HTTP on the TLS port
        raw.recv(100)
    secure = client.CoreV1Api(api_server.api_client(secure=True))
    assert secure.read_namespace("default").metadata.name == "default"
    assert tls.server_context().verify_mode == ssl.CERT_NONE
