"""Carries the deadline of the work in progress on this thread (a reconcile's timeout) to
the requests it sends, as a Go ``context.Context`` deadline reaches every client call.

:func:`deadline` sets it for a ``with`` block (nested blocks keep the earlier deadline);
:func:`remaining` is what :class:`informers.client.Client` reads before each request: its
timeout is cut to the time left, and a request after the deadline is not sent
(:class:`~informers.errors.DeadlineExceededError`). The value is a ``contextvars`` variable:
per thread, and per asyncio task.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from informers.clock import REAL_CLOCK, Clock
from informers.errors import DeadlineExceededError

__all__ = ["check", "deadline", "remaining"]

_deadline: contextvars.ContextVar[tuple[float, Clock] | None] = contextvars.ContextVar(
    "informers_deadline", default=None)


@contextlib.contextmanager
def deadline(seconds: float | None, clock: Clock = REAL_CLOCK) -> Iterator[None]:
    """Work inside the block must be done within ``seconds`` on ``clock`` (``None``: no
    deadline of its own; an enclosing one still applies)."""
    if seconds is None:
        yield
        return
    at = clock.now() + seconds
    outer = _deadline.get()
    if outer is not None and outer[0] - outer[1].now() < seconds:
        yield  # the enclosing deadline comes first
        return
    token = _deadline.set((at, clock))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left before this context's deadline (may be negative), ``None`` without one."""
    current = _deadline.get()
    if current is None:
        return None
    at, clock = current
    return at - clock.now()


def check(what: str) -> float | None:
    """:func:`remaining`, raising when it is used up.

    Raises:
        DeadlineExceededError: the deadline passed (``what`` names the step).
    """
    left = remaining()
    if left is not None and left <= 0:
        raise DeadlineExceededError(f"{what}: context deadline exceeded")
    return left
