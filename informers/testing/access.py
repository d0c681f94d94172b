"""Who may send what to the embedded API server: kube-apiserver's authentication and RBAC, as
far as a test cluster with one user needs them.

A request with the server's bearer token is the cluster admin and may do anything. A request
without an ``Authorization`` header is anonymous (kube-apiserver's ``--anonymous-auth``
defaults to true): ``system:anonymous``, in the ``system:unauthenticated`` group, which the
bootstrap RBAC policy binds to the ``system:public-info-viewer`` ClusterRole only
(``kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go``): ``get`` of
``/livez``, ``/readyz``, ``/healthz``, ``/version`` and ``/version/``. Any other credentials
fail authentication (401).
"""

from __future__ import annotations

from typing import Final

from informers.errors import StatusError
from informers.testing import status
from informers.testing.request_info import RequestInfo

__all__ = ["ANONYMOUS", "PUBLIC_PATHS", "anonymous_allowed", "authenticate", "forbidden"]

ANONYMOUS: Final = "system:anonymous"
"""The user name of an unauthenticated request."""

PUBLIC_PATHS: Final = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})
"""The non-resource paths of ``system:public-info-viewer``."""


def authenticate(header: str | None, token: str) -> bool | None:
    """``True`` for ``Authorization: Bearer <token>``, ``None`` for no header (anonymous),
    ``False`` for any other credentials."""
    if header is None:
        return None
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and given.strip() == token


def anonymous_allowed(method: str, info: RequestInfo) -> bool:
    """RBAC for :data:`ANONYMOUS`: only a GET of a :data:`PUBLIC_PATHS` path (a non-resource
    request's verb is its method in lower case, so a HEAD is a ``head`` and is denied)."""
    return method == "GET" and not info.is_resource and info.path in PUBLIC_PATHS


def forbidden(method: str, info: RequestInfo) -> StatusError:
    """What the authorization filter answers an anonymous request RBAC denies
    (``responsewriters.ForbiddenStatusError`` and ``forbiddenMessage`` in
    ``k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go``)."""
    if not info.is_resource:
        return status.forbidden(
            "", "", "", f'User "{ANONYMOUS}" cannot {method.lower()} path "{info.path}"')
    resource = info.resource + (f"/{info.subresource}" if info.subresource else "")
    scope = f'in the namespace "{info.namespace}"' if info.namespace else "at the cluster scope"
    return status.forbidden(
        info.resource, info.group, info.name,
        f'User "{ANONYMOUS}" cannot {info.verb} resource "{resource}" in API group '
        f'"{info.group}" {scope}')
