"""Elects one leader among several processes through a lock, at client-go parity.

Mirrors client-go ``tools/leaderelection/leaderelection.go``. A participant acts only on
timestamps taken from its *own* clock: the lock's renew and acquire times are never trusted.
A record counts as live while ``observed_time + record.lease_duration_seconds > now``, where
``observed_time`` is the local time at which this participant last saw the record *change*.
That makes the election tolerant to arbitrary clock skew between participants, though not to
arbitrary clock *rate* skew: the ratio ``lease_duration / renew_deadline`` is the tolerated
rate ratio (client-go's package comment). It does not guarantee that only one process acts as
leader (no fencing): code guarded by the lease must stop when told to, and should ask
:meth:`LeaderElector.leading` before each action.

Beyond client-go, a leader also bounds its *own* authority by its own clock: it counts as
leading only until ``min(renew_deadline, leaseDurationSeconds)`` after the start of its last
successful acquire or renew. A standby can take over only ``leaseDurationSeconds`` after it
*observed* that write, which came after the write started, so with clock rates within the
ratio ``lease_duration / renew_deadline`` (the tolerance client-go's package comment states)
the leader's authority ends before anyone else's begins. This covers a process that was
frozen (SIGSTOP, a stalled VM, a long GC): ``CLOCK_MONOTONIC``, behind :class:`Clock`'s
``now()``, keeps running while a process is stopped, so on resume :meth:`LeaderElector.leading`
is false at once, before the renew loop has even run. client-go instead keeps leading after a
resume until a renewal round misses ``RenewDeadline``.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Protocol

from informers.clock import REAL_CLOCK, Clock
from informers.errors import LeaderElectionConfigError
from informers.leaderelection.election import Election, drive, renew_verdict
from informers.leaderelection.metrics import LeaderMetric, MetricsProvider, get_provider
from informers.leaderelection.resource_lock import ResourceLock

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "EventLock",
    "LeaderElector",
    "record_lock_event",
    "validate_config",
]

logger = logging.getLogger(__name__)

JITTER_FACTOR = 1.2
"""Acquire retries wait ``retry_period * (1 + rand * JITTER_FACTOR)`` (client-go
leaderelection.go ``JitterFactor``)."""

# component-base config/v1alpha1 defaults.go RecommendedDefaultLeaderElectionConfiguration
# (LeaseDuration 15s, RenewDeadline 10s, RetryPeriod 2s); client-go's LeaderElectionConfig
# docs: "Core clients default this value to 15 seconds" / 10 / 2.
DEFAULT_LEASE_DURATION = 15.0
"""Seconds a standby waits, after last seeing the lease change, before it takes over."""
DEFAULT_RENEW_DEADLINE = 10.0
"""Seconds the leader keeps retrying a renewal before it steps down."""
DEFAULT_RETRY_PERIOD = 2.0
"""Seconds between attempts to acquire or renew."""



class LeaderElector:
    """A participant in a leader election (client-go ``LeaderElector``).

    :meth:`run` blocks: it tries to acquire the lock every ``retry_period`` (jittered by
    :data:`JITTER_FACTOR`); once it leads it calls ``on_started_leading(leader_stop)`` in a new
    thread and renews every ``retry_period``. If a renewal does not succeed within
    ``renew_deadline`` it steps down: ``leader_stop`` is set, the lease is released when
    ``release_on_cancel`` is true, and :meth:`run` returns. It also returns when ``stop`` is
    set. ``on_stopped_leading()`` is called, in the thread that called :meth:`run`, every time
    :meth:`run` returns, *even if this participant never led* (client-go: "Users should not
    assume that OnStoppedLeading is only called after OnStartedLeading").

    **Acting as leader.** :meth:`leading` is the check to make before every action the lease
    guards (cheap: a lock and a clock read, no request). It is true from the acquisition
    until ``min(renew_deadline, int(lease_duration))`` seconds after the start of the last
    successful acquire or renew, and never again once this participant stepped down. While
    renewals fail it turns false before the renew round gives up (leadership is *in doubt*:
    the guarded code should pause, not stop); a later successful renewal, whose write is
    conditional on the Lease's resourceVersion and so proves nobody else took over
    meanwhile, makes it true again.

    **Stepping down at once** (beyond client-go, which retries until ``renew_deadline``): a
    renewal round ends as soon as a failed attempt shows the lease held by someone else, or
    when the lease has expired for the others (``leaseDurationSeconds`` after the last
    successful renewal started, e.g. after the process was paused) and the attempt failed.
    A renew wait that took longer than ``2 * retry_period`` (the process was paused or starved)
    is logged.

    ``on_new_leader(identity)`` is called in a new thread whenever the observed holder differs
    from the last one reported: the first holder seen, this participant itself, and ``""``
    when a release is observed before anyone else takes over. No callback ever blocks the
    election loop; :meth:`run` joins the callback threads before it returns, so
    ``on_started_leading`` must return promptly once ``leader_stop`` is set (and
    ``on_new_leader`` promptly at all), or :meth:`run` waits for it.

    Thread safety: :meth:`run` is called once, from one thread. :meth:`leading`,
    :meth:`is_leader`, :meth:`get_leader` and :meth:`check` may be called from any thread;
    they read the last observed record, which is at most ``retry_period`` (plus request
    time) stale.

    Args:
        lock: the lock; its ``identity`` must be unique among participants.
        lease_duration: seconds non-leaders wait, after last seeing the record change, before
            they take over. Written to the record as whole seconds.
        renew_deadline: seconds the leader keeps retrying a renewal before it gives up.
        retry_period: seconds between attempts.
        on_started_leading: called with the leader stop event when this participant starts
            leading.
        on_stopped_leading: called when :meth:`run` returns.
        on_new_leader: optional; called with the identity of each newly observed holder.
        release_on_cancel: give the lease up (holder ``""``, duration 1 s) when leading ends.
            Only safe if everything guarded by the lease has stopped by then.
        name: the lease's name for metrics and :meth:`check` (client-go ``Name``).
        clock: time source for waits and the local observation times; its ``wall()`` stamps
            the record's (informational) acquire and renew times.
        rng: random source for the acquire jitter.
        metrics_provider: where the metrics go; ``None`` for the process-wide provider.

    Raises:
        LeaderElectionConfigError: a value fails client-go's checks, in client-go's order.
    """

    def __init__(
        self,
        lock: ResourceLock | None,
        *,
        lease_duration: float = DEFAULT_LEASE_DURATION,
        renew_deadline: float = DEFAULT_RENEW_DEADLINE,
        retry_period: float = DEFAULT_RETRY_PERIOD,
        on_started_leading: Callable[[threading.Event], None] | None,
        on_stopped_leading: Callable[[], None] | None,
        on_new_leader: Callable[[str], None] | None = None,
        release_on_cancel: bool = False,
        name: str = "",
        clock: Clock = REAL_CLOCK,
        rng: random.Random | None = None,
        metrics_provider: MetricsProvider | None = None,
    ) -> None:
        validate_config(lock, lease_duration, renew_deadline, retry_period, on_started_leading,
                  on_stopped_leading)
        assert lock is not None and on_started_leading is not None
        assert on_stopped_leading is not None
        self._lock = lock
        self._identity = lock.identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        self.release_on_cancel = release_on_cancel
        self.name = name
        self._clock = clock
        self._rng = rng or random.Random()
        self._metrics: LeaderMetric = (metrics_provider or get_provider()).new_leader_metric()

        # The observed record, its local observation time and the decisions (shared with
        # the async elector).
        self._election = Election(self._identity, lease_duration, renew_deadline,
                                  lock.describe, name, clock, self._metrics)
        # Touched only by the run() thread.
        self._leader_thread: threading.Thread | None = None
        self._notify_threads: list[threading.Thread] = []  # on_new_leader calls

        self._metrics.off(self.name)

    # -- observation -------------------------------------------------------------------------

    @property
    def lock(self) -> ResourceLock:
        return self._lock

    def get_leader(self) -> str:
        """The holder in the last observed record, ``""`` if none was observed yet."""
        return self._election.get_leader()

    def is_leader(self) -> bool:
        """Whether the last observed record names this participant as holder (client-go
        ``IsLeader``). Says nothing about how old that observation is: guard actions with
        :meth:`leading` instead."""
        return self._election.is_leader()

    def leading(self) -> bool:
        """Whether this participant may act as leader now: it acquired the lease, has not
        stepped down, and its last successful acquire or renew started less than
        ``min(renew_deadline, int(lease_duration))`` seconds ago on its clock."""
        return self._election.leading()

    def _set_leading(self, leading: bool) -> None:
        self._election.set_leading(leading)

    def check(self, max_tolerable_expired_lease: float) -> str | None:
        """Health check (client-go ``Check``): ``None`` when healthy, else an error message.

        A leader that has not observed its record for longer than ``lease_duration +
        max_tolerable_expired_lease`` should have stepped down but did not (a deadlock, say),
        and reports ``failed election to renew leadership on lease <name>``. A non-leader is
        always healthy.
        """
        return self._election.check(max_tolerable_expired_lease)

    # -- the loop ----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Take part in the election until ``stop`` is set or leadership is lost.

        Call it once per elector. Never raises for lock or callback failures (they are
        logged). To run again after losing leadership, build a new elector (client-go
        controllers usually exit instead).

        Stop order once leading ends: :meth:`leading` turns false and ``leader_stop`` is set;
        the ``on_started_leading`` thread is joined (so the lease is released only after the
        code it guards has returned); the lease is released (``release_on_cancel``); the
        ``on_new_leader`` threads are joined; ``on_stopped_leading()`` is called.
        """
        leader_stop = threading.Event()
        led = False
        try:
            if not self._acquire(stop):
                return
            led = True
            self._set_leading(True)
            self._leader_thread = threading.Thread(
                target=self._call_started_leading,
                args=(leader_stop,),
                name=f"leader-elector-{self.name or self._lock.describe()}",
                daemon=True,
            )
            self._leader_thread.start()
            self._renew(stop, leader_stop)
        finally:
            self._set_leading(False)
            leader_stop.set()
            if self._leader_thread is not None:
                self._leader_thread.join()
            if led:
                if self.release_on_cancel:
                    self._release()
                self._lock_record_event("stopped leading")
            for thread in self._notify_threads:
                thread.join()
            self._notify_threads.clear()
            self._metrics.off(self.name)
            try:
                self._on_stopped_leading()
            except Exception:
                logger.exception("on_stopped_leading failed for lease %s", self._lock.describe())

    def _call_started_leading(self, leader_stop: threading.Event) -> None:
        try:
            self._on_started_leading(leader_stop)
        except Exception:
            logger.exception("on_started_leading failed for lease %s", self._lock.describe())

    def _acquire(self, stop: threading.Event) -> bool:
        """Try until acquired (True) or ``stop`` is set (False): client-go ``acquire``."""
        desc = self._lock.describe()
        logger.info("attempting to acquire leader lease %s...", desc)
        while not stop.is_set():
            succeeded = self._try_acquire_or_renew()
            self._maybe_report_transition()
            if succeeded:
                self._lock_record_event("became leader")
                self._metrics.on(self.name)
                logger.info("successfully acquired lease %s", desc)
                return True
            logger.debug("failed to acquire lease %s", desc)
            # wait.JitterUntil(..., RetryPeriod, JitterFactor, sliding=true)
            wait = self.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR)
            if self._clock.sleep(wait, stop):
                break
        return False

    def _renew(self, stop: threading.Event, leader_stop: threading.Event) -> None:
        """Renew every ``retry_period`` until this participant must step down or ``stop``."""
        desc = self._lock.describe()
        try:
            while not stop.is_set():
                outcome = self._renew_within_deadline(stop)
                self._maybe_report_transition()
                if outcome is None:  # stop was set
                    break
                if not outcome:
                    self._set_leading(False)
                    leader_stop.set()
                    self._metrics.off(self.name)
                    logger.info("failed to renew lease %s: stopped leading", desc)
                    break
                logger.debug("successfully renewed lease %s", desc)
                # wait.Until(..., RetryPeriod): the next round starts a period after this one.
                slept_from = self._clock.now()
                if self._clock.sleep(self.retry_period, stop):
                    break
                slept = self._clock.now() - slept_from
                if slept > 2 * self.retry_period:
                    logger.warning(
                        "renewing lease %s: a %ss wait took %.3fs (the process was paused or "
                        "starved); %s",
                        desc,
                        self.retry_period,
                        slept,
                        "still leading" if self.leading() else
                        "leadership in doubt until the lease is renewed",
                    )
        finally:
            self._set_leading(False)
            leader_stop.set()

    def _renew_within_deadline(self, stop: threading.Event) -> bool | None:
        """Retry every ``retry_period`` for up to ``renew_deadline``, but give up at once when
        the lease is seen held by another or has expired for the others.

        client-go ``PollUntilContextTimeout(RetryPeriod, RenewDeadline, immediate=true)`` plus
        the two early exits. Returns True on success, False when this participant must step
        down, None when ``stop`` was set.
        """
        desc = self._lock.describe()
        deadline = self._clock.now() + self.renew_deadline
        expiry = self._election.expiry()  # from here on a standby may take over
        while True:
            if stop.is_set():
                return None
            if self._try_acquire_or_renew():
                return True
            now = self._clock.now()
            verdict = renew_verdict(self.get_leader(), self._identity, now, expiry, deadline,
                                    self.renew_deadline)
            if verdict is not None:
                logger.info("lease %s %s", desc, verdict)
                return False
            if self._clock.sleep(min(self.retry_period, deadline - now), stop):
                return None
            if self._clock.now() >= deadline:
                return False

    # -- one attempt -------------------------------------------------------------------------

    def _try_acquire_or_renew(self) -> bool:
        """One attempt to acquire or renew (client-go ``tryAcquireOrRenew``); True on success."""
        return drive(self._election.try_acquire_or_renew(), self._lock)

    def _release(self) -> bool:
        """Give the lease up if we hold it (client-go ``release``; see
        :meth:`informers.leaderelection.election.Election.release`)."""
        return drive(self._election.release(), self._lock)

    # -- reporting ---------------------------------------------------------------------------

    def _maybe_report_transition(self) -> None:
        holder = self._election.transition()
        if holder is None or self._on_new_leader is None:
            return
        thread = threading.Thread(
            target=self._call_new_leader,
            args=(holder,),
            name=f"leader-elector-new-leader-{self.name or self._lock.describe()}",
            daemon=True,
        )
        self._notify_threads = [t for t in self._notify_threads if t.is_alive()]
        self._notify_threads.append(thread)
        thread.start()

    def _call_new_leader(self, identity: str) -> None:
        assert self._on_new_leader is not None
        try:
            self._on_new_leader(identity)
        except Exception:
            logger.exception("on_new_leader failed for lease %s", self._lock.describe())

    def _lock_record_event(self, s: str) -> None:
        record_lock_event(self._lock, s)


