from throttle.limiter import MinuteRateLimiter


def test_new_minute_resets():
    rl = MinuteRateLimiter(per_minute=1)
    assert rl.allow("a", 59.0)
    assert rl.allow("a", 60.0)


def test_same_minute_blocked():
    rl = MinuteRateLimiter(per_minute=1)
    assert rl.allow("a", 61.0)
    assert not rl.allow("a", 119.5)


def test_remaining():
    rl = MinuteRateLimiter(per_minute=5)
    rl.allow("a", 0.0)
    rl.allow("a", 30.0)
    assert rl.remaining("a", 45.0) == 3
    assert rl.remaining("a", 61.0) == 5


def test_retry_after():
    assert MinuteRateLimiter(per_minute=1).retry_after(150.0) == 30.0


def test_retry_after_at_window_start():
    assert MinuteRateLimiter(per_minute=1).retry_after(120.0) == 60.0


def test_unknown_client_remaining():
    assert MinuteRateLimiter(per_minute=7).remaining("z", 5.0) == 7
