"""Parses IPs as Kubernetes does: ``k8s.io/utils/net.ParseIPSloppy``.

``ParseIPSloppy`` is Go 1.16's ``net.ParseIP`` (``k8s.io/utils/internal/third_party/forked/
golang/net/ip.go``), kept because Go 1.17 started rejecting leading zeros that stored objects
may hold: a decimal IPv4 octet may have any number of leading zeros (``010.1.2.3`` is
``10.1.2.3``, not octal) and an IPv6 group any number of hex digits as long as its value fits in
16 bits (``02000::4`` is ``2000::4``). No zones (``%eth0``), no CIDR suffix.
"""

from __future__ import annotations

import functools
import ipaddress

__all__ = ["parse_ip_sloppy"]

_BIG = 0xFFFFFF  # Go's ``big``: the parsers give up on numbers this large
_V4_IN_V6_PREFIX = bytes(10) + b"\xff\xff"
_HEX = {c: int(c, 16) for c in "0123456789abcdefABCDEF"}


def _dtoi(s: str, pos: int) -> tuple[int, int]:
    """Go ``dtoi`` from ``pos``: (value, end); end == pos when there is no digit or it is too
    big (then value is ``_BIG``)."""
    n, i = 0, pos
    while i < len(s) and "0" <= s[i] <= "9":
        n = n * 10 + ord(s[i]) - 48
        if n >= _BIG:
            return _BIG, pos
        i += 1
    return n, i


def _xtoi(s: str, pos: int) -> tuple[int, int]:
    """Go ``xtoi`` from ``pos``: (value, end); end == pos on failure."""
    n, i = 0, pos
    while i < len(s) and s[i] in _HEX:
        n = n * 16 + _HEX[s[i]]
        if n >= _BIG:
            return 0, pos
        i += 1
    return n, i


def _parse_ipv4(s: str, pos: int = 0) -> bytes | None:
    """Go ``parseIPv4`` (sloppy) of ``s[pos:]``: the four octets, or ``None``."""
    out = bytearray(4)
    for i in range(4):
        if pos >= len(s):
            return None
        if i > 0:
            if s[pos] != ".":
                return None
            pos += 1
        n, end = _dtoi(s, pos)
        if end == pos or n > 0xFF:
            return None
        out[i] = n
        pos = end
    return bytes(out) if pos == len(s) else None


def _parse_ipv6(s: str) -> bytes | None:
    """Go ``parseIPv6`` (sloppy): the 16 bytes, or ``None``."""
    ip = bytearray(16)
    ellipsis = -1
    pos = 0
    if s.startswith("::"):
        ellipsis = 0
        pos = 2
        if pos == len(s):
            return bytes(ip)
    i = 0
    while i < 16:
        n, end = _xtoi(s, pos)
        if end == pos or n > 0xFFFF:
            return None
        if end < len(s) and s[end] == ".":  # a trailing IPv4 part
            if (ellipsis < 0 and i != 12) or i + 4 > 16:
                return None
            ip4 = _parse_ipv4(s, pos)
            if ip4 is None:
                return None
            ip[i:i + 4] = ip4
            pos = len(s)
            i += 4
            break
        ip[i], ip[i + 1] = n >> 8, n & 0xFF
        i += 2
        pos = end
        if pos == len(s):
            break
        if s[pos] != ":" or pos + 1 == len(s):
            return None
        pos += 1
        if s[pos] == ":":
            if ellipsis >= 0:
                return None
            ellipsis = i
            pos += 1
            if pos == len(s):
                break
    if pos != len(s):
        return None
    if i < 16:
        if ellipsis < 0:
            return None
        n = 16 - i
        ip[ellipsis + n:16] = ip[ellipsis:i]
        ip[ellipsis:ellipsis + n] = bytes(n)
    elif ellipsis >= 0:
        return None
    return bytes(ip)


@functools.lru_cache(maxsize=65536)
def parse_ip_sloppy(text: str) -> tuple[int, str] | None:
    """(family 4 or 6, Go's ``net.IP.String()``) of what ``ParseIPSloppy`` reads from ``text``,
    or ``None`` when it reads nothing.

    The family is Go's: an IPv4-mapped IPv6 address (``::ffff:1.2.3.4``) is IPv4 and prints as
    a dotted quad; IPv6 prints in RFC 5952 form (lower case, the first longest run of two or
    more zero groups as ``::``).
    """
    for c in text:
        if c == ".":
            v4 = _parse_ipv4(text)
            return None if v4 is None else (4, ".".join(map(str, v4)))
        if c == ":":
            v6 = _parse_ipv6(text)
            if v6 is None:
                return None
            if v6.startswith(_V4_IN_V6_PREFIX):
                return 4, ".".join(map(str, v6[12:]))
            return 6, ipaddress.IPv6Address(v6).compressed
    return None
