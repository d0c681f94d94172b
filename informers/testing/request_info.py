"""Turn an HTTP method and path into a Kubernetes request: verb, resource, namespace, name.

Follows kube-apiserver's ``RequestInfoFactory.NewRequestInfo``
(``apiserver/pkg/endpoints/request/requestinfo.go``): ``/api/v1/...`` and
``/apis/<group>/<version>/...``, the legacy ``watch/`` prefix, ``namespaces/<ns>/<resource>``,
the namespace subresources ``status`` and ``finalize``, and GET/DELETE on a collection meaning
list/watch and deletecollection.
"""

from __future__ import annotations

from dataclasses import dataclass

from informers.testing.resources import ResourceRegistry, ResourceType

__all__ = ["RequestInfo", "resolve"]

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "GET": "get", "HEAD": "get",
          "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass
class RequestInfo:
    """What a request is about.

    ``rt`` is ``None`` for non-resource paths (``/version``, discovery, ``/healthz``) and for
    unknown resources (``unknown`` is then set); ``verb`` is the Kubernetes verb.
    """

    path: str
    verb: str
    is_resource: bool = False
    group: str = ""
    version: str = ""
    resource: str = ""
    namespace: str | None = None
    name: str = ""
    subresource: str = ""
    rt: ResourceType | None = None
    unknown: bool = False
    legacy_watch: bool = False
    extra_parts: bool = False


def _is_watch(query: dict[str, str]) -> bool:
    value = query.get("watch")
    if value is None:
        return False
    return value.lower() not in ("false", "0", "")


def resolve(
    method: str, path: str, query: dict[str, str], registry: ResourceRegistry
) -> RequestInfo:
    """Classify one request. Never raises; unknown paths come back with ``unknown=True``."""
    verb = _VERBS.get(method, method.lower())
    parts = [p for p in path.strip("/").split("/")] if path.strip("/") else []
    info = RequestInfo(path=path, verb=verb)
    if not parts or parts[0] not in ("api", "apis"):
        return info
    if parts[0] == "api":
        if len(parts) < 3:
            return info  # /api, /api/v1 discovery
        info.group, info.version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 4:
            return info  # /apis, /apis/<g>, /apis/<g>/<v> discovery
        info.group, info.version, rest = parts[1], parts[2], parts[3:]
    info.is_resource = True
    if rest[0] == "watch":
        info.legacy_watch = True
        rest = rest[1:]
        if not rest:
            info.unknown = True
            return info
    if rest[0] == "namespaces" and len(rest) > 1:
        info.namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
        else:
            info.namespace = None  # the namespace object itself
    info.resource = rest[0]
    if len(rest) > 1:
        info.name = rest[1]
    if len(rest) > 2:
        info.subresource = rest[2]
    if len(rest) > 3:
        info.extra_parts = True
    rt = registry.lookup(info.group, info.version, info.resource)
    if rt is None:
        info.unknown = True
        return info
    info.rt = rt
    if not rt.namespaced and info.namespace is not None and info.resource != "namespaces":
        info.unknown = True  # a cluster-scoped resource under /namespaces/<ns>/
    if info.legacy_watch:
        info.verb = "watch"
    elif not info.name and verb == "get":
        info.verb = "watch" if _is_watch(query) else "list"
    elif not info.name and verb == "delete":
        info.verb = "deletecollection"
    return info
