"""Runs async controllers with their informers, health endpoints and, if asked, signal handling.

The async counterpart of a minimal :class:`informers.manager.Manager`: one
:class:`~informers.aio.factory.AsyncSharedInformerFactory` for every controller added, one task
per controller, the same :class:`~informers.health_server.HealthServer` (``/healthz``,
``/readyz`` with an ``informers-synced`` check, ``/metrics``) on its own thread, and, with
``handle_signals=True`` (a process-wide effect, so off by default), SIGINT and SIGTERM as a stop
(controller-runtime's ``SetupSignalHandler``). :meth:`AsyncManager.run` returns once stopped:
controllers drained (each within its ``drain_timeout``), informers stopped, connections closed,
the health server's threads joined. Leader election is not part of it yet.
"""

from __future__ import annotations

import logging
import signal

import anyio

from informers.aio.controller import AsyncController
from informers.aio.factory import AsyncSharedInformerFactory
from informers.errors import AlreadyStartedError
from informers.health_server import HealthServer

__all__ = ["AsyncManager"]

logger = logging.getLogger(__name__)


class AsyncManager:
    """Controllers, their shared informers and the probes of one async process.

    Args:
        factory: the informers' factory (not entered yet: :meth:`run` enters it); controllers
            watch informers of it (``factory.informer_for``).
        health_address: ``host:port`` of the health and metrics server (``":0"`` picks a
            port); ``None`` serves none.
        handle_signals: stop on SIGINT/SIGTERM while :meth:`run` runs.
    """

    def __init__(self, factory: AsyncSharedInformerFactory, *,
                 health_address: str | None = None, handle_signals: bool = False) -> None:
        self.factory = factory
        self.health = HealthServer(health_address) if health_address is not None else None
        self.handle_signals = handle_signals
        self._controllers: list[AsyncController] = []
        self._stop: anyio.Event | None = None
        self._started = False
        self._stop_requested = False

    def add(self, controller: AsyncController, needs_leader: bool = True) -> None:
        """Run ``controller`` with the manager (before :meth:`run`). ``needs_leader``: run it
        only while this process leads, when the manager elects a leader (controller-runtime
        ``LeaderElectionRunnable``; the default, as controller-runtime's controllers)."""
        self._controllers.append(controller)

    def stop(self) -> None:
        """Make :meth:`run` stop and return."""
        self._stop_requested = True
        if self._stop is not None:
            self._stop.set()

    def _synced(self) -> object:
        unsynced = sorted(res.group_resource for res, inf in self.factory.informers.items()
                          if not inf.has_synced())
        return True if not unsynced else "not synced: " + ", ".join(unsynced)

    async def run(self) -> None:
        """Run until :meth:`stop`, a signal (with ``handle_signals``) or cancellation.

        Raises:
            AlreadyStartedError: run a second time.
            OSError: the health address cannot be bound.
        """
        if self._started:
            raise AlreadyStartedError("an AsyncManager runs once")
        self._started = True
        self._stop = anyio.Event()
        if self._stop_requested:
            self._stop.set()
        health = self.health
        if health is not None:
            health.add_healthz_check("ping", lambda: True)
            health.add_readyz_check("informers-synced", self._synced)
            health.start()
        try:
            async with self.factory, anyio.create_task_group() as tg:
                for controller in self._controllers:
                    tg.start_soon(controller.run, name=f"controller-{controller.name}")
                signals = anyio.CancelScope()
                if self.handle_signals:
                    tg.start_soon(self._signals, signals)
                await self._stop.wait()
                signals.cancel()
                for controller in self._controllers:
                    controller.stop()  # each run() returns after its drain
        finally:
            if health is not None:
                health.stop()  # joins its threads; everything else has stopped

    async def _signals(self, scope: anyio.CancelScope) -> None:
        with scope, anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                logger.info("received %s: stopping", signal.Signals(signum).name)
                self.stop()
                return
