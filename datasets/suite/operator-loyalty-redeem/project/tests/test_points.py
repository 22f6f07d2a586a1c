import pytest

from loyalty.points import Card


def test_earn_whole_euros():
    card = Card("ann")
    assert card.earn(12.80) == 120
    assert card.points == 120


def test_redeem():
    card = Card("ann", points=300)
    assert card.redeem("coffee") == 50


def test_not_enough_points():
    with pytest.raises(ValueError):
        Card("bob", points=100).redeem("cake")


def test_affordable():
    assert Card("cy", points=400).affordable() == ["coffee", "cake"]
