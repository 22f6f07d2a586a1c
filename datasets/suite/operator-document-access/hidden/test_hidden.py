from docshare.permissions import Document, User, can_edit, can_read, visible_titles


def test_admin_edits_others_documents():
    assert can_edit(User("root", is_admin=True), Document("x", owner="ann"))


def test_admin_edits_own_documents():
    assert can_edit(User("root", is_admin=True), Document("x", owner="root"))


def test_owner_reads_private():
    assert can_read(User("ann"), Document("diary", owner="ann"))


def test_shared_user_cannot_edit():
    assert not can_edit(User("bob"), Document("x", owner="ann", shared_with={"bob"}))


def test_visible_titles():
    docs = [Document("b", owner="ann"), Document("a", owner="bob"), Document("c", owner="cy", public=True)]
    assert visible_titles(User("ann"), docs) == ["b", "c"]
