"""Tests for informers.clock: the fake clock must control every kind of wait."""

from __future__ import annotations

import datetime
import threading

import pytest

from informers.clock import REAL_CLOCK, FakeClock


def _in_thread(fn):  # type: ignore[no-untyped-def]
    result: dict[str, object] = {}

    def run() -> None:
        result["value"] = fn()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, result


def test_fake_clock_moves_only_on_step() -> None:
    clock = FakeClock(start=100.0)
    assert clock.now() == 100.0
    clock.step(2.5)
    assert clock.now() == 102.5
    clock.set(110.0)
    assert clock.now() == 110.0
    assert clock.wall() == datetime.datetime(2026, 1, 1, 0, 0, 10, tzinfo=datetime.timezone.utc)


def test_fake_clock_rejects_going_backwards() -> None:
    clock = FakeClock(start=5.0)
    with pytest.raises(ValueError, match="backwards"):
        clock.step(-1)
    with pytest.raises(ValueError, match="before now"):
        clock.set(4.0)


def test_sleep_wakes_exactly_at_its_deadline() -> None:
    clock = FakeClock()
    t, result = _in_thread(lambda: clock.sleep(10.0))
    assert clock.wait_for_waiters(1)
    assert clock.next_deadline() == 10.0
    clock.step(9.999)
    t.join(0.05)
    assert t.is_alive()
    clock.step(0.001)
    t.join(2)
    assert not t.is_alive()
    assert result["value"] is False
    assert not clock.has_waiters()


def test_sleep_returns_true_when_stopped() -> None:
    clock = FakeClock()
    stop = threading.Event()
    t, result = _in_thread(lambda: clock.sleep(1000.0, stop))
    assert clock.wait_for_waiters(1)
    stop.set()
    t.join(2)
    assert result["value"] is True
    assert clock.now() == 0.0


def test_wait_event_times_out_on_fake_time_and_sees_set_events() -> None:
    clock = FakeClock()
    event = threading.Event()
    t, result = _in_thread(lambda: clock.wait_event(event, 5.0))
    assert clock.wait_for_waiters(1)
    clock.step(5.0)
    t.join(2)
    assert result["value"] is False

    t, result = _in_thread(lambda: clock.wait_event(event, 5.0))
    assert clock.wait_for_waiters(1)
    event.set()
    t.join(2)
    assert result["value"] is True
    assert clock.wait_event(event, 0) is True


def test_wait_condition_wakes_on_step_and_on_notify() -> None:
    clock = FakeClock()
    cond = threading.Condition()
    woke = threading.Event()

    def waiter() -> None:
        with cond:
            clock.wait_condition(cond, 3.0)
        woke.set()

    threading.Thread(target=waiter, daemon=True).start()
    assert clock.wait_for_waiters(1)
    clock.step(2.0)
    assert not woke.wait(0.05)
    clock.step(1.0)
    assert woke.wait(2)

    woke.clear()
    threading.Thread(target=waiter, daemon=True).start()
    assert clock.wait_for_waiters(1)
    with cond:
        cond.notify_all()
    assert woke.wait(2)
    assert clock.now() == 3.0


def test_wait_for_waiters_gives_up() -> None:
    assert FakeClock().wait_for_waiters(1, timeout=0.01) is False


def test_real_clock_basics() -> None:
    before = REAL_CLOCK.now()
    assert REAL_CLOCK.sleep(0.0) is False
    stop = threading.Event()
    stop.set()
    assert REAL_CLOCK.sleep(100.0, stop) is True
    assert REAL_CLOCK.wait_event(stop, 100.0) is True
    assert REAL_CLOCK.now() >= before
    assert REAL_CLOCK.wall().tzinfo is datetime.timezone.utc
