from billing.invoice import invoice_totals, line_total


def test_line_total_three_items():
    assert line_total(3, 1.1) == 3.3


def test_line_total_discount_rounds_to_cent():
    assert line_total(1, 9.99, 0.15) == 8.49


def test_line_total_keeps_cents():
    assert line_total(1, 0.07) == 0.07


def test_line_total_large():
    assert line_total(1000, 0.333) == 333.0


def test_line_total_zero_quantity():
    assert line_total(0, 99.0) == 0.0


def test_discount_third():
    assert line_total(3, 10.0, 1 / 3) == 20.0


def test_totals_reduced_rate():
    assert invoice_totals([(3, 0.7, 0.0, "reduced")]) == {"net": 2.1, "vat": 0.19, "gross": 2.29}
