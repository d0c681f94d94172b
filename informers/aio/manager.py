"""Runs async controllers with their informers, health endpoints and, if asked, signal handling.

The async counterpart of a minimal :class:`informers.manager.Manager`: one
:class:`~informers.aio.factory.AsyncSharedInformerFactory` for every controller added, one task
per controller, the same :class:`~informers.health_server.HealthServer` (``/healthz``,
``/readyz`` with an ``informers-synced`` check, ``/metrics``) on its own thread, and, with
``handle_signals=True`` (a process-wide effect, so off by default), SIGINT and SIGTERM as a stop
(controller-runtime's ``SetupSignalHandler``). :meth:`AsyncManager.run` returns once stopped:
controllers drained (each within its ``drain_timeout``), informers stopped, connections closed,
the health server's threads joined.

With ``leader_election`` (the threaded manager's
:class:`~informers.manager.LeaderElectionConfig`), an
:class:`~informers.aio.leaderelection.AsyncLeaderElector` on the Lease runs beside the
controllers that do not need a leader; the leader-only ones (:meth:`AsyncManager.add`'s
default, as controller-runtime's) run only while this process leads. A stop drains them and
then releases the lease (``release_on_cancel``); a lost lease cancels them and :meth:`run`
raises :class:`~informers.errors.LeaderElectionLostError` after shutting the rest down
(controller-runtime's manager returns ``leader election lost``: exit and be restarted).
``/healthz`` gets the ``leader-election`` check (client-go ``HealthzAdaptor``), as the
threaded manager's.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Awaitable, Callable

import anyio

from informers.aio.controller import AsyncController
from informers.aio.factory import AsyncSharedInformerFactory
from informers.aio.leaderelection import AsyncLeaderElector, AsyncLeaseLock
from informers.clock import REAL_CLOCK, Clock
from informers.errors import AlreadyStartedError, LeaderElectionLostError
from informers.health_server import HealthServer
from informers.leader_election_config import (
    LEADER_ELECTION_CHECK,
    LEADER_ELECTION_HEALTH_TOLERANCE,
    LeaderElectionConfig,
    default_identity,
)

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
        leader_election: elect a leader on this Lease (see the module docstring).
        clock: the elector's clock; ``elector_sleep`` its waits (tests inject both).
    """

    def __init__(self, factory: AsyncSharedInformerFactory, *,
                 health_address: str | None = None, handle_signals: bool = False,
                 leader_election: LeaderElectionConfig | None = None,
                 clock: Clock = REAL_CLOCK,
                 elector_sleep: Callable[[float], Awaitable[None]] = anyio.sleep) -> None:
        self.factory = factory
        self.health = HealthServer(health_address) if health_address is not None else None
        self.handle_signals = handle_signals
        self.leader_election = leader_election
        self.identity = (leader_election.identity or default_identity()
                         if leader_election is not None else None)
        self.clock = clock
        self.elector_sleep = elector_sleep
        self.elector: AsyncLeaderElector | None = None
        """The elector while :meth:`run` runs with ``leader_election``."""
        self._controllers: list[AsyncController] = []
        self._leader_only: set[int] = set()
        self._leading = False
        self._stop: anyio.Event | None = None
        self._started = False
        self._stop_requested = False

    def add(self, controller: AsyncController, needs_leader: bool = True) -> None:
        """Run ``controller`` with the manager (before :meth:`run`). ``needs_leader``: run it
        only while this process leads, when the manager elects a leader (controller-runtime
        ``LeaderElectionRunnable``; the default, as controller-runtime's controllers)."""
        self._controllers.append(controller)
        if needs_leader:
            self._leader_only.add(id(controller))

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
            if self.leader_election is not None:
                health.add_healthz_check(LEADER_ELECTION_CHECK, self._elector_healthy)
            health.start()
        outcome: list[bool] = []
        try:
            async with self.factory, anyio.create_task_group() as tg:
                elect = self.leader_election is not None
                leader_only = [c for c in self._controllers
                               if elect and id(c) in self._leader_only]
                for controller in self._controllers:
                    if controller not in leader_only:
                        tg.start_soon(controller.run, name=f"controller-{controller.name}")
                election = anyio.CancelScope()
                if elect:
                    tg.start_soon(self._elect, election, leader_only, outcome)
                signals = anyio.CancelScope()
                if self.handle_signals:
                    tg.start_soon(self._signals, signals)
                await self._stop.wait()
                signals.cancel()
                for controller in self._controllers:
                    controller.stop()  # each run() returns after its drain
                if not self._leading:
                    election.cancel()  # still trying to acquire
        finally:
            if health is not None:
                health.stop()  # joins its threads; everything else has stopped
        cfg = self.leader_election
        if outcome == [True] and cfg is not None:
            raise LeaderElectionLostError(
                f"leader election lost: lease {cfg.lease_namespace}/{cfg.lease_name}")

    def _elector_healthy(self) -> object:
        elector = self.elector
        found = None if elector is None else elector.check(LEADER_ELECTION_HEALTH_TOLERANCE)
        return True if found is None else found

    async def _elect(self, scope: anyio.CancelScope, leader_only: list[AsyncController],
                     outcome: list[bool]) -> None:
        """Run the elector; the leader-only controllers while leading."""
        cfg = self.leader_election
        assert cfg is not None and self.identity is not None
        assert self.factory.transport is not None
        lock = AsyncLeaseLock(self.factory.transport, cfg.lease_namespace, cfg.lease_name,
                              self.identity, request_timeout=cfg.renew_deadline)
        self.elector = AsyncLeaderElector(
            lock, lease_duration=cfg.lease_duration, renew_deadline=cfg.renew_deadline,
            retry_period=cfg.retry_period, release_on_cancel=cfg.release_on_cancel,
            name=cfg.lease_name, clock=self.clock, sleep=self.elector_sleep)

        async def lead() -> None:
            # leads until the manager stops (then the controllers drain) or the lease is lost
            self._leading = True
            assert self._stop is not None
            async with anyio.create_task_group() as tg:
                for controller in leader_only:
                    tg.start_soon(controller.run, name=f"controller-{controller.name}")
                await self._stop.wait()

        with scope:
            lost = await self.elector.run(lead)
            outcome.append(lost)
            if lost:
                logger.error("leader election lost: lease %s/%s; stopping",
                             cfg.lease_namespace, cfg.lease_name)
                self.stop()

    async def _signals(self, scope: anyio.CancelScope) -> None:
        with scope, anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                logger.info("received %s: stopping", signal.Signals(signum).name)
                self.stop()
                return
