"""The HTTP side of ``.../<name>/scale``: GET, PUT, PATCH and server-side apply of a ``Scale``.

Routes a request the handler has authenticated and checked (the parent's verbs, faults) to
:mod:`informers.testing.scale`, with the ``fieldValidation`` of ``Scale`` bodies as
kube-apiserver v1.36.3 answers it (observed): a PUT's unknown or duplicate fields are a 400
``Scale in version "v1" cannot be handled as a Scale: strict decoding error: ...`` under
``Strict`` and ``Warning`` headers under ``Warn`` (the default); a JSON, merge or strategic
merge patch's are a 422 ``Invalid`` (field ``patch``) under ``Strict``; an apply
configuration with fields a ``Scale`` lacks is a 500 whatever the directive
(:func:`informers.testing.scale_fields.apply_errors`). Unknown fields are dropped.
"""

from __future__ import annotations

from informers.testing import scale, status
from informers.testing.endpoints import APPLY_PATCH, Endpoints, Response, decode_apply
from informers.testing.field_validation import FieldValidator, directive, warning_header
from informers.testing.request_info import RequestInfo
from informers.testing.resources import ResourceType
from informers.testing.scale_fields import scale_fields

__all__ = ["serve"]

SCALE = ResourceType("autoscaling", "v1", "scale", "Scale")
"""What the field checks report the body as: ``Scale`` in version ``v1``."""


def serve(endpoints: Endpoints, validator: FieldValidator, info: RequestInfo,
          query: dict[str, str], raw: bytes, content_type: str, manager: str) -> Response:
    """Answer a ``scale`` request (``content_type``: the request's media type, ``""`` for
    none; ``manager``: the write's field manager)."""
    rt = info.rt
    assert rt is not None
    namespace = info.namespace or ""
    if info.verb == "get":
        return Response(200, scale.get(endpoints.storage, rt, namespace, info.name))
    if info.verb not in ("update", "patch") or not info.name:
        raise status.method_not_allowed()
    content_type = content_type or "application/json"
    fields = scale_fields(validator.schemas)
    if info.verb == "update":
        dry_run = Endpoints._dry_run(query, "UpdateOptions")
        if content_type not in ("application/json", "application/yaml"):
            raise status.unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json, application/yaml")
        body, warnings = validator.decode(raw, content_type, SCALE, directive(query, "update"),
                                          fields)
        response = Response(200, scale.update(
            endpoints.storage, endpoints.strategy, rt, namespace, info.name,
            body=body, dry_run=dry_run, manager=manager))
        response.headers.extend(map(warning_header, warnings))
        return response
    dry_run = Endpoints._dry_run(query, "PatchOptions")
    endpoints.check_patch_type(content_type)
    if content_type == APPLY_PATCH:
        return Response(200, _apply(endpoints, validator, rt, namespace, info.name, query, raw,
                                     dry_run))
    mode = directive(query, "patch")
    patch, duplicates = validator.decode_patch(raw, content_type, SCALE, mode)
    patch_warnings: list[str] = []
    check = validator.patched_check(SCALE, content_type, patch, duplicates, mode,
                                    patch_warnings, fields)
    response = Response(200, scale.update(
        endpoints.storage, endpoints.strategy, rt, namespace, info.name,
        patch_type=content_type, patch=patch, dry_run=dry_run, manager=manager, check=check))
    response.headers.extend(map(warning_header, patch_warnings))
    return response


def _apply(endpoints: Endpoints, validator: FieldValidator, rt: ResourceType, namespace: str,
           name: str, query: dict[str, str], raw: bytes, dry_run: bool) -> bytes:
    manager, force, config = decode_apply(query, raw)
    return scale.apply(endpoints.storage, endpoints.strategy, rt, namespace, name, config,
                       manager=manager, force=force, dry_run=dry_run, schemas=validator.schemas)
