"""The OpenAPI documents of the embedded API server: ``/openapi/v3`` and ``/openapi/v2``.

Built from the resource registry (and :mod:`informers.testing.schemas`) the way kube-apiserver
v1.36 publishes them, so that ``kubectl`` validates and patches as against a real cluster:

* ``GET /openapi/v3``: the root, ``{"paths": {"api/v1": {"serverRelativeURL":
  "/openapi/v3/api/v1?hash=<HASH>"}, "apis/<group>/<version>": ...}}`` (answered as
  ``text/plain; charset=utf-8``, ``Cache-Control: no-cache, private``, like the real server);
* ``GET /openapi/v3/api/v1`` and ``/openapi/v3/apis/<group>/<version>``: one OpenAPI 3.0
  document per group version, every served path and verb with kube-apiserver's parameters
  (``fieldValidation``, ``fieldManager``, ``dryRun``... on writes, which is how ``kubectl``
  learns to validate on the server), and one component per kind carrying
  ``x-kubernetes-group-version-kind``. The hash is the SHA-512 of the document (upper-case
  hex), also its ``ETag``; with the current ``?hash=`` the answer is ``Cache-Control: public,
  immutable`` and expires in a year, with a stale one a 301 to the current URL, without one
  ``no-cache, private``; ``If-None-Match`` with the ETag answers 304 (kube-openapi
  ``handler3``, as observed on kube-apiserver v1.36.3);
* ``GET /openapi/v2``: the same as one Swagger 2.0 document (``definitions``), with its ETag,
  in JSON or, when only that is acceptable, as gnostic's protobuf message
  (``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``: what kubectl asks for to
  validate ``kind: List`` manifests on the client; :mod:`informers.testing.openapi_protobuf`).

The v3 documents are produced in JSON only (a protobuf-only ``Accept`` answers 406, as
kube-apiserver answers media types it cannot produce); kubectl 1.32 asks for JSON.

Differences from kube-apiserver: paths exist only for the served subresources (``status``,
``finalize``; no ``scale``, ``log``, ``proxy``...); ``PATCH`` bodies list no
``application/apply-patch+yaml`` (server-side apply answers 415); descriptions are short;
Swagger 2.0 parameters are written in place (kube-apiserver shares some under
``parameters``).
Documents are rebuilt (and their hashes change) when the registry changes.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from informers.testing import status
from informers.testing.endpoints import KUBERNETES_VERSION, Response
from informers.testing.openapi_operation import (
    Operation,
    parameter_v2,
    parameter_v3,
    plain_refs,
    render_v2,
    render_v3,
)
from informers.testing.openapi_protobuf import CONTENT_TYPE as PROTOBUF_CONTENT_TYPE
from informers.testing.openapi_protobuf import encode_document
from informers.testing.resources import ResourceRegistry, ResourceType
from informers.testing.schemas import META, Schemas, render
from informers.testing.strategy import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH

__all__ = ["PROTOBUF_V2", "PROTOBUF_V3", "OpenAPI"]

PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTOBUF_V3 = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"

_JSON, _YAML = "application/json", "application/yaml"
_PROTOBUF = "application/vnd.kubernetes.protobuf"
_WATCH_TYPES = (_JSON, f"{_JSON};stream=watch", _PROTOBUF, f"{_PROTOBUF};stream=watch", _YAML)
_BUILTIN_TYPES = (_JSON, _PROTOBUF, _YAML)
_CUSTOM_TYPES = (_JSON, _YAML)

# The parameters of each kind of operation, in kube-apiserver v1.36's (sorted) order.
_LIST = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
         "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "shardSelector",
         "timeoutSeconds", "watch")
_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_PATCH = (*_WRITE, "force")
_DELETE = ("dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
           "orphanDependents", "propagationPolicy")
_DELETE_COLLECTION = tuple(sorted({*_DELETE, *_LIST} - {"allowWatchBookmarks", "watch"}))

_INFO = {"title": "Kubernetes", "version": KUBERNETES_VERSION[1:].rsplit(".", 1)[0]}  # 1.36
_SECURITY = {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication",
                             "name": "authorization", "in": "header"}}


@dataclass
class _Path:
    path: str
    rt: ResourceType | None
    parameters: tuple[str, ...]  # "name", "namespace" (in the path) and query parameters
    operations: list[Operation] = field(default_factory=list)


@dataclass
class _Document:
    body: bytes
    etag: str


@dataclass
class _Built:
    key: tuple[ResourceType, ...]
    documents: dict[str, _Document]  # "api/v1", "apis/apps/v1"
    root: bytes
    v2: _Document | None = None
    v2_protobuf: bytes = b""


def _next_year(now: datetime.datetime) -> datetime.datetime:
    """``now`` in UTC a year later (Go's ``AddDate(1, 0, 0)``: 29 February becomes 1 March)."""
    now = now.astimezone(datetime.timezone.utc)
    try:
        return now.replace(year=now.year + 1)
    except ValueError:
        return now.replace(year=now.year + 1, month=3, day=1)


def _by_group_version(key: tuple[ResourceType, ...]) -> dict[str, list[ResourceType]]:
    """The served resources by document name (``api/v1``, ``apis/apps/v1``)."""
    result: dict[str, list[ResourceType]] = {}
    for rt in key:
        result.setdefault(rt.path_prefix.lstrip("/"), []).append(rt)
    return result


def _hash(body: bytes) -> str:
    return hashlib.sha512(body).hexdigest().upper()


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def _camel(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in text.replace("-", ".").split("."))


def _group_name(rt: ResourceType) -> str:
    """``CoreV1``, ``AppsV1``, ``CoordinationV1`` (``.k8s.io`` dropped for built-ins),
    ``ExampleComV1``: the group-version part of operation ids."""
    if not rt.group:
        return "Core" + _camel(rt.version)
    group = rt.group.removesuffix(".k8s.io") if rt.builtin else rt.group
    return _camel(group) + _camel(rt.version)


def _tag(rt: ResourceType) -> str:
    """``core_v1``, ``coordination_v1``, ``exampleCom_v1``."""
    if not rt.group:
        return f"core_{rt.version}"
    group = _camel(rt.group.removesuffix(".k8s.io") if rt.builtin else rt.group)
    return f"{group[:1].lower()}{group[1:]}_{rt.version}"


def _a(kind: str) -> str:
    """The article kube-openapi puts before a kind: ``a Pod``, ``an Event``, ``Endpoints``."""
    if kind.endswith("s"):
        return kind
    return f"an {kind}" if kind[:1] in "AEIOU" else f"a {kind}"


def _accepts(accept: str, media: str) -> bool:
    return any(item.split(";", 1)[0].strip().lower() == media.lower()
               for item in accept.split(","))


def _accepts_json(accept: str) -> bool:
    if not accept.strip():
        return True
    for item in accept.split(","):
        media = item.split(";", 1)[0].strip().lower()
        if media in (_JSON, "application/*", "*/*"):
            return True
    return False


class OpenAPI:
    """Builds and serves the OpenAPI documents of a :class:`ResourceRegistry`. Thread-safe;
    documents are built on first request after each registry change and shared until the
    next change.

    Args:
        registry: the served resources.
        schemas: the component schemas (default: from ``api_schema.json``).
    """

    def __init__(self, registry: ResourceRegistry, schemas: Schemas | None = None) -> None:
        self.registry = registry
        self.schemas = schemas if schemas is not None else Schemas()
        self._lock = threading.Lock()
        self._built: _Built | None = None

    # -- HTTP --------------------------------------------------------------------------------

    def serve(
        self, path: str, query: dict[str, str], accept: str, if_none_match: str,
        now: datetime.datetime,
    ) -> Response:
        """Answer ``GET path`` (a path under ``/openapi/``).

        Raises:
            StatusError: 404 for a document that does not exist.
        """
        built = self._current()
        if path == "/openapi/v3":
            return Response(200, built.root, [("Content-Type", "text/plain; charset=utf-8")])
        if path == "/openapi/v2":
            if built.v2 is None:
                built.v2 = self._v2_document(built)
            if not _accepts_json(accept) and _accepts(accept, PROTOBUF_V2):
                if not built.v2_protobuf:
                    built.v2_protobuf = encode_document(json.loads(built.v2.body))
                answer = self._document(_Document(built.v2_protobuf, built.v2.etag), None,
                                        "", if_none_match, now)
                answer.headers.append(("Content-Type", PROTOBUF_CONTENT_TYPE))
                return answer
            return self._document(built.v2, None, accept, if_none_match, now)
        if path.startswith("/openapi/v3/"):
            name = path[len("/openapi/v3/"):].strip("/")
            document = built.documents.get(name)
            if document is None:  # kube-openapi handler3: an empty 404
                return Response(404, b"", [("Content-Type", "text/plain; charset=utf-8")])
            return self._document(document, query.get("hash"), accept, if_none_match, now,
                                  location=f"/openapi/v3/{name}")
        raise status.not_found_path()

    @staticmethod
    def _document(
        document: _Document, wanted: str | None, accept: str, if_none_match: str,
        now: datetime.datetime, location: str = "",
    ) -> Response:
        etag = f'"{document.etag}"'
        headers = [("ETag", etag), ("Vary", "Accept")]
        if wanted is not None and wanted != document.etag:
            return Response(301, b"", [("Location", f"{location}?hash={document.etag}"),
                                       *headers])
        if not _accepts_json(accept):
            return Response(406, b"", [("Content-Type", "text/plain; charset=utf-8")])
        if wanted is not None:
            expires = _next_year(now).strftime("%a, %d %b %Y %H:%M:%S UTC")
            headers += [("Cache-Control", "public, immutable"), ("Expires", expires)]
        if etag in [tag.strip() for tag in if_none_match.split(",")]:
            return Response(304, b"", headers)
        return Response(200, document.body, headers)

    # -- building ----------------------------------------------------------------------------

    def _current(self) -> _Built:
        key = tuple(self.registry.all())
        built = self._built
        if built is not None and built.key == key:
            return built
        with self._lock:
            if self._built is None or self._built.key != key:
                self._built = self._build(key)
            return self._built

    def _build(self, key: tuple[ResourceType, ...]) -> _Built:
        documents = {}
        for name, rts in _by_group_version(key).items():
            body = _dumps(self._v3_document(name, rts, key))
            documents[name] = _Document(body, _hash(body))
        root = {"paths": {name: {"serverRelativeURL": f"/openapi/v3/{name}?hash={doc.etag}"}
                          for name, doc in sorted(documents.items())}}
        return _Built(key, documents, _dumps(root))

    def _components(
        self, rts: list[ResourceType], served: tuple[ResourceType, ...]
    ) -> dict[str, dict[str, Any]]:
        components: dict[str, dict[str, Any]] = {}
        for rt in rts:
            components.update(self.schemas.components(rt))
        builtin = any(rt.builtin for rt in rts)
        fixed = ("Status", "DeleteOptions", "Patch") + (
            ("APIResourceList", "WatchEvent") if builtin else ())
        for name in fixed:
            if META + name not in components:
                self.schemas.fixed(META + name, components)
        self.schemas.closure(components)
        # The options kinds are registered in every group version (the core one first).
        groups = {(rt.group, rt.version) for rt in (rts if builtin else served) if rt.group}
        versions = [("", "v1"), *sorted(groups)]
        for name in ("DeleteOptions", "WatchEvent"):
            if META + name in components:
                components[META + name] = {
                    **components[META + name], "x-kubernetes-group-version-kind": [
                        {"group": g, "kind": name, "version": v} for g, v in versions]}
        return {name: render(components[name]) for name in sorted(components)}

    def _v3_document(
        self, name: str, rts: list[ResourceType], served: tuple[ResourceType, ...]
    ) -> dict[str, Any]:
        builtin = any(rt.builtin for rt in rts)
        paths: dict[str, Any] = {}
        self._render_paths(name, rts, paths, render_v3, parameter_v3)
        document: dict[str, Any] = {
            "openapi": "3.0.0",
            "info": _INFO if builtin else {"title": "Kubernetes CRD Swagger",
                                           "version": "v0.1.0"},
            "paths": dict(sorted(paths.items())),
            "components": {"schemas": self._components(rts, served)},
        }
        if builtin:
            document["components"]["securitySchemes"] = _SECURITY
        return document

    def _render_paths(
        self, name: str, rts: list[ResourceType], into: dict[str, Any],
        operation: Callable[[Operation, ResourceType | None], dict[str, Any]],
        parameter: Callable[[str, ResourceType | None], dict[str, Any]],
    ) -> None:
        for entry in self._paths(name, rts):
            item: dict[str, Any] = {op.method: operation(op, entry.rt) for op in entry.operations}
            item["parameters"] = [parameter(p, entry.rt) for p in entry.parameters]
            into[entry.path] = item

    def _v2_document(self, built: _Built) -> _Document:
        paths: dict[str, Any] = {}
        definitions: dict[str, Any] = {}
        for name, rts in _by_group_version(built.key).items():
            self._render_paths(name, rts, paths, render_v2, parameter_v2)
            for name, schema in self._components(rts, built.key).items():
                if schema.get("x-kubernetes-preserve-unknown-fields"):
                    # Swagger 2.0 cannot say "keep unknown fields": the CRD builder publishes
                    # such a schema as any object.
                    schema = {key: value for key, value in schema.items() if key in (
                        "type", "x-kubernetes-group-version-kind")}
                definitions[name] = schema
        text = json.dumps(plain_refs(definitions), separators=(",", ":")).replace(
            '"#/components/schemas/', '"#/definitions/')
        document = {
            "swagger": "2.0",
            "info": _INFO,
            "paths": dict(sorted(paths.items())),
            "definitions": json.loads(text),
            "securityDefinitions": _SECURITY,
            "security": [{"BearerToken": []}],
        }
        body = _dumps(document)
        return _Document(body, _hash(body))

    # -- paths -------------------------------------------------------------------------------

    def _paths(self, name: str, rts: list[ResourceType]) -> list[_Path]:
        builtin = any(rt.builtin for rt in rts)
        group = rts[0]
        paths = [_Path(f"/{name}/", None, (), [Operation(
            "get", "", f"get{_group_name(group)}APIResources", "get available resources",
            responses=(("200", META + "APIResourceList"), ("401", None)),
            produces=_BUILTIN_TYPES, tag=_tag(group))])] if builtin else []
        for rt in rts:
            paths.extend(self._resource_paths(rt))
        return paths

    def _resource_paths(self, rt: ResourceType) -> list[_Path]:
        kind, gv = rt.kind, _group_name(rt)
        component = self.schemas.kind_component(rt)
        types = _BUILTIN_TYPES if rt.builtin else _CUSTOM_TYPES
        list_types = _WATCH_TYPES if rt.builtin else _CUSTOM_TYPES
        body_types = ("*/*",) if rt.builtin else _CUSTOM_TYPES
        patch_types = (JSON_PATCH, MERGE_PATCH) + (
            (STRATEGIC_MERGE_PATCH,) if rt.builtin else ())
        scope = "Namespaced" if rt.namespaced else ""
        base = rt.path_prefix
        collection = (f"{base}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced
                      else f"{base}/{rt.plural}")
        in_path = ("namespace",) if rt.namespaced else ()
        verbs = set(rt.verbs)
        listing = "list or watch" if rt.builtin else "list"
        ok = (("200", component), ("401", None))
        written = (("200", component), ("201", component), ("401", None))
        patched = written if rt.builtin else ok
        deleted = (META + "Status" if not rt.returns_deleted_object or rt.plural == "namespaces"
                   else component)

        def op(method: str, action: str, verb: str, description: str, **extra: Any) -> Operation:
            extra.setdefault("produces", types)
            extra.setdefault("tag", _tag(rt))
            return Operation(method, action, f"{verb}{gv}{extra.pop('id_tail', scope + kind)}",
                              description, **extra)

        result: list[_Path] = []
        coll = _Path(collection, rt, (*in_path, "pretty"))
        if "list" in verbs:
            coll.operations.append(op(
                "get", "list", "list", f"{listing} objects of kind {kind}", parameters=_LIST,
                responses=(("200", component + "List"), ("401", None)), produces=list_types))
        if "create" in verbs:
            coll.operations.append(op(
                "post", "post", "create", f"create {_a(kind)}", parameters=_WRITE,
                body=component, body_types=body_types, body_required=True,
                responses=(("200", component), ("201", component), ("202", component),
                           ("401", None))))
        if "deletecollection" in verbs:
            coll.operations.append(op(
                "delete", "deletecollection", "delete", f"delete collection of {kind}",
                id_tail=f"Collection{scope}{kind}",
                parameters=_DELETE_COLLECTION if rt.builtin else _LIST,
                body=META + "DeleteOptions" if rt.builtin else None, body_types=body_types,
                responses=(("200", META + "Status"), ("401", None))))
        result.append(coll)
        item = _Path(f"{collection}/{{name}}", rt, ("name", *in_path, "pretty"))
        if "get" in verbs:
            item.operations.append(op(
                "get", "get", "read", f"read the specified {kind}",
                parameters=() if rt.builtin else ("resourceVersion",), responses=ok))
        if "update" in verbs:
            item.operations.append(op(
                "put", "put", "replace", f"replace the specified {kind}", parameters=_WRITE,
                body=component, body_types=body_types, body_required=True, responses=written))
        if "delete" in verbs:
            item.operations.append(op(
                "delete", "delete", "delete", f"delete {_a(kind)}", parameters=_DELETE,
                body=META + "DeleteOptions", body_types=body_types,
                responses=(("200", deleted), ("202", deleted), ("401", None))))
        if "patch" in verbs:
            item.operations.append(op(
                "patch", "patch", "patch", f"partially update the specified {kind}",
                parameters=_PATCH, body=META + "Patch", body_types=patch_types,
                body_required=True, responses=patched))
        result.append(item)
        for sub in rt.subresources:
            path = _Path(f"{collection}/{{name}}/{sub}", rt, ("name", *in_path, "pretty"))
            tail = f"{scope}{kind}{sub.capitalize()}"
            if sub == "status":
                path.operations += [
                    op("get", "get", "read", f"read status of the specified {kind}",
                       id_tail=tail, parameters=() if rt.builtin else ("resourceVersion",),
                       responses=ok),
                    op("put", "put", "replace", f"replace status of the specified {kind}",
                       id_tail=tail, parameters=_WRITE, body=component, body_types=body_types,
                       body_required=True, responses=written),
                    op("patch", "patch", "patch",
                       f"partially update status of the specified {kind}", id_tail=tail,
                       parameters=_PATCH, body=META + "Patch", body_types=patch_types,
                       body_required=True, responses=patched)]
            else:  # finalize: kube-apiserver lists its parameters on the path
                path.parameters = tuple(sorted({*path.parameters, *_WRITE}))
                path.operations.append(op(
                    "put", "put", "replace", f"replace {sub} of the specified {kind}",
                    id_tail=tail, body=component, body_types=body_types,
                    body_required=True, responses=written))
            result.append(path)
        if rt.namespaced and "list" in verbs:
            result.append(_Path(f"{base}/{rt.plural}", rt, tuple(sorted({*_LIST, "pretty"})), [op(
                "get", "list", "list", f"{listing} objects of kind {kind}",
                id_tail=f"{kind}ForAllNamespaces",
                responses=(("200", component + "List"), ("401", None)),
                produces=list_types)]))
        if rt.builtin and "watch" in verbs:
            result += self._watch_paths(rt, op, in_path)
        return result

    @staticmethod
    def _watch_paths(rt: ResourceType, op: Any, in_path: tuple[str, ...]) -> list[_Path]:
        kind, base = rt.kind, rt.path_prefix
        scope = "Namespaced" if rt.namespaced else ""
        collection = (f"{base}/watch/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced
                      else f"{base}/watch/{rt.plural}")
        events = (("200", META + "WatchEvent"), ("401", None))
        deprecated = "deprecated: use the 'watch' parameter with a list operation instead"
        params = sorted({*_LIST, "pretty"})
        result = [
            _Path(collection, rt, tuple(sorted({*params, *in_path})), [op(
                "get", "watchlist", "watch",
                f"watch individual changes to a list of {kind}. {deprecated}.",
                id_tail=f"{scope}{kind}List", responses=events, produces=_WATCH_TYPES)]),
            _Path(f"{collection}/{{name}}", rt, tuple(sorted({*params, *in_path, "name"})), [op(
                "get", "watch", "watch",
                f"watch changes to an object of kind {kind}. {deprecated}, filtered to a "
                "single item with the 'fieldSelector' parameter.",
                responses=events, produces=_WATCH_TYPES)]),
        ]
        if rt.namespaced:
            result.append(_Path(f"{base}/watch/{rt.plural}", rt, tuple(params), [op(
                "get", "watchlist", "watch",
                f"watch individual changes to a list of {kind}. {deprecated}.",
                id_tail=f"{kind}ListForAllNamespaces", responses=events,
                produces=_WATCH_TYPES)]))
        return result
