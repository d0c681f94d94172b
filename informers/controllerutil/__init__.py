"""Helpers with controller-runtime's ``controllerutil`` semantics, on object dicts.

* owner references: :func:`set_controller_reference` (refusing a second controller and
  cross-namespace owners), :func:`set_owner_reference`, :func:`remove_owner_reference`,
  :func:`remove_controller_reference`, :func:`has_controller_reference`,
  :func:`has_owner_reference`, :func:`get_controller_of`;
* finalizers: :func:`add_finalizer`, :func:`remove_finalizer`, :func:`contains_finalizer`,
  and the runner :class:`Finalizers` (controller-runtime ``pkg/finalizer``);
* :func:`create_or_update` and :func:`create_or_patch` with a mutate function, answering an
  :class:`OperationResult`.

Status conditions are in :mod:`informers.conditions` (apimachinery ``meta.SetStatusCondition``).
"""

from __future__ import annotations

from informers.controllerutil.create_or_update import (
    MutateFn,
    OperationResult,
    create_or_patch,
    create_or_update,
    merge_patch,
)
from informers.controllerutil.finalizers import (
    FinalizerError,
    FinalizeResult,
    Finalizers,
    add_finalizer,
    contains_finalizer,
    is_being_deleted,
    remove_finalizer,
)
from informers.controllerutil.owner import (
    get_controller_of,
    has_controller_reference,
    has_owner_reference,
    remove_controller_reference,
    remove_owner_reference,
    set_controller_reference,
    set_owner_reference,
)

__all__ = [
    "FinalizeResult",
    "FinalizerError",
    "Finalizers",
    "MutateFn",
    "OperationResult",
    "add_finalizer",
    "contains_finalizer",
    "create_or_patch",
    "create_or_update",
    "get_controller_of",
    "has_controller_reference",
    "has_owner_reference",
    "is_being_deleted",
    "merge_patch",
    "remove_controller_reference",
    "remove_finalizer",
    "remove_owner_reference",
    "set_controller_reference",
    "set_owner_reference",
]
