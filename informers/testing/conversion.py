"""CRD ``conversion.strategy: Webhook``: custom resources converted by the CRD's webhook.

Objects of a CRD with webhook conversion are stored in the CRD's storage version. As
apiextensions-apiserver does (``pkg/apiserver/conversion/webhook_converter.go``), the server
posts a ``ConversionReview`` (``apiextensions.k8s.io/v1``) to the webhook of
``spec.conversion.webhook.clientConfig`` (``caBundle`` verified, 30 s deadline, the
``timeout`` parameter sent) whenever an object crosses versions: a write at a served version
other than the storage version is converted to the storage version before it is stored (and
the stored object to the request's version first, for an update or patch), and every read at
such a version (get, list, watch, and the object a write answers) is converted from the
storage version. Objects already at the desired version are not sent (``Convert`` skips
them). The webhook's answer is checked as there: the ``uid``, ``result.status: Success``
(else its ``message`` is the error), as many objects as sent, each of the desired
``apiVersion`` and ``kind``, with ``metadata`` whose name, namespace and uid did not change
(only labels and annotations may). A failure answers a 500 ``Status`` without a reason:
``conversion webhook for <group>/<version>, Kind=<kind> failed: <reason>``.

Limits: the conversion of a write runs while the write holds the storage lock (a conversion
webhook should not call the same server); ``Table`` output (``kubectl get``) of a converted
version shows the storage version's values; the ``ApiServer`` seeding helpers convert what
they write but :meth:`ApiServer.get`/``list`` answer the stored (storage version) content.
Thread-safe.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from informers.errors import StatusError
from informers.testing.resources import ResourceType
from informers.testing.webhook_client import CallError, WebhookClient

__all__ = ["CONVERSION_TIMEOUT", "Conversion", "ConvertingWatchWriter", "needs_conversion"]

CONVERSION_TIMEOUT = 30
"""``webhook_converter.go``: conversion webhooks are called with a 30 s deadline
(``webhook.DefaultRetryBackoff``'s context; ``conversionWebhookTimeout``)."""


def needs_conversion(rt: ResourceType | None) -> bool:
    """A served version of a CRD with webhook conversion that is not its storage version."""
    conversion = getattr(rt, "conversion", None)
    return (rt is not None and isinstance(conversion, dict)
            and conversion.get("strategy") == "Webhook"
            and rt.version != getattr(rt, "storage_version", rt.version))


class Conversion:
    """Calls conversion webhooks (through the server's :class:`WebhookClient`)."""

    def __init__(self, client: WebhookClient) -> None:
        self.client = client

    def convert(self, rt: ResourceType, objects: list[dict[str, Any]],
                desired_version: str) -> list[dict[str, Any]]:
        """``objects`` (typed, at any of ``rt``'s CRD versions) at ``desired_version``."""
        desired = f"{rt.group}/{desired_version}"
        todo = [i for i, o in enumerate(objects) if o.get("apiVersion") != desired]
        if not todo:
            return objects
        source = objects[todo[0]].get("apiVersion", "")
        where = f"conversion webhook for {source}, Kind={rt.kind}"
        try:
            converted = self._call(rt, [objects[i] for i in todo], desired)
        except CallError as err:
            raise _failure(f"{where} failed: {err.reason}") from None
        if len(converted) != len(todo):
            raise _failure(f"{where} returned {len(converted)} objects, expected {len(todo)}")
        out = list(objects)
        for index, (at, obj) in enumerate(zip(todo, converted, strict=True)):
            problem = _invalid(obj, objects[at], desired, rt.kind)
            if problem:
                raise _failure(
                    f"{where} returned invalid converted object at index {index}: {problem}")
            out[at] = obj
        return out

    def read_as(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """A stored object (no ``kind``/``apiVersion``) at ``rt``'s version."""
        if not needs_conversion(rt):
            return obj
        (typed,) = self.convert(rt, [storage_form(rt, obj)], rt.version)
        return {k: v for k, v in typed.items() if k not in ("kind", "apiVersion")}

    def store_as(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """An object at ``rt``'s version in the storage version (stored form, ``metadata``
        first)."""
        if not needs_conversion(rt):
            return obj
        typed = {"kind": rt.kind, "apiVersion": rt.api_version,
                 **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}}
        (stored,) = self.convert(rt, [typed], getattr(rt, "storage_version", ""))
        return {"metadata": stored["metadata"],
                **{k: v for k, v in stored.items()
                   if k not in ("kind", "apiVersion", "metadata")}}

    def _call(self, rt: ResourceType, objects: list[dict[str, Any]],
              desired: str) -> list[dict[str, Any]]:
        webhook = (getattr(rt, "conversion", None) or {}).get("webhook") or {}
        uid = str(uuid.uuid4())
        review = {"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1",
                  "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects}}
        answer = self.client.post(webhook.get("clientConfig") or {}, review,
                                  CONVERSION_TIMEOUT)
        got = f"{answer.get('apiVersion', '')}, Kind={answer.get('kind', '')}" if isinstance(
            answer, dict) else ""
        if got != "apiextensions.k8s.io/v1, Kind=ConversionReview":
            raise CallError("expected webhook response of apiextensions.k8s.io/v1, "
                            f"Kind=ConversionReview, got {got}")
        response = answer.get("response")
        if not isinstance(response, dict):
            raise CallError("no response provided")
        if response.get("uid") != uid:
            raise CallError(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
        result = response.get("result") or {}
        if result.get("status") != "Success":
            if result.get("message"):
                raise CallError(str(result["message"]))
            raise CallError(f"response.result.status was '{result.get('status', '')}', not "
                            "'Success'")
        converted = response.get("convertedObjects") or []
        return [o for o in converted if isinstance(o, dict)] if isinstance(
            converted, list) else []


def _failure(message: str) -> StatusError:
    """A plain Go error as the API answers it (``ErrorToAPIStatus``: code 500, no reason)."""
    return StatusError({"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Failure", "message": message, "code": 500})


def _invalid(obj: dict[str, Any], original: dict[str, Any], desired: str, kind: str) -> str:
    """``webhook_converter.go``: the checks of each converted object (empty: fine)."""
    if obj.get("apiVersion") != desired:
        return (f"invalid groupVersion (expected {desired}, received "
                f"{obj.get('apiVersion', '')})")
    if obj.get("kind") != kind:
        return f"invalid kind (expected {kind}, received {obj.get('kind', '')})"
    meta, before = obj.get("metadata"), original.get("metadata") or {}
    if not isinstance(meta, dict):
        return "missing metadata in converted object"
    for key in ("name", "namespace", "uid"):
        if meta.get(key, "") != before.get(key, ""):
            return f"must have the same {key}: {before.get(key, '')} != {meta.get(key, '')}"
    return ""


def storage_form(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` (stored form, no ``kind``/``apiVersion``) typed at the storage version."""
    version = getattr(rt, "storage_version", rt.version)
    return {"kind": rt.kind, "apiVersion": f"{rt.group}/{version}",
            **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}}


def convert_body(conversion: Conversion, rt: ResourceType, body: bytes) -> bytes:
    """A response body (an object, or a list of them) read from storage, at ``rt``'s
    version."""
    doc = json.loads(body)
    if not isinstance(doc, dict):
        return body
    if isinstance(doc.get("items"), list):
        items = [storage_form(rt, item) for item in doc["items"]]
        doc["items"] = conversion.convert(rt, items, rt.version) if items else []
        return json.dumps(doc, separators=(",", ":")).encode()
    if doc.get("kind") != rt.kind:  # a Status
        return body
    (converted,) = conversion.convert(rt, [storage_form(rt, doc)], rt.version)
    return json.dumps(converted, separators=(",", ":")).encode()


class ConvertingWatchWriter:
    """A watch stream's writer converting each event's object from the storage version to
    the watched version. Wraps ``inner`` (``write``/``finish``/``abort``); one stream's
    thread only. A failed conversion ends the stream with an ``ERROR`` event."""

    def __init__(self, inner: Any, conversion: Conversion, rt: ResourceType) -> None:
        self._inner, self._conversion, self._rt = inner, conversion, rt

    def write(self, data: bytes) -> None:
        out: list[bytes] = []
        for line in data.split(b"\n"):
            if not line:
                continue
            event = json.loads(line)
            obj = event.get("object")
            if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and isinstance(obj, dict):
                try:
                    (event["object"],) = self._conversion.convert(
                        self._rt, [storage_form(self._rt, obj)], self._rt.version)
                except StatusError as err:  # reported in the stream
                    event = {"type": "ERROR", "object": err.status}
                line = json.dumps(event, separators=(",", ":")).encode()
            out.append(line + b"\n")
        self._inner.write(b"".join(out))

    def finish(self) -> None:
        self._inner.finish()

    def abort(self) -> None:
        self._inner.abort()
