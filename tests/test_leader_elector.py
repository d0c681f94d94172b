"""Tests for informers.leaderelection.leader_elector: two electors against the embedded server.

Every participant has its own FakeClock (its "local clock"), so a test decides exactly when each
one acts. A step is taken only while the participant waits on its clock (``settle``).
"""

from __future__ import annotations

import datetime
import json
import logging
import random
import threading
import time

import pytest

from informers.clock import FakeClock
from informers.errors import InformersError, LeaderElectionConfigError
from informers.events import EventRecorder
from informers.leaderelection import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    JITTER_FACTOR,
    LeaderElector,
    LeaseLock,
    PrometheusMetricsProvider,
)

NS = "kube-system"
UTC = datetime.timezone.utc


class ZeroRandom(random.Random):
    """Jitter off: acquire retries come exactly every retry period."""

    def random(self):
        return 0.0


@pytest.fixture
def api(server):
    client = server.api_client()
    yield client
    client.close()


_counter = iter(range(10_000))


@pytest.fixture
def lease_name(server):
    server.clear_faults()
    return f"ctrl-{next(_counter)}"


def wait_until(predicate, timeout=5.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


def waiting(clock, count=1):
    """Whether ``count`` waits are pending on ``clock``, all with a deadline in the future."""
    deadline = clock.next_deadline()
    return clock.waiter_count() >= count and deadline is not None and deadline > clock.now()


def settle(clock, count=1):
    """Wait until ``count`` waits are pending on ``clock``, all in the future."""
    wait_until(lambda: waiting(clock, count), what="the participant to wait on its clock")


def read_spec(api, name):
    from kubernetes import client

    resp = client.CoordinationV1Api(api).read_namespaced_lease(name, NS, _preload_content=False)
    return json.loads(resp.data)["spec"]


class Participant:
    """One elector running in a thread, recording its callbacks in order."""

    def __init__(self, api, identity, lease_name, *, clock=None, event_recorder=None, **kwargs):
        self.identity = identity
        self.clock = clock or FakeClock()
        self.lock = LeaseLock(api, NS, lease_name, identity, event_recorder=event_recorder)
        self.calls = []
        self._calls_lock = threading.Lock()
        self.started = threading.Event()
        self.leader_stop_seen = threading.Event()
        self.stopped = threading.Event()
        self.leader_stop = None
        self.stop = threading.Event()
        self.elector = LeaderElector(
            self.lock,
            on_started_leading=self._on_started,
            on_stopped_leading=self._on_stopped,
            on_new_leader=self._on_new_leader,
            clock=self.clock,
            rng=ZeroRandom(),
            name=lease_name,
            **kwargs,
        )
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True)

    def _record(self, call):
        with self._calls_lock:
            self.calls.append(call)

    def _on_started(self, leader_stop):
        self.leader_stop = leader_stop
        self._record("started")
        self.started.set()
        leader_stop.wait()
        self.leader_stop_seen.set()

    def _on_stopped(self):
        self._record("stopped")
        self.stopped.set()

    def _on_new_leader(self, identity):
        self._record(("new_leader", identity))

    def new_leaders(self):
        with self._calls_lock:
            return [c[1] for c in self.calls if isinstance(c, tuple)]

    def start(self, wait_for="settle"):
        self.thread.start()
        if wait_for == "leading":
            assert self.started.wait(5)
        settle(self.clock)

    def advance(self, seconds):
        """Step this participant's clock while it waits, then wait until it waits again."""
        settle(self.clock)
        self.clock.step(seconds)
        if not self.stopped.is_set():
            wait_until(
                lambda: self.stopped.is_set() or waiting(self.clock),
                what=f"{self.identity} to wait again",
            )

    def halt(self):
        self.stop.set()
        self.thread.join(5)
        assert not self.thread.is_alive()


# -- configuration ----------------------------------------------------------------------------

