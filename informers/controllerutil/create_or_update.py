"""Creates an object or brings it to the state a mutate function gives it (controller-runtime
``controllerutil.CreateOrUpdate`` / ``CreateOrPatch``).

The object passed in names what to write (``apiVersion``, ``kind``, ``metadata.name`` and
``metadata.namespace``); it is read live from the server (not a cache), handed to ``mutate``
(which edits it in place to the desired state), and then created when it was missing,
written when ``mutate`` changed it, and left alone otherwise. The object passed in becomes
the server's answer, as the Go functions update theirs.

``mutate`` must not change the name or namespace (``ValueError``, as controller-runtime's
``MutateFn cannot mutate object name and/or object namespace``). A mutate that sets fields
the server defaults differently (or rewrites them) makes every call an update: set only the
fields you own, or use server-side apply (:meth:`informers.client.Client.apply`).
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, cast

from informers.client.client import Client
from informers.errors import NotFound

__all__ = ["MutateFn", "OperationResult", "PatchPlan", "checked_mutate", "create_or_patch",
           "create_or_update", "merge_patch", "object_key", "patch_plan", "replace_with"]

MutateFn = Callable[[dict[str, Any]], None]
"""Edits the object in place to its desired state."""


class OperationResult(str, enum.Enum):
    """What :func:`create_or_update` / :func:`create_or_patch` did; the values complete the
    sentence "Deployment default/foo has been ..." (``controllerutil.OperationResult``)."""

    NONE = "unchanged"
    CREATED = "created"
    UPDATED = "updated"
    UPDATED_STATUS = "updatedStatus"
    UPDATED_STATUS_ONLY = "updatedStatusOnly"


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """``(namespace, name)`` of ``obj``."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def checked_mutate(mutate: MutateFn | None, key: tuple[str, str], obj: dict[str, Any]) -> None:
    """Call ``mutate`` on ``obj``.

    Raises:
        ValueError: it changed the name or namespace (``key``).
    """
    if mutate is not None:
        mutate(obj)
    if object_key(obj) != key:
        raise ValueError("MutateFn cannot mutate object name and/or object namespace")


def replace_with(obj: MutableMapping[str, Any], answer: dict[str, Any]) -> None:
    """Make ``obj`` (in place) the server's ``answer``."""
    obj.clear()
    obj.update(answer)


def _get_or_create(client: Client, obj: MutableMapping[str, Any], key: tuple[str, str],
                   mutate: MutateFn | None) -> dict[str, Any] | None:
    """The live object; or, when there is none, ``None`` after creating ``mutate``'s copy of
    ``obj`` (``obj`` then holds what the server answered)."""
    current = _get(client, obj)
    if current is None:
        desired = copy.deepcopy(dict(obj))
        checked_mutate(mutate, key, desired)
        replace_with(obj, client.create(desired))
    return current


def _get(client: Client, obj: MutableMapping[str, Any]) -> dict[str, Any] | None:
    namespace, name = object_key(obj)
    res = client.resource(None, obj)  # an unknown kind's NotFound is not a missing object
    try:
        current = client.get(res, name, namespace or None)
    except NotFound:
        return None
    current.setdefault("apiVersion", obj.get("apiVersion"))
    current.setdefault("kind", obj.get("kind"))
    return current


def create_or_update(client: Client, obj: Mapping[str, Any],
                     mutate: MutateFn | None) -> OperationResult:
    """Create ``obj`` or update it with ``mutate``'s changes (PUT, conditional on the
    ``resourceVersion`` just read: a concurrent write raises ``Conflict``).

    Raises:
        ValueError: ``mutate`` changed the name or namespace (nothing is written).
        StatusError: the read (other than 404) or the write failed; ``mutate`` is not
            called when the read failed.
    """
    key = object_key(obj)
    target = cast("MutableMapping[str, Any]", obj)  # a dict or a TypedDict: set in place
    current = _get_or_create(client, target, key, mutate)
    if current is None:
        return OperationResult.CREATED
    existing = copy.deepcopy(current)
    checked_mutate(mutate, key, current)
    if current == existing:
        replace_with(target, current)
        return OperationResult.NONE
    replace_with(target, client.update(current))
    return OperationResult.UPDATED


def merge_patch(before: Any, after: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns ``before`` into ``after``: removed keys
    become ``None``, changed values (lists whole) are given, equal ones left out
    (``jsonpatch.CreateMergePatch``, what controller-runtime's ``client.MergeFrom`` sends)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return after
    patch: dict[str, Any] = {}
    for k in before:
        if k not in after:
            patch[k] = None
    for k, v in after.items():
        if k not in before:
            patch[k] = v
        elif before[k] != v:
            patch[k] = merge_patch(before[k], v) if isinstance(v, dict) and isinstance(
                before[k], dict) else v
    return patch


def create_or_patch(client: Client, obj: Mapping[str, Any],
                    mutate: MutateFn | None) -> OperationResult:
    """Create ``obj`` or merge-patch ``mutate``'s changes: the object without ``status``
    first, then the ``status`` subresource when ``mutate`` changed the status
    (``CreateOrPatch``: result ``updated``, ``updatedStatus`` or ``updatedStatusOnly``).

    Raises:
        as :func:`create_or_update`.
    """
    key = object_key(obj)
    target = cast("MutableMapping[str, Any]", obj)  # a dict or a TypedDict: set in place
    current = _get_or_create(client, target, key, mutate)
    if current is None:
        return OperationResult.CREATED
    before = copy.deepcopy(current)
    checked_mutate(mutate, key, current)
    plan = patch_plan(before, current)
    res = client.resource(None, current)
    namespace, name = key
    answer = current
    if plan.patch is not None:
        answer = client.patch(res, name, plan.patch, namespace or None)
    if plan.status_patch is not None:
        answer = client.patch_status(res, name, plan.status_patch, namespace or None)
    replace_with(target, answer)
    return plan.result


@dataclass(frozen=True)
class PatchPlan:
    """What :func:`create_or_patch` writes: the merge patch of the object without ``status``
    and the one of the ``status`` subresource (``None``: nothing to write), and the result."""

    patch: dict[str, Any] | None
    status_patch: dict[str, Any] | None
    result: OperationResult


def patch_plan(before: Mapping[str, Any], after: Mapping[str, Any]) -> PatchPlan:
    """The patches that turn the live object ``before`` into ``mutate``'s ``after``
    (controller-runtime ``CreateOrPatch``: the object first, then the status when it changed;
    shared by the threaded and the async helper)."""
    before_status, after_status = before.get("status"), after.get("status")
    before_rest = {k: v for k, v in before.items() if k != "status"}
    after_rest = {k: v for k, v in after.items() if k != "status"}
    patch = merge_patch(before_rest, after_rest) if before_rest != after_rest else None
    status_patch = None
    if ("status" in after or before_status is not None) and before_status != after_status:
        status_patch = {"status": merge_patch(before_status or {}, after_status or {})}
    if patch is None:
        result = (OperationResult.NONE if status_patch is None
                  else OperationResult.UPDATED_STATUS_ONLY)
    else:
        result = (OperationResult.UPDATED if status_patch is None
                  else OperationResult.UPDATED_STATUS)
    return PatchPlan(patch, status_patch, result)
