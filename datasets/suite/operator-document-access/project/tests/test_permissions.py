from docshare.permissions import Document, User, can_edit, can_read, visible_titles


def test_stranger_cannot_edit():
    assert not can_edit(User("eve"), Document("plan", owner="ann"))


def test_owner_can_edit():
    assert can_edit(User("ann"), Document("plan", owner="ann"))


def test_shared_by_group():
    doc = Document("minutes", owner="ann", shared_with={"board"})
    assert can_read(User("bob", groups=frozenset({"board"})), doc)


def test_public_document():
    assert can_read(User("eve"), Document("faq", owner="ann", public=True))
