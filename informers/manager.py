"""Runs a process's informers, controllers, leader election and probes, in the right order.

controller-runtime ``pkg/manager`` (``internal.go``, ``runnable_group.go``,
``signals/signal.go``) for this library's pieces. A typical ``main``::

    manager = Manager(api_client, health_address=":8080",
                      leader_election=LeaderElectionConfig("my-controller", "kube-system"))
    configmaps = manager.factory.core().v1().config_maps()
    controller = Controller("configmaps", reconcile, workers=4)
    controller.watch(configmaps.informer(), EnqueueRequestForObject)
    manager.add(controller)              # runs only while this replica leads
    manager.run()                        # SIGTERM/SIGINT stop it; a second one exits at once

A stopped manager can be started again (see :class:`Manager`, "Restart"). Its parts live
beside it: :mod:`informers.leader_election_config` (the Lease settings and the elector built
from them), :mod:`informers.runnable` (what it runs) and :mod:`informers.shard_binding` (its
factory in a shard ring).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from informers.clock import REAL_CLOCK, Clock
from informers.controller.controller import Controller
from informers.errors import AlreadyStartedError, LeaderElectionLostError
from informers.factory import SharedInformerFactory
from informers.health_server import HealthCheck, HealthServer
from informers.leader_election_config import (
    LEADER_ELECTION_CHECK,
    LEADER_ELECTION_HEALTH_TOLERANCE,
    LeaderElectionConfig,
    default_identity,
    new_elector,
)
from informers.leaderelection import LeaderElector
from informers.leaderelection import MetricsProvider as LeaderElectionMetricsProvider
from informers.memory import MemoryTuning
from informers.runnable import Runnable, RunnableEntry, runnable_name, unique_name
from informers.shard.coordinator import ShardCoordinator, ShardingConfig
from informers.shard_binding import bind_to_ring
from informers.signals import SignalHandler

if TYPE_CHECKING:
    from informers.webhook.server import WebhookServer

__all__ = [
    "CACHES_SYNCED_CHECK",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "LEADER_ELECTION_CHECK",
    "LEADER_ELECTION_HEALTH_TOLERANCE",
    "LeaderElectionConfig",
    "Manager",
    "Runnable",
    "default_identity",
]

logger = logging.getLogger(__name__)

DEFAULT_SHUTDOWN_TIMEOUT = 30.0
"""Seconds the runnables get to stop (controller-runtime manager
``defaultGracefulShutdownPeriod = 30 * time.Second``)."""

CACHES_SYNCED_CHECK = "caches-synced"
"""The readiness check that fails until the factory's informers have synced."""

SHARD_RING_CHECK = "shard-ring"
"""The readiness check of a sharded manager: the ring's Leases are synced and this replica
holds its own Lease (:meth:`ShardCoordinator.ready
<informers.shard.coordinator.ShardCoordinator.ready>`); also the coordinator's runnable name."""

_STOP_POLL = 0.1
"""Real seconds between checks of the caller's stop event while running (only bounds how fast a
set stop event is noticed)."""

