"""Sets and removes ``metadata.ownerReferences`` on object dicts (controller-runtime
``controllerutil.SetControllerReference`` and friends).

An owner reference points from a dependent to its owner; the one with ``controller: true``
is the dependent's managing controller (at most one per object), which the garbage collector
follows for cascading deletion and the builder's ``owns(...)`` follows to enqueue the owner.
References are matched as controller-runtime's ``referSameObject`` does: same API *group*
(the version may differ), kind and name.

The functions edit the dependent in place and never the owner; the owner must carry
``apiVersion``, ``kind``, ``metadata.name`` and ``metadata.uid`` (an object as read from the
API server). Not thread-safe: edit your own copy.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, cast

from informers.errors import AlreadyOwnedError

__all__ = [
    "get_controller_of",
    "has_controller_reference",
    "has_owner_reference",
    "remove_controller_reference",
    "remove_owner_reference",
    "set_controller_reference",
    "set_owner_reference",
]

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _refs(obj: Obj) -> list[dict[str, Any]]:
    refs = _meta(obj).get("ownerReferences")
    return [dict(r) for r in refs if isinstance(r, Mapping)] if isinstance(refs, list) else []


def _set_refs(obj: Obj, refs: list[dict[str, Any]]) -> None:
    # obj is changed in place: a dict, or a TypedDict (no MutableMapping to type checkers)
    meta = cast("MutableMapping[str, Any]", obj).setdefault("metadata", {})
    if refs:
        meta["ownerReferences"] = refs
    else:
        meta.pop("ownerReferences", None)


def _group(api_version: object) -> str:
    text = str(api_version or "")
    return text.rpartition("/")[0] if "/" in text else ""


def _same_object(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (_group(a.get("apiVersion")) == _group(b.get("apiVersion"))
            and a.get("kind") == b.get("kind") and a.get("name") == b.get("name"))


def _reference(owner: Obj, what: str) -> dict[str, Any]:
    meta = _meta(owner)
    missing = [f for f, v in (("apiVersion", owner.get("apiVersion")),
                              ("kind", owner.get("kind")),
                              ("metadata.name", meta.get("name"))) if not v]
    if missing:
        raise ValueError(f"{what}: the owner has no {', '.join(missing)}")
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"]}
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    return ref


def _validate_owner(owner: Obj, obj: Obj) -> None:
    owner_ns = _meta(owner).get("namespace") or ""
    if owner_ns:
        obj_ns = _meta(obj).get("namespace") or ""
        if not obj_ns:
            raise ValueError("cluster-scoped resource must not have a namespace-scoped owner, "
                             f"owner's namespace {owner_ns}")
        if owner_ns != obj_ns:
            raise ValueError("cross-namespace owner references are disallowed, owner's "
                             f"namespace {owner_ns}, obj's namespace {obj_ns}")


def _upsert(obj: Obj, ref: dict[str, Any]) -> None:
    refs = _refs(obj)
    for i, existing in enumerate(refs):
        if _same_object(existing, ref):
            refs[i] = ref
            break
    else:
        refs.append(ref)
    _set_refs(obj, refs)


def set_owner_reference(owner: Obj, obj: Obj, *,
                        block_owner_deletion: bool | None = None) -> None:
    """Add (or replace) a non-controller reference to ``owner`` on ``obj``
    (``SetOwnerReference``).

    Raises:
        ValueError: a cross-namespace owner, or a namespaced owner of a cluster-scoped
            object; an owner without apiVersion, kind or name.
    """
    _validate_owner(owner, obj)
    ref = _reference(owner, "set_owner_reference")
    if block_owner_deletion is not None:
        ref["blockOwnerDeletion"] = block_owner_deletion
    _upsert(obj, ref)


def set_controller_reference(owner: Obj, obj: Obj, *,
                             block_owner_deletion: bool = True) -> None:
    """Make ``owner`` the managing controller of ``obj`` (``SetControllerReference``):
    a reference with ``controller: true`` and ``blockOwnerDeletion`` (default ``True``),
    replacing an existing reference to the same object.

    Raises:
        AlreadyOwnedError: another object is already ``obj``'s controller.
        ValueError: as :func:`set_owner_reference`.
    """
    _validate_owner(owner, obj)
    ref = _reference(owner, "set_controller_reference")
    ref["blockOwnerDeletion"] = block_owner_deletion
    ref["controller"] = True
    existing = get_controller_of(obj)
    if existing is not None and not _same_object(existing, ref):
        meta = _meta(obj)
        raise AlreadyOwnedError(str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                                existing)
    _upsert(obj, ref)


def get_controller_of(obj: Obj) -> dict[str, Any] | None:
    """The reference with ``controller: true``, else ``None`` (apimachinery
    ``metav1.GetControllerOf``)."""
    for ref in _refs(obj):
        if ref.get("controller") is True:
            return ref
    return None


def has_controller_reference(obj: Obj) -> bool:
    """``obj`` has a controller reference (``HasControllerReference``)."""
    return get_controller_of(obj) is not None


def has_owner_reference(obj: Obj, owner: Obj) -> bool:
    """``obj`` has a reference to ``owner`` (``HasOwnerReference``)."""
    ref = _reference(owner, "has_owner_reference")
    return any(_same_object(r, ref) for r in _refs(obj))


def remove_owner_reference(owner: Obj, obj: Obj) -> None:
    """Remove the reference to ``owner`` (``RemoveOwnerReference``).

    Raises:
        ValueError: ``obj`` has no owner references, or none to ``owner``.
    """
    refs = _refs(obj)
    if not refs:
        raise ValueError(f"{_meta(obj).get('name')!r} does not have any owner references")
    ref = _reference(owner, "remove_owner_reference")
    kept = [r for r in refs if not _same_object(r, ref)]
    if len(kept) == len(refs):
        raise ValueError(f"{_meta(obj).get('name')!r} does not have an owner reference for "
                         f"{ref['kind']} {ref['name']!r}")
    _set_refs(obj, kept)


def remove_controller_reference(owner: Obj, obj: Obj) -> None:
    """Remove ``owner``'s controller reference (``RemoveControllerReference``).

    Raises:
        ValueError: ``obj`` has no controller reference, none to ``owner``, or ``owner``'s
            is not the controller one.
    """
    if not has_controller_reference(obj):
        raise ValueError(f"{_meta(obj).get('name')!r} does not have a owner reference with "
                         "controller equals true")
    ref = _reference(owner, "remove_controller_reference")
    refs = _refs(obj)
    for i, existing in enumerate(refs):
        if _same_object(existing, ref):
            if existing.get("controller") is not True:
                raise ValueError(f"{ref['kind']} {ref['name']!r} is not the controller "
                                 f"reference of {_meta(obj).get('name')!r}")
            del refs[i]
            _set_refs(obj, refs)
            return
    raise ValueError(f"{_meta(obj).get('name')!r} does not have a controller reference for "
                     f"{ref['kind']} {ref['name']!r}")
