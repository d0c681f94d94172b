"""ConversionReview v1: converting custom resources between versions through a hub.

controller-runtime ``pkg/webhook/conversion`` (``conversion.go``) over dicts: for each kind one
version is the *hub*; every other version (a *spoke*) registers ``to_hub(obj) -> hub_obj`` and
``from_hub(hub_obj) -> obj``. A request to convert a ``v1alpha1`` object to ``v1beta1`` goes
``v1alpha1 -> hub -> v1beta1`` (``convertViaHub``); to or from the hub takes one step.

The converters get deep copies whose ``apiVersion`` is already the target's (so they only move
fields); the server sets ``apiVersion`` and ``kind`` of what they return. An object already in
the desired version is returned unchanged (kube-apiserver does not send those, but a stored
object may be).

:func:`convert_review` answers a ``ConversionReview`` request dict: ``convertedObjects`` in the
order of ``objects``, the request's ``uid``, ``result.status: Success``; when any object fails,
no objects and ``result: {status: Failure, message}`` (controller-runtime ``errored``), which
kube-apiserver reports to its client as ``conversion webhook for <gvk> failed: <message>``.
A converter that raises is logged and reported the same way; the server keeps serving.

Thread safety: register every kind before the server starts; converters must be thread-safe.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from typing import Any

__all__ = [
    "CONVERSION_API_VERSION",
    "ConversionError",
    "ConversionReviewError",
    "Converter",
    "HubAndSpoke",
    "convert_review",
    "decode_conversion_review",
]

logger = logging.getLogger(__name__)

CONVERSION_API_VERSION = "apiextensions.k8s.io/v1"

Converter = Callable[[dict[str, Any]], dict[str, Any]]
"""A one-step conversion: takes an object (a copy it may change) and returns the converted one."""


class ConversionReviewError(ValueError):
    """A body that is not a ConversionReview v1 request (answered with HTTP 400)."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


class ConversionError(Exception):
    """One object could not be converted; the message names it and the step."""


