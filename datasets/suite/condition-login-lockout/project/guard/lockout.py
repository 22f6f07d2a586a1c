"""Temporary account lockout after repeated failed logins."""

MAX_FAILURES = 3
LOCKOUT_SECONDS = 300


class LoginGuard:
    def __init__(self):
        self.failures = {}
        self.last_failure = {}

    def record_failure(self, user, now):
        self.failures[user] = self.failures.get(user, 0) + 1
        self.last_failure[user] = now

    def record_success(self, user):
        self.failures.pop(user, None)
        self.last_failure.pop(user, None)

    def is_locked(self, user, now):
        """Locked once MAX_FAILURES failures happened, until LOCKOUT_SECONDS
        have passed since the last one."""
        failures = self.failures.get(user, 0)
        since = now - self.last_failure.get(user, now)
        return failures > MAX_FAILURES or since < LOCKOUT_SECONDS

    def attempt(self, user, password_ok, now):
        """Process a login attempt; returns 'locked', 'ok' or 'denied'."""
        if self.is_locked(user, now):
            return "locked"
        if password_ok:
            self.record_success(user)
            return "ok"
        self.record_failure(user, now)
        return "denied"
