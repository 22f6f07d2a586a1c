"""Address -> coordinates resolution with an in-memory cache in front of a
slow (rate-limited, paid) geocoding backend."""


def normalize_address(address):
    """Cache key for an address: lower-case, single spaces, no trailing period."""
    return " ".join(address.lower().replace(",", " ").split()).rstrip(".")


class CachedResolver:
    def __init__(self, backend):
        """`backend` is a callable address -> (lat, lon) or None if unknown."""
        self.backend = backend
        self._cache = {}
        self.backend_calls = 0

    def resolve(self, address):
        """Coordinates of an address; each distinct address hits the backend once
        (unknown addresses are cached too)."""
        key = normalize_address(address)
        if key in self._cache:
            return self._cache[key]
        self.backend_calls += 1
        result = self.backend(key)
        return result

    def resolve_all(self, addresses):
        """Resolve many addresses; returns {address: coordinates}."""
        return {address: self.resolve(address) for address in addresses}
