from textstats.words import top_words, words


def test_words_strip_punctuation():
    assert words("Hello, world! Hello.") == ["hello", "world", "hello"]


def test_top_one():
    assert top_words("a b a c a b", 1) == ["a"]


def test_top_two():
    assert top_words("a b a c a b", 2) == ["a", "b"]


def test_ties_are_alphabetical():
    assert top_words("z y x", 3) == ["x", "y", "z"]