def _split(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


class HubAndSpoke:
    """The conversions of one kind (``group``/``kind``) through its ``hub`` version.

    Args:
        group: the API group (``example.com``).
        kind: the kind (``Widget``).
        hub: the hub version (``v1``); usually the storage version.
    """

    def __init__(self, group: str, kind: str, hub: str) -> None:
        self.group = group
        self.kind = kind
        self.hub = hub
        self._spokes: dict[str, tuple[Converter, Converter]] = {}

    @property
    def versions(self) -> list[str]:
        """The hub, then the spokes in registration order."""
        return [self.hub, *self._spokes]

    def spoke(self, version: str, to_hub: Converter, from_hub: Converter) -> HubAndSpoke:
        """Register ``version`` with its two conversions (``Convertible.ConvertTo`` /
        ``ConvertFrom``). Returns self, to chain.

        Raises:
            ValueError: ``version`` is the hub or already registered.
        """
        if version == self.hub or version in self._spokes:
            raise ValueError(f"version {version} of {self.group}/{self.kind} is already "
                             "registered")
        self._spokes[version] = (to_hub, from_hub)
        return self

    def _step(self, obj: dict[str, Any], version: str, fn: Converter) -> dict[str, Any]:
        given = copy.deepcopy(obj)
        given["apiVersion"] = f"{self.group}/{version}"
        result = fn(given)
        if not isinstance(result, dict):
            raise TypeError(f"{getattr(fn, '__qualname__', fn)} returned "
                            f"{type(result).__name__}, not a dict")
        result["apiVersion"] = f"{self.group}/{version}"
        result["kind"] = self.kind
        return result

    def convert(self, obj: dict[str, Any], desired_version: str) -> dict[str, Any]:
        """``obj`` (of any registered version) in ``desired_version``.

        Raises:
            ConversionError: a version is not registered, or a converter raised (the message
                says which object and which step).
        """
        _, source = _split(str(obj.get("apiVersion", "")))
        name = (obj.get("metadata") or {}).get("name", "")
        if source == desired_version:
            return obj
        for version in (source, desired_version):
            if version != self.hub and version not in self._spokes:
                raise ConversionError(f"version {json.dumps(version)} of {self.group}/"
                                      f"{self.kind} has no conversion registered "
                                      f"(registered: {', '.join(self.versions)})")
        hub_obj = obj
        if source != self.hub:
            try:
                hub_obj = self._step(obj, self.hub, self._spokes[source][0])
            except Exception as err:
                raise ConversionError(
                    f"converting {self.group}/{source} {self.kind} {name!r} to the hub "
                    f"version {self.hub} failed: {type(err).__name__}: {err}") from err
        if desired_version == self.hub:
            return hub_obj
        try:
            return self._step(hub_obj, desired_version, self._spokes[desired_version][1])
        except Exception as err:
            raise ConversionError(
                f"converting {self.group}/{self.hub} {self.kind} {name!r} from the hub to "
                f"{desired_version} failed: {type(err).__name__}: {err}") from err


def decode_conversion_review(body: bytes) -> dict[str, Any]:
    """The ``request`` of a ConversionReview v1 body.

    Raises:
        ConversionReviewError: not JSON, not ``apiextensions.k8s.io/v1`` ``ConversionReview``,
            or a request without ``uid``, ``desiredAPIVersion`` or ``objects``.
    """
    try:
        review = json.loads(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise ConversionReviewError(f"the request body is not JSON: {err}") from None
    if not isinstance(review, dict):
        raise ConversionReviewError("the request body is not a JSON object")
    api_version, kind = review.get("apiVersion"), review.get("kind")
    if api_version != CONVERSION_API_VERSION or kind != "ConversionReview":
        raise ConversionReviewError(
            f'expected apiVersion "{CONVERSION_API_VERSION}" and kind "ConversionReview", '
            f"got apiVersion {json.dumps(api_version)} and kind {json.dumps(kind)}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise ConversionReviewError("conversion request is nil")
    if not isinstance(request.get("uid"), str) or not request["uid"]:
        raise ConversionReviewError("request.uid must be a non-empty string")
    if not isinstance(request.get("desiredAPIVersion"), str) or "/" not in request[
            "desiredAPIVersion"]:
        raise ConversionReviewError("request.desiredAPIVersion must be group/version")
    objects = request.get("objects")
    if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
        raise ConversionReviewError("request.objects must be a list of objects")
    return request


def convert_review(request: dict[str, Any],
                   kinds: dict[tuple[str, str], HubAndSpoke]) -> dict[str, Any]:
    """The ConversionReview v1 answer to ``request`` (from :func:`decode_conversion_review`),
    converting with the :class:`HubAndSpoke` of each object's ``(group, kind)``."""
    group, desired = _split(request["desiredAPIVersion"])
    converted: list[dict[str, Any]] = []
    try:
        for obj in request["objects"]:
            obj_group, _ = _split(str(obj.get("apiVersion", "")))
            kind = str(obj.get("kind", ""))
            if obj_group != group:
                raise ConversionError(f"object {kind} of apiVersion "
                                      f"{json.dumps(obj.get('apiVersion'))} is not in group "
                                      f"{group}")
            hub = kinds.get((group, kind))
            if hub is None:
                raise ConversionError(f"no conversion registered for kind {kind} in group "
                                      f"{group}")
            converted.append(hub.convert(obj, desired))
    except ConversionError as err:
        logger.error("conversion webhook: request %s to %s: %s", request["uid"],
                     request["desiredAPIVersion"], err)
        return {"apiVersion": CONVERSION_API_VERSION, "kind": "ConversionReview",
                "response": {"uid": request["uid"], "convertedObjects": [],
                             "result": {"metadata": {}, "status": "Failure",
                                        "message": str(err)}}}
    return {"apiVersion": CONVERSION_API_VERSION, "kind": "ConversionReview",
            "response": {"uid": request["uid"], "convertedObjects": converted,
                         "result": {"metadata": {}, "status": "Success"}}}
