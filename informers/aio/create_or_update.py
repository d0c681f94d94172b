"""Creates an object or brings it to the state a mutate function gives it, with an
:class:`~informers.aio.client.AsyncClient` (controller-runtime ``controllerutil.CreateOrUpdate``
/ ``CreateOrPatch``).

The rules are :mod:`informers.controllerutil.create_or_update`'s, and so is the logic that is
not I/O: the mutate check (name and namespace unchanged), the comparison that decides between
no write, an update and a create, the merge patches and the
:class:`~informers.controllerutil.OperationResult` (:func:`~informers.controllerutil.
create_or_update.patch_plan`). ``mutate`` is a plain function (it edits a dict); the reads and
writes are awaited.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping
from typing import Any, cast

from informers.aio.client import AsyncClient
from informers.controllerutil.create_or_update import (
    MutateFn,
    OperationResult,
    checked_mutate,
    object_key,
    patch_plan,
    replace_with,
)
from informers.errors import NotFound

__all__ = ["create_or_patch", "create_or_update"]


async def _get(client: AsyncClient, obj: Mapping[str, Any]) -> dict[str, Any] | None:
    namespace, name = object_key(obj)
    res = await client.resource(None, obj)  # an unknown kind's NotFound is not a missing one
    try:
        current: dict[str, Any] = await client.get(res, name, namespace or None)
    except NotFound:
        return None
    current.setdefault("apiVersion", obj.get("apiVersion"))
    current.setdefault("kind", obj.get("kind"))
    return current


async def _get_or_create(client: AsyncClient, obj: MutableMapping[str, Any],
                         key: tuple[str, str], mutate: MutateFn | None) -> dict[str, Any] | None:
    current = await _get(client, obj)
    if current is None:
        desired = copy.deepcopy(dict(obj))
        checked_mutate(mutate, key, desired)
        replace_with(obj, await client.create(desired))
    return current


async def create_or_update(client: AsyncClient, obj: Mapping[str, Any],
                           mutate: MutateFn | None) -> OperationResult:
    """As :func:`informers.controllerutil.create_or_update`: create ``obj`` or PUT
    ``mutate``'s changes, conditional on the ``resourceVersion`` just read; ``obj`` becomes
    the server's answer.

    Raises:
        ValueError: ``mutate`` changed the name or namespace (nothing is written).
        StatusError: the read (other than 404) or the write failed.
    """
    key = object_key(obj)
    target = cast("MutableMapping[str, Any]", obj)
    current = await _get_or_create(client, target, key, mutate)
    if current is None:
        return OperationResult.CREATED
    existing = copy.deepcopy(current)
    checked_mutate(mutate, key, current)
    if current == existing:
        replace_with(target, current)
        return OperationResult.NONE
    replace_with(target, await client.update(current))
    return OperationResult.UPDATED


async def create_or_patch(client: AsyncClient, obj: Mapping[str, Any],
                          mutate: MutateFn | None) -> OperationResult:
    """As :func:`informers.controllerutil.create_or_patch`: create ``obj`` or merge-patch
    ``mutate``'s changes, the object first, then its ``status`` subresource.

    Raises:
        as :func:`create_or_update`.
    """
    key = object_key(obj)
    target = cast("MutableMapping[str, Any]", obj)
    current = await _get_or_create(client, target, key, mutate)
    if current is None:
        return OperationResult.CREATED
    before = copy.deepcopy(current)
    checked_mutate(mutate, key, current)
    plan = patch_plan(before, current)
    res = await client.resource(None, current)
    namespace, name = key
    answer = current
    if plan.patch is not None:
        answer = await client.patch(res, name, plan.patch, namespace or None)
    if plan.status_patch is not None:
        answer = await client.patch_status(res, name, plan.status_patch, namespace or None)
    replace_with(target, answer)
    return plan.result
