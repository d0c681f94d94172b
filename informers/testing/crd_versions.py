"""A CRD's versions as apiextensions-apiserver orders and announces them: the kube-aware
version order (``k8s.io/apimachinery/pkg/version`` ``CompareKubeAwareVersionStrings``) and
the warnings of a deprecated version (``customresource_handler.go``).

Pure functions of the CRD's ``spec``; thread-safe.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["compare_versions", "deprecation_warnings", "version_priority"]


def deprecation_warnings(spec: dict[str, Any], version: dict[str, Any]) -> tuple[str, ...]:
    """The warnings of requests to ``version`` of a CRD with ``spec``
    (``customresource_handler.go`` ``getOrCreateServingInfoFor``): a deprecated version's
    ``deprecationWarning``, else ``defaultDeprecationWarning``'s ``<group>/<version> <Kind> is
    deprecated``, with ``; use <group>/<version> <Kind>`` naming the highest served,
    non-deprecated version newer than it (kube-aware version order) when there is one."""
    if not version.get("deprecated"):
        return ()
    if version.get("deprecationWarning") is not None:
        return (str(version["deprecationWarning"]),)
    group, kind, name = spec["group"], spec["names"]["kind"], version["name"]
    message = f"{group}/{name} {kind} is deprecated"
    newer = [v["name"] for v in spec["versions"]
             if v.get("served") and not v.get("deprecated")
             and compare_versions(name, v["name"]) < 0]
    if newer:
        message += f"; use {group}/{max(newer, key=version_priority)} {kind}"
    return (message,)


def compare_versions(v1: str, v2: str) -> int:
    """``CompareKubeAwareVersionStrings`` (``k8s.io/apimachinery/pkg/version/helpers.go``):
    positive when ``v1`` is newer. Kube-like names (``v<major>[alpha|beta<minor>]``) order GA
    over beta over alpha, then by major, then by minor, and are newer than any other name;
    other names order alphabetically reversed (``bar`` is newer than ``foo``)."""
    if v1 == v2:
        return 0
    p1, p2 = _parse(v1), _parse(v2)
    if p1 is None or p2 is None:
        if p1 is None and p2 is None:
            return (v1 < v2) - (v1 > v2)  # strings.Compare(v2, v1)
        return -1 if p1 is None else 1
    for a, b in zip(p1, p2, strict=True):
        if a != b:
            return a - b
    return 0


def _parse(version: str) -> tuple[int, int, int] | None:
    """(type, major, minor) of a kube-like version (``parseKubeVersion``; type: alpha 0,
    beta 1, GA 2), else ``None``."""
    found = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if found is None:
        return None
    level = {"alpha": 0, "beta": 1, None: 2}[found.group(2)]
    return (level, int(found.group(1)), int(found.group(3) or 0))


version_priority = functools.cmp_to_key(compare_versions)
"""A sort key of :func:`compare_versions` (greater is newer)."""
