"""Connects a program to a cluster: the one a kubeconfig names, or a new embedded API server.

For programs that run against a real cluster when given ``--kubeconfig`` and on their own
otherwise, as the numbered examples of the repository do: :func:`connect` hides the choice and
the clean-up, so ``main`` reads the same either way.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from informers.testing.server import ApiServer

__all__ = ["connect"]


@contextlib.contextmanager
def connect(
    kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None
) -> Iterator[tuple[Any, ApiServer | None]]:
    """A ``kubernetes.client.ApiClient`` for a cluster, and the embedded server if there is one.

    With ``kubeconfig`` or ``context``, yields ``(api_client, None)``: a client for the
    ``context`` (default: the current one) of the kubeconfig file ``kubeconfig`` (default: the
    ``kubernetes`` client's usual one, ``$KUBECONFIG`` or ``~/.kube/config``). With neither,
    starts an embedded :class:`~informers.testing.ApiServer` and yields ``(api_client,
    server)``, so a demo can seed objects through the server's helpers. On exit the client is
    closed and the embedded server stopped::

        with connect(args.kubeconfig) as (api_client, server):
            if server is not None:  # embedded: nothing there yet but the default namespaces
                server.create({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": "demo"}})
            factory = SharedInformerFactory(api_client)
            ...

    Args:
        kubeconfig: path of a kubeconfig file; empty or ``None`` for none.
        context: the kubeconfig context to use; empty or ``None`` for the current one.

    Raises:
        kubernetes.config.ConfigException: the kubeconfig cannot be read or lacks the context.
    """
    if kubeconfig or context:
        from kubernetes import config

        config_file = os.fspath(kubeconfig) if kubeconfig else None
        api = config.new_client_from_config(config_file=config_file, context=context or None)
        with contextlib.closing(api):
            yield api, None
    else:
        with ApiServer() as server, contextlib.closing(server.api_client()) as api:
            yield api, server
