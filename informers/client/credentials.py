"""Refreshes a client's credentials after a 401 Unauthorized, as client-go's transports do.

client-go does not keep using a credential the API server refused:

* an exec plugin's (``plugin/pkg/client/auth/exec`` ``roundTripper.RoundTrip``): a 401 answer
  to a request that carried the cached credential runs the plugin again
  (``Authenticator.maybeRefreshCreds``), so the next request carries the new one; a 401 to a
  credential that was replaced meanwhile runs nothing;
* a token file's (``transport`` ``bearerAuthRoundTripper``): a 401 resets the cached token
  (``cachingTokenSource.ResetTokenOlderThan``), so the file is read again.

The request that got the 401 is not sent again (neither does client-go).

The credentials of a ``kubernetes.client.Configuration`` come from its loader: the official
kubeconfig loader (``kubernetes.config.kube_config.KubeConfigLoader``: an exec plugin,
re-run only once its ``expirationTimestamp`` is less than five minutes away) or the in-cluster
one (``incluster_config.InClusterConfigLoader``: the service account token file, read again
once a minute), each reached through the ``refresh_api_key_hook`` it installs.
:func:`refresh_loader` makes that loader fetch again at once: the exec plugin run, the
token file read (the official package offers no public call for it, so this reaches its
loader's methods; a loader of another shape, or none, is left alone). The transports then ask
the configuration for their headers again on the next request
(:func:`informers.client.transport.refresh_credentials` does both).

Used by the threaded :class:`~informers.client.transport.Transport` and the async
:class:`informers.aio.transport.AsyncTransport` alike; it runs the plugin in the calling
thread (the async transport calls it from a worker thread). Thread-safe as the official
loader is: two 401s at once may run the plugin twice.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

__all__ = ["authorization_of", "refresh_loader"]

logger = logging.getLogger(__name__)


def authorization_of(headers: Mapping[str, str]) -> str | None:
    """The ``Authorization`` header of ``headers`` (any case), ``None`` without one."""
    for key, value in headers.items():
        if key.lower() == "authorization":
            return value
    return None


def _loader_of(configuration: Any) -> Any:
    """The official loader behind the configuration's refresh hook, or ``None``."""
    hook = getattr(configuration, "refresh_api_key_hook", None)
    for cell in getattr(hook, "__closure__", None) or ():
        try:
            owner = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if type(owner).__name__ in ("KubeConfigLoader", "InClusterConfigLoader"):
            return owner
    return None


def refresh_loader(configuration: Any) -> bool:
    """Have the official loader behind ``configuration`` fetch its credential again (see
    the module docstring): run the exec plugin, or read the token file. Answers whether it
    fetched; ``False`` for a configuration without such a loader (a static token, a client
    certificate). Never raises: a failing plugin is logged (by the loader, or here) and the
    previous credential kept."""
    loader = _loader_of(configuration)
    if loader is None:
        return False
    try:
        if type(loader).__name__ == "InClusterConfigLoader":
            loader._read_token_file()
            return True
        user = getattr(loader, "_user", None)
        if user is None or "exec" not in user:
            return False
        # kube_config: runs the plugin, keeps its token (and expiry); the refresh hook hands
        # them to the configuration on the next request. It logs a failing plugin and keeps
        # the previous token.
        return bool(loader._load_from_exec_plugin())
    except Exception:  # the loader's own errors: logged, the request's 401 stands
        logger.exception("refreshing the credentials after a 401 failed")
        return False
