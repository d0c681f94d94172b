"""Runs finalizers with async cleanups (controller-runtime ``pkg/finalizer``) and writes them
with an :class:`~informers.aio.client.AsyncClient`.

:class:`AsyncFinalizers` is :class:`informers.controllerutil.Finalizers` with ``async def``
cleanups: the same steps per registered finalizer
(:func:`~informers.controllerutil.finalizers.finalize_step`, then
:func:`~informers.controllerutil.finalizers.cleaned_up`), the same
:class:`~informers.controllerutil.FinalizeResult` and
:class:`~informers.controllerutil.FinalizerError`, and the same write: a merge patch of
``metadata.finalizers`` conditional on the ``resourceVersion``
(:func:`~informers.controllerutil.finalizers.finalizers_patch`). The pure helpers
(``add_finalizer``, ``remove_finalizer``, ``contains_finalizer``, ``is_being_deleted``) are
used as they are. Register before the controller starts; one event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, cast

from informers.aio.client import AsyncClient
from informers.controllerutil.finalizers import (
    FinalizerError,
    FinalizeResult,
    cleaned_up,
    finalize_step,
    finalizers_patch,
    is_being_deleted,
)

__all__ = ["AsyncCleanup", "AsyncFinalizers"]

AsyncCleanup = Callable[[dict[str, Any]], Awaitable["FinalizeResult | None"]]
"""``async def cleanup(obj) -> FinalizeResult | None``; raises to be retried (its finalizer
stays)."""


class AsyncFinalizers:
    """Async cleanups by finalizer name (controller-runtime ``finalizer.NewFinalizers``)."""

    def __init__(self) -> None:
        self._cleanups: dict[str, AsyncCleanup] = {}

    def register(self, key: str, cleanup: AsyncCleanup) -> None:
        """Register ``cleanup`` under the finalizer name ``key``.

        Raises:
            ValueError: ``key`` is already registered.
        """
        if key in self._cleanups:
            raise ValueError(f"finalizer for key {key!r} already registered")
        self._cleanups[key] = cleanup

    async def finalize(self, obj: Mapping[str, Any]) -> FinalizeResult:
        """In place, as :meth:`informers.controllerutil.Finalizers.finalize` (cleanups run
        one after the other, in registration order)."""
        result = FinalizeResult()
        for key, cleanup in self._cleanups.items():
            if finalize_step(obj, key, result) is None:
                continue
            try:
                got = await cleanup(obj)  # type: ignore[arg-type]
            except Exception as err:
                result.errors[key] = err
                continue
            cleaned_up(obj, key, got, result)
        return result

    async def run(self, client: AsyncClient, obj: Mapping[str, Any]) -> bool:
        """:meth:`finalize`, then write the finalizer list when it changed; ``True`` when the
        object is being deleted (the reconcile should stop there); ``obj`` becomes the
        server's answer.

        Raises:
            FinalizerError: a cleanup failed (after writing what succeeded); retry later.
            Conflict: the object changed meanwhile.
        """
        result = await self.finalize(obj)
        if result.updated:
            meta = obj["metadata"]
            answer = await client.patch(await client.resource(None, obj), meta["name"],
                                        finalizers_patch(obj), meta.get("namespace"))
            target = cast("MutableMapping[str, Any]", obj)
            target.clear()
            target.update(answer)
        if result.errors:
            raise FinalizerError(result.errors)
        return is_being_deleted(obj)
