from loyalty.points import Card


def test_redeem_all_points():
    assert Card("a", points=250).redeem("coffee") == 0


def test_redeem_twice():
    card = Card("a", points=800)
    card.redeem("cake")
    assert card.redeem("coffee") == 150


def test_affordable_after_redeem():
    card = Card("a", points=1600)
    card.redeem("mug")
    assert card.affordable() == []


def test_log():
    card = Card("a")
    card.earn(30)
    card.redeem("coffee")
    assert card.log == [("earn", 300), ("redeem", 250)] and card.points == 50


def test_cannot_redeem_after_spending():
    card = Card("a", points=400)
    card.redeem("cake")
    assert card.points == 0
