"""Tests for informers.reflector: client-go's list/watch rules, state by state.

Part 1 drives the reflector with a scripted ListWatch and a FakeClock (every backoff is
stepped, nothing sleeps). Part 2 runs it against the embedded API server over real HTTP and
asserts the exact list and watch requests in the server's request log.
"""

from __future__ import annotations

import collections
import os
import queue
import random
import signal
import threading
import time

import pytest
from helpers import split_options

from informers.backoff import Backoff
from informers.client import list_watch_from_client
from informers.clock import REAL_CLOCK, FakeClock
from informers.errors import (
    ApiConnectionError,
    ListError,
    StatusError,
    VeryShortWatchError,
    WatchDecodeError,
)
from informers.indexer import Indexer
from informers.list_watch import ListOptions, ListResult, ListWatch, WatchEvent
from informers.reflector import Reflector, default_watch_error_handler
from informers.resources import lookup
from informers.testing import ApiServer
from informers.testing.endpoints import CONTINUE_TOO_OLD

# -- part 1: the reflector's rules against a scripted ListWatch (FakeClock, milliseconds) ---------


class Stream:
    """A WatchStream fed by the test: push events, end it, or let close() end it."""

    def __init__(self, events: list[WatchEvent] | None = None, end: bool = False) -> None:
        self.q: queue.Queue[object] = queue.Queue()
        self.closed = threading.Event()
        for e in events or []:
            self.q.put(e)
        if end:
            self.q.put(END)

    def push(self, *events: WatchEvent) -> None:
        for e in events:
            self.q.put(e)

    def end(self) -> None:
        self.q.put(END)

    def __iter__(self):
        return self

    def __next__(self) -> WatchEvent:
        # A class iterator (not a generator) may raise and still go on, as a stream that
        # surfaces WatchDecodeError does.
        item = self.q.get()
        if item is END:
            self.q.put(END)
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self) -> None:
        self.closed.set()
        self.q.put(END)


END = object()


class ScriptedLW:
    """A ListWatch whose answers the test scripts; records every call.

    ``lists``/``watches`` hold, in order, what each call returns: a ListResult (or a Stream),
    an exception to raise, or a callable taking the options. When empty, lists return the
    current ``items`` at ``rv`` and watches block on a fresh Stream.
    """

    def __init__(self) -> None:
        self.lists: collections.deque[object] = collections.deque()
        self.watches: collections.deque[object] = collections.deque()
        self.calls: list[tuple] = []
        self.streams: list[Stream] = []
        self.items: list[dict] = []
        self.rv = "10"
        self.cond = threading.Condition()
        self.lw = ListWatch(self._list, self._watch)

    def _record(self, verb: str, o: ListOptions) -> None:
        with self.cond:
            if verb == "list":
                self.calls.append(("list", o.resource_version, o.limit, o.continue_))
            else:
                self.calls.append(("watch", o.resource_version, o.allow_watch_bookmarks,
                                   o.timeout_seconds, o.send_initial_events,
                                   o.resource_version_match))
            self.cond.notify_all()

    def _list(self, o: ListOptions) -> ListResult:
        self._record("list", o)
        answer = self.lists.popleft() if self.lists else None
        if answer is None:
            return ListResult(list(self.items), self.rv, None)
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return answer(o)
        return answer

    def _watch(self, o: ListOptions) -> Stream:
        self._record("watch", o)
        answer = self.watches.popleft() if self.watches else None
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            answer = answer(o)
        stream = answer if answer is not None else Stream()
        with self.cond:
            self.streams.append(stream)
            self.cond.notify_all()
        return stream

    def wait_calls(self, n: int, timeout: float = 5.0) -> list[tuple]:
        with self.cond:
            ok = self.cond.wait_for(lambda: len(self.calls) >= n, timeout)
            assert ok, f"expected {n} calls, got {self.calls}"
            return list(self.calls)

    def stream(self, i: int, timeout: float = 5.0) -> Stream:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.streams) > i, timeout), self.calls
            return self.streams[i]


class RecordingStore:
    """A StoreLike recording every call (and the reflector's version at replace time)."""

    def __init__(self) -> None:
        self.ops: list[tuple] = []
        self.reflector: Reflector | None = None
        self.cond = threading.Condition()
        self.fail_replace: BaseException | None = None
        self.fail_resync: BaseException | None = None

    def _op(self, *op: object) -> None:
        with self.cond:
            self.ops.append(op)
            self.cond.notify_all()

    def add(self, obj):
        self._op("add", name(obj))

    def update(self, obj):
        self._op("update", name(obj))

    def delete(self, obj):
        self._op("delete", name(obj))

    def replace(self, objs, rv):
        if self.fail_replace is not None:
            raise self.fail_replace
        seen = self.reflector.last_sync_resource_version() if self.reflector else None
        self._op("replace", sorted(name(o) for o in objs), rv, seen)

    def resync(self):
        self._op("resync")
        if self.fail_resync is not None:
            raise self.fail_resync

    def wait_ops(self, n: int, timeout: float = 5.0) -> list[tuple]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.ops) >= n, timeout), self.ops
            return list(self.ops)


def name(obj: dict) -> str:
    return obj["metadata"]["name"]


def pod(n: str, rv: str, **meta) -> dict:
    return {"kind": "Pod", "metadata": {"name": n, "namespace": "ns", "resourceVersion": rv,
                                        **meta}}


def added(n: str, rv: str) -> WatchEvent:
    return WatchEvent("ADDED", pod(n, rv))


def modified(n: str, rv: str) -> WatchEvent:
    return WatchEvent("MODIFIED", pod(n, rv))


def deleted(n: str, rv: str) -> WatchEvent:
    return WatchEvent("DELETED", pod(n, rv))


def bookmark(rv: str, end: str | None = None) -> WatchEvent:
    meta: dict = {"resourceVersion": rv}
    if end is not None:
        meta["annotations"] = {"k8s.io/initial-events-end": end}
    return WatchEvent("BOOKMARK", {"kind": "Pod", "metadata": meta})


def status(code: int, reason: str, message: str = "", **extra) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": message, **extra}


def refused() -> ApiConnectionError:
    return ApiConnectionError("connect: connection refused", refused=True)


SEED = 1234


def timeouts(n: int, seed: int = SEED) -> list[int]:
    """The first n watch timeouts a reflector with rng=Random(seed) picks."""
    r = random.Random(seed)
    return [int(300 + r.random() * 300) for _ in range(n)]


class Harness:
    """A reflector over a ScriptedLW and a RecordingStore, running on a thread."""

    def __init__(self, *, jitter: float = 0.0, **kwargs) -> None:
        self.clock = FakeClock()
        self.slw = ScriptedLW()
        self.store = RecordingStore()
        self.errors: list[BaseException] = []
        kwargs.setdefault("watch_error_handler", lambda r, e: self.errors.append(e))
        self.backoff = Backoff(clock=self.clock, jitter=jitter, rng=random.Random(99))
        options, kwargs = split_options(kwargs, rng=random.Random(SEED), backoff=self.backoff)
        self.r = Reflector(self.slw.lw, self.store, options, name="test", clock=self.clock,
                           **kwargs)
        self.store.reflector = self.r
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.r.run, args=(self.stop,), daemon=True)

    def start(self) -> Harness:
        self.thread.start()
        return self

    def _pending(self) -> float:
        end = time.monotonic() + 5
        while time.monotonic() < end:
            deadline = self.clock.next_deadline()
            if deadline is not None and deadline - self.clock.now() > 1e-9:
                return deadline - self.clock.now()
            time.sleep(0.001)
        raise AssertionError(f"no backoff wait; calls={self.slw.calls}")

    def backoff_wait(self) -> float:
        """Wait until the reflector sleeps on the clock; return the pending delay.

        A wait whose deadline has passed may linger for a moment after a step, so only a
        deadline in the future counts.
        """
        return round(self._pending(), 6)

    def step_backoff(self) -> float:
        delay = self._pending()
        self.clock.step(delay)
        return round(delay, 6)

    def finish(self, timeout: float = 5.0) -> None:
        self.stop.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "run() did not return after stop"


