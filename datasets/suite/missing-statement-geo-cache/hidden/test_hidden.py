from geocode.resolver import CachedResolver


class CountingBackend:
    def __init__(self):
        self.seen = []

    def __call__(self, key):
        self.seen.append(key)
        return None if key.startswith("unknown") else (len(key), 0.0)


def test_unknown_cached_too():
    backend = CountingBackend()
    r = CachedResolver(backend)
    assert r.resolve("unknown place") is None
    assert r.resolve("Unknown Place") is None
    assert backend.seen == ["unknown place"]


def test_distinct_addresses():
    backend = CountingBackend()
    r = CachedResolver(backend)
    r.resolve_all(["a st", "b st", "A St.", "b  st"])
    assert backend.seen == ["a st", "b st"]
    assert r.backend_calls == 2


def test_cached_value_returned():
    r = CachedResolver(CountingBackend())
    first = r.resolve("x road")
    assert r.resolve("X Road") == first == (6, 0.0)


def test_resolve_all_result():
    r = CachedResolver(CountingBackend())
    assert r.resolve_all(["ab", "AB"]) == {"ab": (2, 0.0), "AB": (2, 0.0)}


def test_counts_start_at_zero():
    assert CachedResolver(CountingBackend()).backend_calls == 0
