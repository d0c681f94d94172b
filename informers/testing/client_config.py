"""Builds the client side of a test API server: ``kubernetes`` API clients and kubeconfigs.

Both test servers, the embedded :class:`~informers.testing.ApiServer` and the real
:class:`~informers.testing.control_plane.ControlPlane`, authenticate every client with one bearer
token and serve TLS with a CA of their own; these functions turn an address, the token and the
CA into what a client needs. Pure functions, thread-safe.
"""

from __future__ import annotations

import base64
import os
from typing import Any

__all__ = ["api_client", "kubeconfig", "write_kubeconfig"]


def api_client(host: str, token: str, ca_file: str | None = None) -> Any:
    """A new ``kubernetes.client.ApiClient`` for ``host`` that sends ``token`` as a bearer
    token and, over HTTPS, verifies the server against the CA certificate in ``ca_file``."""
    from kubernetes import client

    configuration = client.Configuration(
        host=host,
        api_key={"BearerToken": token},
        api_key_prefix={"BearerToken": "Bearer"},
        ssl_ca_cert=ca_file,
    )
    return client.ApiClient(configuration)


def kubeconfig(
    name: str, server: str, ca_pem: bytes, token: str, namespace: str
) -> dict[str, Any]:
    """A kubeconfig (as a dict) whose cluster, user and current context are all called
    ``name``: the cluster at ``server`` trusted through the CA certificate ``ca_pem`` (PEM
    bytes), the user's bearer ``token``, and ``namespace`` as the context's namespace."""
    ca_data = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {
            "server": server, "certificate-authority-data": ca_data}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name,
                                                "namespace": namespace}}],
        "current-context": name,
    }


def write_kubeconfig(path: str | os.PathLike[str], config: dict[str, Any]) -> str:
    """Write ``config`` to ``path`` as YAML, readable by its owner only (mode 0600, as it holds
    a token); returns the path as a string."""
    import yaml

    text = yaml.safe_dump(config, sort_keys=False)
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return os.fspath(path)
