from memo.ttlcache import TTLCache


def test_fresh_entry():
    cache = TTLCache(ttl=10)
    cache.put("a", 1, now=0)
    assert cache.get("a", now=5) == 1


def test_expired_entry():
    cache = TTLCache(ttl=10)
    cache.put("a", 1, now=0)
    assert cache.get("a", now=10, default="gone") == "gone"


def test_missing_key_gives_default():
    assert TTLCache(ttl=10).get("nope", now=0, default=0) == 0


def test_get_or_compute_caches():
    cache = TTLCache(ttl=60)
    calls = []
    compute = lambda: calls.append(1) or len(calls)
    assert cache.get_or_compute("k", 0, compute) == 1
    assert cache.get_or_compute("k", 30, compute) == 1
