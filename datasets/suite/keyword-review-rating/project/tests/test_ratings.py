import pytest

from reviews.ratings import average, badge, distribution


def test_no_ratings():
    assert average([]) is None


def test_average_whole_number():
    assert average([4, 4, 5, 3]) == 4


def test_average_one_decimal():
    assert average([5, 4, 4]) == 4.3


def test_invalid_rating():
    with pytest.raises(ValueError):
        average([6])


def test_distribution():
    assert distribution([5, 5, 4, 1]) == {5: 50, 4: 25, 3: 0, 2: 0, 1: 25}
