from webauth.sessions import SessionStore


def test_login_and_lookup():
    store = SessionStore()
    token = store.login("ana", now=0)
    assert store.lookup(token, now=60) == "ana"


def test_idle_session_expires():
    store = SessionStore(idle_timeout=100)
    token = store.login("ana", now=0)
    assert store.lookup(token, now=101) is None


def test_logout_returns_user():
    store = SessionStore()
    token = store.login("bo", now=0)
    assert store.logout(token) == "bo"


def test_logged_out_token_is_rejected():
    store = SessionStore()
    token = store.login("bo", now=0)
    store.logout(token)
    assert store.lookup(token, now=1) is None
