from textstats2.frequency import top_keywords


def test_ties_within_same_count():
    text = "b b e e c c c d"
    assert top_keywords(text) == [("c", 3), ("b", 2), ("e", 2), ("d", 1)]


def test_n_limits():
    assert top_keywords("x y z x", n=1) == [("x", 2)]


def test_empty():
    assert top_keywords("the and of") == []


def test_apostrophes():
    assert top_keywords("don't stop, don't") == [("don't", 2), ("stop", 1)]


def test_many_ties_alphabetical():
    text = "delta alpha charlie bravo echo foxtrot alpha"
    assert top_keywords(text, n=3) == [("alpha", 2), ("bravo", 1), ("charlie", 1)]
