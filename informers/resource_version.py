"""Compares resourceVersions, as far as Kubernetes allows (apimachinery
``pkg/util/resourceversion``).

resourceVersions are opaque strings. Since Kubernetes 1.35 the API guarantees more for
well-formed ones (KEP-5504): a resourceVersion of one resource that is a decimal integer without
leading zeros, other than ``0``, may be compared with another of the *same resource* as a number
(``CompareResourceVersion``). Anything else (``""``, ``"0"``, leading zeros, other characters, an
aggregated API server's own format) cannot be compared: :func:`compare_resource_version` raises.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from informers.clock import REAL_CLOCK, Clock

__all__ = [
    "InvalidResourceVersionError",
    "ResourceVersionWaiter",
    "compare_resource_version",
    "is_well_formed",
]


class InvalidResourceVersionError(ValueError):
    """A resourceVersion that cannot be compared (apimachinery ``InvalidResourceVersion``)."""

    def __init__(self, rv: str) -> None:
        super().__init__(f"resource version is not well formed: {rv}")
        self.rv = rv


def is_well_formed(rv: str) -> bool:
    """A non-empty decimal integer without a leading zero (so never ``"0"``)."""
    return bool(rv) and rv[0] != "0" and rv.isascii() and rv.isdigit()


def compare_resource_version(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is older than, equal to or newer than ``b`` (apimachinery
    ``CompareResourceVersion``). Meaningful only for two resourceVersions of the same resource.

    Raises:
        InvalidResourceVersionError: either is not well formed (see :func:`is_well_formed`).
    """
    if not is_well_formed(a):
        raise InvalidResourceVersionError(a)
    if not is_well_formed(b):
        raise InvalidResourceVersionError(b)
    if len(a) != len(b):
        return -1 if len(a) < len(b) else 1
    return (a > b) - (a < b)


class ResourceVersionWaiter:
    """Lets threads wait until a store's resourceVersion reaches a target (read-your-writes).

    The writer calls :meth:`notify` after each write (cheap while nobody waits); waiters call
    :meth:`wait`. Thread-safe.

    Args:
        current: returns the store's current resourceVersion.
        clock: for the timeout.
    """

    def __init__(self, current: Callable[[], str], clock: Clock = REAL_CLOCK) -> None:
        self._current = current
        self._clock = clock
        self._cond = threading.Condition()
        self._waiters = 0

    def notify(self) -> None:
        """The store was written: wake the waiters, if any."""
        if self._waiters:  # a waiter counts itself before its check, so none is missed
            with self._cond:
                self._cond.notify_all()

    def reached(self, rv: str) -> bool:
        """Whether the current resourceVersion is well formed and not older than ``rv``."""
        current = self._current()
        return is_well_formed(current) and compare_resource_version(current, rv) >= 0

    def wait(self, rv: str, timeout: float | None) -> bool:
        """Block until :meth:`reached` ``rv``; ``False`` after ``timeout`` seconds (``None``:
        no limit) without.

        Raises:
            InvalidResourceVersionError: ``rv`` is not well formed (so cannot be compared).
        """
        if not is_well_formed(rv):
            raise InvalidResourceVersionError(rv)
        clock = self._clock
        deadline = None if timeout is None else clock.now() + timeout
        with self._cond:
            self._waiters += 1
            try:
                while not self.reached(rv):
                    remaining = None if deadline is None else deadline - clock.now()
                    if remaining is not None and remaining <= 0:
                        return False
                    clock.wait_condition(self._cond, remaining)
                return True
            finally:
                self._waiters -= 1
