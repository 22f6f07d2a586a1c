from guard.lockout import LoginGuard


def test_successful_login():
    assert LoginGuard().attempt("ann", True, now=0) == "ok"


def test_many_failures_lock():
    g = LoginGuard()
    for t in range(5):
        g.record_failure("ann", now=t)
    assert g.is_locked("ann", now=10)


def test_single_failure_does_not_lock():
    g = LoginGuard()
    assert g.attempt("bob", False, now=0) == "denied"
    assert g.attempt("bob", True, now=5) == "ok"


def test_success_clears_failures():
    g = LoginGuard()
    g.record_failure("cy", now=0)
    g.record_success("cy")
    assert g.failures == {}
