import pytest

from apigw.bucket import TokenBucket


def test_time_is_not_counted_twice():
    bucket = TokenBucket(capacity=10, rate=1.0)
    for _ in range(10):
        bucket.consume(0.0)
    assert bucket.consume(5.0, cost=5)
    assert not bucket.consume(5.0)


def test_wait_time():
    bucket = TokenBucket(capacity=4, rate=2.0)
    bucket.consume(0.0, cost=4)
    assert bucket.wait_time(0.25) == pytest.approx(0.25)
    assert bucket.wait_time(0.25) == pytest.approx(0.25)


def test_many_small_steps():
    bucket = TokenBucket(capacity=1, rate=1.0)
    bucket.consume(0.0)
    allowed = sum(bucket.consume(t / 10) for t in range(1, 31))
    assert allowed == 3


def test_capacity_caps_refill():
    bucket = TokenBucket(capacity=2, rate=1.0)
    assert [bucket.consume(100.0) for _ in range(3)] == [True, True, False]


def test_start_time():
    bucket = TokenBucket(capacity=1, rate=0.5, now=100.0)
    assert bucket.consume(100.0)
    assert not bucket.consume(101.0)
    assert bucket.consume(102.0)