class EventLock(Protocol):
    """What :func:`record_lock_event` needs of a lock (threaded or async)."""

    def describe(self) -> str: ...

    def record_event(self, s: str) -> None: ...


def record_lock_event(lock: EventLock, s: str) -> None:
    """``lock.record_event(s)`` (``"became leader"`` once acquired, ``"stopped leading"`` when
    leading ends, after the release: client-go leaderelection.go ``acquire`` and ``renew``'s
    deferred ``RecordEvent``); a failing recorder is logged, never stops the election. Shared
    by the threaded and the async elector."""
    try:
        lock.record_event(s)
    except Exception:
        logger.exception("recording event %r for lease %s failed", s, lock.describe())


def validate_config(
    lock: ResourceLock | None,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    on_started_leading: object,
    on_stopped_leading: object,
) -> None:
    """client-go ``NewLeaderElector``'s checks, in its order and with its messages (shared
    with the async elector).

    Raises:
        LeaderElectionConfigError: the first check that fails.
    """
    if lease_duration <= renew_deadline:
        raise LeaderElectionConfigError("leaseDuration must be greater than renewDeadline")
    if renew_deadline <= JITTER_FACTOR * retry_period:
        raise LeaderElectionConfigError(
            "renewDeadline must be greater than retryPeriod*JitterFactor"
        )
    if lease_duration <= 0:
        raise LeaderElectionConfigError("leaseDuration must be greater than zero")
    if renew_deadline <= 0:
        raise LeaderElectionConfigError("renewDeadline must be greater than zero")
    if retry_period <= 0:
        raise LeaderElectionConfigError("retryPeriod must be greater than zero")
    if on_started_leading is None:
        raise LeaderElectionConfigError("OnStartedLeading callback must not be nil")
    if on_stopped_leading is None:
        raise LeaderElectionConfigError("OnStoppedLeading callback must not be nil")
    if lock is None:
        raise LeaderElectionConfigError("Lock must not be nil.")
    if not lock.identity:
        raise LeaderElectionConfigError("Lock identity is empty")
