"""informers.testing.connect (informers/testing/cluster.py): the cluster of a kubeconfig (and
context), or else a new embedded API server that lives as long as the ``with`` block."""

from __future__ import annotations

import socket

import pytest
from kubernetes import client

from informers.testing import DEFAULT_NAMESPACES, ApiServer, connect
from informers.testing.client_config import write_kubeconfig


def namespaces(api_client) -> list[str]:
    return sorted(n.metadata.name for n in client.CoreV1Api(api_client).list_namespace().items)


def test_without_a_kubeconfig_an_embedded_server_serves_the_block_and_stops():
    with connect() as (api_client, server):
        assert isinstance(server, ApiServer)
        assert api_client.configuration.host == server.url
        assert namespaces(api_client) == sorted(DEFAULT_NAMESPACES)
        server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}})
        assert namespaces(api_client) == sorted([*DEFAULT_NAMESPACES, "demo"])
        port = server.port
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_an_empty_kubeconfig_also_means_the_embedded_server():
    with connect("") as (api_client, server):
        assert server is not None
        assert api_client.configuration.host == server.url


def test_a_kubeconfig_gives_a_client_of_its_cluster_and_no_server(api_server, tmp_path):
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    with connect(tmp_path / "kubeconfig") as (api_client, server):
        assert server is None
        assert api_client.configuration.host == api_server.https_url
        client.CoreV1Api(api_client).create_namespace({"metadata": {"name": "from-client"}})
    assert api_server.get("namespaces", None, "from-client")["metadata"]["name"] == "from-client"
    with connect(path) as (api_client, server):  # a str works as well as a Path
        assert (api_client.configuration.host, server) == (api_server.https_url, None)


def two_context_kubeconfig(api_server: ApiServer, path) -> str:
    """The server's kubeconfig plus a current context ``elsewhere`` naming another cluster."""
    config = api_server.kubeconfig()
    config["clusters"].append({"name": "elsewhere", "cluster": {
        "server": "https://127.0.0.1:1",
        "certificate-authority-data": config["clusters"][0]["cluster"][
            "certificate-authority-data"]}})
    config["contexts"].append({"name": "elsewhere", "context": {
        "cluster": "elsewhere", "user": "informers-testing"}})
    config["current-context"] = "elsewhere"
    return write_kubeconfig(path, config)


def test_context_picks_one_of_the_kubeconfig(api_server, tmp_path):
    path = two_context_kubeconfig(api_server, tmp_path / "kubeconfig")
    with connect(path) as (api_client, server):
        assert (api_client.configuration.host, server) == ("https://127.0.0.1:1", None)
    with connect(path, context="informers-testing") as (api_client, server):
        assert (api_client.configuration.host, server) == (api_server.https_url, None)
        assert "kube-public" in namespaces(api_client)


def test_a_context_alone_reads_the_default_kubeconfig(api_server, tmp_path, monkeypatch):
    path = two_context_kubeconfig(api_server, tmp_path / "kubeconfig")
    # The client reads $KUBECONFIG once, at import, into this default.
    monkeypatch.setattr("kubernetes.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION", path)
    with connect(context="informers-testing") as (api_client, server):
        assert (api_client.configuration.host, server) == (api_server.https_url, None)
