"""Computes the reflector's exponential, jittered backoff delays, resetting after a quiet period.

This is apimachinery's ``wait.Backoff{...}.DelayWithReset(clock, resetInterval)``
(``pkg/util/wait/backoff.go``) with client-go's reflector defaults (``tools/cache/reflector.go``):
``Duration=800ms, Factor=2.0, Jitter=1.0, Cap=30s, Steps=ceil(30s/800ms)=38`` and a reset
interval of 2 minutes. The base sequence is 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, then 30 s for
ever; jitter 1.0 draws each delay from ``[d, 2d)``. The source comment says this gives about
0.22 QPS against an API server that is down.

Reset rule (apimachinery ``backoffManager.Step``): when more than ``reset_interval`` has passed
since the last reset (the first "reset" is construction), the sequence restarts at the initial
duration. So a reflector whose server came back and has been quiet for 2 minutes starts again
at 0.8 s.
"""

from __future__ import annotations

import math
import random
import threading

from informers.clock import REAL_CLOCK, Clock

__all__ = [
    "DEFAULT_BACKOFF_CAP",
    "DEFAULT_BACKOFF_FACTOR",
    "DEFAULT_BACKOFF_INITIAL",
    "DEFAULT_BACKOFF_JITTER",
    "DEFAULT_BACKOFF_RESET",
    "Backoff",
]

DEFAULT_BACKOFF_INITIAL = 0.8
"""client-go reflector.go ``defaultBackoffInit`` (800 ms)."""
DEFAULT_BACKOFF_CAP = 30.0
"""client-go reflector.go ``defaultBackoffMax`` (30 s)."""
DEFAULT_BACKOFF_FACTOR = 2.0
"""client-go reflector.go ``defaultBackoffFactor``."""
DEFAULT_BACKOFF_JITTER = 1.0
"""client-go reflector.go ``defaultBackoffJitter``: each delay is drawn from ``[d, 2d)``."""
DEFAULT_BACKOFF_RESET = 120.0
"""client-go reflector.go ``defaultBackoffReset`` (2 min): "If we don't backoff for 2min, assume API
server is healthy and we reset the backoff"."""


class Backoff:
    """An exponential backoff with jitter and a reset after ``reset_interval``. Thread-safe.

    Every :meth:`step` advances the state (as apimachinery's ``DelayWithReset`` does, even when
    called from several threads).

    Args:
        initial: the first base delay in seconds.
        cap: no base delay exceeds this; reaching it ends the growth.
        factor: multiplier per step; ``<= 0`` means a constant ``initial`` delay.
        jitter: each returned delay is ``d + rng.random() * jitter * d``; ``0`` for none.
        steps: how many steps may still grow the delay; ``None`` means
            ``ceil(cap / initial)`` as client-go computes it.
        reset_interval: seconds after the last reset at which the state resets; ``<= 0``
            disables the growth (every delay is the jittered ``initial``), as in apimachinery.
        clock: source of ``now()`` for the reset rule.
        rng: random source for the jitter (seed it in tests).
    """

    def __init__(
        self,
        initial: float = DEFAULT_BACKOFF_INITIAL,
        cap: float = DEFAULT_BACKOFF_CAP,
        factor: float = DEFAULT_BACKOFF_FACTOR,
        jitter: float = DEFAULT_BACKOFF_JITTER,
        steps: int | None = None,
        reset_interval: float = DEFAULT_BACKOFF_RESET,
        clock: Clock = REAL_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        if initial < 0 or cap < 0:
            raise ValueError(f"Backoff: negative duration (initial={initial}, cap={cap})")
        if steps is None:
            steps = math.ceil(cap / initial) if initial > 0 and cap > 0 else 0
        if reset_interval <= 0:
            factor, steps = 0.0, 0
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self.initial_steps = steps
        self.reset_interval = reset_interval
        self._clock = clock
        self._rng = rng if rng is not None else random.Random()
        self._lock = threading.Lock()
        self._duration = initial
        self._steps = steps
        self._last_reset = clock.now()

    def step(self) -> float:
        """Return the next delay in seconds and advance the state."""
        with self._lock:
            if self.reset_interval > 0:
                now = self._clock.now()
                if now - self._last_reset > self.reset_interval:
                    self._duration = self.initial
                    self._steps = self.initial_steps
                    self._last_reset = now
            duration = self._duration
            if self._steps >= 1:
                self._steps -= 1
                if self.factor != 0:
                    nxt = duration * self.factor
                    if self.cap > 0 and nxt > self.cap:
                        nxt = self.cap
                        self._steps = 0
                    self._duration = nxt
            if self.jitter > 0:
                duration += self._rng.random() * self.jitter * duration
            return duration

    def reset(self) -> None:
        """Start again at the initial delay now."""
        with self._lock:
            self._duration = self.initial
            self._steps = self.initial_steps
            self._last_reset = self._clock.now()
