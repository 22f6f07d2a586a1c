from grocer.delivery import basket_value, checkout_total, delivery_fee

SMALL = {"milk": (1.2, 2), "bread": (2.5, 1)}
LARGE = {"coffee": (12.0, 3), "wine": (9.0, 4)}


def test_basket_value():
    assert basket_value(SMALL) == 4.9


def test_small_basket_pays_fee():
    assert delivery_fee(SMALL) == 5.0


def test_large_basket_ships_free():
    assert delivery_fee(LARGE) == 0.0


def test_express_surcharge():
    assert delivery_fee(SMALL, express=True) == 12.5


def test_checkout_total_small():
    assert checkout_total(SMALL) == 9.9