def _noop(*_args):
    pass


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lease_duration": 10, "renew_deadline": 10}, "leaseDuration must be greater than "
         "renewDeadline"),
        ({"lease_duration": 15, "renew_deadline": 2.4, "retry_period": 2},
         "renewDeadline must be greater than retryPeriod*JitterFactor"),
        ({"lease_duration": 0, "renew_deadline": -1, "retry_period": -1},
         "leaseDuration must be greater than zero"),
        ({"lease_duration": -1, "renew_deadline": -2, "retry_period": -2},
         "leaseDuration must be greater than zero"),
        ({"lease_duration": 1, "renew_deadline": 0, "retry_period": -1},
         "renewDeadline must be greater than zero"),
        ({"lease_duration": 2, "renew_deadline": 1, "retry_period": 0},
         "retryPeriod must be greater than zero"),
        ({"on_started_leading": None}, "OnStartedLeading callback must not be nil"),
        ({"on_started_leading": None, "on_stopped_leading": None},
         "OnStartedLeading callback must not be nil"),
        ({"on_stopped_leading": None}, "OnStoppedLeading callback must not be nil"),
        ({"lock": None}, "Lock must not be nil."),
        ({"lock": LeaseLock(None, NS, "x", "")}, "Lock identity is empty"),
        # Ratio checks come before the callback and lock checks.
        ({"lease_duration": 5, "renew_deadline": 10, "lock": None, "on_started_leading": None},
         "leaseDuration must be greater than renewDeadline"),
    ],
)
def test_validation_in_client_go_order(kwargs, message):
    args = {
        "lock": LeaseLock(None, NS, "x", "me"),
        "on_started_leading": _noop,
        "on_stopped_leading": _noop,
    }
    args.update(kwargs)
    lock = args.pop("lock")
    with pytest.raises(LeaderElectionConfigError) as info:
        LeaderElector(lock, **args)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError) and isinstance(info.value, InformersError)


def test_defaults_follow_component_base():
    assert (DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD) == (15, 10, 2)
    assert JITTER_FACTOR == 1.2
    elector = LeaderElector(
        LeaseLock(None, NS, "x", "me"), on_started_leading=_noop, on_stopped_leading=_noop
    )
    assert (elector.lease_duration, elector.renew_deadline, elector.retry_period) == (15, 10, 2)
    assert elector.release_on_cancel is False
    assert elector.is_leader() is False
    assert elector.get_leader() == ""
    assert elector.check(0) is None


def test_smallest_valid_ratios_are_accepted():
    LeaderElector(
        LeaseLock(None, NS, "x", "me"),
        lease_duration=2.5,
        renew_deadline=2.41,
        retry_period=2,
        on_started_leading=_noop,
        on_stopped_leading=_noop,
    )


# -- one participant --------------------------------------------------------------------------

def test_acquire_creates_lease_and_renews(api, lease_name):
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    assert a.elector.is_leader() and a.elector.get_leader() == "a"
    assert read_spec(api, lease_name) == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-01-01T00:00:00.000000Z",
        "renewTime": "2026-01-01T00:00:00.000000Z",
        "leaseTransitions": 0,
    }
    a.advance(2)
    spec = read_spec(api, lease_name)
    assert spec["renewTime"] == "2026-01-01T00:00:02.000000Z"
    assert spec["acquireTime"] == "2026-01-01T00:00:00.000000Z"
    assert spec["leaseTransitions"] == 0
    a.halt()
    # Not released: the lease still names a.
    assert read_spec(api, lease_name)["holderIdentity"] == "a"
    assert a.leader_stop.is_set()


def test_callbacks_in_documented_order(api, lease_name):
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    wait_until(lambda: len(a.calls) >= 2, what="on_new_leader")
    assert not a.leader_stop_seen.is_set()
    a.halt()
    assert a.leader_stop_seen.wait(5)
    assert a.calls == [("new_leader", "a"), "started", "stopped"]


def test_on_stopped_leading_called_even_if_never_led(api, lease_name):
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    b = Participant(api, "b", lease_name)
    b.start()
    b.halt()
    assert b.stopped.is_set()
    assert not b.started.is_set()
    wait_until(lambda: b.new_leaders() == ["a"], what="b to report a")
    assert b.calls[-1] == "stopped"
    a.halt()


# -- two participants -------------------------------------------------------------------------

def test_exactly_one_leads(api, lease_name):
    clock = FakeClock()  # shared: both act at the same instants
    a = Participant(api, "a", lease_name, clock=clock)
    b = Participant(api, "b", lease_name, clock=clock)
    a.thread.start()
    b.thread.start()
    settle(clock, 2)
    for _ in range(10):
        clock.step(2)
        time.sleep(0)  # let both run before settling again
        settle(clock, 2)
    leaders = [p for p in (a, b) if p.started.is_set()]
    assert len(leaders) == 1
    leader = leaders[0]
    follower = b if leader is a else a
    assert read_spec(api, lease_name)["holderIdentity"] == leader.identity
    assert leader.elector.is_leader() and not follower.elector.is_leader()
    assert follower.elector.get_leader() == leader.identity
    assert follower.new_leaders() == [leader.identity]
    a.halt()
    b.halt()


