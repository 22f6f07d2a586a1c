import pytest

from wholesale.pricing import line_price, order_total, savings


def test_small_line_has_no_discount():
    assert line_price(4.0, 3) == 12.0


def test_bulk_line():
    assert line_price(2.0, 10) == pytest.approx(19.0)


def test_member_discount():
    assert order_total([(10.0, 2)], member=True) == 18.0


def test_invalid_quantity():
    with pytest.raises(ValueError):
        line_price(1.0, 0)


def test_savings_for_bulk_order():
    assert savings([(1.0, 100), (5.0, 1)]) == 5.0
