"""Tests for informers.meta_time."""

from __future__ import annotations

import datetime

import pytest

from informers.meta_time import format_micro_time, format_time, parse_time, unix_nano

UTC = datetime.timezone.utc


def test_format_time_drops_fraction_and_converts_to_utc():
    t = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert format_time(t) == "2026-01-02T03:04:05Z"
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    assert format_time(t.astimezone(plus_two)) == "2026-01-02T03:04:05Z"
    assert format_time(datetime.datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"


def test_format_micro_time_has_six_digits():
    assert format_micro_time(datetime.datetime(2026, 1, 1, tzinfo=UTC)) == (
        "2026-01-01T00:00:00.000000Z"
    )
    assert format_micro_time(datetime.datetime(2026, 1, 1, 0, 0, 0, 1500, tzinfo=UTC)) == (
        "2026-01-01T00:00:00.001500Z"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-01T00:00:00Z", datetime.datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01T00:00:00.000000Z", datetime.datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01T00:00:00.5Z", datetime.datetime(2026, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)),
        ("2026-01-01T00:00:00.123456789Z",
         datetime.datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
        ("2026-01-01T02:00:00+02:00", datetime.datetime(2026, 1, 1, tzinfo=UTC)),
        ("", None),
        (None, None),
        ("yesterday", None),
        (17, None),
    ],
)
def test_parse_time(text, expected):
    assert parse_time(text) == expected


def test_round_trip_and_unix_nano():
    t = datetime.datetime(2026, 1, 1, 0, 0, 2, 500000, tzinfo=UTC)
    assert parse_time(format_micro_time(t)) == t
    assert unix_nano(datetime.datetime(1970, 1, 1, tzinfo=UTC)) == 0
    assert unix_nano(t) == 1_767_225_602_500_000_000
    assert unix_nano(datetime.datetime(1970, 1, 1, 0, 0, 1)) == 1_000_000_000
