"""A CRD's version order and deprecation warnings (informers.testing.crd_versions), with the
upstream cases of ``k8s.io/apimachinery/pkg/version/helpers_test.go``."""

from __future__ import annotations

import pytest

from informers.testing.crd_versions import compare_versions, deprecation_warnings


@pytest.mark.parametrize(("v1", "v2", "expected_greater"), [
    ("v1", "v2", False),
    ("v2", "v1", True),
    ("v10", "v2", True),
    ("v1", "v2alpha1", True),
    ("v1", "v2beta1", True),
    ("v1alpha2", "v1alpha1", True),
    ("v1beta1", "v2alpha3", True),
    ("v1alpha10", "v1alpha2", True),
    ("v1beta10", "v1beta2", True),
    ("foo", "v1beta2", False),
    ("bar", "foo", True),
    ("version1", "version2", True),  # Non kube-like versions are sorted alphabetically
    ("version1", "version10", True),  # Non kube-like versions are sorted alphabetically
])
def test_TestCompareKubeAwareVersionStrings(v1, v2, expected_greater):
    assert (compare_versions(v1, v2) > 0) is expected_greater


def test_the_default_warning_names_the_newest_newer_served_version_not_deprecated():
    """``defaultDeprecationWarning``: only served, non-deprecated versions newer than the
    deprecated one count; none leaves the ``; use ...`` out."""
    def spec(*versions: dict) -> dict:
        return {"group": "example.com", "names": {"kind": "Widget"}, "versions": list(versions)}

    v = {"served": True, "deprecated": False}
    alpha = {"name": "v1alpha1", "served": True, "deprecated": True}
    assert deprecation_warnings(spec(alpha, {**v, "name": "v1beta1"}, {**v, "name": "v1"},
                                     {**v, "name": "v2", "served": False}), alpha) == (
        "example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget",)
    assert deprecation_warnings(spec(alpha, {**v, "name": "v1", "deprecated": True}), alpha) == (
        "example.com/v1alpha1 Widget is deprecated",)
    assert deprecation_warnings(spec(alpha), {**alpha, "deprecationWarning": "gone soon"}) == (
        "gone soon",)
    assert deprecation_warnings(spec(alpha), {"name": "v1", "served": True}) == ()