@pytest.fixture
def harness():
    made: list[Harness] = []

    def make(**kwargs) -> Harness:
        h = Harness(**kwargs)
        made.append(h)
        return h

    yield make
    for h in made:
        h.stop.set()
        h.thread.join(5) if h.thread.is_alive() else None


def test_initial_list_then_watch(harness):
    h = harness()
    h.slw.items = [pod("a", "5"), pod("b", "7")]
    h.start()
    stream = h.slw.stream(0)
    t = timeouts(1)[0]
    assert h.slw.calls == [("list", "0", 500, None), ("watch", "10", True, t, None, None)]
    # replace (never per-item adds), and the version is set only after it
    assert h.store.ops == [("replace", ["a", "b"], "10", "")]
    assert h.r.last_sync_resource_version() == "10"
    stream.push(added("c", "11"), modified("a", "12"), deleted("b", "13"))
    h.store.wait_ops(4)
    h.finish()
    assert h.store.ops[1:] == [("add", "c"), ("update", "a"), ("delete", "b")]
    assert h.r.last_sync_resource_version() == "13"
    assert stream.closed.is_set()
    assert (h.r.metrics.lists_total, h.r.metrics.watches_total, h.r.metrics.events_total) == (
        1, 1, 3)
    assert h.errors == []


def test_watch_timeout_is_random_in_min_to_twice_min(harness):
    h = harness()
    assert [h.r._watch_timeout() for _ in range(5)] == timeouts(5)
    assert all(300 <= t < 600 for t in timeouts(200))
    h2 = harness(min_watch_timeout=60)  # below 5 min: ignored
    assert (h2.r.min_watch_timeout, h2.r.max_watch_timeout) == (300.0, 600.0)
    h3 = harness(min_watch_timeout=400)
    assert (h3.r.min_watch_timeout, h3.r.max_watch_timeout) == (400, 800)
    r = random.Random(SEED)
    assert h3.r._watch_timeout() == int(400 + r.random() * 400)


def test_normal_watch_end_resumes_from_last_version_without_relist(harness):
    h = harness().start()
    s0 = h.slw.stream(0)
    s0.push(added("a", "11"), modified("a", "12"))
    s0.end()
    h.slw.stream(1)
    t = timeouts(2)
    assert h.slw.calls == [
        ("list", "0", 500, None),
        ("watch", "10", True, t[0], None, None),
        ("watch", "12", True, t[1], None, None),  # at once, from the last version
    ]
    assert not h.clock.has_waiters()  # no backoff
    h.finish()


def test_very_short_watch_relists_after_backoff(harness):
    h = harness().start()
    h.slw.stream(0).end()  # closed at once (fake time does not move) with no event
    assert h.backoff_wait() == 0.8
    assert isinstance(h.r.metrics.last_error, VeryShortWatchError)
    assert str(h.r.metrics.last_error) == (
        "very short watch: test: Unexpected watch close - watch lasted less than a second "
        "and no items received")
    h.clock.step(0.8)
    h.slw.stream(1)
    assert [c[:3] for c in h.slw.calls] == [
        ("list", "0", 500), ("watch", "10", True), ("list", "10", None), ("watch", "10", True)]
    assert h.errors == []  # client-go logs watch ends; the handler sees list-and-watch errors
    h.finish()


def test_watch_lasting_a_second_without_events_is_normal(harness):
    h = harness().start()
    s0 = h.slw.stream(0)
    h.clock.step(1.0)
    s0.end()
    h.slw.stream(1)
    assert [c[:2] for c in h.slw.calls] == [("list", "0"), ("watch", "10"), ("watch", "10")]
    h.finish()


def test_410_error_event_relists_at_last_sync_version(harness):
    h = harness().start()
    s0 = h.slw.stream(0)
    s0.push(modified("a", "15"), WatchEvent("ERROR", status(410, "Expired", "too old")))
    assert h.backoff_wait() == 0.8
    h.clock.step(0.8)
    h.slw.stream(1)
    assert [c[:3] for c in h.slw.calls] == [
        ("list", "0", 500), ("watch", "10", True),
        ("list", "15", None),   # lastSyncRV, unpaginated so the watch cache can serve it
        ("watch", "10", True),  # the list answered rv 10 (ScriptedLW's fixed version)
    ]
    assert h.errors == []
    h.finish()


def test_events_before_an_error_event_are_counted(harness):
    h = harness().start()
    s0 = h.slw.stream(0)
    s0.push(added("a", "11"), modified("a", "12"), bookmark("13"),
            WatchEvent("ERROR", status(410, "Expired", "too old")))
    assert h.backoff_wait() == 0.8
    assert (h.r.metrics.events_total, h.r.metrics.watch_errors_total) == (3, 1)
    h.clock.step(0.8)
    s1 = h.slw.stream(1)
    s1.push(deleted("a", "14"))
    h.store.wait_ops(5)
    h.finish()
    assert h.r.metrics.events_total == 4


def test_410_on_list_retries_at_once_with_consistent_read(harness):
    # client-go TestReflectorExpiredExactResourceVersion: lists at "0", "10", "".
    h = harness()
    h.slw.lists.extend([
        None,
        StatusError(status(410, "Expired", "rv 10 is too old")),
        ListResult([pod("x", "30")], "30", None),
        None,
    ])
    h.start()
    h.slw.stream(0).push(WatchEvent("ERROR", status(410, "Gone")))
    h.step_backoff()
    h.slw.stream(1)
    assert [c[:3] for c in h.slw.calls] == [
        ("list", "0", 500), ("watch", "10", True),
        ("list", "10", None), ("list", None, None),  # the retry at "" right away, no backoff
        ("watch", "30", True),
    ]
    assert h.store.ops[-1] == ("replace", ["x"], "30", "10")
    # the flag clears after the successful list: the next relist is at lastSyncRV again
    h.slw.streams[1].push(WatchEvent("ERROR", status(500, "InternalError", "boom")))
    h.step_backoff()
    h.slw.stream(2)
    assert [c[:3] for c in h.slw.calls[5:]] == [("list", "30", None), ("watch", "10", True)]
    assert h.errors == []
    h.finish()


def test_too_large_resource_version_retries_with_consistent_read(harness):
    h = harness()
    h.slw.lists.extend([StatusError(status(
        504, "Timeout", "Too large resource version",
        details={"causes": [{"reason": "ResourceVersionTooLarge",
                             "message": "Too large resource version"}]}))])
    h.start()
    h.slw.stream(0)
    assert [c[:3] for c in h.slw.calls] == [
        ("list", "0", 500), ("list", None, 500), ("watch", "10", True)]
    assert h.r.metrics.lists_total == 2
    h.finish()


def test_list_error_goes_to_handler_then_backoff(harness):
    h = harness()
    boom = StatusError(status(500, "InternalError", "etcd down"))
    h.slw.lists.extend([boom, boom])
    h.start()
    assert h.backoff_wait() == 0.8
    # reflector.go list: the handler gets "failed to list <type>: <err>" wrapping the error
    # (client-go TestReflectorListAndWatchWithErrors: errors.Is(err, listErr))
    assert [(type(e), e.err, str(e)) for e in h.errors] == [
        (ListError, boom, "failed to list <unspecified>: 500 InternalError: etcd down")]
    h.clock.step(0.8)
    assert h.backoff_wait() == 1.6
    assert [e.err for e in h.errors] == [boom, boom]
    h.clock.step(1.6)
    h.slw.stream(0)
    assert [c[:2] for c in h.slw.calls] == [("list", "0"), ("list", "0"), ("list", "0"),
                                            ("watch", "10")]
    assert h.r.metrics.list_errors_total == 2
    h.finish()


