"""Talks HTTP to a Kubernetes API server for the informers: list, watch, discovery and JSON
writes, on the official ``kubernetes`` package's configuration, authentication and TLS.

* :func:`list_watch_from_client` / :func:`list_watch_for_resource`: the
  :class:`~informers.list_watch.ListWatch` of a resource (client-go
  ``NewFilteredListWatchFromClient``), decoding bytes straight to dicts;
* :class:`Client`: get, list, create, update, patch, server-side apply and delete of dicts,
  with typed errors (controller-runtime's ``client.Client``);
* :func:`api_call`: one JSON request, answered as a dict (the library's own writes);
* :mod:`~informers.client.transport`: the one transport both use (connection pool, headers
  and authentication, cancellation, which ``kubernetes`` versions are supported);
* :mod:`~informers.client.status`: the one parser of error answers (``metav1.Status``);
* :mod:`~informers.client.watch_stream`, :mod:`~informers.client.list_decoder`,
  :mod:`~informers.client.decoder`: reading watch and list answers.

Example::

    from kubernetes import config
    from informers import SharedIndexInformer
    from informers.client import list_watch_from_client

    api_client = config.new_client_from_config()
    informer = SharedIndexInformer(list_watch_from_client(api_client, "pods", "default"))
"""

from __future__ import annotations

from informers.client.api_call import api_call
from informers.client.client import Client, StatusWriter
from informers.client.list_watch_client import (
    ClientListWatch,
    discover,
    list_watch_for_resource,
    list_watch_from_client,
)
from informers.client.status import status_code
from informers.client.transport import HEADERS_REUSE_SECONDS
from informers.client.watch_stream import HttpWatchStream

__all__ = [
    "HEADERS_REUSE_SECONDS",
    "Client",
    "ClientListWatch",
    "HttpWatchStream",
    "StatusWriter",
    "api_call",
    "discover",
    "list_watch_for_resource",
    "list_watch_from_client",
    "status_code",
]
