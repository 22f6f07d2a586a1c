from checkout.summary import receipt, shipping, subtotal, summarize


def test_subtotal():
    assert subtotal([("pen", 1.5, 4), ("pad", 3.0, 1)]) == 9.0


def test_shipping_charged_for_small_orders():
    assert shipping([("pen", 1.5, 4)]) == 4.95


def test_free_shipping():
    assert shipping([("lamp", 60.0, 1)]) == 0.0


def test_summary_with_free_shipping():
    assert summarize([("lamp", 50.0, 1)]) == {
        "subtotal": 50.0, "tax": 4.0, "shipping": 0.0, "total": 54.0}


def test_summary_small_order():
    assert summarize([("pen", 2.5, 4)])["total"] == 15.75