def test_connection_refused_and_429_rewatch_without_relist(harness):
    h = harness()
    h.slw.watches.extend([
        refused(),
        StatusError(status(429, "TooManyRequests", "slow down"), retry_after=5.0),
        None,
    ])
    h.start()
    assert h.step_backoff() == 0.8
    assert h.step_backoff() == 5.0  # Retry-After beats the 1.6 s backoff step
    h.slw.stream(0)
    assert [c[:2] for c in h.slw.calls] == [
        ("list", "0"), ("watch", "10"), ("watch", "10"), ("watch", "10")]
    assert h.errors == []
    h.finish()


def test_429_error_event_rewatches_without_relist(harness):
    h = harness().start()
    s0 = h.slw.stream(0)
    s0.push(modified("a", "11"),
            WatchEvent("ERROR", status(429, "TooManyRequests", "later",
                                       details={"retryAfterSeconds": 3})))
    assert h.step_backoff() == 3.0
    h.slw.stream(1)
    assert [c[:2] for c in h.slw.calls] == [("list", "0"), ("watch", "10"), ("watch", "11")]
    h.finish()


def test_other_watch_open_error_relists_via_handler(harness):
    h = harness()
    forbidden = StatusError(status(403, "Forbidden", "no"))
    h.slw.watches.append(forbidden)
    h.start()
    assert h.step_backoff() == 0.8
    h.slw.stream(0)
    assert [c[:3] for c in h.slw.calls] == [
        ("list", "0", 500), ("watch", "10", True), ("list", "10", None), ("watch", "10", True)]
    assert h.errors == [forbidden]
    h.finish()


def test_backoff_grows_across_failed_cycles_with_jitter(harness):
    h = harness(jitter=1.0)
    h.slw.lists.extend([StatusError(status(500, "InternalError"))] * 4)
    h.start()
    r = random.Random(99)
    delays = [h.step_backoff() for _ in range(4)]
    assert delays == [round(d * (1 + r.random()), 6) for d in (0.8, 1.6, 3.2, 6.4)]
    h.slw.stream(0)
    h.finish()


def test_bookmarks_move_the_version_only(harness):
    h = harness().start()
    s0 = h.slw.stream(0)
    s0.push(bookmark("20"), added("a", "21"), bookmark("25"))
    h.store.wait_ops(2)
    deadline = time.monotonic() + 5
    while h.r.last_sync_resource_version() != "25" and time.monotonic() < deadline:
        time.sleep(0.001)
    assert h.r.last_sync_resource_version() == "25"
    assert h.store.ops == [("replace", [], "10", ""), ("add", "a")]
    s0.end()
    h.slw.stream(1)
    assert h.slw.calls[-1][:2] == ("watch", "25")
    h.finish()


def test_synthetic_added_events_do_not_move_the_version(harness):
    # A list answered without a version: the watch starts at "" and begins with synthetic
    # ADDED events in no version order (client-go v0.36 guard).
    h = harness()
    h.slw.lists.append(ListResult([], "", None))
    h.start()
    s0 = h.slw.stream(0)
    assert h.slw.calls[1][:2] == ("watch", None)
    s0.push(added("b", "9"), added("a", "4"))
    h.store.wait_ops(3)
    assert h.r.last_sync_resource_version() == ""
    s0.push(modified("a", "12"), added("c", "13"))
    h.store.wait_ops(5)
    assert h.r.last_sync_resource_version() == "13"
    h.finish()


def test_wrong_kind_and_unknown_type_are_skipped(harness, caplog):
    # reflector.go handleAnyWatch: "Unexpected watch event object gvk" and "Unknown watch
    # event" are logged and the watch goes on (an HTTP stream never yields an unknown type:
    # its decoder ends the watch instead, see test_client_faults).
    h = harness(expected_kind="Pod").start()
    s0 = h.slw.stream(0)
    svc = {"kind": "Service", "metadata": {"name": "s", "resourceVersion": "11"}}
    nokind = {"metadata": {"name": "k", "namespace": "ns", "resourceVersion": "12"}}
    with caplog.at_level("WARNING", logger="informers.reflector"):
        s0.push(WatchEvent("ADDED", svc), WatchEvent("SURPRISE", pod("u", "13")))
        s0.push(WatchEvent("ADDED", nokind))
        h.store.wait_ops(2)
    assert h.store.ops[1:] == [("add", "k")]
    assert h.r.last_sync_resource_version() == "12"
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "test: unexpected watch event object kind 'Service' (expected 'Pod')",
        "test: unknown watch event type 'SURPRISE'",
    ]
    h.finish()


def test_a_decode_error_ends_the_watch_and_relists(harness, caplog):
    # apimachinery StreamWatcher: a decode failure ends the watch with an error; the
    # reflector relists at its last synced version, so the lost event's change is not lost.
    h = harness().start()
    s0 = h.slw.stream(0)
    bad = WatchDecodeError("watch line is not JSON", b"{oops")
    with caplog.at_level("WARNING", logger="informers.reflector"):
        s0.push(modified("a", "11"))
        s0.q.put(bad)
        s0.push(modified("a", "13"))  # never read
        assert h.backoff_wait() == 0.8
    assert s0.closed.is_set()
    assert h.store.ops[1:] == [("update", "a")]
    assert (h.r.metrics.watch_errors_total, h.r.metrics.last_error) == (1, bad)
    assert [r.getMessage() for r in caplog.records] == [
        "test: watch of <unspecified> ended with: watch line is not JSON"]
    h.clock.step(0.8)
    h.slw.stream(1)
    assert [c[:2] for c in h.slw.calls] == [("list", "0"), ("watch", "10"), ("list", "11"),
                                            ("watch", "10")]
    h.finish()


def test_stream_that_raises_is_a_normal_end(harness):
    h = harness().start()
    s0 = h.slw.stream(0)
    s0.push(added("a", "11"))
    s0.q.put(ApiConnectionError("read timed out", timeout=True))
    h.slw.stream(1)
    assert [c[:2] for c in h.slw.calls] == [("list", "0"), ("watch", "10"), ("watch", "11")]
    h.finish()


def test_pagination_policy(harness):
    # An initial "0" list that comes back paginated keeps relists paginated.
    h = harness()
    h.slw.lists.extend([ListResult([pod("a", "1")], "10", "c1"), ListResult([], "10", None)])
    h.start()
    h.slw.stream(0).push(WatchEvent("ERROR", status(500, "InternalError")))
    h.step_backoff()
    h.slw.stream(1)
    assert [c for c in h.slw.calls if c[0] == "list"] == [
        ("list", "0", 500, None), ("list", None, 500, "c1"), ("list", "10", 500, None)]
    h.finish()
    # An explicit page size is always used.
    h2 = harness(page_size=7).start()
    h2.slw.stream(0).push(WatchEvent("ERROR", status(500, "InternalError")))
    h2.step_backoff()
    h2.slw.stream(1)
    assert [c for c in h2.slw.calls if c[0] == "list"] == [
        ("list", "0", 7, None), ("list", "10", 7, None)]
    h2.finish()


def test_replace_failure_goes_to_handler(harness):
    h = harness()
    h.store.fail_replace = RuntimeError("store full")
    h.start()
    assert h.backoff_wait() == 0.8
    assert [str(e) for e in h.errors] == ["store full"]
    assert h.r.last_sync_resource_version() == ""
    h.finish()


def test_resync_every_period_while_watching(harness):
    answers = [True, False, True]
    h = harness(resync_period=10.0, should_resync=lambda: answers.pop(0))
    h.start()
    h.slw.stream(0)
    for i in range(3):
        assert h.clock.wait_for_waiters(1)
        assert round(h.clock.next_deadline() - h.clock.now(), 6) == 10.0
        h.clock.step(10.0)
        deadline = time.monotonic() + 5
        while len(answers) != 2 - i and time.monotonic() < deadline:
            time.sleep(0.001)
    h.store.wait_ops(3)
    assert h.clock.wait_for_waiters(1)  # the timer is re-created for the next period
    assert h.store.ops == [("replace", [], "10", ""), ("resync",), ("resync",)]
    assert [c[0] for c in h.slw.calls] == ["list", "watch"]  # resync makes no API call
    h.finish()


