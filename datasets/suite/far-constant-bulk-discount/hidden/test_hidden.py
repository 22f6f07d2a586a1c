import pytest

from wholesale.pricing import line_price, order_total, savings


def test_just_below_threshold():
    assert line_price(3.0, 9) == pytest.approx(27.0)


def test_large_bulk_line():
    assert line_price(0.5, 400) == pytest.approx(190.0)


def test_mixed_order():
    assert order_total([(2.0, 20), (7.5, 2)]) == 53.0


def test_member_and_bulk():
    assert order_total([(10.0, 10)], member=True) == 85.5


def test_savings_member_bulk():
    assert savings([(10.0, 10)], member=True) == 14.5


def test_no_savings_small_order():
    assert savings([(3.0, 1)]) == 0.0
