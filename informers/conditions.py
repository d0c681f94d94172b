"""Reads and sets ``metav1.Condition`` entries of an object's ``status.conditions`` (dicts).

apimachinery ``pkg/api/meta/conditions.go`` on plain dicts: :func:`set_status_condition`
moves ``lastTransitionTime`` only when the ``status`` changes, and otherwise only copies
``reason``, ``message`` and ``observedGeneration``; :func:`find_status_condition`,
:func:`remove_status_condition`, :func:`is_status_condition_true` /
:func:`is_status_condition_false` / :func:`is_status_condition_present_and_equal`.

A missing key is Go's zero value (``""``, ``0``, no time), so ``{"type": "Ready"}`` and
``{"type": "Ready", "reason": ""}`` compare equal. The functions change the list they are
given, in place, as the Go functions change the slice; they are not thread-safe (a
reconcile owns the copy of the object it edits).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, cast

from informers.clock import REAL_CLOCK, Clock
from informers.meta_time import format_time

__all__ = [
    "find_status_condition",
    "is_status_condition_false",
    "is_status_condition_present_and_equal",
    "is_status_condition_true",
    "new_condition",
    "remove_status_condition",
    "set_status_condition",
    "status_conditions",
]

Condition = dict[str, Any]

_ZERO: dict[str, Any] = {"status": "", "reason": "", "message": "", "observedGeneration": 0,
                         "lastTransitionTime": ""}


def _get(cond: Mapping[str, Any], field: str) -> Any:
    value = cond.get(field)
    return _ZERO[field] if value is None else value


def new_condition(type_: str, status: bool | str, reason: str, message: str = "", *,
                  observed_generation: int | None = None) -> Condition:
    """A condition dict: ``status`` is ``"True"``/``"False"``/``"Unknown"`` (a bool is
    turned into the first two); ``reason`` is CamelCase, as the API validates it."""
    if isinstance(status, bool):
        status = "True" if status else "False"
    cond: Condition = {"type": type_, "status": status, "reason": reason, "message": message}
    if observed_generation is not None:
        cond["observedGeneration"] = observed_generation
    return cond


def status_conditions(obj: Mapping[str, Any]) -> list[Condition]:
    """``obj["status"]["conditions"]``, created empty when missing (the list to pass to the
    functions below). ``obj`` is a dict or a ``TypedDict`` (changed in place; type checkers
    take no ``TypedDict`` for a ``MutableMapping``, hence the annotation)."""
    status = obj.get("status")
    if not isinstance(status, dict):
        status = cast("MutableMapping[str, Any]", obj)["status"] = {}
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    return conditions


def set_status_condition(conditions: list[Condition], new: Mapping[str, Any], *,
                         clock: Clock = REAL_CLOCK) -> bool:
    """Set ``new`` in ``conditions``; ``True`` if anything changed (``SetStatusCondition``).

    1. No condition of ``new["type"]``: ``new`` is appended (a copy), its
       ``lastTransitionTime`` set to now when it has none.
    2. Otherwise, when the ``status`` differs, it is copied and ``lastTransitionTime`` becomes
       ``new``'s, or now when ``new`` has none; ``reason``, ``message`` and
       ``observedGeneration`` are copied when they differ. A ``lastTransitionTime`` of ``new``
       with an unchanged status is ignored.

    "Now" is ``clock.wall()`` formatted as ``metav1.Time``.
    """
    existing = find_status_condition(conditions, str(new.get("type") or ""))
    if existing is None:
        added = dict(new)
        if not added.get("lastTransitionTime"):
            added["lastTransitionTime"] = format_time(clock.wall())
        conditions.append(added)
        return True
    changed = False
    if _get(existing, "status") != _get(new, "status"):
        existing["status"] = new.get("status")
        existing["lastTransitionTime"] = (new.get("lastTransitionTime")
                                          or format_time(clock.wall()))
        changed = True
    for field in ("reason", "message", "observedGeneration"):
        if _get(existing, field) != _get(new, field):
            existing[field] = new.get(field)
            changed = True
    return changed


def remove_status_condition(conditions: list[Condition], type_: str) -> bool:
    """Remove every condition of ``type_``; ``True`` if one was there
    (``RemoveStatusCondition``)."""
    kept = [c for c in conditions if c.get("type") != type_]
    removed = len(kept) != len(conditions)
    conditions[:] = kept
    return removed


def find_status_condition(conditions: list[Condition], type_: str) -> Condition | None:
    """The condition of ``type_`` (the list's own dict, to edit in place), else ``None``
    (``FindStatusCondition``)."""
    for cond in conditions:
        if cond.get("type") == type_:
            return cond
    return None


def is_status_condition_present_and_equal(conditions: list[Condition], type_: str,
                                          status: str) -> bool:
    """The condition of ``type_`` is there with ``status``
    (``IsStatusConditionPresentAndEqual``)."""
    cond = find_status_condition(conditions, type_)
    return cond is not None and cond.get("status") == status


def is_status_condition_true(conditions: list[Condition], type_: str) -> bool:
    """``IsStatusConditionTrue``."""
    return is_status_condition_present_and_equal(conditions, type_, "True")


def is_status_condition_false(conditions: list[Condition], type_: str) -> bool:
    """``IsStatusConditionFalse``."""
    return is_status_condition_present_and_equal(conditions, type_, "False")
