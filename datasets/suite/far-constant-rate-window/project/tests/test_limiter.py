import pytest

from throttle.limiter import MinuteRateLimiter


def test_burst_within_limit():
    rl = MinuteRateLimiter(per_minute=3)
    assert [rl.allow("a", 0.0) for _ in range(4)] == [True, True, True, False]


def test_clients_are_independent():
    rl = MinuteRateLimiter(per_minute=1)
    assert rl.allow("a", 10.0)
    assert rl.allow("b", 10.0)


def test_requests_spread_over_a_minute_are_limited():
    rl = MinuteRateLimiter(per_minute=2)
    assert rl.allow("a", 1.0)
    assert rl.allow("a", 20.0)
    assert not rl.allow("a", 40.0)


def test_invalid_limit():
    with pytest.raises(ValueError):
        MinuteRateLimiter(per_minute=0)