def test_resync_error_ends_the_cycle(harness):
    h = harness(resync_period=5.0)
    h.store.fail_resync = RuntimeError("resync broke")
    h.start()
    s0 = h.slw.stream(0)
    assert h.clock.wait_for_waiters(1)
    h.clock.step(5.0)
    assert s0.closed.wait(5)
    assert h.backoff_wait() == 0.8
    assert [str(e) for e in h.errors] == ["resync broke"]
    h.store.fail_resync = None
    h.clock.step(0.8)
    h.slw.stream(1)
    assert [c[:2] for c in h.slw.calls] == [
        ("list", "0"), ("watch", "10"), ("list", "10"), ("watch", "10")]
    h.finish()


def test_stop_while_watching_closes_the_stream(harness):
    h = harness().start()
    s0 = h.slw.stream(0)
    start = time.monotonic()
    h.finish()
    assert time.monotonic() - start < 1.0
    assert s0.closed.is_set()


def test_stop_while_backing_off(harness):
    h = harness()
    h.slw.lists.append(StatusError(status(500, "InternalError")))
    h.start()
    h.backoff_wait()
    start = time.monotonic()
    h.finish()
    assert time.monotonic() - start < 1.0
    assert h.slw.calls == [("list", "0", 500, None)]


def reflector_threads(name: str) -> list[str]:
    """The live threads a reflector named ``name`` started (worker and resync)."""
    return sorted(t.name for t in threading.enumerate()
                  if t.name == f"reflector-{name}" or t.name.startswith(f"reflector-{name}-"))


def test_stop_during_a_slow_list_cancels_it_through_its_token(harness):
    tokens = []

    def slow(o):  # a list function honouring ListOptions.cancel, as the HTTP one does
        tokens.append(o.cancel)
        aborted = threading.Event()
        o.cancel.on_cancel(aborted.set)
        assert aborted.wait(10)
        raise ApiConnectionError("list pods: cancelled")

    h = harness(resync_period=1.0)
    h.slw.lists.append(slow)
    h.start()
    h.slw.wait_calls(1)
    assert reflector_threads("test") == ["reflector-test"]
    assert not tokens[0].is_cancelled()
    start = time.monotonic()
    h.finish()
    assert time.monotonic() - start < 1.0
    assert tokens[0].is_cancelled()
    assert reflector_threads("test") == []  # run() returned after its worker ended
    assert h.store.ops == []
    assert h.errors == []  # an aborted list is no error
    assert h.r.metrics.list_errors_total == 0


def test_run_waits_for_a_list_that_ignores_its_token_and_drops_its_result(harness):
    release = threading.Event()

    def stubborn(o):
        release.wait(10)
        return ListResult([pod("late", "1")], "1", None)

    h = harness()
    h.slw.lists.append(stubborn)
    h.start()
    h.slw.wait_calls(1)
    h.stop.set()
    h.thread.join(0.2)
    assert h.thread.is_alive()  # run() returns only once its worker has ended
    assert reflector_threads("test") == ["reflector-test"]
    release.set()
    h.finish()
    assert reflector_threads("test") == []
    assert h.store.ops == []  # a list that ended after stop is not applied
    assert h.slw.calls == [("list", "0", 500, None)]


def test_the_same_token_goes_with_every_request_and_is_cancelled_on_stop(harness):
    tokens = []
    h = harness()
    h.slw.lists.append(lambda o: tokens.append(o.cancel) or ListResult([], "10"))
    h.slw.watches.append(lambda o: tokens.append(o.cancel) or Stream())
    h.start()
    s0 = h.slw.stream(0)
    assert len(tokens) == 2 and tokens[0] is tokens[1]
    assert not tokens[0].is_cancelled()
    h.finish()
    assert tokens[0].is_cancelled() and s0.closed.is_set()


class Boom(BaseException):
    """Not an Exception: the reflector must not swallow it."""


def test_a_base_exception_in_the_worker_is_raised_by_run_once_stopped(harness, caplog):
    h = harness()
    h.store.fail_replace = Boom("store gave up")
    raised: list[BaseException] = []

    def run() -> None:
        try:
            h.r.run(h.stop)
        except BaseException as exc:
            raised.append(exc)

    h.thread = threading.Thread(target=run, daemon=True)
    with caplog.at_level("CRITICAL", logger="informers.reflector"):
        h.start()
        h.slw.wait_calls(1)
        wait_until(lambda: reflector_threads("test") == [])  # the worker ended...
        assert h.thread.is_alive()  # ...and run() waits for stop
        h.finish()
    assert [type(e) for e in raised] == [Boom]
    assert h.slw.calls == [("list", "0", 500, None)]  # no relist after it
    assert [r.getMessage() for r in caplog.records] == [
        "test: reflector of <unspecified> stopped by Boom('store gave up'); it does nothing "
        "more until stopped"]


def test_stop_before_run_does_nothing(harness):
    h = harness()
    h.stop.set()
    h.start()
    h.finish()
    assert h.slw.calls == []


def test_default_error_handler_logs(caplog):
    r = Reflector(ListWatch(lambda o: ListResult([], "1"), lambda o: Stream()), RecordingStore(),
                  name="pods", expected_kind="Pod")
    with caplog.at_level("DEBUG", logger="informers.reflector"):
        default_watch_error_handler(r, StatusError(status(410, "Expired", "old")))
        default_watch_error_handler(r, refused())
        # reflector.go: a list error reaches the handler wrapped, "failed to list %v: %w";
        # isExpiredError sees through the wrapping (errors.As).
        default_watch_error_handler(r, ListError("Pod", refused()))
        default_watch_error_handler(r, ListError("Pod", StatusError(status(410, "Gone", "x"))))
    assert [(rec.levelname, rec.getMessage()) for rec in caplog.records] == [
        ("DEBUG", "pods: watch of Pod closed with: 410 Expired: old"),
        ("ERROR", "pods: Failed to watch Pod: connect: connection refused"),
        ("ERROR", "pods: Failed to watch Pod: failed to list Pod: connect: connection refused"),
        ("DEBUG", "pods: watch of Pod closed with: failed to list Pod: 410 Gone: x"),
    ]


def test_names_and_kind_default_from_the_resource():
    lw = ListWatch(lambda o: ListResult([], "1"), lambda o: Stream(), resource=lookup("pods"))
    r = Reflector(lw, RecordingStore())
    assert (r.name, r.expected_kind, r.type_description) == ("v1/pods", "Pod", "Pod")
    assert r.last_sync_resource_version() == ""
    assert r.relist_resource_version() == "0"


# -- streaming list (use_watch_list) ---------------------------------------------------------------


def test_streaming_list_then_keeps_watching(harness):
    h = harness(use_watch_list=True).start()
    s0 = h.slw.stream(0)
    t = timeouts(1)[0]
    assert h.slw.calls == [("watch", None, True, t, True, "NotOlderThan")]
    s0.push(added("b", "7"), added("a", "5"), modified("b", "8"), bookmark("9", end="false"))
    s0.push(added("c", "9"), deleted("c", "10"), bookmark("12", end="true"))
    replace = h.store.wait_ops(1)[0]
    assert replace == ("replace", ["a", "b"], "12", "")
    assert h.r.last_sync_resource_version() == "12"
    s0.push(added("d", "13"))  # the same stream goes on into the real store
    h.store.wait_ops(2)
    assert h.store.ops[1] == ("add", "d")
    assert h.r.last_sync_resource_version() == "13"
    assert len(h.slw.calls) == 1  # no list, no second watch
    h.finish()


