"""Fixed-window rate limiting: at most N requests per client per minute."""


class MinuteRateLimiter:
    """Counts requests per client in fixed one-minute windows.

    `now` is a timestamp in seconds supplied by the caller (which keeps this
    class deterministic and easy to test).
    """

    WINDOW_SECONDS = 1

    def __init__(self, per_minute):
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1")
        self.per_minute = per_minute
        self._windows = {}

    def _window(self, now):
        return int(now // self.WINDOW_SECONDS)

    def allow(self, client, now):
        """Record a request and say whether it is allowed."""
        window = self._window(now)
        start, count = self._windows.get(client, (window, 0))
        if start != window:
            start, count = window, 0
        if count >= self.per_minute:
            return False
        self._windows[client] = (start, count + 1)
        return True

    def remaining(self, client, now):
        """Requests the client may still make in the current window."""
        start, count = self._windows.get(client, (None, 0))
        if start != self._window(now):
            return self.per_minute
        return self.per_minute - count

    def retry_after(self, now):
        """Seconds until the next window opens."""
        return (self._window(now) + 1) * self.WINDOW_SECONDS - now
