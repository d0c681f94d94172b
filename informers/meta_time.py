"""Formats and parses the API's timestamps: metav1.Time, metav1.MicroTime and Unix nanoseconds.

* ``metav1.Time`` marshals as RFC 3339 in UTC with whole seconds: ``2026-01-01T00:00:00Z``
  (apimachinery ``Time.MarshalJSON``, layout ``time.RFC3339``).
* ``metav1.MicroTime`` marshals with exactly six fraction digits:
  ``2026-01-01T00:00:00.000000Z`` (layout ``RFC3339Micro``).

Timestamps come from :meth:`informers.clock.Clock.wall` so a fake clock controls them.
"""

from __future__ import annotations

import datetime
import re

__all__ = ["format_micro_time", "format_time", "parse_time", "unix_nano"]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_FRACTION = re.compile(r"\.(\d+)")


def _utc(t: datetime.datetime) -> datetime.datetime:
    if t.tzinfo is None:
        return t.replace(tzinfo=datetime.timezone.utc)
    return t.astimezone(datetime.timezone.utc)


def format_time(t: datetime.datetime) -> str:
    """metav1.Time's JSON: ``2026-01-01T00:00:00Z`` (UTC, fraction dropped)."""
    return _utc(t).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(t: datetime.datetime) -> str:
    """metav1.MicroTime's JSON: ``2026-01-01T00:00:00.000000Z`` (UTC, six fraction digits)."""
    return _utc(t).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: object) -> datetime.datetime | None:
    """Parse a Time or MicroTime string (any fraction length, ``Z`` or an offset) to UTC.

    Returns ``None`` for ``None``, ``""`` or text that does not parse.
    """
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    # fromisoformat (3.10) accepts only 3 or 6 fraction digits: pad or cut to 6.
    text = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return _utc(parsed)


def unix_nano(t: datetime.datetime) -> int:
    """Nanoseconds since the Unix epoch, computed exactly (Go ``Time.UnixNano``)."""
    delta = _utc(t) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
