from webauth.sessions import SessionStore


def test_logout_unknown_token():
    assert SessionStore().logout("nope") is None


def test_second_logout_returns_none():
    store = SessionStore()
    token = store.login("cy", now=0)
    assert store.logout(token) == "cy"
    assert store.logout(token) is None


def test_logout_shrinks_store():
    store = SessionStore()
    a = store.login("a", now=0)
    store.login("b", now=0)
    store.logout(a)
    assert len(store) == 1


def test_logout_only_affects_that_session():
    store = SessionStore()
    t1 = store.login("dee", now=0)
    t2 = store.login("dee", now=5)
    store.logout(t1)
    assert store.lookup(t2, now=10) == "dee"
    assert store.active_users(now=10) == ["dee"]


def test_active_users_after_logout():
    store = SessionStore()
    t = store.login("eve", now=0)
    store.login("fay", now=0)
    store.logout(t)
    assert store.active_users(now=1) == ["fay"]


def test_lookup_refreshes():
    store = SessionStore(idle_timeout=10)
    t = store.login("gus", now=0)
    store.lookup(t, now=8)
    assert store.lookup(t, now=16) == "gus"