def test_streaming_list_falls_back_to_list_and_watch(harness):
    h = harness(use_watch_list=True)
    h.slw.watches.append(StatusError(status(400, "BadRequest", "sendInitialEvents forbidden")))
    h.start()
    h.slw.stream(0)
    assert [c[:2] for c in h.slw.calls] == [("watch", None), ("list", "0"), ("watch", "10")]
    assert h.slw.calls[2][4] is None  # the regular watch does not ask for initial events
    h.finish()


def test_streaming_list_410_retries_at_latest_and_429_backs_off(harness):
    h = harness(use_watch_list=True)
    h.slw.watches.extend([
        None,
        lambda o: Stream([WatchEvent("ERROR", status(410, "Expired"))]),
        StatusError(status(429, "TooManyRequests")),
    ])
    h.start()
    s0 = h.slw.stream(0)
    s0.push(bookmark("12", end="true"))
    h.store.wait_ops(1)
    s0.push(WatchEvent("ERROR", status(410, "Expired")))  # 410 while watching: relist
    assert h.step_backoff() == 0.8
    assert h.step_backoff() == 1.6  # the streaming request at "12" got 410, then "" got 429
    h.slw.stream(2).push(bookmark("40", end="true"))
    h.store.wait_ops(2)
    assert [c[:2] + c[4:] for c in h.slw.calls] == [
        ("watch", None, True, "NotOlderThan"),
        ("watch", "12", True, "NotOlderThan"),  # relist by streaming at lastSyncRV
        ("watch", None, True, "NotOlderThan"),  # 410 on it: at the latest version
        ("watch", None, True, "NotOlderThan"),  # after the 429 backoff
    ]
    assert h.store.ops == [("replace", [], "12", ""), ("replace", [], "40", "12")]
    h.finish()


def test_streaming_list_ended_before_bookmark_streams_again(harness):
    h = harness(use_watch_list=True).start()
    s0 = h.slw.stream(0)
    s0.push(added("a", "3"))
    s0.end()
    s1 = h.slw.stream(1)
    s1.push(added("a", "3"), bookmark("5", end="true"))
    assert h.store.wait_ops(1) == [("replace", ["a"], "5", "")]
    assert [c[:2] for c in h.slw.calls] == [("watch", None), ("watch", None)]
    h.finish()


# -- part 2: against the embedded API server, asserting the request log ---------------------------


class IndexerRecorder(Indexer):
    """A plain Indexer that also records which store operations the reflector called."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def add(self, obj):
        self.ops.append("add")
        Indexer.update(self, obj)  # Indexer.add is update; do not record it twice

    def update(self, obj):
        self.ops.append("update")
        super().update(obj)

    def delete(self, obj):
        self.ops.append("delete")
        super().delete(obj)

    def replace(self, objects, resource_version=""):
        self.ops.append("replace")
        super().replace(objects, resource_version)


def new_pod(n: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "registry.invalid/pause:1"}]}}


def requests(srv: ApiServer) -> list[tuple]:
    """The pods list/watch requests as (verb, resourceVersion, limit or bookmarks, ..., status).

    list:  ("list", rv, limit, has_continue, status)
    watch: ("watch", rv, allowWatchBookmarks, timeoutSeconds, status) plus, for a streaming
           list, (sendInitialEvents, resourceVersionMatch).
    """
    out: list[tuple] = []
    for r in srv.request_log(resource="pods"):
        q = r.query
        if r.verb == "list":
            out.append(("list", q.get("resourceVersion"), q.get("limit"), "continue" in q,
                        r.status))
        elif r.verb == "watch":
            row: tuple = ("watch", q.get("resourceVersion"), q.get("allowWatchBookmarks"),
                          q.get("timeoutSeconds"), r.status)
            if "sendInitialEvents" in q or "resourceVersionMatch" in q:
                row += (q.get("sendInitialEvents"), q.get("resourceVersionMatch"))
            out.append(row)
    return out


def wait_until(pred, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.002)


class Live:
    """A reflector over HTTP on pods, on a FakeClock unless told otherwise.

    ``srv`` is an embedded ``ApiServer`` (pods of all namespaces), or a server-neutral
    ``TestServer`` of ``any_api_server`` (pods of its namespace; :attr:`ns`).
    """

    def __init__(self, srv, *, fake_clock: bool = True, **kwargs) -> None:
        self.srv = srv
        self.ns = getattr(srv, "namespace", "default")
        self.clock = FakeClock() if fake_clock else REAL_CLOCK
        self.api = srv.api_client()
        self.store = IndexerRecorder()
        self.errors: list[BaseException] = []
        kwargs.setdefault("watch_error_handler", lambda r, e: self.errors.append(e))
        kwargs.setdefault("backoff", Backoff(clock=self.clock, jitter=0.0))
        lw = list_watch_from_client(self.api, "pods", tweak=kwargs.pop("tweak", None),
                                   namespace=getattr(srv, "namespace", None))
        name = kwargs.pop("name", "pods")
        options, kwargs = split_options(kwargs, rng=random.Random(SEED))
        self.r = Reflector(lw, self.store, options, name=name, clock=self.clock, **kwargs)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.r.run, args=(self.stop,), daemon=True)

    def start(self) -> Live:
        self.thread.start()
        return self

    def watches(self, n: int, open_: bool = True) -> None:
        """Wait until the (embedded) server has answered n watch requests (and one is open)."""
        srv = getattr(self.srv, "embedded", None) or self.srv
        assert srv.wait_for_requests(n, verb="watch", resource="pods"), requests(srv)
        if open_:
            assert srv.wait_for_watches(1, "pods"), requests(srv)

    def step_backoff(self) -> float:
        assert isinstance(self.clock, FakeClock)
        end = time.monotonic() + 5
        while time.monotonic() < end:
            deadline = self.clock.next_deadline()
            if deadline is not None and deadline - self.clock.now() > 1e-9:
                delay = deadline - self.clock.now()
                self.clock.step(delay)
                return round(delay, 6)
            time.sleep(0.001)
        raise AssertionError(f"no backoff wait; requests={requests(self.srv)}")

    def synced_with_server(self) -> bool:
        want = sorted(f"{self.ns}/{p['metadata']['name']}" for p in self.srv.list("pods", self.ns))
        return sorted(self.store.list_keys()) == want

    def close(self) -> None:
        self.stop.set()
        if self.thread.ident is not None:  # not started when a test calls run() itself
            self.thread.join(5)
        assert not self.thread.is_alive()
        self.api.close()


@pytest.fixture
def live():
    servers: list[ApiServer] = []
    lives: list[Live] = []

    def make(server_kwargs: dict | None = None, **kwargs) -> Live:
        srv = ApiServer(**(server_kwargs or {})).start()
        servers.append(srv)
        lv = Live(srv, **kwargs)
        lives.append(lv)
        return lv

    yield make
    for lv in lives:
        lv.close()
    for srv in servers:
        srv.stop()


class AsyncLive(Live):
    """A ``Live`` whose reflector is the async one (``informers.aio.AsyncReflector`` over an
    ``AsyncListWatch``), run by an event loop of ``backend`` in a thread: the same rules, the
    same clock, the same assertions as the threaded reflector's."""

    def __init__(self, srv, backend: str, *, fake_clock: bool = True, **kwargs) -> None:
        from anyio.from_thread import start_blocking_portal

        from informers.aio import AsyncListWatch, AsyncReflector, AsyncTransport

        self.srv = srv
        self.ns = getattr(srv, "namespace", "default")
        self.clock = FakeClock() if fake_clock else REAL_CLOCK
        self.api = srv.api_client()
        self.store = IndexerRecorder()
        self.errors = []
        kwargs.setdefault("watch_error_handler", lambda r, e: self.errors.append(e))
        kwargs.setdefault("backoff", Backoff(clock=self.clock, jitter=0.0))
        self._portal_cm = start_blocking_portal(backend)
        self.portal = self._portal_cm.__enter__()
        self.transport = AsyncTransport(self.api)
        lw = AsyncListWatch(self.transport, "pods", getattr(srv, "namespace", None),
                            tweak=kwargs.pop("tweak", None))
        name = kwargs.pop("name", "pods")
        options, kwargs = split_options(kwargs, rng=random.Random(SEED))
        self.r = AsyncReflector(lw, self.store, options, name=name, clock=self.clock, **kwargs)
        self.future = None

    def start(self) -> AsyncLive:
        self.future = self.portal.start_task_soon(self.r.run)
        return self

    def close(self) -> None:
        if self.future is not None:
            self.future.cancel()
        self.portal.call(self.transport.aclose)
        self._portal_cm.__exit__(None, None, None)
        self.api.close()


