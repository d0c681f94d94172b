"""Strategic merge patch, as k8s.io/apimachinery@v0.36.3/pkg/util/strategicpatch applies one.

:func:`strategic_merge` is ``StrategicMergeMapPatchUsingLookupPatchMeta`` (``mergeMap`` with
``MergeParallelList`` and ``IgnoreUnmatchedNulls``) over a :class:`~informers.testing
.merge_schema.Shape` in place of the Go struct's ``patchStrategy``/``patchMergeKey`` tags:
lists with the ``merge`` strategy merge by their merge key (lists of scalars as sets), other
lists are replaced; ``$patch: replace|delete`` on maps and list items,
``$deleteFromPrimitiveList/<field>``, ``$setElementOrder/<field>`` and ``$retainKeys``
(strategy ``merge,retainKeys``) as upstream does, including its ordering rules
(``normalizeElementOrder``; Go's ``sort.SliceStable`` is insertion sort up to 20 items, which
is what :func:`_stable_sort` does for every length).

Errors are :class:`SmpError` with the HTTP code kube-apiserver answers
(staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go
``interpretStrategicMergePatchError``: 400 for malformed directives, 422 for lists of lists,
500 for the rest) and upstream's messages. Inputs are not mutated.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from informers.errors import StatusError
from informers.testing import status
from informers.testing.merge_schema import MergeSchemas, Shape
from informers.testing.resources import ResourceType

__all__ = ["SmpError", "strategic_merge", "strategic_patch"]

_MARKER = "$patch"
_RETAIN = "$retainKeys"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList"
_SET_ORDER = "$setElementOrder"

BAD_PRIMITIVE = "invalid patch format of primitive list"
BAD_RETAIN = "invalid patch format of retainKeys"
BAD_ORDER = "invalid patch format of setElementOrder list"
NO_LIST_OF_LISTS = "lists of lists are not supported"


class SmpError(Exception):
    """A strategic merge patch that cannot be applied; ``code`` is kube-apiserver's answer."""

    def __init__(self, message: str, code: int = 500) -> None:
        super().__init__(message)
        self.code = code


def _go_format(value: Any) -> str:
    """``fmt``'s ``%v`` of a decoded JSON value: ``map[k:v]`` with sorted keys, ``[a b]``."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, list):
        return "[" + " ".join(_go_format(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_format(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _type_name(value: Any) -> str:
    """Go's ``reflect.TypeOf`` name of a decoded JSON value."""
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "<nil>"


def _bad_arg(expected: str, actual: Any) -> SmpError:
    return SmpError(f"expected a {expected}, but received a {_type_name(actual)}")


def _no_merge_key(item: dict[str, Any], key: str) -> SmpError:
    return SmpError(f"map: {_go_format(item)} does not contain declared merge key: {key}")


def strategic_merge(original: dict[str, Any], patch: dict[str, Any], shape: Shape) -> Any:
    """``original`` with ``patch`` applied by ``shape``'s strategies (new values)."""
    return _merge_map(copy.deepcopy(original), copy.deepcopy(patch), shape)


def _same(a: Any, b: Any) -> bool:
    """Go's ``==`` on two decoded scalars (types must match)."""
    return type(a) is type(b) and bool(a == b)


def _merge_map(original: dict[str, Any] | None, patch: dict[str, Any], shape: Shape) -> Any:
    if _MARKER in patch:
        directive = patch[_MARKER]
        if directive == "replace":
            del patch[_MARKER]
            return patch
        if directive == "delete":
            return {}
        raise SmpError(f"unknown patch type: {_go_format(directive)} in map: {_go_format(patch)}")
    if original is None:
        original = {}
    _apply_retain_keys(original, patch)
    _merge_set_element_order(original, patch, shape)
    for key, patch_value in list(patch.items()):
        is_delete_list = False
        if key.startswith(_DELETE_PRIMITIVE):
            key = _extract_key(key, _DELETE_PRIMITIVE, BAD_PRIMITIVE)
            is_delete_list = True
        if patch_value is None:
            original.pop(key, None)
            continue
        if key not in original or type(original[key]) is not type(patch_value):
            if not is_delete_list:
                _discard_nulls(patch_value)
                kept, keep = _remove_directives(patch_value)
                if keep:
                    original[key] = kept
                else:
                    original.pop(key, None)
            continue
        child = shape.child(key)
        strategy = _strategy(child.strategy)
        if isinstance(patch_value, dict):
            if strategy == "replace":
                original[key] = patch_value
            else:
                original[key] = _merge_map(original[key], patch_value, child)
        elif isinstance(patch_value, list):
            original[key] = _merge_slice_handler(original[key], patch_value, child, strategy,
                                                 is_delete_list)
        else:
            kept, keep = _remove_directives(patch_value)
            if keep:
                original[key] = kept
            else:
                original.pop(key, None)
    return original


