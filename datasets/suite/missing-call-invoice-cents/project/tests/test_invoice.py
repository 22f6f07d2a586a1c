import pytest

from billing.invoice import format_amount, invoice_totals, line_total


def test_line_total_simple():
    assert line_total(2, 5.0) == 10.0


def test_line_total_cents():
    assert line_total(3, 0.7) == 2.1


def test_invalid_discount():
    with pytest.raises(ValueError):
        line_total(1, 10.0, discount=1.5)


def test_invoice_totals():
    lines = [(2, 10.0, 0.0, "standard"), (1, 4.0, 0.5, "zero")]
    assert invoice_totals(lines) == {"net": 22.0, "vat": 4.2, "gross": 26.2}


def test_format_amount():
    assert format_amount(1234.5) == "EUR 1,234.50"
