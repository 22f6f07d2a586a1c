from formlayout.labels import align, longest_label, wrap_value


def test_longest_label():
    assert longest_label(["name", "e-mail address", "phone"]) == "e-mail address"


def test_no_labels():
    assert longest_label([]) == ""


def test_align():
    pairs = [("Host", "db.local"), ("Port", "5432"), ("Database", "orders")]
    assert align(pairs) == ["    Host: db.local", "    Port: 5432", "Database: orders"]


def test_wrap_value():
    assert wrap_value("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]
