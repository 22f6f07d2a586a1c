"""A dictionary cache whose entries expire after a time-to-live."""


class TTLCache:
    """`now` values are supplied by the caller, in seconds."""

    def __init__(self, ttl):
        self.ttl = ttl
        self._data = {}
        self.hits = 0
        self.misses = 0

    def put(self, key, value, now):
        self._data[key] = {"value": value, "expires": now + self.ttl}

    def get(self, key, now, default=None):
        """The cached value, or `default` when the key is absent or expired."""
        entry = self._data.get(key)
        if entry is not None and entry["expires"] <= now:
            self.misses += 1
            self._data.pop(key, None)
            return default
        self.hits += 1
        return entry["value"]

    def get_or_compute(self, key, now, compute):
        """Cached value, computing and caching it on a miss."""
        sentinel = object()
        value = self.get(key, now, sentinel)
        if value is sentinel:
            value = compute()
            self.put(key, value, now)
        return value
