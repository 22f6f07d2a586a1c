from crm.contacts import dedupe


def test_phone_duplicates():
    contacts = [{"phone": "06-12345678"}, {"phone": "+31 6 12345678"}, {"phone": "0612345679"}]
    assert dedupe(contacts) == [contacts[0], contacts[2]]


def test_three_copies():
    contacts = [{"email": "x@y.z", "n": i} for i in range(3)]
    assert dedupe(contacts) == [contacts[0]]


def test_interleaved_duplicates_keep_first_order():
    a1, b1, a2, c1, b2 = ({"email": e, "i": i} for i, e in enumerate("a@q b@q a@q c@q B@Q".split()))
    assert dedupe([a1, b1, a2, c1, b2]) == [a1, b1, c1]


def test_empty():
    assert dedupe([]) == []


def test_input_not_modified():
    contacts = [{"email": "a@q"}, {"email": "a@q"}]
    dedupe(contacts)
    assert len(contacts) == 2
