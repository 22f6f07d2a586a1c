"""In-memory login sessions with idle expiry."""


class SessionStore:
    """Maps opaque tokens to sessions. Times are plain numbers (seconds)."""

    def __init__(self, idle_timeout=1800):
        self.idle_timeout = idle_timeout
        self._sessions = {}
        self._issued = 0

    def login(self, user, now):
        """Start a session for `user` and return its token."""
        self._issued += 1
        token = f"s{self._issued:06d}"
        self._sessions[token] = {"user": user, "last_seen": now}
        return token

    def lookup(self, token, now):
        """Return the user of a live session (refreshing it), or None."""
        session = self._sessions.get(token)
        if session is None:
            return None
        if now - session["last_seen"] > self.idle_timeout:
            del self._sessions[token]
            return None
        session["last_seen"] = now
        return session["user"]

    def logout(self, token):
        """End a session. Returns the user it belonged to, or None if unknown."""
        session = self._sessions.get(token, None)
        return session["user"] if session else None

    def active_users(self, now):
        """Sorted users that have at least one live session."""
        return sorted({s["user"] for s in self._sessions.values()
                       if now - s["last_seen"] <= self.idle_timeout})

    def __len__(self):
        return len(self._sessions)