def _strategy(strategies: str) -> str:
    """``extractRetainKeysPatchStrategy``: the strategy besides ``retainKeys``."""
    parts = [part for part in strategies.split(",") if part] if strategies else []
    if len(parts) > 2:
        raise SmpError(f"unexpected patch strategy: {strategies}")
    if len(parts) == 2:
        if "retainKeys" not in parts:
            raise SmpError(f"unexpected patch strategy: {strategies}")
        return parts[0] if parts[1] == "retainKeys" else parts[1]
    if parts and parts[0] == "retainKeys":
        return ""
    return parts[0] if parts else ""


def _extract_key(key: str, prefix: str, error: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise SmpError(error, 400)
    return rest


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if _RETAIN not in patch:
        return
    retain = patch.pop(_RETAIN)
    if not isinstance(retain, list):
        raise SmpError(BAD_RETAIN, 400)
    keep = {json_key(v) for v in retain}
    for key, value in patch.items():
        if value is None or key.startswith(_DELETE_PRIMITIVE) or key.startswith(_SET_ORDER):
            continue
        if json_key(key) not in keep:
            raise SmpError(BAD_RETAIN, 400)
    for key in list(original):
        if json_key(key) not in keep:
            del original[key]


def json_key(value: Any) -> tuple[str, Any]:
    """A hashable identity of a decoded scalar that keeps Go's type distinction."""
    return (type(value).__name__, value if not isinstance(value, (dict, list)) else repr(value))


def _merge_set_element_order(original: dict[str, Any], patch: dict[str, Any],
                             shape: Shape) -> None:
    """``mergePatchIntoOriginal``: the ``$setElementOrder/<field>`` directives."""
    for key in [k for k in patch if k.startswith(_SET_ORDER)]:
        order = patch.pop(key)
        if not isinstance(order, list):
            raise _bad_arg("[]interface {}", order)
        field = _extract_key(key, _SET_ORDER, BAD_ORDER)
        original_list = original.get(field)
        patch_list = patch.get(field)
        found_original, found_patch = field in original, field in patch
        if found_original and not isinstance(original_list, list):
            raise _bad_arg("[]interface {}", original_list)
        if found_patch and not isinstance(patch_list, list):
            raise _bad_arg("[]interface {}", patch_list)
        child = shape.child(field)
        strategy = _strategy(child.strategy)
        merge_key = child.merge_key
        _validate_order(patch_list or [], order, merge_key)
        if found_original and not found_patch:
            merged = original_list
        elif found_patch and not found_original:
            kept, keep = _remove_directives(patch_list)
            if not keep:
                continue
            merged = kept
        elif found_original and found_patch:
            merged = _merge_slice_handler(original_list, patch_list, child, strategy, False)
        else:
            continue
        assert isinstance(merged, list)
        if not merge_key:
            patch_items, server_only = _partition_primitives(merged, order)
        else:
            patch_items, server_only = _partition_maps(merged, order, merge_key)
        kind = _element_kind(original_list or [], patch_list or [])
        original[field] = _normalize_order(patch_items, server_only, order, original_list or [],
                                           merge_key, kind)
        patch.pop(field, None)


def _validate_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    if not order or not patch_list:
        return
    items = _split_deletes(patch_list)[0] if merge_key else patch_list
    p = o = 0
    while p < len(items) and o < len(order):
        if isinstance(items[p], dict) and _MARKER in items[p]:
            p += 1
            continue
        if _key_equal(items[p], order[o], merge_key):
            p += 1
        o += 1
    if p < len(items) and o >= len(order):
        raise SmpError(f"The order in patch list:\n{_go_format(patch_list)}\n doesn't match "
                       f"{_SET_ORDER} list:\n{_go_format(order)}\n")


def _key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _same(left, right)
    if not isinstance(left, dict):
        raise _bad_arg("map[string]interface {}", left)
    if not isinstance(right, dict):
        raise _bad_arg("map[string]interface {}", right)
    if merge_key not in left:
        raise _no_merge_key(left, merge_key)
    if merge_key not in right:
        raise _no_merge_key(right, merge_key)
    return _same(left[merge_key], right[merge_key])


def _remove_directives(value: Any) -> tuple[Any, bool]:
    if isinstance(value, dict):
        if _MARKER in value:
            return None, False
        for key in list(value):
            kept, keep = _remove_directives(value[key])
            if keep:
                value[key] = kept
            else:
                del value[key]
        return value, True
    if isinstance(value, list):
        result = []
        for item in value:
            kept, keep = _remove_directives(item)
            if keep:
                result.append(kept)
        return result, True
    return value, True


def _discard_nulls(value: Any) -> None:
    if isinstance(value, dict):
        for key in list(value):
            if value[key] is None:
                del value[key]
            else:
                _discard_nulls(value[key])
    elif isinstance(value, list):
        for item in value:
            _discard_nulls(item)


def _merge_slice_handler(original: Any, patch: Any, shape: Shape, strategy: str,
                         is_delete_list: bool) -> list[Any]:
    if not isinstance(original, list):
        raise _bad_arg("[]interface {}", original)
    if not isinstance(patch, list):
        raise _bad_arg("[]interface {}", patch)
    if strategy == "merge" or is_delete_list:
        return _merge_slice(original, patch, shape, shape.merge_key, is_delete_list)
    return patch


def _element_kind(*lists: list[Any]) -> str:
    """``sliceElementType``: ``map`` or ``scalar`` (all items of one Go type)."""
    previous: str | None = None
    for items in lists:
        for item in items:
            current = _type_name(item)
            if previous is None:
                previous = current
                if isinstance(item, list):
                    raise SmpError(NO_LIST_OF_LISTS, 422)
            elif previous != current:
                raise SmpError("list element types are not identical: "
                               + _go_format(list(lists)))
    if previous is None:
        raise SmpError("no elements in any of the given slices")
    return "map" if previous.startswith("map") else "scalar"


def _merge_slice(original: list[Any], patch: list[Any], shape: Shape, merge_key: str,
                 is_delete_list: bool) -> list[Any]:
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    if kind != "map":
        if is_delete_list:
            return [v for v in original if not any(_same(v, d) for d in patch)]
        merged = _dedupe(original + patch)
    else:
        if not merge_key:
            raise SmpError(f"cannot merge lists without merge key for {shape.kind}")
        view = _GoSlice(original)
        plain = _merge_special(view, patch, merge_key)
        if plain is None:  # $patch: replace
            original, patch = view.items(), []
        else:
            original, patch = view.items(), plain
            _merge_items(view, plain, merge_key, shape.item())
        merged = view.items()
    if not merge_key:
        patch_items, server_only = _partition_primitives(merged, patch)
    else:
        patch_items, server_only = _partition_maps(merged, patch, merge_key)
    return _normalize_order(patch_items, server_only, patch, original, merge_key, kind)


def _dedupe(items: list[Any]) -> list[Any]:
    """``deduplicateScalars`` (its swap-with-last order included)."""
    s = list(items)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if _same(s[i], s[j]):
                s[j] = s[length]
                s = s[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


class _GoSlice:
    """A Go slice over a backing array shared with the caller's view of the list: upstream's
    ``deleteMatchingEntries`` (``append(s[:i], s[i+1:]...)``) shifts the caller's elements and
    its later ``append`` writes into the freed slot, and ``mergePatchIntoOriginal`` orders by
    that view afterwards (slices from ``ToUnstructured`` have no spare capacity)."""

    def __init__(self, backing: list[Any]) -> None:
        self.backing = backing
        self.n = len(backing)

    def items(self) -> list[Any]:
        return self.backing[: self.n]

    def delete(self, index: int) -> None:
        self.backing[index : self.n - 1] = self.backing[index + 1 : self.n]
        self.n -= 1

    def append(self, value: Any) -> None:
        if self.n < len(self.backing):
            self.backing[self.n] = value
        else:  # a new array: the caller's view no longer changes
            self.backing = [*self.backing[: self.n], value]
        self.n += 1


def _merge_special(original: _GoSlice, patch: list[Any], merge_key: str) -> list[Any] | None:
    """``mergeSliceWithSpecialElements``: ``$patch: delete`` items delete from ``original`` (in
    place); the plain items, or ``None`` when ``$patch: replace`` makes them the whole list
    (returned then as the only element of a list, see the caller)."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if not isinstance(item, dict) or _MARKER not in item:
            plain.append(item)
            continue
        directive = item[_MARKER]
        if directive == "delete":
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            while (index := _find(original.items(), merge_key, item[merge_key])) >= 0:
                original.delete(index)
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise SmpError("merging lists cannot yet be specified in the patch")
        else:
            raise SmpError(f"unknown patch type: {_go_format(directive)} in map: "
                           f"{_go_format(item)}")
    if replace:
        original.backing, original.n = plain, len(plain)
        return None
    return plain


def _find(items: list[Any], key: str, value: Any) -> int:
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise SmpError(f"value for key {index} is not a map")
        if key in item and _same(item[key], value):
            return index
    return -1


def _merge_items(original: _GoSlice, patch: list[Any], merge_key: str,
                 item_shape: Shape) -> None:
    """``mergeSliceWithoutSpecialElements``, in place on ``original``."""
    for item in patch:
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        index = _find(original.items(), merge_key, item[merge_key])
        if index >= 0:
            original.backing[index] = _merge_map(original.backing[index], item, item_shape)
        else:
            original.append(item)


def _partition_primitives(items: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    inside = [v for v in items if any(_same(v, b) for b in by)]
    outside = [v for v in items if not any(_same(v, b) for b in by)]
    return inside, outside


def _partition_maps(items: list[Any], by: list[Any],
                    merge_key: str) -> tuple[list[Any], list[Any]]:
    inside: list[Any] = []
    outside: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise _bad_arg("map[string]interface {}", item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        (inside if _find(by, merge_key, item[merge_key]) >= 0 else outside).append(item)
    return inside, outside


def _index(order: list[Any], value: Any, merge_key: str, kind: str) -> int:
    def get(item: Any) -> Any:
        if kind == "map":
            return item.get(merge_key) if isinstance(item, dict) else None
        return item

    wanted = get(value)
    for index, item in enumerate(order):
        if _same(wanted, get(item)):
            return index
    return -1


def _split_deletes(items: list[Any]) -> tuple[list[Any], list[Any]]:
    keep: list[Any] = []
    deleted: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise _bad_arg("map[string]interface {}", item)
        (deleted if item.get(_MARKER) == "delete" else keep).append(item)
    return keep, deleted


def _stable_sort(items: list[Any], less: Callable[[Any, Any], bool]) -> list[Any]:
    """Go's ``insertionSort`` (what ``sort.SliceStable`` runs on up to 20 items)."""
    s = list(items)
    for i in range(1, len(s)):
        j = i
        while j > 0 and less(s[j], s[j - 1]):
            s[j], s[j - 1] = s[j - 1], s[j]
            j -= 1
    return s


def _normalize_slice(items: list[Any], order: list[Any], merge_key: str,
                     kind: str) -> list[Any]:
    deleted: list[Any] = []
    if kind == "map":
        for item in [*items, *order]:
            if not isinstance(item, dict):
                raise _bad_arg("map[string]interface {}", item)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
        items, deleted = _split_deletes(items)

    def less(a: Any, b: Any) -> bool:
        ia = _index(order, a, merge_key, kind)
        if ia >= 0:
            ib = _index(order, b, merge_key, kind)
            if ib >= 0:
                return ia < ib
        return True

    return _stable_sort(items, less) + deleted


def _normalize_order(patch_items: list[Any], server_only: list[Any], patch_order: list[Any],
                     server_order: list[Any], merge_key: str, kind: str) -> list[Any]:
    """``normalizeElementOrder`` then ``mergeSortedSlice``."""
    patch_items = _normalize_slice(patch_items, patch_order, merge_key, kind)
    server_only = _normalize_slice(server_only, server_order, merge_key, kind)
    result: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(patch_items):
        if i >= len(server_only):
            result.append(patch_items[j])
            j += 1
        elif j >= len(patch_items):
            result.append(server_only[i])
            i += 1
        else:
            li = _index(server_order, server_only[i], merge_key, kind)
            ri = _index(server_order, patch_items[j], merge_key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                result.append(server_only[i])
                i += 1
            else:
                result.append(patch_items[j])
                j += 1
    return result



def strategic_patch(rt: ResourceType, target: dict[str, Any], patch: Any) -> Any:
    """A strategic merge patch of a built-in object as kube-apiserver's PATCH handler applies
    it: a non-object body is 400 ``BadRequest``; :class:`SmpError` becomes the
    ``StatusError`` of its code (400 ``BadRequest``, 422 ``Invalid`` with the generic message
    and the error as its cause, else 500 with reason ``""`` as ``ErrorToAPIStatus`` writes a
    plain error)."""
    if not isinstance(patch, dict):
        raise status.bad_request("json: cannot unmarshal array into Go value of type "
                                 "map[string]interface {}"
                                 if isinstance(patch, list) else "invalid JSON document")
    try:
        return strategic_merge(target, patch, MergeSchemas.shared().shape(rt))
    except SmpError as err:
        if err.code == 400:
            raise status.bad_request(str(err)) from None
        body = status.status_dict(err.code, "Invalid" if err.code == 422 else "", str(err))
        if not body["reason"]:
            del body["reason"]  # StatusReasonUnknown is "" and omitted
        raise StatusError(body) from None
