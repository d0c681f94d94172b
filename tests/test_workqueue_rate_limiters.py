"""Tests for informers.workqueue.rate_limiters (client-go default_rate_limiters_test.go)."""

from __future__ import annotations

import math
import threading

import pytest

from informers.clock import FakeClock
from informers.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)

# -- ItemExponentialFailureRateLimiter -------------------------------------------------------------


def test_exponential_doubles_per_item_and_forget_resets():
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    assert [limiter.when("one") for _ in range(10)] == [
        0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56,
    ]
    assert limiter.num_requeues("one") == 10
    assert [limiter.when("two") for _ in range(2)] == [0.005, 0.01]
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.num_requeues("two") == 2
    assert limiter.when("one") == 0.005
    limiter.forget("never-seen")


def test_exponential_saturates_at_max_exactly_at_the_crossing():
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [limiter.when("x") for _ in range(20)]
    assert delays[17] == 655.36  # 0.005 * 2**17
    assert delays[18:] == [1000.0, 1000.0]  # 0.005 * 2**18 = 1310.72 > max


def test_exponential_saturates_without_overflow_after_many_failures():
    limiter = ItemExponentialFailureRateLimiter(0.001, 1000.0)
    for _ in range(99):
        limiter.when("x")
    assert limiter.when("x") == 1000.0  # the 100th failure
    for _ in range(10_000 - 100 - 1):
        limiter.when("x")
    assert limiter.when("x") == 1000.0  # the 10,000th failure: 2**9999 overflows a float
    assert limiter.num_requeues("x") == 10_000


def test_exponential_with_tiny_base_still_caps():
    limiter = ItemExponentialFailureRateLimiter(1e-300, 5.0)
    for _ in range(2000):
        delay = limiter.when("x")
    assert delay == 5.0


def test_default_item_based_rate_limiter():
    limiter = default_item_based_rate_limiter()
    assert (limiter.base_delay, limiter.max_delay) == (0.001, 1000.0)
    delays = [limiter.when("x") for _ in range(21)]
    assert delays[:3] == [0.001, 0.002, 0.004]
    assert delays[19] == 524.288
    assert delays[20] == 1000.0


# -- ItemFastSlowRateLimiter ----------------------------------------------------------------------


def test_fast_slow_switches_after_max_fast_attempts():
    limiter = ItemFastSlowRateLimiter(0.005, 10.0, 3)
    assert [limiter.when("one") for _ in range(5)] == [0.005, 0.005, 0.005, 10.0, 10.0]
    assert limiter.num_requeues("one") == 5
    assert limiter.when("two") == 0.005
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 0.005
    assert limiter.num_requeues("two") == 1


# -- BucketRateLimiter ----------------------------------------------------------------------------


def test_bucket_gives_burst_then_one_token_per_interval():
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [limiter.when(f"item-{i}") for i in range(100)] == [0.0] * 100
    assert [limiter.when("x") for _ in range(10)] == [
        0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    ]
    clock.step(1.0)  # ten tokens accrued, all already reserved
    assert limiter.when("x") == 0.1
    assert limiter.num_requeues("x") == 0
    limiter.forget("x")  # no-op
    assert limiter.when("x") == 0.2


def test_bucket_refills_at_qps_and_caps_at_burst():
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=2, burst=1, clock=clock)
    assert [limiter.when("x") for _ in range(3)] == [0.0, 0.5, 1.0]
    clock.step(1.5)  # the two reserved tokens and one more
    assert [limiter.when("x") for _ in range(2)] == [0.0, 0.5]
    clock.step(100)  # refill stops at the burst
    assert [limiter.when("x") for _ in range(2)] == [0.0, 0.5]
    clock.step(0.25)
    assert limiter.when("x") == 0.75


def test_bucket_edge_cases_follow_x_time_rate():
    clock = FakeClock()
    unlimited = BucketRateLimiter(qps=math.inf, burst=0, clock=clock)
    assert [unlimited.when("x") for _ in range(3)] == [0.0, 0.0, 0.0]
    zero_rate = BucketRateLimiter(qps=0, burst=2, clock=clock)
    assert [zero_rate.when("x") for _ in range(3)] == [0.0, 0.0, math.inf]
    no_burst = BucketRateLimiter(qps=10, burst=0, clock=clock)
    assert no_burst.when("x") == math.inf


