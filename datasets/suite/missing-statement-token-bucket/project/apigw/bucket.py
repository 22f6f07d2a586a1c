"""Token-bucket throttling for an API gateway."""


class TokenBucket:
    """Holds up to `capacity` tokens, refilled continuously at `rate` tokens per
    second. Times are supplied by the caller in seconds."""

    def __init__(self, capacity, rate, now=0.0):
        self.capacity = capacity
        self.rate = rate
        self.tokens = float(capacity)
        self.updated = now

    def _refill(self, now):
        """Add the tokens earned since the last update."""
        elapsed = max(0.0, now - self.updated)
        self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)

    def consume(self, now, cost=1):
        """Take `cost` tokens if available; returns True when the request may pass."""
        self._refill(now)
        if self.tokens >= cost:
            self.tokens -= cost
            return True
        return False

    def wait_time(self, now, cost=1):
        """Seconds until `cost` tokens will be available."""
        self._refill(now)
        missing = cost - self.tokens
        return 0.0 if missing <= 0 else missing / self.rate
