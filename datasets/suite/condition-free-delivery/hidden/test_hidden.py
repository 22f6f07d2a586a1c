from grocer.delivery import checkout_total, delivery_fee

SMALL = {"eggs": (3.0, 1)}
EXACT = {"cheese": (20.0, 3)}
LARGE = {"tv": (300.0, 1)}


def test_member_small_basket_free():
    assert delivery_fee(SMALL, member=True) == 0.0


def test_exactly_threshold_free():
    assert delivery_fee(EXACT) == 0.0


def test_member_large_free():
    assert delivery_fee(LARGE, member=True) == 0.0


def test_express_on_free_delivery():
    assert delivery_fee(LARGE, express=True) == 7.5


def test_member_express():
    assert delivery_fee(SMALL, member=True, express=True) == 7.5


def test_just_below_threshold():
    assert delivery_fee({"x": (59.99, 1)}) == 5.0


def test_total_large():
    assert checkout_total(LARGE) == 300.0
