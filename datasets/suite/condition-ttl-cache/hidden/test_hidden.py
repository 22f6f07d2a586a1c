from memo.ttlcache import TTLCache


def test_missing_key_default_none():
    assert TTLCache(ttl=5).get("x", now=0) is None


def test_miss_counted():
    cache = TTLCache(ttl=5)
    cache.get("x", now=0)
    assert (cache.hits, cache.misses) == (0, 1)


def test_hit_counted():
    cache = TTLCache(ttl=5)
    cache.put("x", 1, now=0)
    cache.get("x", now=1)
    assert (cache.hits, cache.misses) == (1, 0)


def test_expired_then_recomputed():
    cache = TTLCache(ttl=5)
    cache.put("k", "old", now=0)
    assert cache.get_or_compute("k", 6, lambda: "new") == "new"
    assert cache.get("k", now=7) == "new"


def test_falsy_values_are_cached():
    cache = TTLCache(ttl=5)
    cache.put("z", 0, now=0)
    assert cache.get("z", now=1, default="d") == 0


def test_just_before_expiry():
    cache = TTLCache(ttl=5)
    cache.put("k", "v", now=0)
    assert cache.get("k", now=4.999) == "v"
