from geocode.resolver import CachedResolver, normalize_address

KNOWN = {"10 main st springfield": (39.78, -89.65), "1 high st oxford": (51.75, -1.25)}


def fake_backend(key):
    return KNOWN.get(key)


def test_normalize_address():
    assert normalize_address("10  Main St, Springfield.") == "10 main st springfield"


def test_resolve():
    assert CachedResolver(fake_backend).resolve("1 High St, Oxford") == (51.75, -1.25)


def test_unknown_address():
    assert CachedResolver(fake_backend).resolve("nowhere") is None


def test_repeated_address_uses_cache():
    r = CachedResolver(fake_backend)
    r.resolve("10 Main St, Springfield")
    r.resolve("10 main st springfield.")
    assert r.backend_calls == 1
