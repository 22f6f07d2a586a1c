import pytest

from crm.contacts import contact_key, dedupe, display_name


def test_key_by_email():
    assert contact_key({"email": " Ann@Example.com "}) == "email:ann@example.com"


def test_key_by_phone():
    assert contact_key({"phone": "+31 (0)6 1234-5678"}) == "phone:612345678"


def test_contact_without_identity():
    with pytest.raises(ValueError):
        contact_key({"name": "ghost"})


def test_dedupe_keeps_distinct():
    contacts = [{"email": "a@x.org"}, {"email": "b@x.org"}]
    assert dedupe(contacts) == contacts


def test_dedupe_drops_duplicate_email():
    contacts = [{"email": "a@x.org", "first": "Ann"}, {"email": "A@X.org", "first": "Anne"}]
    assert dedupe(contacts) == [contacts[0]]


def test_display_name():
    assert display_name({"first": "Ann", "last": "Lee"}) == "Lee, Ann"
