"""Tests for informers.workqueue.rate_limiting_queue (client-go rate_limiting_queue_test.go)."""

from __future__ import annotations

import pytest
from helpers import settle

from informers.clock import FakeClock
from informers.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
)


@pytest.fixture
def clock():
    return FakeClock()


def test_add_rate_limited_backs_off_per_item_and_forget_resets(clock):
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0), clock=clock)
    try:
        q.add_rate_limited("one")
        settle(clock, 1.0)
        assert q.num_requeues("one") == 1
        q.add_rate_limited("one")  # 2 s: later than the waiting 1 s entry, ignored
        assert q.num_requeues("one") == 2
        q.add_rate_limited("two")
        assert q.num_requeues("two") == 1
        settle(clock, 1.0)
        clock.step(1)
        settle(clock, 11.0)
        assert list(q._queue) == ["one", "two"]  # "one" only once

        assert q.get() == ("one", False)
        q.forget("one")
        assert q.num_requeues("one") == 0
        q.done("one")
        assert q.num_requeues("two") == 1

        q.add_rate_limited("one")  # backoff restarted: 1 s
        settle(clock, 2.0)
        q.add_rate_limited("two")  # second failure: 2 s
        clock.step(1)
        settle(clock, 3.0)
        assert list(q._queue) == ["two", "one"]
        assert q.get() == ("two", False)  # "two" is processing while it waits again
        clock.step(1)
        settle(clock, 13.0)
        assert list(q._queue) == ["one"]  # "two" is dirty, re-queued on done
        q.done("two")
        assert list(q._queue) == ["one", "two"]
        assert q.num_requeues("two") == 2
    finally:
        q.shut_down()


def test_default_rate_limiter_is_the_controller_one(clock):
    q = RateLimitingQueue(clock=clock)
    try:
        limiter = q.rate_limiter
        assert isinstance(limiter, MaxOfRateLimiter)
        exponential, bucket = limiter.limiters
        assert isinstance(exponential, ItemExponentialFailureRateLimiter)
        assert (exponential.base_delay, exponential.max_delay) == (0.005, 1000.0)
        assert isinstance(bucket, BucketRateLimiter)
        assert (bucket.qps, bucket.burst) == (10.0, 100)
        q.add_rate_limited("a")
        settle(clock, 0.005)
        assert q.num_requeues("a") == 1
    finally:
        q.shut_down()


def test_zero_delay_limiter_adds_at_once(clock):
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(0.0, 0.0), clock=clock)
    try:
        q.add_rate_limited("a")
        assert list(q._queue) == ["a"]
        assert q.num_requeues("a") == 1
    finally:
        q.shut_down()


def test_add_rate_limited_after_shut_down_still_records_but_does_not_add(clock):
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 10.0), clock=clock)
    q.shut_down()
    q.add_rate_limited("a")
    assert q.num_requeues("a") == 1  # client-go calls When before AddAfter's shutdown check
    assert q.get() == (None, True)
