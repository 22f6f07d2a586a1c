from checkout.summary import receipt, summarize


def test_total_includes_shipping():
    assert summarize([("mug", 12.0, 1)]) == {
        "subtotal": 12.0, "tax": 0.96, "shipping": 4.95, "total": 17.91}


def test_total_just_below_free_shipping():
    assert summarize([("book", 49.99, 1)])["total"] == 58.94


def test_total_free_shipping():
    assert summarize([("desk", 120.0, 1)])["total"] == 129.6


def test_empty_cart():
    assert summarize([]) == {"subtotal": 0.0, "tax": 0.0, "shipping": 0.0, "total": 0.0}


def test_receipt_total_line():
    assert receipt([("cap", 10.0, 2)])[-1] == "total: 26.55"
