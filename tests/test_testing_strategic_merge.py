"""Strategic merge patch (informers.testing.strategic_merge) held to upstream's cases.

``test_strategic_merge_patch`` is the patch-application half of ``TestStrategicMergePatch``
(k8s.io/apimachinery@v0.36.3/pkg/util/strategicpatch/patch_test.go,
``strategicMergePatchRawTestCases``, extracted by tools/api-schema/smp_cases.py) over the
``MergeItem`` test struct's tags; the HTTP behaviour on both servers is in
tests/test_testing_smp_parity.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from informers.testing.merge_schema import Shape
from informers.testing.strategic_merge import SmpError, strategic_merge

CASES = json.loads((Path(__file__).with_name("strategicpatch_cases.json")).read_text())["cases"]


def _merge_item() -> Shape:
    """patch_test.go's ``MergeItem`` and ``RetainKeysMergeItem`` as shapes (their tags)."""
    scalar = Shape("scalar")
    item = Shape("struct")
    merging = Shape("list", elem=item, strategy="merge", merge_key="name")
    ints = Shape("list", elem=scalar, strategy="merge")
    retain = Shape("struct", fields={
        "name": scalar, "value": scalar, "other": scalar,
        "simpleMap": Shape("map", elem=scalar), "mergingIntList": ints,
        "mergingList": merging, "nonMergingList": Shape("list", elem=item)}, strategy="retainKeys")
    item.fields.update({
        "name": scalar, "value": scalar, "other": scalar, "mergingList": merging,
        "nonMergingList": Shape("list", elem=item), "mergingIntList": ints,
        "nonMergingIntList": Shape("list", elem=scalar),
        # a *MergeItem the cases fill with lists: upstream looks up its element type
        "mergeItemPtr": Shape("list", elem=item, strategy="merge", merge_key="name"),
        "simpleMap": Shape("map", elem=scalar), "replacingItem": Shape("any", strategy="replace"),
        "jsonItem": Shape("any"), "retainKeysMap": retain,
        "retainKeysMergingList": Shape("list", elem=item, strategy="merge,retainKeys",
                                       merge_key="name"),
    })
    return item


MERGE_ITEM = _merge_item()


def _applications() -> list[Any]:
    params = []
    for case in CASES:
        if "TwoWay" in case and "Original" in case:
            expected = case.get("TwoWayResult") or case.get("Modified")
            params.append(pytest.param(case["Original"], case["TwoWay"], expected,
                                       id=case["description"] + "/TwoWay"))
        if "ThreeWay" in case and "Result" in case:
            params.append(pytest.param(case["Current"], case["ThreeWay"], case["Result"],
                                       id=case["description"] + "/ThreeWay"))
    return params


@pytest.mark.parametrize(("original", "patch", "expected"), _applications())
def test_strategic_merge_patch(original: Any, patch: Any, expected: Any) -> None:
    assert strategic_merge(original or {}, patch or {}, MERGE_ITEM) == (expected or {})


def test_strategic_merge_patch_does_not_mutate_inputs() -> None:
    original = {"mergingList": [{"name": "a", "value": "1"}]}
    patch = {"mergingList": [{"name": "a", "$patch": "delete"}]}
    snapshot = json.dumps([original, patch])
    assert strategic_merge(original, patch, MERGE_ITEM) == {"mergingList": []}
    assert json.dumps([original, patch]) == snapshot


@pytest.mark.parametrize(("patch", "code", "message"), [
    ({"$patch": "bogus"}, 500, "unknown patch type: bogus in map: map[$patch:bogus]"),
    ({"mergingList": [{"value": "x"}]}, 500,
     "map: map[value:x] does not contain declared merge key: name"),
    ({"$deleteFromPrimitiveListmergingIntList": [1]}, 400,
     "invalid patch format of primitive list"),
    ({"$setElementOrder": [1]}, 400, "invalid patch format of setElementOrder list"),
    ({"retainKeysMap": {"$retainKeys": "name"}}, 400, "invalid patch format of retainKeys"),
    ({"mergingList": [{"name": "a", "$patch": "merge"}]}, 500,
     "merging lists cannot yet be specified in the patch"),
])
def test_strategic_merge_patch_errors(patch: Any, code: int, message: str) -> None:
    original = {"mergingList": [{"name": "a"}], "mergingIntList": [1, 2],
                "retainKeysMap": {"name": "n"}}
    with pytest.raises(SmpError) as caught:
        strategic_merge(original, patch, MERGE_ITEM)
    assert (caught.value.code, str(caught.value)) == (code, message)
