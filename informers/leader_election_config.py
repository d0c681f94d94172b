"""How a :class:`~informers.manager.Manager` takes part in leader election, and the elector
built from that.

:class:`LeaderElectionConfig` holds the Lease and the durations (controller-runtime
``manager.Options`` ``LeaderElection*``; the defaults are client-go's);
:func:`new_elector` builds the :class:`~informers.leaderelection.LeaderElector` a manager
runs for one start (a restart builds a new one with the same identity). The health-check
name and tolerance here are those of the manager's ``/healthz`` check of the elector.
Immutable values and a pure builder: safe from any thread.
"""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from informers.clock import Clock
from informers.leaderelection import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    LeaderElector,
    LeaseLock,
)
from informers.leaderelection import MetricsProvider as LeaderElectionMetricsProvider

__all__ = [
    "LEADER_ELECTION_CHECK",
    "LEADER_ELECTION_HEALTH_TOLERANCE",
    "LeaderElectionConfig",
    "default_identity",
    "new_elector",
]

LEADER_ELECTION_CHECK = "leader-election"
"""The liveness check of a leader that failed to step down (client-go ``HealthzAdaptor``)."""

LEADER_ELECTION_HEALTH_TOLERANCE = 20.0
"""Seconds past the lease duration a leader may go without renewing before ``/healthz``
fails: kube-controller-manager's ``leaderelection.NewLeaderHealthzAdaptor(time.Second * 20)``."""


def default_identity() -> str:
    """A leader-election identity unique to this process: ``<hostname>_<uuid>``, as
    controller-runtime builds its lock's (``pkg/leaderelection/leader_election.go``
    ``NewResourceLock``: ``os.Hostname()`` + ``"_"`` + ``uuid.NewUUID()``). The default of
    :attr:`LeaderElectionConfig.identity` for :class:`~informers.manager.Manager` and
    :class:`informers.aio.manager.AsyncManager`; a new one on every call."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaderElectionConfig:
    """How a :class:`Manager` takes part in leader election on a coordination.k8s.io/v1 Lease.

    Attributes:
        lease_name: the Lease's name, shared by every replica (controller-runtime
            ``LeaderElectionID``).
        lease_namespace: the Lease's namespace.
        identity: this replica's identity, unique among the replicas; ``None`` for
            ``<hostname>_<uuid4>`` (controller-runtime's default).
        lease_duration: seconds a standby waits after last seeing the lease change before it
            takes over (default 15 s, client-go and controller-runtime).
        renew_deadline: seconds the leader keeps retrying a renewal before it steps down
            (default 10 s).
        retry_period: seconds between attempts (default 2 s).
        release_on_cancel: release the lease at shutdown, once the leader-only runnables
            have stopped, so a standby takes over at once instead of after
            ``lease_duration``. Default ``True`` (controller-runtime defaults to ``False``);
            the manager skips the release when a leader-only runnable did not stop in time.
    """

    lease_name: str
    lease_namespace: str
    identity: str | None = None
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    release_on_cancel: bool = True


def new_elector(
    api_client: Any, cfg: LeaderElectionConfig, identity: str, *,
    on_started_leading: Callable[[threading.Event], None],
    on_stopped_leading: Callable[[], None], clock: Clock,
    metrics_provider: LeaderElectionMetricsProvider | None,
) -> LeaderElector:
    """The elector of ``cfg`` for ``identity`` on a Lease lock of ``api_client``."""
    lock = LeaseLock(
        api_client,
        cfg.lease_namespace,
        cfg.lease_name,
        identity,
        # kube-controller-manager bounds each lease request by the renew deadline.
        request_timeout=cfg.renew_deadline,
    )
    return LeaderElector(
        lock,
        lease_duration=cfg.lease_duration,
        renew_deadline=cfg.renew_deadline,
        retry_period=cfg.retry_period,
        on_started_leading=on_started_leading,
        on_stopped_leading=on_stopped_leading,
        release_on_cancel=cfg.release_on_cancel,
        name=cfg.lease_name,
        clock=clock,
        metrics_provider=metrics_provider,
    )