@pytest.fixture(params=["threads", "asyncio", "trio"])
def live_driver(request):
    """``live`` on each driver: the threaded Reflector, and the AsyncReflector on asyncio and
    on trio (tests of behaviour that both drivers share)."""
    servers: list[ApiServer] = []
    lives: list[Live] = []

    def make(server_kwargs: dict | None = None, **kwargs) -> Live:
        srv = ApiServer(**(server_kwargs or {})).start()
        servers.append(srv)
        if request.param == "threads":
            lv = Live(srv, **kwargs)
        else:
            lv = AsyncLive(srv, request.param, **kwargs)
        lives.append(lv)
        return lv

    yield make
    for lv in lives:
        lv.close()
    for srv in servers:
        srv.stop()


@pytest.fixture
def live_any(any_api_server):
    """A ``Live`` over ``any_api_server`` (embedded or real kube-apiserver), pods of the
    test's namespace; server-independent assertions only (``lv.srv.embedded`` for the rest)."""
    lives: list[Live] = []

    def make(**kwargs) -> Live:
        lv = Live(any_api_server, **kwargs)
        lives.append(lv)
        return lv

    yield make
    for lv in lives:
        lv.close()


def test_live_initial_sync(live_any):
    lv = live_any()
    ns = lv.ns
    for i in range(3):
        lv.srv.create(new_pod(f"p{i}"), namespace=ns)
    rv = lv.srv.resource_version
    lv.start()
    wait_until(lambda: lv.r.last_sync_resource_version() != "")
    if lv.srv.embedded is not None:
        lv.watches(1)
        t = timeouts(1)
        assert requests(lv.srv.embedded) == [
            ("list", "0", "500", False, 200),
            ("watch", rv, "true", str(t[0]), 200),
        ]
        assert lv.r.last_sync_resource_version() == rv
    else:  # served by the watch cache: at least as new as the last write
        assert int(lv.r.last_sync_resource_version()) >= int(rv)
    assert lv.store.ops == ["replace"]
    assert sorted(lv.store.list_keys()) == [f"{ns}/p0", f"{ns}/p1", f"{ns}/p2"]
    lv.srv.create(new_pod("p3"), namespace=ns)
    deleted = lv.srv.delete("pods", ns, "p0")
    # a pod's delete marks it (an update), then removes it
    wait_until(lambda: lv.store.ops == ["replace", "add", "update", "delete"])
    assert lv.synced_with_server()
    assert lv.r.last_sync_resource_version() == deleted["metadata"]["resourceVersion"]
    assert lv.store.get_by_key(f"{ns}/p3")["metadata"]["name"] == "p3"


def test_live_initial_list_of_more_than_a_page_is_served_whole(live_any):
    """The initial list (resourceVersion "0", limit 500) is answered from the watch cache,
    which ignores the limit: one list, one replace, every object."""
    lv = live_any()
    create_pods(lv.srv, lv.ns, 701)
    lv.start()
    wait_until(lambda: len(lv.store) == 701, timeout=10)
    assert lv.store.ops == ["replace"]
    assert lv.r.metrics.lists_total == 1
    if lv.srv.embedded is not None:
        lv.watches(1)
        assert [r[:4] for r in requests(lv.srv.embedded)] == [
            ("list", "0", "500", False), ("watch", lv.srv.resource_version, "true",
                                          str(timeouts(1)[0]))]