def test_follower_takes_over_after_lease_duration_and_not_before(api, lease_name):
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    b = Participant(api, "b", lease_name)
    b.start()  # saw a's record at b-time 0
    a.halt()  # a stops renewing, without release
    assert a.stopped.is_set()
    for _ in range(7):  # b-time 2 .. 14: 0 + 15 > now, still a's
        b.advance(2)
        assert not b.started.is_set()
        assert b.elector.get_leader() == "a"
    assert b.clock.now() == 14
    b.advance(2)  # b-time 16: expired on b's clock
    assert b.started.wait(5)
    spec = read_spec(api, lease_name)
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert spec["acquireTime"] == "2026-01-01T00:00:16.000000Z"
    wait_until(lambda: b.new_leaders() == ["a", "b"], what="b to report itself")
    b.halt()


def test_renewals_keep_the_follower_out(api, lease_name):
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    b = Participant(api, "b", lease_name)
    b.start()
    for _ in range(20):  # 40 s on each clock, more than twice the lease duration
        a.advance(2)
        b.advance(2)
    assert not b.started.is_set()
    assert a.elector.is_leader()
    assert read_spec(api, lease_name)["leaseTransitions"] == 0
    a.halt()
    b.halt()


def test_takes_over_immediately_after_release(api, lease_name):
    a = Participant(api, "a", lease_name, release_on_cancel=True)
    a.start(wait_for="leading")
    a.advance(2)
    b = Participant(api, "b", lease_name)
    b.start()
    a.halt()
    spec = read_spec(api, lease_name)
    assert spec == {
        "holderIdentity": "",
        "leaseDurationSeconds": 1,
        "acquireTime": "2026-01-01T00:00:02.000000Z",
        "renewTime": "2026-01-01T00:00:02.000000Z",
        "leaseTransitions": 0,
    }
    assert not a.elector.is_leader() and a.elector.get_leader() == ""
    b.advance(2)  # the next try, far before a lease duration
    assert b.started.wait(5)
    spec = read_spec(api, lease_name)
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    b.halt()


def test_the_lease_is_released_only_after_the_guarded_code_returned(api, lease_name):
    seen = []

    class Guarded(Participant):
        def _on_started(self, leader_stop):
            leader_stop.wait()
            time.sleep(0.2)  # still finishing what the lease guards
            seen.append(read_spec(api, lease_name)["holderIdentity"])

    a = Guarded(api, "a", lease_name, release_on_cancel=True)
    a.thread.start()
    wait_until(lambda: a.elector.leading(), what="a to lead")
    a.halt()
    assert seen == ["a"]  # run() waited for it before releasing
    assert read_spec(api, lease_name)["holderIdentity"] == ""


def test_run_joins_its_callback_threads(api, lease_name):
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    wait_until(lambda: a.new_leaders() == ["a"], what="on_new_leader")
    a.halt()
    assert a.leader_stop_seen.is_set()  # on_started_leading had returned: no wait needed
    assert [t.name for t in threading.enumerate() if t.name.startswith("leader-elector-")] == []


def test_release_observed_then_takeover_reports_empty_leader(api, server, lease_name):
    a = Participant(api, "a", lease_name, release_on_cancel=True)
    a.start(wait_for="leading")
    b = Participant(api, "b", lease_name)
    b.start()
    a.halt()
    server.fail_next(1, 500, verb="update", resource="leases")
    b.advance(2)  # sees holder "" but its update fails
    assert not b.started.is_set()
    assert b.elector.get_leader() == ""
    b.advance(2)
    assert b.started.wait(5)
    wait_until(lambda: b.new_leaders() == ["a", "", "b"], what="b's reports")
    b.halt()


def test_leader_that_cannot_renew_steps_down_before_takeover(api, server, lease_name):
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    b = Participant(api, "b", lease_name)
    b.start()
    server.fail_next(1000, 500, verb="update", resource="leases")
    # Both clocks run at the same rate. a's last renewal was at 0; its renew round starting
    # at 2 gives up at 2 + renew_deadline = 12.
    for now in (2, 4, 6, 8, 10):
        a.advance(2)
        b.advance(2)
        assert not a.leader_stop.is_set(), now
        assert a.elector.is_leader()
    a.advance(2)
    assert a.leader_stop.is_set()
    a.thread.join(5)
    assert a.stopped.is_set() and a.calls[-1] == "stopped"
    b.advance(2)  # b-time 12
    assert not b.started.is_set()
    server.clear_faults()
    b.advance(2)  # b-time 14: 0 + 15 > 14
    assert not b.started.is_set()
    b.advance(2)  # b-time 16
    assert b.started.wait(5)
    assert read_spec(api, lease_name)["holderIdentity"] == "b"
    b.halt()


