"""Turns SIGTERM and SIGINT into a stop event; a second signal forces the process to exit.

controller-runtime ``pkg/manager/signals/signal.go`` (``SetupSignalHandler``): "the first
signal cancels the context; if a second signal is caught, the program is terminated with exit
code 1". A graceful stop can take up to the shutdown timeout; an operator who presses Ctrl-C
twice, or a kubelet that sends SIGTERM again, gets an immediate exit.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

__all__ = ["SHUTDOWN_SIGNALS", "SignalHandler", "setup_signal_handler"]

logger = logging.getLogger(__name__)

SHUTDOWN_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT)
"""The signals that stop a process (controller-runtime ``shutdownSignals`` on POSIX)."""


class SignalHandler:
    """Sets :attr:`stop_event` on the first shutdown signal and calls ``exit_func(1)`` on the
    second.

    Call the instance as a signal handler (``handler(signum, frame)``): tests call it
    directly. :meth:`install` registers it for ``signals`` (only possible in the main thread,
    a Python rule) and :meth:`uninstall` puts the previous handlers back.

    Thread safety: Python runs signal handlers in the main thread between bytecodes; the
    event may be waited on from any thread.

    Args:
        stop_event: the event to set; ``None`` creates one.
        exit_func: called with 1 on the second signal; default ``os._exit``, which exits at
            once without running cleanup or joining threads (Go's ``os.Exit(1)``): a plain
            ``sys.exit`` would only raise in the main thread, which may be the one stuck.
        signals: the signals :meth:`install` handles.
    """

    def __init__(
        self,
        stop_event: threading.Event | None = None,
        *,
        exit_func: Callable[[int], Any] = os._exit,
        signals: Iterable[int] = SHUTDOWN_SIGNALS,
    ) -> None:
        self.stop_event = stop_event if stop_event is not None else threading.Event()
        self.exit_func = exit_func
        self.signals = tuple(signals)
        self.received = 0
        """How many shutdown signals arrived."""
        self._previous: dict[int, Any] = {}

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received += 1
        name = _signal_name(signum)
        if self.received == 1:
            logger.info("received %s, shutting down; send it again to force exit", name)
            self.stop_event.set()
            return
        logger.warning("received %s again, forcing exit with code 1", name)
        self.exit_func(1)

    def install(self) -> SignalHandler:
        """Handle :attr:`signals` with this handler; returns ``self``.

        Raises:
            ValueError: not called from the main thread (Python's ``signal.signal`` rule).
        """
        for signum in self.signals:
            previous = signal.signal(signum, self)
            self._previous.setdefault(signum, previous)
        return self

    def uninstall(self) -> None:
        """Restore the handlers that were installed before :meth:`install`."""
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def setup_signal_handler(
    *, exit_func: Callable[[int], Any] = os._exit
) -> threading.Event:
    """Install a :class:`SignalHandler` for SIGTERM and SIGINT and return its stop event
    (controller-runtime ``SetupSignalHandler``). Call from the main thread."""
    return SignalHandler(exit_func=exit_func).install().stop_event
