import pytest

from ridefare.fare import fare, split


def test_short_ride_minimum_fare():
    assert fare(0.5) == 7.0


def test_day_ride():
    assert fare(10) == 23.0


def test_split():
    assert split(23.0, 3) == 7.7


def test_split_needs_people():
    with pytest.raises(ValueError):
        split(10.0, 0)