def create_pods(srv, namespace: str, count: int) -> None:
    """Create ``count`` pods p0000... concurrently (a real server takes ~2 ms each)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: srv.create(new_pod(f"p{i:04d}"), namespace=namespace),
                      range(count)))


def test_live_pagination_and_paginated_relists(live_driver):
    lv = live_driver(server_kwargs={"watch_cache": False})  # rv=0 lists honour limit
    for i in range(1203):
        lv.srv.create(new_pod(f"p{i:04d}"))
    rv = lv.srv.resource_version
    lv.start().watches(1)
    assert requests(lv.srv) == [
        ("list", "0", "500", False, 200),
        ("list", None, "500", True, 200),  # continue pages carry no resourceVersion
        ("list", None, "500", True, 200),
        ("watch", rv, "true", str(timeouts(1)[0]), 200),
    ]
    assert len(lv.store) == 1203
    assert lv.store.ops == ["replace"]
    # The initial "0" list came back paginated, so relists stay paginated.
    lv.srv.drop_watches("pods")  # no event and fake time: a very short watch, so a relist
    assert lv.step_backoff() == 0.8
    lv.watches(2)
    assert [r[:4] for r in requests(lv.srv)[4:]] == [
        ("list", rv, "500", False), ("list", None, "500", True), ("list", None, "500", True),
        ("watch", rv, "true", str(timeouts(2)[1])),
    ]


def test_live_expired_continue_token_falls_back_to_full_list(live_driver):
    lv = live_driver(server_kwargs={"watch_cache": False})
    for i in range(700):
        lv.srv.create(new_pod(f"p{i:04d}"))
    rv = lv.srv.resource_version
    # Page 2 answers what an expired continue token gets (etcd3 store.go: 410 Expired).
    lv.srv.fail_next(1, 410, verb="list", resource="pods", message=CONTINUE_TOO_OLD,
                     match=lambda r: "continue" in r.query)
    lv.start().watches(1)
    assert requests(lv.srv) == [
        ("list", "0", "500", False, 200),
        ("list", None, "500", True, 410),  # the continue token fell out of the window
        ("list", "0", None, False, 200),   # one full list at the original version
        ("watch", rv, "true", str(timeouts(1)[0]), 200),
    ]
    assert len(lv.store) == 700
    assert lv.store.ops == ["replace"]


def test_live_410_event_relists_at_last_sync_rv_then_410_list_goes_consistent(live_driver):
    lv = live_driver()
    lv.srv.create(new_pod("a"))
    rv1 = lv.srv.resource_version
    lv.srv.fail_next(1, 410, verb="watch", resource="pods", in_stream=True)
    lv.start().watches(1, open_=False)
    # the watch got 200 then an ERROR 410 event: back off, relist at lastSyncRV (not "")
    lv.srv.fail_next(1, 410, verb="list", resource="pods")
    assert lv.step_backoff() == 0.8
    lv.watches(2)
    t = timeouts(2)
    assert requests(lv.srv) == [
        ("list", "0", "500", False, 200),
        ("watch", rv1, "true", str(t[0]), 200),
        ("list", rv1, None, False, 410),  # the relist at lastSyncRV answered 410 ...
        ("list", None, None, False, 200),  # ... so at once a consistent list ("")
        ("watch", rv1, "true", str(t[1]), 200),
    ]
    assert lv.errors == []
    assert lv.store.ops == ["replace", "replace"]


def test_live_410_event_relist_succeeds_at_last_sync_rv(live_driver):
    lv = live_driver()
    lv.srv.fail_next(1, 410, verb="watch", resource="pods", in_stream=True)
    rv = lv.srv.resource_version
    lv.start().watches(1, open_=False)
    lv.srv.create(new_pod("late"))
    assert lv.step_backoff() == 0.8
    lv.watches(2)
    rv2 = lv.srv.resource_version
    assert [r[:3] + r[4:] for r in requests(lv.srv)] == [
        ("list", "0", "500", 200), ("watch", rv, "true", 200),
        ("list", rv, None, 200), ("watch", rv2, "true", 200),
    ]
    assert lv.synced_with_server()


def test_live_compaction(live_driver):
    lv = live_driver()
    lv.srv.create(new_pod("a"))
    rv = lv.srv.resource_version
    lv.start().watches(1)
    lv.srv.hang_watches()
    lv.srv.create(new_pod("b"))  # the hung watch falls behind ...
    lv.srv.delete("pods", "default", "a")
    lv.srv.compact()  # ... and its position is compacted away
    lv.srv.resume_watches()
    assert lv.step_backoff() == 0.8  # ERROR 410 event: relist after the backoff
    lv.watches(2)
    rv2 = lv.srv.resource_version
    assert [r[:3] for r in requests(lv.srv)] == [
        ("list", "0", "500"), ("watch", rv, "true"), ("list", rv, None), ("watch", rv2, "true")]
    assert sorted(lv.store.list_keys()) == ["default/b"]
    assert lv.store.ops == ["replace", "replace"]  # deletions missed meanwhile: via replace


def test_live_dropped_watch_rewatches_from_last_rv_without_relist(live_driver):
    lv = live_driver()
    rv0 = lv.srv.resource_version
    lv.start().watches(1)
    lv.srv.create(new_pod("a"))
    wait_until(lambda: len(lv.store) == 1)
    rv = lv.srv.resource_version
    assert lv.srv.drop_watches("pods") == 1
    lv.watches(2)
    assert [r[:2] for r in requests(lv.srv)] == [("list", "0"), ("watch", rv0), ("watch", rv)]
    lv.srv.create(new_pod("b"))
    wait_until(lambda: len(lv.store) == 2)
    assert lv.store.ops == ["replace", "add", "add"]


def test_live_hung_watch_is_replaced_after_the_read_timeout(live_driver):
    lv = live_driver(fake_clock=False, read_timeout=0.4)
    rv0 = lv.srv.resource_version
    lv.start().watches(1)
    lv.srv.create(new_pod("a"))
    wait_until(lambda: len(lv.store) == 1)
    rv = lv.srv.resource_version
    lv.srv.hang_watches()
    start = time.monotonic()
    lv.srv.create(new_pod("b"))  # never delivered on the hung stream
    assert lv.srv.wait_for_requests(2, verb="watch", resource="pods", timeout=5)
    elapsed = time.monotonic() - start
    # the read timeout runs from the read that began when a's event arrived, a poll of
    # wait_until (and, on an async driver, a loop turn) before ``start``
    assert 0.25 < elapsed < 3.0
    lv.srv.resume_watches()
    wait_until(lambda: len(lv.store) == 2)
    assert [r[:2] for r in requests(lv.srv)] == [("list", "0"), ("watch", rv0), ("watch", rv)]
    assert lv.store.ops == ["replace", "add", "add"]


def test_live_429_storm_rewatches_without_relist(live_driver):
    lv = live_driver()
    rv0 = lv.srv.resource_version
    lv.start().watches(1)
    lv.srv.create(new_pod("a"))
    wait_until(lambda: len(lv.store) == 1)
    rv = lv.srv.resource_version
    lv.srv.fail_next(5, 429, verb="watch", resource="pods", retry_after=1)
    lv.srv.drop_watches("pods")
    delays = [lv.step_backoff() for _ in range(5)]
    assert delays == [1.0, 1.6, 3.2, 6.4, 12.8]  # Retry-After: 1 beats the first 0.8 s step
    lv.watches(7)
    assert [r[:2] + r[4:] for r in requests(lv.srv)] == (
        [("list", "0", 200), ("watch", rv0, 200)] + [("watch", rv, 429)] * 5
        + [("watch", rv, 200)])
    assert lv.errors == []  # retriable: never reached the error handler


def test_live_500_storm_on_list(live_driver):
    lv = live_driver()
    rv0 = lv.srv.resource_version
    lv.srv.fail_next(4, 500, verb="list", resource="pods")
    lv.start()
    delays = [lv.step_backoff() for _ in range(4)]
    assert delays == [0.8, 1.6, 3.2, 6.4]
    lv.watches(1)
    assert [r[:3] + r[4:] for r in requests(lv.srv)] == (
        [("list", "0", "500", 500)] * 4 + [("list", "0", "500", 200), ("watch", rv0, "true", 200)])
    assert [e.err.code for e in lv.errors] == [500] * 4
    assert lv.r.metrics.list_errors_total == 4


def test_live_500_storm_on_watch_relists(live_driver):
    lv = live_driver()
    rv = lv.srv.resource_version
    lv.start().watches(1)
    lv.srv.fail_next(2, 500, verb="watch", resource="pods")
    lv.srv.drop_watches("pods")  # no events, fake time: very short -> relist
    assert lv.step_backoff() == 0.8
    assert lv.step_backoff() == 1.6  # the watch after the relist answered 500: relist again
    assert lv.step_backoff() == 3.2
    lv.watches(4)
    assert [r[:3] + r[4:] for r in requests(lv.srv)] == [
        ("list", "0", "500", 200), ("watch", rv, "true", 200),
        ("list", rv, None, 200), ("watch", rv, "true", 500),
        ("list", rv, None, 200), ("watch", rv, "true", 500),
        ("list", rv, None, 200), ("watch", rv, "true", 200),
    ]
    assert [e.code for e in lv.errors] == [500, 500]


def test_live_server_restart(live_driver):
    lv = live_driver()
    rv0 = lv.srv.resource_version
    lv.start().watches(1)
    lv.srv.create(new_pod("a"))
    wait_until(lambda: len(lv.store) == 1)
    rv = lv.srv.resource_version
    lv.srv.restart()
    lv.srv.create(new_pod("b"))
    # The reflector may hit the closed listener (connection refused: back off and re-watch)
    # or reconnect at once; either way it re-watches from its version without relisting.
    end = time.monotonic() + 5
    while len(lv.srv.request_log(verb="watch", resource="pods")) < 2:
        assert time.monotonic() < end
        deadline = lv.clock.next_deadline()
        if deadline is not None and deadline > lv.clock.now():
            lv.clock.step(deadline - lv.clock.now())
        time.sleep(0.002)
    wait_until(lambda: len(lv.store) == 2)
    assert [r[:2] for r in requests(lv.srv)] == [("list", "0"), ("watch", rv0), ("watch", rv)]
    assert lv.store.ops == ["replace", "add", "add"]


def test_live_malformed_line_ends_the_watch_and_relists(live_driver, caplog):
    # apimachinery StreamWatcher: the undecodable line ends the watch with an ERROR event;
    # the reflector relists at its last version and watches again, missing nothing.
    lv = live_driver()
    rv0 = lv.srv.resource_version
    lv.start().watches(1)
    with caplog.at_level("WARNING", logger="informers.client.watch_stream"):
        assert lv.srv.inject_malformed_watch_line() == 1
        assert lv.step_backoff() == 0.8
    lv.watches(2)
    lv.srv.create(new_pod("a"))
    wait_until(lambda: len(lv.store) == 1)
    assert [r[:2] for r in requests(lv.srv)] == [("list", "0"), ("watch", rv0), ("list", rv0),
                                                  ("watch", rv0)]
    assert any("undecodable watch line" in r.getMessage() for r in caplog.records)


def test_live_bookmarks_move_the_version(live_driver):
    lv = live_driver(server_kwargs={"bookmark_interval": 0.05})
    rv0 = lv.srv.resource_version
    lv.start().watches(1)
    lv.srv.create({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "c", "namespace": "default"}})
    rv = lv.srv.resource_version
    wait_until(lambda: lv.r.last_sync_resource_version() == rv)
    assert lv.store.ops == ["replace"]  # bookmarks never reach the store
    lv.srv.drop_watches("pods")
    lv.watches(2)
    assert [r[:3] for r in requests(lv.srv)] == [
        ("list", "0", "500"), ("watch", rv0, "true"), ("watch", rv, "true")]


def test_live_very_short_watch_relists(live_driver):
    lv = live_driver()
    rv = lv.srv.resource_version
    lv.start().watches(1)
    lv.srv.drop_watches("pods")  # closed at once (fake time) without an event
    assert lv.step_backoff() == 0.8
    lv.watches(2)
    assert [r[:3] for r in requests(lv.srv)] == [
        ("list", "0", "500"), ("watch", rv, "true"), ("list", rv, None), ("watch", rv, "true")]
    assert isinstance(lv.r.metrics.last_error, VeryShortWatchError)


def test_live_streaming_list(live_any):
    """WatchList: the initial events, then the ``initial-events-end`` bookmark (from the real
    server too: WatchList is on by default in v1.36) make one replace."""
    lv = live_any(use_watch_list=True)
    ns = lv.ns
    lv.srv.create(new_pod("a"), namespace=ns)
    b = lv.srv.create(new_pod("b"), namespace=ns)
    lv.start()
    wait_until(lambda: lv.r.last_sync_resource_version() != "")
    # the bookmark's version: the embedded server's newest, the watch cache's at least b's
    assert int(lv.r.last_sync_resource_version()) >= int(b["metadata"]["resourceVersion"])
    assert lv.store.ops == ["replace"]
    assert sorted(lv.store.list_keys()) == [f"{ns}/a", f"{ns}/b"]
    c = lv.srv.create(new_pod("c"), namespace=ns)  # the same stream keeps going
    wait_until(lambda: len(lv.store) == 3)
    assert lv.r.last_sync_resource_version() == c["metadata"]["resourceVersion"]
    assert lv.r.metrics.lists_total == 0  # no list request at all
    if lv.srv.embedded is not None:
        assert requests(lv.srv.embedded) == [
            ("watch", None, "true", str(timeouts(1)[0]), 200, "true", "NotOlderThan")]
    assert lv.store.ops == ["replace", "add"]


def test_live_streaming_list_falls_back_to_list_and_watch(live_driver):
    lv = live_driver(use_watch_list=True)
    lv.srv.create(new_pod("a"))
    rv = lv.srv.resource_version
    lv.srv.fail_next(1, 400, verb="watch", resource="pods", message="sendInitialEvents unsupported")
    lv.start().watches(2)
    t = timeouts(2)
    assert requests(lv.srv) == [
        ("watch", None, "true", str(t[0]), 400, "true", "NotOlderThan"),
        ("list", "0", "500", False, 200),
        ("watch", rv, "true", str(t[1]), 200),
    ]
    assert sorted(lv.store.list_keys()) == ["default/a"]


def test_live_stop_returns_promptly(live):
    lv = live(fake_clock=False)
    lv.start().watches(1)
    start = time.monotonic()
    lv.stop.set()
    lv.thread.join(2)
    assert not lv.thread.is_alive()
    assert time.monotonic() - start < 1.0
    wait_until(lambda: lv.srv.watch_count("pods") == 0)  # the connection was released


def test_live_410_status_on_watch_relists_at_last_sync_rv(live_driver):
    lv = live_driver()
    rv = lv.srv.resource_version
    lv.srv.fail_next(1, 410, verb="watch", resource="pods")
    lv.start()
    assert lv.step_backoff() == 0.8
    lv.watches(2)
    assert [r[:3] + r[4:] for r in requests(lv.srv)] == [
        ("list", "0", "500", 200), ("watch", rv, "true", 410),
        ("list", rv, None, 200), ("watch", rv, "true", 200),
    ]
    assert [(e.code, e.reason) for e in lv.errors] == [(410, "Expired")]


def test_live_server_side_timeout_resumes_without_relist(live_driver):
    server_clock = FakeClock()
    lv = live_driver(server_kwargs={"clock": server_clock})
    rv = lv.srv.resource_version
    lv.start().watches(1)
    timeout = timeouts(1)[0]
    assert requests(lv.srv)[1][3] == str(timeout)
    lv.clock.step(1.0)  # the reflector saw the watch last a second: not a "very short" one
    server_clock.step(timeout)  # the server ends the watch after timeoutSeconds
    lv.watches(2)
    assert [r[:2] for r in requests(lv.srv)] == [("list", "0"), ("watch", rv), ("watch", rv)]
    assert lv.store.ops == ["replace"]


# -- stopping during a request: nothing is abandoned ----------------------------------------------


def test_live_stop_during_a_slow_list_aborts_it_and_joins_every_thread(live):
    server_clock = FakeClock()  # the injected delay waits on it: the test sees it waiting
    lv = live(server_kwargs={"clock": server_clock}, fake_clock=False, name="slowlist",
              resync_period=1.0)
    lv.srv.create(new_pod("a"))
    lv.srv.delay(30.0, verb="list", resource="pods")
    lv.start()
    assert server_clock.wait_for_waiters(1)  # the list is at the server, not yet answered
    assert reflector_threads("slowlist") == ["reflector-slowlist"]
    start = time.monotonic()
    lv.stop.set()
    lv.thread.join(5)
    assert not lv.thread.is_alive()
    assert time.monotonic() - start < 2.0
    assert reflector_threads("slowlist") == []
    assert lv.store.ops == []
    assert lv.errors == []
    assert (lv.r.metrics.lists_total, lv.r.metrics.list_errors_total) == (1, 0)


def test_live_stop_while_a_watch_waits_for_its_answer(live):
    server_clock = FakeClock()
    lv = live(server_kwargs={"clock": server_clock}, fake_clock=False, name="slowwatch")
    lv.srv.delay(30.0, verb="watch", resource="pods")
    lv.start()
    assert server_clock.wait_for_waiters(1)  # the watch waits at the server
    assert lv.r.metrics.watches_total == 1
    start = time.monotonic()
    lv.stop.set()
    lv.thread.join(5)
    assert not lv.thread.is_alive()
    assert time.monotonic() - start < 2.0
    assert reflector_threads("slowwatch") == []
    assert lv.store.ops == ["replace"]
    assert lv.errors == []


def test_live_a_cancelled_list_leaves_the_client_usable(live):
    server_clock = FakeClock()
    lv = live(server_kwargs={"clock": server_clock}, fake_clock=False, name="reuse")
    lv.srv.create(new_pod("a"))
    lv.srv.delay(30.0, verb="list", resource="pods")
    lv.start()
    assert server_clock.wait_for_waiters(1)
    lv.stop.set()
    lv.thread.join(5)
    assert not lv.thread.is_alive()
    lv.srv.delay(0)
    # the same reflector and ApiClient run again: a fresh token, a fresh connection
    lv.stop = threading.Event()
    lv.thread = threading.Thread(target=lv.r.run, args=(lv.stop,), daemon=True)
    lv.start().watches(1)
    assert sorted(lv.store.list_keys()) == ["default/a"]
    assert lv.store.ops == ["replace"]


def test_live_keyboard_interrupt_during_a_slow_list_joins_every_thread(live, default_sigint):
    """run() on the main thread, interrupted by Ctrl-C (SIGINT) while its list waits: the
    KeyboardInterrupt propagates only after the list was aborted and every thread joined."""
    server_clock = FakeClock()
    lv = live(server_kwargs={"clock": server_clock}, fake_clock=False, name="ctrlc")
    lv.srv.delay(30.0, verb="list", resource="pods")
    seen: list[list[str]] = []

    def press_ctrl_c() -> None:
        if server_clock.wait_for_waiters(1, timeout=10):  # the list waits at the server
            seen.append(reflector_threads("ctrlc"))
            os.kill(os.getpid(), signal.SIGINT)
        else:
            lv.stop.set()  # let run() return: the test then fails on pytest.raises

    presser = threading.Thread(target=press_ctrl_c, daemon=True)
    presser.start()
    with pytest.raises(KeyboardInterrupt):
        lv.r.run(lv.stop)
    presser.join(5)
    assert seen == [["reflector-ctrlc"]]
    assert not lv.stop.is_set()
    assert reflector_threads("ctrlc") == []
    assert lv.store.ops == []