@pytest.mark.parametrize("skew_days", [-9000, 9000])
def test_remote_timestamps_do_not_matter(api, lease_name, skew_days):
    skewed = FakeClock(
        wall_start=datetime.datetime(2026, 1, 1, tzinfo=UTC) + datetime.timedelta(days=skew_days)
    )
    a = Participant(api, "a", lease_name, clock=skewed)
    a.start(wait_for="leading")
    renew = datetime.datetime.fromisoformat(
        read_spec(api, lease_name)["renewTime"].replace("Z", "+00:00")
    )
    assert abs((renew - datetime.datetime(2026, 1, 1, tzinfo=UTC)).days) == abs(skew_days)
    b = Participant(api, "b", lease_name)
    b.start()
    a.halt()
    for _ in range(7):
        b.advance(2)
        assert not b.started.is_set()
    b.advance(2)
    assert b.started.wait(5)
    b.halt()


def test_check_reports_a_leader_that_stopped_renewing(api, server, lease_name):
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    assert a.elector.check(0) is None
    server.fail_next(1000, 500, verb="update", resource="leases")
    for _ in range(6):
        a.advance(2)  # renewals fail; a steps down at 12 and run returns
    a.thread.join(5)
    server.clear_faults()
    # The last observation was the slow-path read at 2; a still believes it holds the lease.
    assert a.elector.is_leader()
    a.clock.step(20 - a.clock.now())
    assert a.elector.check(3) is None  # 20 - 2 = 18 = 15 + 3, not more
    assert a.elector.check(2.5) == f"failed election to renew leadership on lease {lease_name}"


def test_metrics_status_and_slowpath(api, lease_name):
    from kubernetes import client
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    a = Participant(api, "a", lease_name, metrics_provider=provider)

    def status():
        return registry.get_sample_value(
            "leader_election_master_status", {"name": lease_name}
        )

    def slowpath():
        return registry.get_sample_value("leader_election_slowpath_total", {"name": lease_name})

    assert status() == 0
    a.start(wait_for="leading")
    assert status() == 1
    a.advance(2)
    assert slowpath() in (None, 0.0)
    # Someone else touches the Lease: the optimistic update conflicts, the slow path renews.
    client.CoordinationV1Api(api).patch_namespaced_lease(
        lease_name, NS, {"metadata": {"labels": {"touched": "yes"}}},
        _content_type="application/merge-patch+json", _preload_content=False,
    )
    a.advance(2)
    assert slowpath() == 1
    assert read_spec(api, lease_name)["renewTime"] == "2026-01-01T00:00:04.000000Z"
    assert a.elector.is_leader()
    a.halt()
    assert status() == 0


def test_leadership_changes_are_recorded_as_events(api, server, lease_name):
    recorder = EventRecorder(api, "ctrl", clock=FakeClock())
    recorder.start()
    try:
        a = Participant(api, "a", lease_name, event_recorder=recorder)
        a.start(wait_for="leading")
        a.halt()
        wait_until(
            lambda: len([e for e in server.list("events", NS)
                         if e["involvedObject"].get("name") == lease_name]) == 2,
            what="two leader election events",
        )
    finally:
        recorder.stop()
    found = sorted(
        (e["message"], e["reason"], e["type"], e["involvedObject"]["kind"],
         e["involvedObject"]["apiVersion"])
        for e in server.list("events", NS) if e["involvedObject"].get("name") == lease_name
    )
    assert found == [
        ("a became leader", "LeaderElection", "Normal", "Lease", "coordination.k8s.io/v1"),
        ("a stopped leading", "LeaderElection", "Normal", "Lease", "coordination.k8s.io/v1"),
    ]


# -- acting only while leading: overdue renewals and paused processes -------------------------

