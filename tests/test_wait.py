"""Tests for informers.wait: polling has_synced functions on an injected clock."""

from __future__ import annotations

import threading

from informers.clock import FakeClock
from informers.errors import CacheSyncTimeoutError
from informers.wait import SYNCED_POLL_PERIOD, wait_for_cache_sync, wait_for_named_cache_sync

WAIT = 5.0


def _run(fn):
    result: dict[str, object] = {}

    def run() -> None:
        try:
            result["value"] = fn()
        except Exception as err:
            result["error"] = err

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, result


def test_returns_true_at_once_when_all_synced() -> None:
    clock = FakeClock()
    assert wait_for_cache_sync(threading.Event(), lambda: True, lambda: True, clock=clock)
    assert wait_for_cache_sync(None, clock=clock) is True  # nothing to wait for
    assert clock.now() == 0.0


class Probe:
    """A has_synced function that records the clock time of each call."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls: list[float] = []
        self.synced = False
        self.cond = threading.Condition()

    def __call__(self) -> bool:
        with self.cond:
            self.calls.append(round(self.clock.now(), 6))
            self.cond.notify_all()
            return self.synced

    def wait_calls(self, n: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.calls) >= n, WAIT), self.calls


def test_polls_every_100ms_until_synced() -> None:
    assert SYNCED_POLL_PERIOD == 0.1
    clock = FakeClock()
    probe = Probe(clock)
    t, result = _run(lambda: wait_for_cache_sync(threading.Event(), probe, clock=clock))
    for n in range(1, 4):
        probe.wait_calls(n)
        assert clock.wait_for_waiters(1, WAIT)
        assert abs(clock.next_deadline() - clock.now() - 0.1) < 1e-9
        if n == 3:
            probe.synced = True
        clock.step(0.1)
    t.join(WAIT)
    assert result["value"] is True
    assert probe.calls == [0.0, 0.1, 0.2, 0.3]


def test_returns_false_when_stopped() -> None:
    clock = FakeClock()
    stop = threading.Event()
    t, result = _run(lambda: wait_for_cache_sync(stop, lambda: False, clock=clock))
    assert clock.wait_for_waiters(1, WAIT)
    stop.set()
    t.join(WAIT)
    assert result["value"] is False


def test_stop_already_set_returns_false_without_waiting() -> None:
    stop = threading.Event()
    stop.set()
    assert wait_for_cache_sync(stop, lambda: False, clock=FakeClock()) is False
    assert wait_for_cache_sync(stop, lambda: True, clock=FakeClock()) is True


def test_timeout_on_the_clock() -> None:
    clock = FakeClock()
    probe = Probe(clock)
    t, result = _run(lambda: wait_for_cache_sync(None, probe, clock=clock, timeout=0.25))
    for n in range(1, 4):
        probe.wait_calls(n)
        assert clock.wait_for_waiters(1, WAIT)
        clock.step(0.1)
    t.join(WAIT)
    err = result["error"]
    assert isinstance(err, CacheSyncTimeoutError)
    assert str(err) == "timed out after 0.25s waiting for caches to sync: Probe (no error yet)"
    assert err.unsynced == {"Probe": None} and err.timeout == 0.25
    # polls at 0, 0.1, 0.2; the third wait is cut to the remaining 0.05 s (the step to 0.3
    # ends it); one last poll at the deadline, then it gives up
    assert probe.calls == [0.0, 0.1, 0.2, 0.3]


def test_named_variant_logs(caplog) -> None:
    caplog.set_level("INFO", logger="informers.wait")
    assert wait_for_named_cache_sync("endpoints", None, lambda: True, clock=FakeClock())
    stop = threading.Event()
    stop.set()
    assert not wait_for_named_cache_sync("endpoints", stop, lambda: False, clock=FakeClock())
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == 'Waiting for caches to sync for "endpoints"'
    assert messages[1] == 'Caches are synced for "endpoints"'
    assert messages[-1] == 'unable to sync caches for "endpoints"'


class _Informer:
    """What wait_for_cache_sync reads from an informer's bound ``has_synced``."""

    def __init__(self, name: str, synced: bool, error: BaseException | None) -> None:
        self.name = name
        self._synced = synced
        self._error = error

    def has_synced(self) -> bool:
        return self._synced

    def last_sync_error(self) -> BaseException | None:
        return self._error


def test_timeout_error_names_the_unsynced_informers_and_their_last_error() -> None:
    pods = _Informer("pods", False, ConnectionRefusedError("connection refused"))
    nodes = _Informer("nodes", True, None)
    services = _Informer("services", False, None)
    try:
        wait_for_cache_sync(None, pods.has_synced, nodes.has_synced, services.has_synced,
                            clock=FakeClock(), timeout=0)
    except CacheSyncTimeoutError as err:
        assert str(err) == ("timed out after 0s waiting for caches to sync: pods (last error: "
                            "connection refused); services (no error yet)")
        assert list(err.unsynced) == ["pods", "services"]
    else:
        raise AssertionError("no CacheSyncTimeoutError")
