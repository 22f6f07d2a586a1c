import pytest

from warehouse.stock import Stock


def test_receive_twice_new_sku():
    s = Stock()
    s.receive("X", 2)
    assert s.receive("X", 3) == 5


def test_receive_records_history():
    s = Stock()
    s.receive("N", 4)
    assert s.history == [("in", "N", 4)]


def test_receive_then_ship_new_sku():
    s = Stock()
    s.receive("Q", 10)
    assert s.ship("Q", 4) == 6


def test_receive_existing_zero_level():
    s = Stock({"Z": 0})
    assert s.receive("Z", 1) == 1


def test_receive_invalid_quantity():
    with pytest.raises(ValueError):
        Stock().receive("Y", 0)


def test_new_sku_visible_in_low_stock():
    s = Stock({"a": 10})
    s.receive("b", 2)
    assert s.low_stock(5) == ["b"]
