from reviews.ratings import average, badge


def test_average_half():
    assert average([5, 4]) == 4.5


def test_average_two_thirds():
    assert average([1, 2, 2]) == 1.7


def test_average_single():
    assert average([3]) == 3


def test_badge_just_below():
    assert badge([5] * 4 + [4] * 6) == ""


def test_badge_at_four_and_a_half():
    assert badge([5] * 5 + [4] * 5) == "top rated"


def test_badge_needs_enough_reviews():
    assert badge([5, 5, 5]) == ""


def test_average_low():
    assert average([1, 1, 1, 2]) == 1.2
