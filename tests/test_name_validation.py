"""Tests for informers.name_validation (apimachinery util/validation name rules)."""

from __future__ import annotations

import pytest

from informers.name_validation import (
    DNS1035_LABEL_RE,
    is_dns1123_label,
    is_dns1123_subdomain,
)


@pytest.mark.parametrize(("value", "label", "subdomain"), [
    ("a", True, True),
    ("web-1", True, True),
    ("1abc", True, True),
    ("a.b.c", False, True),
    ("A", False, False),
    ("-a", False, False),
    ("a-", False, False),
    ("a..b", False, False),
    ("a_b", False, False),
    ("", False, False),
    ("a" * 63, True, True),
    ("a" * 64, False, True),
    (".".join(["a" * 63] * 4)[:253], False, True),
    ("a" * 254, False, False),
    (7, False, False),
])
def test_dns1123_label_and_subdomain(value: object, label: bool, subdomain: bool) -> None:
    assert is_dns1123_label(value) is label
    assert is_dns1123_subdomain(value) is subdomain


def test_dns1035_label_starts_with_a_letter() -> None:
    assert DNS1035_LABEL_RE.fullmatch("web-1") is not None
    assert DNS1035_LABEL_RE.fullmatch("1web") is None
