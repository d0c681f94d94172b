"""Fault-injection state of the embedded API server: failures, delays, hung watches.

The request handler consults :class:`Faults` before serving each request; the watch streams
consult it before writing. ``ApiServer`` exposes the switches (``fail_next``, ``delay``,
``hang_watches``...); the effects on open connections live in the server and watch modules.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from informers.testing.requestlog import RequestRecord

__all__ = ["Faults", "InjectedFailure"]


@dataclass
class InjectedFailure:
    """Fail the next ``remaining`` requests matching ``verb``/``resource`` (``None``: any) and,
    when given, ``match``: a predicate over the request as a :class:`RequestRecord` (its
    ``status`` is 0: not answered yet), e.g. ``lambda r: "continue" in r.query``. It runs on
    the request's thread, outside the faults lock, and only after verb and resource matched.

    ``in_stream`` applies to watches only: answer 200 and send the Status as an ``ERROR``
    event (how kube-apiserver reports errors found after the watch started, e.g. a 410).

    ``as_ok`` answers ``200 OK`` with the failure ``Status`` as the whole (non-chunked) body,
    on any verb, watches included: what a broken proxy in front of the apiserver does.
    """

    remaining: int
    code: int
    verb: str | None = None
    resource: str | None = None
    retry_after: int | None = None
    message: str | None = None
    in_stream: bool = False
    match: Callable[[RequestRecord], bool] | None = None
    as_ok: bool = False

    def __post_init__(self) -> None:
        if self.in_stream and self.as_ok:
            raise ValueError("in_stream and as_ok exclude each other")

    def matches(self, verb: str, resource: str) -> bool:
        """Whether ``verb`` and ``resource`` match (``match`` is checked separately)."""
        return (self.verb is None or self.verb == verb) and (
            self.resource is None or self.resource == resource
        )


@dataclass
class _Delay:
    seconds: float
    verb: str | None
    resource: str | None


class Faults:
    """Thread-safe fault switches. Rules are matched in the order they were added."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: list[InjectedFailure] = []
        self._delays: list[_Delay] = []
        self.hung = False
        """While set, watch streams write nothing (headers are sent for new ones)."""

    def add_failure(self, failure: InjectedFailure) -> None:
        if failure.remaining < 1:
            raise ValueError(f"count must be >= 1, got {failure.remaining}")
        with self._lock:
            self._failures.append(failure)

    def take_failure(
        self, verb: str, resource: str, request: Callable[[], RequestRecord] | None = None
    ) -> InjectedFailure | None:
        """The first failure rule matching this request, consuming one use of it.

        ``request`` builds the request's record for rules with a ``match`` predicate (called
        at most once, only when such a rule is a candidate; without it those rules never
        match).
        """
        if not self._failures:  # the common case, without the lock
            return None
        with self._lock:
            candidates = [f for f in self._failures if f.matches(verb, resource)]
        record: RequestRecord | None = None
        for failure in candidates:
            if failure.match is not None:
                if request is None:
                    continue
                if record is None:
                    record = request()
                if not failure.match(record):
                    continue
            with self._lock:
                if failure.remaining <= 0 or not any(f is failure for f in self._failures):
                    continue  # used up by a concurrent request meanwhile
                failure.remaining -= 1
                if failure.remaining <= 0:
                    self._failures.remove(failure)
                return failure
        return None

    def pending_failures(self) -> int:
        """How many injected failures are still to be served."""
        with self._lock:
            return sum(f.remaining for f in self._failures)

    def set_delay(self, seconds: float, verb: str | None, resource: str | None) -> None:
        """Delay matching requests by ``seconds``; ``seconds <= 0`` clears every delay."""
        with self._lock:
            if seconds <= 0:
                self._delays.clear()
            else:
                self._delays.append(_Delay(seconds, verb, resource))

    def delay_for(self, verb: str, resource: str) -> float:
        """The delay of the first matching rule (0.0 when none)."""
        with self._lock:
            for delay in self._delays:
                if (delay.verb is None or delay.verb == verb) and (
                    delay.resource is None or delay.resource == resource
                ):
                    return delay.seconds
        return 0.0

    def clear(self) -> None:
        """Forget every failure and delay and end the hang."""
        with self._lock:
            self._failures.clear()
            self._delays.clear()
            self.hung = False