class Manager:
    """Holds a process's informer factory, controllers and other runnables, optional leader
    election and the health and metrics server, and starts and stops them in order.

    **Start order** (controller-runtime ``internal.go`` ``Start``): (1) the health and metrics
    server, so liveness and metrics answer while caches fill (``/readyz`` fails until step 2
    ends); (2) the factory's informers, then wait for their caches; (3) the runnables that do
    not need the leader, each on its own thread; (4) leader election: the runnables that need
    the leader start when this replica becomes leader (at once without leader election),
    and :attr:`elected` is set. Every replica runs steps 1-3, so standbys keep warm caches
    (and their controllers' queues collect keys) and take over without a relist.

    **Stop order** (when the stop event is set, leadership is lost or a runnable raises):
    (1) stop taking work: every runnable's stop event is set and the runnables get
    ``shutdown_timeout`` seconds together (a controller drains its reconciles in flight
    within its own ``drain_timeout``); those still running are logged and listed in
    :attr:`unstopped`; (2) release the lease (``release_on_cancel``; skipped when a
    leader-only runnable is still running, so the lease then expires instead); (3) stop the
    informers (``factory.shutdown()``); (4) stop the health and metrics server.

    **Webhook servers** (:meth:`add_webhook_server`) start right after the health server
    (step 1) and stop right before it (step 4), as controller-runtime orders its webhooks.

    **Acting only while leading**: :meth:`is_leader` is false as soon as leadership is in
    doubt (:meth:`LeaderElector.leading <informers.leaderelection.LeaderElector.leading>`:
    the last successful renewal is older than the renew deadline, e.g. after the process was
    paused), not only once the elector gives up. A leader-only :class:`Controller` added with
    :meth:`add` asks it before every reconcile (its ``leader_check``); other leader-only
    runnables, and reconciles that write, should ask it before each action.

    Losing the lease while running stops the manager and makes :meth:`start` raise
    :class:`~informers.errors.LeaderElectionLostError` (controller-runtime exits with
    "leader election lost"): the process should exit and be restarted.

    Request every informer from :attr:`factory` (and :meth:`Controller.watch
    <informers.controller.controller.Controller.watch>` it) before :meth:`start`: step 2
    starts the informers requested so far, and a controller waiting for an informer that was
    never started waits until it is stopped.

    **Restart** (not in controller-runtime, whose manager runs once): once :meth:`start` has
    returned, calling it (or :meth:`run`) again runs everything again from scratch, in the
    same order.

    * Rebuilt: the factory's informers (:meth:`SharedInformerFactory.reset
      <informers.factory.SharedInformerFactory.reset>`: new informers for the same
      resources, whose caches fill from a fresh list); each controller added with
      :meth:`add` gets a new work queue and workers, its watches registered again on the new
      informers (:meth:`Controller.reset
      <informers.controller.controller.Controller.reset>`); each runnable is called again
      with a new stop event (it must allow that); leader election starts over with a new
      elector (same identity and lease), so the lease is acquired again; the health and
      metrics server binds its address again (with port 0: a new port, see
      :attr:`health_server`).
    * Kept: the controllers and runnables added (none can be added once started), the health
      checks, the configuration, the metrics registry, :attr:`factory`, and the listers of a
      :class:`~informers.controller.builder.ControllerBuilder` (they read the new caches).
    * Not kept: cached objects, queued keys, and the informers and listers taken from the
      factory before the restart (they keep the old, stopped cache: take them again).
    * Refused (:class:`~informers.errors.AlreadyStartedError`) while a runnable, or a
      controller's reconcile, abandoned by the last stop (:attr:`unstopped`,
      ``hanging_keys``) still runs.

    Thread safety: :meth:`add`, :meth:`add_runnable` and the check methods before the first
    :meth:`start`; one :meth:`start` at a time.

    Args:
        api_client: a ``kubernetes.client.ApiClient`` for the factory and the lease;
            ``None`` takes the factory's.
        factory: the informer factory; ``None`` creates one on ``api_client`` (with
            ``clock``); with neither, the manager runs no informers.
        leader_election: how to elect a leader; ``None`` runs every runnable at once.
        leader_election_metrics_provider: where the elector's metrics go
            (``leader_election_master_status``, ``leader_election_slowpath_total``), e.g.
            ``informers.leaderelection.PrometheusMetricsProvider(metrics_registry)``;
            ``None`` for the process-wide provider
            (:func:`informers.leaderelection.set_provider`, a no-op by default, as client-go).
            Ignored without ``leader_election``.
        health_address: where to serve ``/metrics``, ``/healthz`` and ``/readyz``, e.g.
            ``":8080"`` or ``"127.0.0.1:0"``; ``None`` or ``"0"`` (controller-runtime's
            "disabled") serves nothing.
        metrics_registry: the ``prometheus_client`` registry ``/metrics`` serves; ``None`` for
            the default registry. Controllers report to it when built with
            ``metrics=PrometheusMetricsProvider(registry)`` (see :attr:`metrics_provider`).
        clock: time source of the shutdown timeout, the elector and a factory it creates.
        shutdown_timeout: seconds the runnables get to stop (:data:`DEFAULT_SHUTDOWN_TIMEOUT`).
        memory_tuning: opt-in, process-wide GC and C-heap tuning
            (:class:`~informers.memory.MemoryTuning`) for the factory the manager creates;
            ignored with ``factory`` (give it to that factory). ``None``: none.
        sharding: run this replica as a member of a ring
            (:class:`~informers.shard.coordinator.ShardingConfig`): every informer of
            :attr:`factory` created afterwards lists and watches only the member's share,
            every controller given to :meth:`add` reconciles only its active keys, the
            coordinator (:attr:`shard`) runs as a runnable, and ``/readyz`` gains the
            ``shard-ring`` check (docs/sharding.md). Usually without leader election.

    Raises:
        ValueError: leader election without an API client, or a bad ``health_address``.
        LeaderElectionConfigError: leader election durations that client-go refuses.
    """

    def __init__(
        self,
        api_client: Any = None,
        *,
        factory: SharedInformerFactory | None = None,
        leader_election: LeaderElectionConfig | None = None,
        leader_election_metrics_provider: LeaderElectionMetricsProvider | None = None,
        health_address: str | None = None,
        metrics_registry: Any = None,
        clock: Clock = REAL_CLOCK,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
        memory_tuning: MemoryTuning | None = None,
        sharding: ShardingConfig | None = None,
    ) -> None:
        if factory is None and api_client is not None:
            factory = SharedInformerFactory(api_client, clock=clock, memory_tuning=memory_tuning)
        if api_client is None and factory is not None:
            api_client = factory.api_client
        self.api_client = api_client
        self.factory = factory
        self.metrics_registry = metrics_registry
        self.shutdown_timeout = shutdown_timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._runnables: list[RunnableEntry] = []
        self._controllers: list[Controller] = []
        self._replaced: dict[Any, Any] = {}  # informer -> the informer that replaced it
        self._running: set[str] = set()
        self._started = False  # start() was called: the runnables are fixed
        self._active = False  # start() has not returned yet
        self._stopping = False
        self._stop_requested = threading.Event()  # leadership lost or a runnable failed
        self._work_stop = threading.Event()  # the runnables' stop event
        self._elector_stop = threading.Event()
        self._elector_thread: threading.Thread | None = None
        self._leadership_lost = False
        self._failure: BaseException | None = None
        self._caches_synced = threading.Event()
        self._metrics_provider: Any = None
        self.elected = threading.Event()
        """Set when the leader-only runnables start: on becoming leader, or right after the
        other runnables without leader election (controller-runtime ``Elected()``)."""
        self.unstopped: tuple[str, ...] = ()
        """Names of the runnables still running when the last shutdown stopped waiting."""

        self._webhook_servers: list[WebhookServer] = []
        self._health_address = health_address
        self.health_server: HealthServer | None = None
        """Serves ``/metrics``, ``/healthz`` and ``/readyz``; a restart replaces it by a new
        one with the same address and checks."""
        if health_address is not None and health_address.strip() != "0":
            self.health_server = HealthServer(health_address, registry=metrics_registry)
            self.health_server.add_readyz_check(CACHES_SYNCED_CHECK, self._caches_synced.is_set)

        self._leader_election = leader_election
        self._leader_election_metrics_provider = leader_election_metrics_provider
        self._identity: str | None = None
        self.elector: LeaderElector | None = None
        """The leader elector of the current (or last) run; a restart replaces it."""
        if leader_election is not None:
            if api_client is None:
                raise ValueError("leader election needs an api_client (or a factory)")
            self._identity = leader_election.identity or default_identity()
            self.elector = self._new_elector(leader_election)
            if self.health_server is not None:
                self.health_server.add_healthz_check(LEADER_ELECTION_CHECK,
                                                     self._leader_election_healthy)

        self.shard: ShardCoordinator | None = None
        """With ``sharding``: this replica's ring member (see :mod:`informers.shard`)."""
        if sharding is not None:
            if api_client is None or factory is None:
                raise ValueError("sharding needs an api_client (or a factory)")
            self.shard = bind_to_ring(factory, api_client, sharding, clock=clock,
                                      metrics_registry=metrics_registry)
            self.add_runnable(self.shard.run, name=SHARD_RING_CHECK)
            if self.health_server is not None:
                self.health_server.add_readyz_check(SHARD_RING_CHECK, self.shard.ready)

    def _new_elector(self, cfg: LeaderElectionConfig) -> LeaderElector:
        assert self._identity is not None
        return new_elector(self.api_client, cfg, self._identity,
                           on_started_leading=self._on_started_leading,
                           on_stopped_leading=self._on_stopped_leading, clock=self._clock,
                           metrics_provider=self._leader_election_metrics_provider)

    def _leader_election_healthy(self) -> str | None:
        """The ``/healthz`` check of the current elector (``None``: healthy)."""
        elector = self.elector
        return None if elector is None else elector.check(LEADER_ELECTION_HEALTH_TOLERANCE)

    # -- configuration -------------------------------------------------------------------------

    @property
    def identity(self) -> str | None:
        """This replica's lease identity (``None`` without leader election)."""
        return self.elector.lock.identity if self.elector is not None else None

    @property
    def metrics_provider(self) -> Any:
        """A :class:`~informers.controller.metrics.PrometheusMetricsProvider` on
        :attr:`metrics_registry`, for ``Controller(..., metrics=manager.metrics_provider)``.

        Raises:
            ImportError: ``prometheus_client`` is not installed.
        """
        with self._lock:
            if self._metrics_provider is None:
                from informers.controller.metrics import PrometheusMetricsProvider

                self._metrics_provider = PrometheusMetricsProvider(self.metrics_registry)
            return self._metrics_provider

    def add(self, controller: Controller, needs_leader: bool = True) -> None:
        """Run ``controller`` (its :meth:`~Controller.run`) with the manager; by default only
        while this replica leads, and then its workers take keys only while :meth:`is_leader`
        (its ``leader_check``, unless it has one). Before :meth:`start`."""
        self.add_runnable(controller.run, needs_leader=needs_leader, name=controller.name)
        with self._lock:
            self._controllers.append(controller)
        if self.shard is not None:
            self.shard.gate(controller, controller.primary_informer())
        if needs_leader and controller.leader_check is None:
            controller.leader_check = self.is_leader

    def add_runnable(
        self, fn: Runnable, needs_leader: bool = False, name: str | None = None
    ) -> None:
        """Run ``fn(stop_event)`` on its own thread; it must return soon after the event is
        set. An exception it raises stops the manager, and :meth:`start` raises it after the
        shutdown. Before :meth:`start`.

        Raises:
            AlreadyStartedError: the manager has started.
        """
        with self._lock:
            if self._started:
                raise AlreadyStartedError(
                    f"cannot add {runnable_name(fn, name)!r}: the manager has started")
            unique = unique_name(fn, name, (r.name for r in self._runnables))
            self._runnables.append(RunnableEntry(unique, fn, needs_leader))

    def add_webhook_server(self, server: WebhookServer) -> None:
        """Serve ``server`` (:class:`~informers.webhook.server.WebhookServer`) with the
        manager, on every replica: started right after the health server and before the
        informers, stopped after them, before the health server (controller-runtime
        ``internal.go``: webhooks must answer before caches fill, and keep serving while
        the rest stops). Before :meth:`start`.

        Raises:
            AlreadyStartedError: the manager has started.
        """
        with self._lock:
            if self._started:
                raise AlreadyStartedError("cannot add a webhook server: the manager has started")
            self._webhook_servers.append(server)

    def add_healthz_check(self, name: str, check: HealthCheck) -> None:
        """Add a liveness check to ``/healthz`` (ignored without a health server)."""
        if self.health_server is not None:
            self.health_server.add_healthz_check(name, check)

    def add_readyz_check(self, name: str, check: HealthCheck) -> None:
        """Add a readiness check to ``/readyz`` (ignored without a health server)."""
        if self.health_server is not None:
            self.health_server.add_readyz_check(name, check)

    def caches_synced(self) -> bool:
        """True once the factory's informers have synced during :meth:`start`; stays true
        after :meth:`start` returns, until the next :meth:`start` begins."""
        return self._caches_synced.is_set()

    def running(self) -> bool:
        """True from the moment :meth:`start` begins until it returns."""
        with self._lock:
            return self._active

    def is_leader(self) -> bool:
        """Whether this replica may act as leader now: the leader-only runnables were started,
        the manager is not stopping, and (with leader election) the elector is
        :meth:`~informers.leaderelection.LeaderElector.leading`. Cheap (no request): call it
        before each action the lease guards."""
        if not self.elected.is_set() or self._stopping:
            return False
        return self.elector is None or self.elector.leading()

    # -- running -------------------------------------------------------------------------------

    def run(self) -> None:
        """:meth:`start` with SIGTERM/SIGINT handling: the first signal stops the manager in
        order, a second exits the process with code 1. Call from the main thread.

        Raises:
            LeaderElectionLostError: the lease was lost (exit non-zero).
        """
        handler = SignalHandler().install()
        try:
            self.start(handler.stop_event)
        finally:
            handler.uninstall()

    def start(self, stop_event: threading.Event) -> None:
        """Start everything in order, block until ``stop_event`` is set (or the lease is lost,
        or a runnable raises), then stop everything in order.

        Called again after it returned, it restarts the manager (see "Restart" above).

        Raises:
            AlreadyStartedError: the manager is running (on another thread), or a runnable or
                reconcile abandoned by the last stop still runs.
            LeaderElectionLostError: the lease was lost while running.
            BaseException: the first exception a runnable raised, after the shutdown.
            OSError: the health server's address cannot be bound (nothing else started).
        """
        with self._lock:
            if self._active:
                raise AlreadyStartedError("the manager is running")
            self._caches_synced.clear()
            self.elected.clear()
            restart = self._started
            if restart:
                still = [r.name for r in self._runnables if r.alive()]
                if still:
                    raise AlreadyStartedError(
                        "cannot start the manager again: runnable(s) "
                        f"{', '.join(still)} from the last run still running")
            self._started = True
            self._active = True
        try:
            if restart:
                self._reset()
        except BaseException:
            if self.factory is not None:
                self.factory.shutdown()  # starts nothing; the next start resets it again
            with self._lock:
                self._active = False
            raise
        try:
            if self._start_all(stop_event):
                while not self._stop_requested.is_set():
                    if REAL_CLOCK.wait_event(stop_event, _STOP_POLL):
                        break
        finally:
            try:
                self._shutdown()
            finally:
                with self._lock:
                    self._active = False
        if self._leadership_lost:
            lease = self.elector.lock.describe() if self.elector is not None else ""
            raise LeaderElectionLostError(f"leader election lost: lease {lease}")
        if self._failure is not None:
            raise self._failure

    def _reset(self) -> None:
        """Make a stopped manager startable: new informers, queues, events, elector and
        health server (see "Restart")."""
        replaced = self.factory.reset() if self.factory is not None else {}
        # Every informer ever replaced maps to the current one: a controller left on an older
        # one by a failed restart (its reset raised) moves to the current one next time.
        self._replaced = {old: replaced.get(cur, cur) for old, cur in self._replaced.items()}
        self._replaced.update(replaced)
        with self._lock:
            controllers = list(self._controllers)
        for controller in controllers:
            controller.reset(self._replaced)
        self._replaced = {}  # let the old informers and their caches go
        with self._lock:
            for r in self._runnables:
                r.thread = None
            self._running = set()
            self._stopping = False
            self._stop_requested = threading.Event()
            self._work_stop = threading.Event()
            self._elector_stop = threading.Event()
            self._elector_thread = None
            self._leadership_lost = False
            self._failure = None
        if self._leader_election is not None:
            self.elector = self._new_elector(self._leader_election)
        old = self.health_server
        if old is not None and self._health_address is not None:
            server = HealthServer(self._health_address, registry=self.metrics_registry)
            for name, check in old.checks("healthz").items():
                server.add_healthz_check(name, check)
            for name, check in old.checks("readyz").items():
                server.add_readyz_check(name, check)
            self.health_server = server

    def _start_all(self, stop_event: threading.Event) -> bool:
        """Steps 1-4 of the start order; False when stopped before the caches synced."""
        if self.health_server is not None:
            self.health_server.start()
        for webhook_server in self._webhook_servers:
            webhook_server.start()
        if self.factory is not None:
            logger.info("manager: starting informers and waiting for their caches")
            self.factory.start()
            synced = self.factory.wait_for_cache_sync(stop_event)
            if not all(synced.values()):
                unsynced = sorted(k for k, ok in synced.items() if not ok)
                logger.info("manager: stopped before caches synced (%s)", ", ".join(unsynced))
                return False
        self._caches_synced.set()
        logger.info("manager: caches synced")
        with self._lock:
            for r in self._runnables:
                if not r.needs_leader:
                    self._start_runnable(r)
        if self.elector is None:
            self._start_leader_runnables()
            return True
        logger.info("manager: starting leader election as %s", self.identity)
        self._elector_thread = threading.Thread(
            target=self.elector.run,
            args=(self._elector_stop,),
            name="manager-leader-election",
            daemon=True,
        )
        self._elector_thread.start()
        return True

    def _start_runnable(self, r: RunnableEntry) -> None:
        """Start ``r`` on its thread (lock held)."""
        self._running.add(r.name)
        r.thread = threading.Thread(
            target=self._run_runnable, args=(r,), name=f"manager-{r.name}", daemon=True
        )
        r.thread.start()

    def _run_runnable(self, r: RunnableEntry) -> None:
        try:
            r.fn(self._work_stop)
        except BaseException as err:
            logger.exception("manager: runnable %s failed; stopping the manager", r.name)
            with self._lock:
                if self._failure is None:
                    self._failure = err
            self._stop_requested.set()
        finally:
            with self._cond:
                self._running.discard(r.name)
                self._cond.notify_all()

    def _start_leader_runnables(self) -> None:
        with self._lock:
            if self._stopping:
                return
            leaders = [r for r in self._runnables if r.needs_leader]
            self.elected.set()  # before they start: they ask is_leader()
            for r in leaders:
                self._start_runnable(r)
        logger.info("manager: started %d leader-only runnables", len(leaders))

    def _on_started_leading(self, leader_stop: threading.Event) -> None:
        logger.info("manager: became leader as %s", self.identity)
        self._start_leader_runnables()

    def _on_stopped_leading(self) -> None:
        with self._lock:
            stopping = self._stopping
            led = self.elected.is_set()
        if stopping or not led:
            return
        logger.error("manager: leader election lost as %s; stopping", self.identity)
        self._leadership_lost = True
        self._stop_requested.set()

    def _shutdown(self) -> None:
        """Steps 1-4 of the stop order."""
        with self._lock:
            self._stopping = True
            runnables = list(self._runnables)
        self._stop_requested.set()

        # 1. Stop taking work: every runnable sees its stop event and drains.
        logger.info("manager: stopping runnables (timeout %ss)", self.shutdown_timeout)
        self._work_stop.set()
        deadline = self._clock.now() + self.shutdown_timeout
        with self._cond:
            while self._running:
                remaining = deadline - self._clock.now()
                if remaining <= 0:
                    break
                self._clock.wait_condition(self._cond, remaining)
            unstopped = tuple(sorted(self._running))
        for name in unstopped:
            logger.error(
                "manager: runnable %s did not stop within %ss; abandoning it",
                name,
                self.shutdown_timeout,
            )
        for r in runnables:
            if r.thread is not None and r.name not in unstopped:
                r.thread.join()
        self.unstopped = unstopped

        # 2. Release the lease (only once nothing it guards is running).
        if self.elector is not None and self._elector_thread is not None:
            leaders_running = [r.name for r in runnables if r.needs_leader and r.name in unstopped]
            if leaders_running and self.elector.release_on_cancel:
                logger.warning(
                    "manager: not releasing the lease: %s still running", ", ".join(leaders_running)
                )
                self.elector.release_on_cancel = False
            self._elector_stop.set()
            self._elector_thread.join()

        # 3. Stop the informers.
        if self.factory is not None:
            logger.info("manager: stopping informers")
            self.factory.shutdown()

        # 4. Stop the servers: webhooks, then health and metrics.
        for webhook_server in self._webhook_servers:
            webhook_server.stop()
        if self.health_server is not None:
            self.health_server.stop()
        logger.info("manager: stopped")
