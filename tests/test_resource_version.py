"""informers.resource_version: apimachinery resourceversion_test.go ported."""

from __future__ import annotations

import pytest

from informers.resource_version import InvalidResourceVersionError, compare_resource_version

BIG_LESS = "9" * 50
BIG = "1" + "0" * 50
BIG_EQ = "12345678901234567890123456789012345678901234567890"


@pytest.mark.parametrize(
    ("name", "a", "b", "expected"),
    [
        ("a less than b", "100", "200", -1),
        ("a is zero, invalid", "0", "1", None),
        ("both zero", "0", "0", None),
        ("a greater than b", "200", "100", 1),
        ("b is 0, invalid", "1", "0", None),
        ("a equal to b small", "1", "1", 0),
        ("a equal to b", "100", "100", 0),
        ("a shorter than b", "99", "100", -1),
        ("a longer than b", "100", "99", 1),
        ("a with leading zero", "0100", "100", None),
        ("b with leading zero", "100", "0100", None),
        ("a empty", "", "100", None),
        ("b empty", "100", "", None),
        ("a non-digit", "100a", "100", None),
        ("b non-digit", "100", "100a", None),
        ("large int a less than b", BIG_LESS, BIG, -1),
        ("large int a greater than b", BIG, BIG_LESS, 1),
        ("large int a equal to b", BIG_EQ, BIG_EQ, 0),
    ],
)
def test_CompareResourceVersion(name, a, b, expected):
    if expected is None:
        with pytest.raises(InvalidResourceVersionError, match="resource version is not well"):
            compare_resource_version(a, b)
    else:
        assert compare_resource_version(a, b) == expected


def test_non_ascii_digits_are_not_well_formed():
    with pytest.raises(InvalidResourceVersionError):
        compare_resource_version("١٢", "12")
