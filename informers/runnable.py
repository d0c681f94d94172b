"""What a :class:`~informers.manager.Manager` runs on its own threads: runnables, each under a
name unique within its manager, with the thread of its current run.

controller-runtime ``manager.Runnable`` and ``runnable_group.go``'s bookkeeping. A
:class:`RunnableEntry` is created by ``Manager.add_runnable`` and its ``thread`` is set and
cleared by the manager only, under the manager's lock; ``alive`` may be asked from any thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Runnable", "RunnableEntry", "runnable_name", "unique_name"]

Runnable = Callable[[threading.Event], Any]
"""Something the manager runs on its own thread: ``fn(stop_event)`` runs until the event is set
(controller-runtime ``Runnable.Start(ctx)``), e.g. :meth:`Controller.run
<informers.controller.controller.Controller.run>`."""


@dataclass
class RunnableEntry:
    """A runnable added to a manager: its unique name, whether it needs the lease, and the
    thread of its current (or last) run, ``None`` before it starts."""

    name: str
    fn: Runnable
    needs_leader: bool
    thread: threading.Thread | None = None

    def alive(self) -> bool:
        """Whether the thread of its last run still runs."""
        return self.thread is not None and self.thread.is_alive()


def runnable_name(fn: Runnable, name: str | None) -> str:
    """The name asked for: ``name``, else ``fn``'s qualified name, else its repr."""
    return name or getattr(fn, "__qualname__", None) or repr(fn)


def unique_name(fn: Runnable, name: str | None, taken: Iterable[str]) -> str:
    """``name`` (else ``fn``'s qualified name, else its repr), with ``#2``, ``#3``... appended
    when the manager already has a runnable of that name."""
    base = runnable_name(fn, name)
    used = set(taken)
    unique, n = base, 1
    while unique in used:
        n += 1
        unique = f"{base}#{n}"
    return unique