def test_bucket_is_thread_safe():
    limiter = BucketRateLimiter(qps=10, burst=100, clock=FakeClock())
    delays: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        mine = [limiter.when("x") for _ in range(50)]
        with lock:
            delays.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(delays) == [0.0] * 100 + [k / 10 for k in range(1, 301)]


# -- MaxOfRateLimiter and WithMaxWaitRateLimiter ---------------------------------------------------


def test_max_of_takes_the_largest_delay_and_requeue_count():
    limiter = MaxOfRateLimiter(
        ItemFastSlowRateLimiter(0.005, 3.0, 3),
        ItemExponentialFailureRateLimiter(0.001, 1.0),
    )
    assert [limiter.when("one") for _ in range(5)] == [0.005, 0.005, 0.005, 3.0, 3.0]
    assert limiter.num_requeues("one") == 5
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 0.005


class Recording:
    def __init__(self, delay: float, requeues: int) -> None:
        self.delay, self.requeues, self.calls = delay, requeues, []

    def when(self, item):
        self.calls.append(("when", item))
        return self.delay

    def num_requeues(self, item):
        self.calls.append(("num_requeues", item))
        return self.requeues

    def forget(self, item):
        self.calls.append(("forget", item))


def test_max_of_calls_every_limiter_every_time():
    first, second, third = Recording(2.0, 1), Recording(7.0, 4), Recording(1.0, 9)
    limiter = MaxOfRateLimiter(first, second, third)
    assert limiter.when("a") == 7.0
    assert limiter.when("a") == 7.0
    assert limiter.num_requeues("a") == 9
    limiter.forget("a")
    expected = [("when", "a"), ("when", "a"), ("num_requeues", "a"), ("forget", "a")]
    assert first.calls == second.calls == third.calls == expected


def test_max_of_needs_a_limiter():
    with pytest.raises(ValueError):
        MaxOfRateLimiter()


def test_with_max_wait_caps_the_delay():
    inner = ItemExponentialFailureRateLimiter(1.0, 100.0)
    limiter = WithMaxWaitRateLimiter(inner, 5.0)
    assert [limiter.when("x") for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert limiter.num_requeues("x") == 5
    limiter.forget("x")
    assert inner.num_requeues("x") == 0


# -- the default controller limiter ---------------------------------------------------------------


def test_default_controller_rate_limiter_per_item_backoff():
    limiter = default_controller_rate_limiter(FakeClock())
    assert [limiter.when("one") for _ in range(10)] == [
        0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56,
    ]
    assert limiter.num_requeues("one") == 10
    exponential, bucket = limiter.limiters
    assert isinstance(exponential, ItemExponentialFailureRateLimiter)
    assert (exponential.base_delay, exponential.max_delay) == (0.005, 1000.0)
    assert isinstance(bucket, BucketRateLimiter)
    assert (bucket.qps, bucket.burst) == (10.0, 100)


def test_default_controller_rate_limiter_overall_bucket():
    limiter = default_controller_rate_limiter(FakeClock())
    assert {limiter.when(f"item-{i}") for i in range(100)} == {0.005}
    assert [limiter.when(f"new-{i}") for i in range(3)] == [0.1, 0.2, 0.3]


def test_limiters_satisfy_the_protocol():
    clock = FakeClock()
    for limiter in (
        ItemExponentialFailureRateLimiter(1, 2),
        ItemFastSlowRateLimiter(1, 2, 3),
        BucketRateLimiter(1, 1, clock=clock),
        MaxOfRateLimiter(BucketRateLimiter(1, 1, clock=clock)),
        WithMaxWaitRateLimiter(ItemExponentialFailureRateLimiter(1, 2), 1),
    ):
        assert isinstance(limiter, RateLimiter)


def test_exponential_is_thread_safe():
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)

    def worker() -> None:
        for _ in range(1000):
            limiter.when("x")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert limiter.num_requeues("x") == 8000
