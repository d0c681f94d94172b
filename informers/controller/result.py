"""Says what a reconcile wants done with its key next: forget it, or requeue it.

controller-runtime ``pkg/reconcile/reconcile.go`` (``Result``, ``TerminalError``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from informers.errors import TerminalError

__all__ = ["Result", "TerminalError"]


@dataclass(frozen=True)
class Result:
    """The outcome of one successful reconcile (controller-runtime ``reconcile.Result``).

    What the :class:`~informers.controller.controller.Controller` does with the key, in this
    order of precedence:

    * ``requeue_after > 0``: forget the key's rate-limit history and add it back after
      ``requeue_after`` seconds (``Forget`` + ``AddAfter``); metric result ``requeue_after``.
    * ``requeue``: add it back through the rate limiter (``AddRateLimited``), which backs off
      and counts towards the controller's ``max_retries``; metric result ``requeue``.
      controller-runtime deprecates ``Requeue`` because "it causes confusion": prefer
      ``requeue_after``, or raise to retry a failure.
    * neither (``Result()``, or returning ``None``): success, forget the key; metric result
      ``success``.

    To retry a failure, raise instead of returning; to give up on a key, raise
    :class:`TerminalError`. Immutable.

    Attributes:
        requeue: requeue through the rate limiter.
        requeue_after: seconds after which to requeue; ``0`` means not at all.
    """

    requeue: bool = False
    requeue_after: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.requeue_after, (int, float)) or not math.isfinite(
            self.requeue_after
        ):
            raise ValueError(
                f"Result.requeue_after must be a finite number, got {self.requeue_after!r}"
            )
        if self.requeue_after < 0:
            raise ValueError(
                f"Result.requeue_after must not be negative, got {self.requeue_after!r}"
            )

    def is_zero(self) -> bool:
        """True for the plain success result ``Result()`` (controller-runtime ``IsZero``)."""
        return not self.requeue and self.requeue_after == 0
