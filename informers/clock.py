"""Injectable time: a real clock and a fake one that tests step by hand.

Every component that sleeps, waits with a timeout, or timestamps something takes an optional
``clock=`` argument (default: :data:`REAL_CLOCK`). Durations are float seconds everywhere.

Three kinds of waiting are offered, and components must use them instead of ``time.sleep``,
``Event.wait(timeout)`` or ``Condition.wait(timeout)`` so that a :class:`FakeClock` controls them:

* :meth:`Clock.sleep` waits for a duration, returning early when a stop event is set.
* :meth:`Clock.wait_event` waits for an event with a timeout.
* :meth:`Clock.wait_condition` waits on a condition variable (whose lock the caller holds)
  with a timeout; a notify on the condition wakes it as usual.

:class:`FakeClock` mirrors ``k8s.io/utils/clock/testing.FakeClock``: time only moves on
:meth:`FakeClock.step` (or :meth:`FakeClock.set`), waits whose deadline has been reached are
woken by that step, and :meth:`FakeClock.has_waiters` / :meth:`FakeClock.wait_for_waiters` let
a test step only once the component under test is really waiting.
"""

from __future__ import annotations

import datetime
import threading
import time
from typing import Protocol

__all__ = ["REAL_CLOCK", "Clock", "FakeClock", "RealClock"]

# How often a fake-clock wait re-checks a stop event that was set without any step. This only
# bounds how fast a component notices shutdown under a fake clock; it never advances fake time.
_FAKE_EVENT_POLL = 0.01


class Clock(Protocol):
    """What every time-dependent component needs from a clock. Thread-safe."""

    def now(self) -> float:
        """Monotonic time in seconds (only differences are meaningful)."""

    def wall(self) -> datetime.datetime:
        """The current wall-clock time, timezone-aware UTC (for timestamps written to objects)."""

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        """Wait ``seconds``; return ``True`` early if ``stop`` is set, else ``False``."""

    def wait_event(self, event: threading.Event, timeout: float | None) -> bool:
        """Wait until ``event`` is set or ``timeout`` passes; return ``event.is_set()``."""

    def wait_condition(self, cond: threading.Condition, timeout: float | None) -> None:
        """``cond.wait(timeout)`` measured on this clock. The caller holds ``cond``.

        May return spuriously (as ``Condition.wait`` may): callers re-check their predicate and
        the time.
        """


class RealClock:
    """The system clock: ``time.monotonic`` and real waits."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.timezone.utc)

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        if stop is None:
            if seconds > 0:
                time.sleep(seconds)
            return False
        return stop.wait(max(seconds, 0.0))

    def wait_event(self, event: threading.Event, timeout: float | None) -> bool:
        return event.wait(None if timeout is None else max(timeout, 0.0))

    def wait_condition(self, cond: threading.Condition, timeout: float | None) -> None:
        cond.wait(None if timeout is None else max(timeout, 0.0))


REAL_CLOCK: Clock = RealClock()
"""The process-wide real clock, the default of every ``clock=`` argument."""


class _Waiter:
    __slots__ = ("cond", "deadline")

    def __init__(self, deadline: float, cond: threading.Condition | None) -> None:
        self.deadline = deadline
        self.cond = cond


class FakeClock:
    """A clock that moves only when told to. Thread-safe.

    ``now()`` starts at ``start`` (default 0.0 monotonic seconds); ``wall()`` starts at
    ``wall_start`` (default 2026-01-01T00:00:00Z) and moves with it.
    """

    def __init__(
        self,
        start: float = 0.0,
        wall_start: datetime.datetime | None = None,
    ) -> None:
        self._lock = threading.Condition()
        self._now = start
        self._start = start
        self._wall_start = wall_start or datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
        self._waiters: list[_Waiter] = []

    # -- reading -------------------------------------------------------------------------------

    def now(self) -> float:
        with self._lock:
            return self._now

    def wall(self) -> datetime.datetime:
        with self._lock:
            return self._wall_start + datetime.timedelta(seconds=self._now - self._start)

    # -- moving --------------------------------------------------------------------------------

    def step(self, seconds: float) -> None:
        """Advance time by ``seconds`` and wake every wait whose deadline is now reached."""
        if seconds < 0:
            raise ValueError(f"FakeClock.step: cannot step backwards ({seconds!r})")
        with self._lock:
            self._now += seconds
        self._wake_due()

    def set(self, now: float) -> None:
        """Move time to ``now`` (never backwards) and wake due waits."""
        with self._lock:
            if now < self._now:
                raise ValueError(f"FakeClock.set: {now!r} is before now ({self._now!r})")
            self._now = now
        self._wake_due()

    def _wake_due(self) -> None:
        with self._lock:
            due = [w for w in self._waiters if w.deadline <= self._now]
            self._lock.notify_all()
        # Notify each condition without holding our own lock: a waiter holds its condition
        # and may call now(), so taking them in the other order would deadlock.
        for w in due:
            if w.cond is not None:
                with w.cond:
                    w.cond.notify_all()

    # -- observing waits -----------------------------------------------------------------------

    def has_waiters(self) -> bool:
        """True while any component waits on this clock with a timeout."""
        with self._lock:
            return bool(self._waiters)

    def waiter_count(self) -> int:
        with self._lock:
            return len(self._waiters)

    def next_deadline(self) -> float | None:
        """The earliest deadline any waiter waits for, or ``None``."""
        with self._lock:
            return min((w.deadline for w in self._waiters), default=None)

    def wait_for_waiters(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Block (in real time, at most ``timeout``) until at least ``count`` waits are pending.

        Tests call this before :meth:`step` so the step cannot race the component's wait.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._waiters) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(min(remaining, 0.05))
            return True

    # -- waiting -------------------------------------------------------------------------------

    def _register(self, timeout: float, cond: threading.Condition | None) -> _Waiter:
        with self._lock:
            w = _Waiter(self._now + timeout, cond)
            self._waiters.append(w)
            self._lock.notify_all()  # wakes wait_for_waiters
            return w

    def _unregister(self, w: _Waiter) -> None:
        with self._lock:
            try:
                self._waiters.remove(w)
            except ValueError:
                pass

    def _expired(self, w: _Waiter) -> bool:
        with self._lock:
            return self._now >= w.deadline

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        if stop is None:
            stop = threading.Event()
        return self.wait_event(stop, seconds) if seconds > 0 else stop.is_set()

    def wait_event(self, event: threading.Event, timeout: float | None) -> bool:
        if event.is_set():
            return True
        if timeout is not None and timeout <= 0:
            return False
        if timeout is None:
            while not event.wait(1.0):
                pass
            return True
        w = self._register(timeout, None)
        try:
            with self._lock:
                while True:
                    if event.is_set():
                        return True
                    if self._now >= w.deadline:
                        return event.is_set()
                    self._lock.wait(_FAKE_EVENT_POLL)
        finally:
            self._unregister(w)

    def wait_condition(self, cond: threading.Condition, timeout: float | None) -> None:
        if timeout is None:
            cond.wait()
            return
        if timeout <= 0:
            return
        w = self._register(timeout, cond)
        try:
            # Woken by a notify on cond (the component's own signal) or by a step that reaches
            # the deadline (_wake_due notifies cond). Registration happened while the caller
            # holds cond, and _wake_due needs cond to notify, so no wake-up is lost.
            cond.wait()
        finally:
            self._unregister(w)
