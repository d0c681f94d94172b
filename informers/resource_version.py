"""Compares resourceVersions, as far as Kubernetes allows (apimachinery
``pkg/util/resourceversion``).

resourceVersions are opaque strings. Since Kubernetes 1.35 the API guarantees more for
well-formed ones (KEP-5504): a resourceVersion of one resource that is a decimal integer without
leading zeros, other than ``0``, may be compared with another of the *same resource* as a number
(``CompareResourceVersion``). Anything else (``""``, ``"0"``, leading zeros, other characters, an
aggregated API server's own format) cannot be compared: :func:`compare_resource_version` raises.
"""

from __future__ import annotations

__all__ = ["InvalidResourceVersionError", "compare_resource_version", "is_well_formed"]


class InvalidResourceVersionError(ValueError):
    """A resourceVersion that cannot be compared (apimachinery ``InvalidResourceVersion``)."""

    def __init__(self, rv: str) -> None:
        super().__init__(f"resource version is not well formed: {rv}")
        self.rv = rv


def is_well_formed(rv: str) -> bool:
    """A non-empty decimal integer without a leading zero (so never ``"0"``)."""
    return bool(rv) and rv[0] != "0" and rv.isascii() and rv.isdigit()


def compare_resource_version(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is older than, equal to or newer than ``b`` (apimachinery
    ``CompareResourceVersion``). Meaningful only for two resourceVersions of the same resource.

    Raises:
        InvalidResourceVersionError: either is not well formed (see :func:`is_well_formed`).
    """
    if not is_well_formed(a):
        raise InvalidResourceVersionError(a)
    if not is_well_formed(b):
        raise InvalidResourceVersionError(b)
    if len(a) != len(b):
        return -1 if len(a) < len(b) else 1
    return (a > b) - (a < b)
