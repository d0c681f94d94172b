"""Kubernetes name rules: DNS-1123 labels and subdomains, DNS-1035 labels.

The patterns and length limits of apimachinery ``pkg/util/validation/validation.go``
(``IsDNS1123Label``, ``IsDNS1123Subdomain``, ``IsDNS1035Label``), shared by the label selector
parser, the event recorder, the embedded API server and the kubelet adapter's validation.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "DNS1035_LABEL_MAX_LENGTH",
    "DNS1035_LABEL_RE",
    "DNS1123_LABEL_MAX_LENGTH",
    "DNS1123_LABEL_RE",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "DNS1123_SUBDOMAIN_RE",
    "is_dns1123_label",
    "is_dns1123_subdomain",
]

DNS1123_LABEL_MAX_LENGTH: Final = 63
"""apimachinery ``DNS1123LabelMaxLength``."""
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
"""apimachinery ``DNS1123SubdomainMaxLength``."""
DNS1035_LABEL_MAX_LENGTH: Final = 63
"""apimachinery ``DNS1035LabelMaxLength``."""

_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_RE: Final = re.compile(_LABEL)
"""A DNS-1123 label (match with ``fullmatch``)."""
DNS1123_SUBDOMAIN_RE: Final = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
"""A DNS-1123 subdomain (match with ``fullmatch``)."""
DNS1035_LABEL_RE: Final = re.compile(r"[a-z](?:[-a-z0-9]*[a-z0-9])?")
"""A DNS-1035 label (match with ``fullmatch``)."""


def is_dns1123_label(value: object) -> bool:
    """True for a string that is a valid DNS-1123 label (at most 63 characters)."""
    return (isinstance(value, str) and len(value) <= DNS1123_LABEL_MAX_LENGTH
            and DNS1123_LABEL_RE.fullmatch(value) is not None)


def is_dns1123_subdomain(value: object) -> bool:
    """True for a string that is a valid DNS-1123 subdomain (at most 253 characters)."""
    return (isinstance(value, str) and len(value) <= DNS1123_SUBDOMAIN_MAX_LENGTH
            and DNS1123_SUBDOMAIN_RE.fullmatch(value) is not None)
