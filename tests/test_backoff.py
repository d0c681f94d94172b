"""Tests for informers.backoff: client-go's reflector backoff, exact numbers."""

from __future__ import annotations

import random

import pytest

from informers.backoff import Backoff
from informers.clock import FakeClock


def test_defaults_are_client_gos():
    b = Backoff(clock=FakeClock())
    assert (b.initial, b.cap, b.factor, b.jitter, b.reset_interval) == (0.8, 30.0, 2.0, 1.0, 120.0)
    assert b.initial_steps == 38  # ceil(30s / 800ms)


def test_base_sequence_without_jitter():
    b = Backoff(jitter=0.0, clock=FakeClock())
    got = [round(b.step(), 6) for _ in range(9)]
    assert got == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0]


def test_jitter_draws_in_d_to_2d_from_the_rng():
    b = Backoff(clock=FakeClock(), rng=random.Random(42))
    got = [b.step() for _ in range(8)]
    r = random.Random(42)
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    assert got == pytest.approx([d + r.random() * d for d in bases], abs=1e-12)
    # Seed 42's first draws, spelled out: 0.6394..., 0.0250..., 0.2750...
    assert got[0] == pytest.approx(0.8 * 1.6394267984578837, abs=1e-12)
    assert got[1] == pytest.approx(1.6 * 1.025010755222667, abs=1e-12)
    assert got[2] == pytest.approx(3.2 * 1.2750293183691193, abs=1e-12)
    for d, v in zip(bases, got, strict=True):
        assert d <= v < 2 * d


def test_resets_after_two_minutes_since_the_last_reset():
    clock = FakeClock()
    b = Backoff(jitter=0.0, clock=clock)
    assert [round(b.step(), 6) for _ in range(3)] == [0.8, 1.6, 3.2]
    clock.step(120.0)  # exactly 2 min: not more than the interval, no reset
    assert round(b.step(), 6) == 6.4
    clock.step(0.001)  # now more than 2 min since construction: reset
    assert [round(b.step(), 6) for _ in range(2)] == [0.8, 1.6]
    clock.step(119.0)  # the reset time moved: 119 s later is still within the interval
    assert round(b.step(), 6) == 3.2
    clock.step(2.0)
    assert round(b.step(), 6) == 0.8


def test_explicit_reset_and_zero_interval():
    clock = FakeClock()
    b = Backoff(jitter=0.0, clock=clock)
    b.step()
    b.step()
    b.reset()
    assert round(b.step(), 6) == 0.8
    flat = Backoff(jitter=0.0, reset_interval=0, clock=clock)
    assert [flat.step() for _ in range(3)] == [0.8, 0.8, 0.8]


def test_custom_parameters():
    b = Backoff(initial=1.0, cap=5.0, factor=3.0, jitter=0.0, clock=FakeClock())
    assert b.initial_steps == 5
    assert [b.step() for _ in range(4)] == [1.0, 3.0, 5.0, 5.0]
    with pytest.raises(ValueError, match="negative duration"):
        Backoff(initial=-1.0)
