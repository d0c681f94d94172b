"""Helpers shared by the tests: poll until another thread got somewhere, drain what it queued.

Waits are in real time. Tests that control time use a ``FakeClock``; these only wait for a
thread that runs on its own (a queue's waiting loop, a kubelet worker, a file watcher) to get
somewhere, so a fake-clock step or an assertion cannot race it.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from informers.clock import FakeClock

T = TypeVar("T")


def eventually(predicate: Callable[[], Any], timeout: float = 5.0) -> bool:
    """Poll ``predicate()`` every 5 ms until it is truthy; whether it became so within
    ``timeout`` seconds (it is asked once more at the deadline). Use as ``assert eventually(...)``.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return bool(predicate())


def wait_until(predicate: Callable[[], Any], timeout: float = 5.0) -> None:
    """Poll ``predicate()`` every millisecond until it is truthy; ``pytest.fail`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail("condition not reached")
        time.sleep(0.001)


def settle(clock: FakeClock, next_deadline: float) -> None:
    """Wait until a thread sleeps on ``clock`` until ``next_deadline`` (so a step cannot race
    it)."""
    assert clock.wait_for_waiters(1)
    wait_until(lambda: clock.next_deadline() == next_deadline)


def drain(q: queue.Queue[T]) -> list[T]:
    """Everything in ``q`` now, oldest first, without waiting."""
    out = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out


def split_options(kwargs: dict[str, Any], **defaults: Any) -> tuple[Any, dict[str, Any]]:
    """Split a test's keyword arguments into a ReflectorOptions (its fields, over
    ``defaults``) and the Reflector's other keyword arguments."""
    import dataclasses

    from informers.reflector_options import ReflectorOptions

    names = {f.name for f in dataclasses.fields(ReflectorOptions)}
    options = {**defaults, **{k: v for k, v in kwargs.items() if k in names}}
    rest = {k: v for k, v in kwargs.items() if k not in names}
    return ReflectorOptions(**options), rest


LOOP_THREADS = ("Trio thread", "AnyIO worker thread")
"""Name prefixes of the idle worker threads that event loops of earlier async tests in the
process keep cached (trio's thread cache, anyio's worker pool) and end after about 10 s idle:
a test comparing the whole set of threads before and after must leave them out."""
