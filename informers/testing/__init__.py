"""An embedded Kubernetes API server for tests: ``from informers.testing import ApiServer``.

The package root only re-exports, lazily (so the pytest plugin that lives here costs nothing
until a test asks for a server); see :mod:`informers.testing.server` for the server,
:mod:`informers.testing.pytest_plugin` for the ``api_server`` fixture and
:func:`connect` for programs that run on a kubeconfig's cluster or else on an embedded server.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from informers.testing.cluster import connect
    from informers.testing.requestlog import RequestRecord
    from informers.testing.resources import BUILTIN_RESOURCES, ResourceType
    from informers.testing.server import DEFAULT_NAMESPACES, ApiServer

__all__ = [
    "BUILTIN_RESOURCES",
    "DEFAULT_NAMESPACES",
    "ApiServer",
    "RequestRecord",
    "ResourceType",
    "connect",
]

_HOMES = {
    "ApiServer": "informers.testing.server",
    "DEFAULT_NAMESPACES": "informers.testing.server",
    "RequestRecord": "informers.testing.requestlog",
    "BUILTIN_RESOURCES": "informers.testing.resources",
    "ResourceType": "informers.testing.resources",
    "connect": "informers.testing.cluster",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'informers.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