def test_leading_ends_renew_deadline_after_the_last_renewal_started(api, server, lease_name):
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    assert a.elector.leading()
    server.fail_next(1000, 500, verb="update", resource="leases")
    for now in (2, 4, 6, 8):
        a.advance(2)  # the renewals from 2 on fail
        assert a.elector.leading(), now
    a.advance(2)  # a-time 10 = 0 + renew deadline: in doubt, though the round goes on
    assert not a.elector.leading()
    assert a.elector.is_leader() and not a.leader_stop.is_set() and not a.stopped.is_set()
    a.advance(2)  # a-time 12 = 2 + renew deadline: the round gives up
    assert a.stopped.wait(5) and a.leader_stop.is_set()
    assert not a.elector.leading()
    server.clear_faults()


def test_leadership_in_doubt_is_confirmed_by_a_later_renewal(api, server, lease_name):
    # authority min(2.25, 3) = 2.25 after the renewal that started at 0; the round that
    # starts at 0.5 tries until 0.5 + 2.25 = 2.75, and the lease expires for others at 3.
    a = Participant(api, "a", lease_name, lease_duration=3, renew_deadline=2.25,
                    retry_period=0.5)
    a.start(wait_for="leading")
    server.fail_next(1000, 500, verb="update", resource="leases")
    for _ in range(4):
        a.advance(0.5)  # renewals at 0.5, 1, 1.5, 2 fail
    assert a.elector.leading()
    a.advance(0.25)  # 2.25: nothing happens on the wire, but a may no longer act
    assert not a.elector.leading() and a.elector.is_leader()
    server.clear_faults()
    a.advance(0.25)  # 2.5: the renewal succeeds and proves nobody took over
    assert a.elector.leading()
    assert not a.leader_stop.is_set() and not a.stopped.is_set()
    assert read_spec(api, lease_name)["renewTime"] == "2026-01-01T00:00:02.500000Z"
    a.halt()


def test_authority_never_outlasts_the_whole_seconds_written_to_the_lease(api, lease_name):
    # Standbys wait leaseDurationSeconds = int(2.5) = 2, less than the renew deadline 2.2.
    a = Participant(api, "a", lease_name, lease_duration=2.5, renew_deadline=2.2,
                    retry_period=1)
    a.start(wait_for="leading")
    assert read_spec(api, lease_name)["leaseDurationSeconds"] == 2
    a.halt()  # no more renewals; leading() is about the clock only
    a.elector._set_leading(True)
    a.clock.step(1.999)
    assert a.elector.leading()
    a.clock.step(0.001)
    assert not a.elector.leading()


def test_a_paused_leader_stops_leading_at_once_when_it_resumes(api, lease_name, caplog):
    caplog.set_level(logging.INFO, logger="informers.leaderelection.leader_elector")
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    b = Participant(api, "b", lease_name)
    b.start()  # saw a's record at b-time 0
    # a is frozen (its clock does not move, it renews nothing); b takes over after 15 s.
    for _ in range(8):
        b.advance(2)
    assert b.started.wait(5)
    assert read_spec(api, lease_name)["holderIdentity"] == "b"
    settle(a.clock)
    a.clock.step(20)  # a resumes: 20 s passed while it was stopped
    # At once, before its renew loop even ran, a may not act.
    assert not a.elector.leading()
    # Its first renewal attempt finds b holding the lease: it steps down without retrying
    # until a-time 20 + renew deadline, so without another step of its clock.
    assert a.stopped.wait(5) and a.leader_stop.is_set()
    assert a.clock.now() == 20
    assert read_spec(api, lease_name)["holderIdentity"] == "b"
    assert "a 2.0s wait took 20.000s (the process was paused or starved)" in caplog.text
    assert f"lease {NS}/{lease_name} is held by b: stopping leading at once" in caplog.text
    b.halt()


def test_a_paused_leader_without_a_rival_renews_and_leads_on(api, lease_name):
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    settle(a.clock)
    a.clock.step(20)
    assert not a.elector.leading()  # in doubt until the renewal
    wait_until(lambda: a.elector.leading(), what="a to renew")
    assert read_spec(api, lease_name)["renewTime"] == "2026-01-01T00:00:20.000000Z"
    assert not a.leader_stop.is_set() and not a.stopped.is_set()
    a.halt()


def test_a_paused_leader_that_cannot_renew_steps_down_at_once(api, server, lease_name):
    a = Participant(api, "a", lease_name)
    a.start(wait_for="leading")
    settle(a.clock)
    server.fail_next(1000, 500, verb="get", resource="leases")
    server.fail_next(1000, 500, verb="update", resource="leases")
    a.clock.step(20)  # past 0 + 15: others may have taken the lease, and a cannot tell
    assert a.stopped.wait(5) and a.leader_stop.is_set()
    assert a.clock.now() == 20
    server.clear_faults()
