"""Elects one leader among several async processes on a coordination.k8s.io/v1 Lease.

The rules are :class:`informers.leaderelection.LeaderElector`'s (client-go
``tools/leaderelection``), and so is the code that decides: the observed record and the local
time it was observed, ``tryAcquireOrRenew`` (fast path, local expiry timer restarted when the
raw record changes, takeover versus renewal) and ``release`` are
:class:`informers.leaderelection.election.Election`'s sans-I/O generators, whose lock
operations :class:`AsyncLeaseLock` performs; the renew round's early exits are
:func:`~informers.leaderelection.election.renew_verdict`; the configuration checks are
:func:`~informers.leaderelection.leader_elector.validate_config`; the Lease bodies are
:mod:`informers.leaderelection.lease_lock`'s. Only the waiting differs: tasks and cancel scopes
instead of threads and events.

``await elector.run(lead)`` tries to acquire every ``retry_period`` (jittered by
:data:`~informers.leaderelection.leader_elector.JITTER_FACTOR`); once leading it runs
``await lead()`` in a task beside the renew loop. When a renewal round fails (renew deadline,
lease seen taken, or expired for the others) ``lead`` is cancelled and ``run`` returns
``True`` (leadership lost); when ``lead`` returns (its work is done, e.g. a stop drained it)
the renewals end and ``run`` returns ``False``. Either way the lease is released
(``release_on_cancel``) only after ``lead`` has returned. Cancelling ``run`` (leaving the
enclosing task group) cancels ``lead`` and releases likewise, shielded. ``leading()`` is the
check before each guarded action, as the threaded one's. With an ``event_recorder`` on the
lock, the Lease gets the threaded elector's events (:func:`~informers.leaderelection.
leader_elector.record_lock_event`): ``"<identity> became leader"`` once acquired and
``"<identity> stopped leading"`` when leading ends, after the release.

Time: ``clock`` gives the local times and the record's wall times, ``sleep`` waits (default
``anyio.sleep``); tests pass a :class:`~informers.clock.FakeClock` and a ``sleep`` that steps
it. One event loop.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import anyio

from informers.aio.transport import AsyncTransport
from informers.clock import REAL_CLOCK, Clock
from informers.errors import LeaseNotInitializedError
from informers.leaderelection.election import Attempt, Election, renew_verdict
from informers.leaderelection.leader_elector import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    JITTER_FACTOR,
    record_lock_event,
    validate_config,
)
from informers.leaderelection.lease_lock import (
    EventfRecorder,
    lease_spec_to_record,
    new_lease,
    raw_record,
    record_lease_event,
    updated_lease,
)
from informers.leaderelection.metrics import MetricsProvider, get_provider
from informers.leaderelection.resource_lock import LeaderElectionRecord

__all__ = ["AsyncLeaderElector", "AsyncLeaseLock"]

logger = logging.getLogger(__name__)


class AsyncLeaseLock:
    """The async :class:`~informers.leaderelection.LeaseLock`: the Lease read, created and
    written (PUT with the ``resourceVersion`` last read: 409 Conflict when someone wrote in
    between) through an :class:`~informers.aio.transport.AsyncTransport` (shared, not closed
    here). Used by one elector.

    Args:
        transport: the transport.
        namespace: the Lease's namespace.
        name: the Lease's name.
        identity: this participant's unique identity.
        labels: set on create, merged on update (client-go ``NewWithLabels``).
        event_recorder: optional; receives a ``Normal`` ``LeaderElection`` event
            ``"<identity> <what>"`` about the Lease on :meth:`record_event` (the threaded
            lock's, client-go ``LeaseLock.RecordEvent``). Its ``eventf`` must not block: an
            :class:`~informers.events.EventRecorder` only queues (its writer is a thread).
        request_timeout: seconds per request (kube-controller-manager: the renew deadline).
    """

    def __init__(self, transport: AsyncTransport, namespace: str, name: str, identity: str,
                 labels: dict[str, str] | None = None, *,
                 event_recorder: EventfRecorder | None = None,
                 request_timeout: float | None = None) -> None:
        self.transport = transport
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.labels = dict(labels) if labels is not None else None
        self.event_recorder = event_recorder
        self.request_timeout = request_timeout
        self._lease: dict[str, Any] | None = None
        ns, nm = quote(namespace, safe=""), quote(name, safe="")
        self._collection_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
        self._path = f"{self._collection_path}/{nm}"

    @property
    def lease(self) -> dict[str, Any] | None:
        """The Lease last read or written, or ``None``. Read-only."""
        return self._lease

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        """Read the Lease; its record and raw record bytes.

        Raises:
            StatusError: 404 when the Lease does not exist, or another failure.
        """
        lease = await self.transport.request("GET", self._path,
                                             request_timeout=self.request_timeout)
        self._lease = lease
        spec = lease.get("spec") or {}
        return lease_spec_to_record(spec), raw_record(spec)

    async def create(self, record: LeaderElectionRecord) -> None:
        body = new_lease(self.namespace, self.name, self.labels, record)
        self._lease = await self.transport.request("POST", self._collection_path, body,
                                                   request_timeout=self.request_timeout)

    async def update(self, record: LeaderElectionRecord) -> None:
        """Raises ``LeaseNotInitializedError`` before a get or create, ``Conflict`` on a
        concurrent write."""
        if self._lease is None:
            raise LeaseNotInitializedError("lease not initialized, call get or create first")
        body = updated_lease(self._lease, self.labels, record)
        self._lease = await self.transport.request("PUT", self._path, body,
                                                   request_timeout=self.request_timeout)

    def record_event(self, s: str) -> None:
        """Emit ``Normal LeaderElection "<identity> <s>"`` about the Lease, if a recorder is
        set (:func:`~informers.leaderelection.lease_lock.record_lease_event`)."""
        record_lease_event(self.event_recorder, self._lease, self.namespace, self.name,
                           self.identity, s)


async def _drive(attempt: Attempt, lock: AsyncLeaseLock) -> bool:
    """:func:`informers.leaderelection.election.drive` for an async lock."""
    try:
        op = next(attempt)
        while True:
            try:
                fn = getattr(lock, op.name)
                result = await (fn() if op.record is None else fn(op.record))
            except Exception as err:
                op = attempt.throw(err)
            else:
                op = attempt.send(result)
    except StopIteration as done:
        return bool(done.value)


class AsyncLeaderElector:
    """A participant in a leader election, for async code (see the module docstring).

    Args:
        lock: the :class:`AsyncLeaseLock`.
        lease_duration: as :class:`~informers.leaderelection.LeaderElector`'s (15 s).
        renew_deadline: likewise (10 s).
        retry_period: likewise (2 s).
        on_new_leader: optional ``async def on_new_leader(identity)``, awaited in the
            election task whenever the observed holder changes (keep it short).
        release_on_cancel: give the lease up when leading ends.
        name: the lease's name for metrics and :meth:`check`.
        clock: local times and the record's wall times.
        sleep: waits (``anyio.sleep``).
        rng: the acquire jitter's random source.
        metrics_provider: ``None`` for the process-wide provider.

    Raises:
        LeaderElectionConfigError: client-go's checks, in client-go's order.
    """

    def __init__(self, lock: AsyncLeaseLock, *,
                 lease_duration: float = DEFAULT_LEASE_DURATION,
                 renew_deadline: float = DEFAULT_RENEW_DEADLINE,
                 retry_period: float = DEFAULT_RETRY_PERIOD,
                 on_new_leader: Callable[[str], Awaitable[None]] | None = None,
                 release_on_cancel: bool = False, name: str = "",
                 clock: Clock = REAL_CLOCK,
                 sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
                 rng: random.Random | None = None,
                 metrics_provider: MetricsProvider | None = None) -> None:
        validate_config(lock, lease_duration, renew_deadline, retry_period, True,  # type: ignore[arg-type]
                        True)
        self.lock = lock
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_new_leader = on_new_leader
        self.release_on_cancel = release_on_cancel
        self.name = name
        self.clock = clock
        self.sleep = sleep
        self._rng = rng or random.Random()
        self._metrics = (metrics_provider or get_provider()).new_leader_metric()
        self._election = Election(lock.identity, lease_duration, renew_deadline, lock.describe,
                                  name, clock, self._metrics)
        self._started = False
        self._metrics.off(name)

    def get_leader(self) -> str:
        """The holder in the last observed record, ``""`` before any."""
        return self._election.get_leader()

    def is_leader(self) -> bool:
        """The last observed record names this participant (says nothing of its age)."""
        return self._election.is_leader()

    def leading(self) -> bool:
        """Whether this participant may act as leader now (the threaded elector's rule)."""
        return self._election.leading()

    def check(self, max_tolerable_expired_lease: float) -> str | None:
        """Health check (client-go ``Check``): ``None`` when healthy."""
        return self._election.check(max_tolerable_expired_lease)

    async def run(self, lead: Callable[[], Awaitable[None]]) -> bool:
        """Take part until leadership is lost (``True``), ``lead`` returns (``False``) or the
        task is cancelled. Runs once.

        Raises:
            RuntimeError: run a second time.
        """
        if self._started:
            raise RuntimeError("an AsyncLeaderElector runs once; make a new one")
        self._started = True
        desc = self.lock.describe()
        led = False
        try:
            logger.info("attempting to acquire leader lease %s...", desc)
            while not await self._attempt():
                logger.debug("failed to acquire lease %s", desc)
                await self.sleep(self.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR))
            led = True
            self._election.set_leading(True)
            record_lock_event(self.lock, "became leader")
            self._metrics.on(self.name)
            logger.info("successfully acquired lease %s", desc)
            lost = False
            async with anyio.create_task_group() as tg:
                async def leader() -> None:
                    try:
                        await lead()
                    except Exception:
                        logger.exception("the leader's work failed for lease %s", desc)
                    finally:
                        tg.cancel_scope.cancel()  # done leading: stop renewing

                tg.start_soon(leader, name=f"leader-{desc}")
                await self._renew()
                lost = True
                tg.cancel_scope.cancel()
            return lost
        finally:
            self._election.set_leading(False)
            self._metrics.off(self.name)
            if led and self.release_on_cancel:
                with anyio.CancelScope(shield=True):
                    await _drive(self._election.release(), self.lock)
            if led:
                record_lock_event(self.lock, "stopped leading")

    async def _attempt(self) -> bool:
        succeeded = await _drive(self._election.try_acquire_or_renew(), self.lock)
        holder = self._election.transition()
        if holder is not None and self.on_new_leader is not None:
            try:
                await self.on_new_leader(holder)
            except Exception:
                logger.exception("on_new_leader failed for lease %s", self.lock.describe())
        return succeeded

    async def _renew(self) -> None:
        """Renew every ``retry_period`` until a round fails (client-go ``renew``)."""
        desc = self.lock.describe()
        while await self._renew_within_deadline():
            logger.debug("successfully renewed lease %s", desc)
            slept_from = self.clock.now()
            await self.sleep(self.retry_period)
            slept = self.clock.now() - slept_from
            if slept > 2 * self.retry_period:  # as the threaded elector: paused or starved
                logger.warning("renewing lease %s: a %ss wait took %.3fs (the process was "
                               "paused or starved); %s", desc, self.retry_period, slept,
                               "still leading" if self.leading() else
                               "leadership in doubt until the lease is renewed")
        self._election.set_leading(False)
        logger.info("failed to renew lease %s: stopped leading", desc)

    async def _renew_within_deadline(self) -> bool:
        """Retry every ``retry_period`` for up to ``renew_deadline``, stepping down at once
        when :func:`~informers.leaderelection.election.renew_verdict` says so."""
        deadline = self.clock.now() + self.renew_deadline
        expiry = self._election.expiry()
        while True:
            if await self._attempt():
                return True
            now = self.clock.now()
            verdict = renew_verdict(self.get_leader(), self.lock.identity, now, expiry,
                                    deadline, self.renew_deadline)
            if verdict is not None:
                logger.info("lease %s %s", self.lock.describe(), verdict)
                return False
            await self.sleep(min(self.retry_period, deadline - now))
            if self.clock.now() >= deadline:
                return False
