from guard.lockout import LoginGuard


def fail(g, user, times, start=0):
    for t in range(times):
        g.record_failure(user, now=start + t)


def test_locked_at_exactly_max_failures():
    g = LoginGuard()
    fail(g, "a", 3)
    assert g.is_locked("a", now=10)


def test_two_failures_not_locked():
    g = LoginGuard()
    fail(g, "a", 2)
    assert not g.is_locked("a", now=3)


def test_lock_expires():
    g = LoginGuard()
    fail(g, "a", 3)
    assert not g.is_locked("a", now=2 + 300)


def test_still_locked_just_before_expiry():
    g = LoginGuard()
    fail(g, "a", 4)
    assert g.is_locked("a", now=3 + 299)


def test_attempt_sequence():
    g = LoginGuard()
    results = [g.attempt("u", False, now=t) for t in range(4)]
    assert results == ["denied", "denied", "denied", "locked"]


def test_unknown_user_not_locked():
    assert not LoginGuard().is_locked("ghost", now=0)
