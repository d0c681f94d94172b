"""One operation of an OpenAPI document (:class:`Operation`) and how it is written as OpenAPI 3
(:func:`render_v3`) and as Swagger 2.0 (:func:`render_v2`), as kube-apiserver v1.36 writes them.

The documents themselves (paths, components, caching) are :mod:`informers.testing.openapi`'s.
Pure functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from informers.testing.resources import ResourceType

__all__ = ["Operation", "parameter_v2", "parameter_v3", "plain_refs", "render_v2", "render_v3"]

# Query parameters: type and a short description (kube-apiserver's are longer).
_QUERY: dict[str, tuple[str, str]] = {
    "allowWatchBookmarks": ("boolean", "Ask for BOOKMARK watch events."),
    "continue": ("string", "The continue token of the previous page of a list."),
    "dryRun": ("string", "All: process the request in full but persist nothing."),
    "fieldManager": ("string", "The name of the actor making the change."),
    "fieldSelector": ("string", "Restrict the objects by their fields."),
    "fieldValidation": ("string", "What to do with unknown or duplicate fields in the body: "
                        "Ignore (drop them), Warn (drop them and answer a Warning header "
                        "for each; the default) or Strict (fail with 400 BadRequest)."),
    "force": ("boolean", "Force an apply patch over conflicts."),
    "gracePeriodSeconds": ("integer", "Seconds before the object is deleted."),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "boolean", "Delete an object that cannot be read (unsafe)."),
    "labelSelector": ("string", "Restrict the objects by their labels."),
    "limit": ("integer", "The most items one page of a list returns."),
    "orphanDependents": ("boolean", "Deprecated: use propagationPolicy."),
    "pretty": ("string", "If 'true', pretty-print the output."),
    "propagationPolicy": ("string", "Garbage collection: Orphan, Background or Foreground."),
    "resourceVersion": ("string", "Which resource versions may be served."),
    "resourceVersionMatch": ("string", "How resourceVersion applies to a list."),
    "sendInitialEvents": ("boolean", "Start a watch with the current objects."),
    "shardSelector": ("string", "Restrict a list to a shard."),
    "timeoutSeconds": ("integer", "End the list or watch after this many seconds."),
    "watch": ("boolean", "Watch for changes instead of listing."),
}

_RESPONSES = {"200": "OK", "201": "Created", "202": "Accepted", "401": "Unauthorized"}


@dataclass
class Operation:
    """One operation, before rendering as OpenAPI 3 or Swagger 2."""

    method: str
    action: str  # x-kubernetes-action
    operation_id: str
    description: str
    parameters: tuple[str, ...] = ()
    body: str | None = None  # the request body's component
    body_types: tuple[str, ...] = ()
    body_required: bool = False
    responses: tuple[tuple[str, str | None], ...] = ()  # (code, component)
    produces: tuple[str, ...] = ()
    tag: str = ""




def plain_refs(node: Any) -> Any:
    """Swagger 2.0 refers with ``$ref`` beside the other keywords, where OpenAPI 3 documents
    wrap it in ``allOf`` (kube-apiserver publishes both forms so; kubectl's v2 parser reads
    ``allOf`` as "anything")."""
    if isinstance(node, list):
        return [plain_refs(v) for v in node]
    if not isinstance(node, dict):
        return node
    result = {k: plain_refs(v) for k, v in node.items() if k != "allOf"}
    parts = node.get("allOf")
    if isinstance(parts, list) and len(parts) == 1 and set(parts[0]) == {"$ref"}:
        result["$ref"] = parts[0]["$ref"]
    elif parts is not None:
        result["allOf"] = plain_refs(parts)
    return result


def _gvk(rt: ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": rt.kind}


def _schema_ref(component: str, prefix: str = "#/components/schemas/") -> dict[str, str]:
    return {"$ref": prefix + component}


def parameter_v3(name: str, rt: ResourceType | None) -> dict[str, Any]:
    """The OpenAPI 3 parameter ``name`` (``name``/``namespace`` in the path, else a query
    parameter) of an operation on ``rt``."""
    if name in ("name", "namespace"):
        description = (f"name of the {rt.kind if rt else 'object'}" if name == "name"
                       else "object name and auth scope, such as for teams and projects")
        return {"name": name, "in": "path", "description": description, "required": True,
                "schema": {"type": "string", "uniqueItems": True}}
    kind, description = _QUERY[name]
    return {"name": name, "in": "query", "description": description,
            "schema": {"type": kind, "uniqueItems": True}}


def parameter_v2(name: str, rt: ResourceType | None) -> dict[str, Any]:
    """:func:`parameter_v3` as Swagger 2.0 writes it (the schema's keywords in place)."""
    v3 = parameter_v3(name, rt)
    schema = v3.pop("schema")
    return {**schema, **v3}


def render_v3(operation: Operation, rt: ResourceType | None) -> dict[str, Any]:
    """``operation`` as an OpenAPI 3 operation object (``rt``: the resource it acts on, if
    any)."""
    result: dict[str, Any] = {
        "tags": [operation.tag],
        "description": operation.description,
        "operationId": operation.operation_id,
    }
    if operation.parameters:
        result["parameters"] = [parameter_v3(p, rt) for p in operation.parameters]
    if operation.body is not None:
        body: dict[str, Any] = {"content": {
            media: {"schema": _schema_ref(operation.body)} for media in operation.body_types}}
        if operation.body_required:
            body["required"] = True
        result["requestBody"] = body
    responses: dict[str, Any] = {}
    for code, component in operation.responses:
        response: dict[str, Any] = {"description": _RESPONSES[code]}
        if component is not None:
            response["content"] = {media: {"schema": _schema_ref(component)}
                                   for media in operation.produces}
        responses[code] = response
    result["responses"] = responses
    return _with_kubernetes_extensions(result, operation, rt)


def _with_kubernetes_extensions(result: dict[str, Any], operation: Operation,
                                rt: ResourceType | None) -> dict[str, Any]:
    """``result`` with the operation's ``x-kubernetes-action`` and, for a resource's
    operations, its ``x-kubernetes-group-version-kind`` (the same in v2 and v3)."""
    if rt is not None:
        result["x-kubernetes-action"] = operation.action
        result["x-kubernetes-group-version-kind"] = _gvk(rt)
    return result


def render_v2(operation: Operation, rt: ResourceType | None) -> dict[str, Any]:
    """``operation`` as a Swagger 2.0 operation object (``rt``: the resource it acts on, if
    any)."""
    result: dict[str, Any] = {"description": operation.description}
    if operation.body is not None:
        result["consumes"] = list(operation.body_types)
    result["produces"] = [m for m in operation.produces if "stream=watch" not in m] + [
        m for m in operation.produces if "stream=watch" in m]
    result["schemes"] = ["https"]
    result["tags"] = [operation.tag]
    result["operationId"] = operation.operation_id
    parameters: list[dict[str, Any]] = []
    if operation.body is not None:
        body: dict[str, Any] = {"name": "body", "in": "body",
                                "schema": _schema_ref(operation.body, "#/definitions/")}
        if operation.body_required:
            body["required"] = True
        parameters.append(body)
    parameters += [parameter_v2(p, rt) for p in operation.parameters]
    if parameters:
        result["parameters"] = parameters
    responses: dict[str, Any] = {}
    for code, component in operation.responses:
        response: dict[str, Any] = {"description": _RESPONSES[code]}
        if component is not None:
            response["schema"] = _schema_ref(component, "#/definitions/")
        responses[code] = response
    result["responses"] = responses
    return _with_kubernetes_extensions(result, operation, rt)
