from formlayout.labels import align, longest_label


def test_first_of_equal_length_wins():
    assert longest_label(["beta", "alfa", "zulu"]) == "beta"


def test_longest_not_alphabetically_last():
    assert longest_label(["zip", "city", "street address"]) == "street address"


def test_uppercase_and_lowercase():
    assert longest_label(["a", "BBB", "cc"]) == "BBB"


def test_single():
    assert longest_label(["only"]) == "only"


def test_align_custom_separator():
    assert align([("a", 1), ("bbb", 2)], separator=" = ") == ["  a = 1", "bbb = 2"]


def test_align_width_from_longest():
    assert align([("x", "1"), ("yy", "2")]) == [" x: 1", "yy: 2"]
