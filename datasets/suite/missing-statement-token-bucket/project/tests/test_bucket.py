from apigw.bucket import TokenBucket


def test_starts_full():
    bucket = TokenBucket(capacity=3, rate=1.0)
    assert [bucket.consume(now=0.0) for _ in range(4)] == [True, True, True, False]


def test_refills_over_time():
    bucket = TokenBucket(capacity=2, rate=1.0)
    bucket.consume(0.0)
    bucket.consume(0.0)
    assert bucket.consume(now=1.0)


def test_steady_rate_is_enforced():
    bucket = TokenBucket(capacity=1, rate=1.0)
    results = [bucket.consume(now=t) for t in (0.0, 1.0, 1.5, 2.0, 2.2, 2.4)]
    assert results == [True, True, False, True, False, False]


def test_wait_time_when_full():
    assert TokenBucket(capacity=5, rate=2.0).wait_time(now=0.0) == 0.0
