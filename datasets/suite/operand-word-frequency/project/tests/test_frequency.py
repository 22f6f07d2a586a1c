from textstats2.frequency import counts, top_keywords, words


def test_words_skip_stopwords():
    assert words("The cat and the hat") == ["cat", "hat"]


def test_counts():
    assert counts("Rain, rain, go away") == {"rain": 2, "go": 1, "away": 1}


def test_top_keywords_by_frequency():
    text = "zebra zebra zebra apple mango mango"
    assert top_keywords(text, n=2) == [("zebra", 3), ("mango", 2)]


def test_top_keywords_ties_alphabetical():
    assert top_keywords("pear fig kiwi", n=2) == [("fig", 1), ("kiwi", 1)]
