import pytest

from warehouse.stock import Stock


def test_receive_existing_sku(stock):
    assert stock.receive("A-1", 3) == 8


def test_receive_new_sku(stock):
    assert stock.receive("B-7", 12) == 12


def test_ship(stock):
    assert stock.ship("A-1", 5) == 0


def test_cannot_oversell(stock):
    with pytest.raises(ValueError):
        stock.ship("C-3", 3)


def test_low_stock(stock):
    stock.ship("A-1", 1)
    assert stock.low_stock(4) == ["A-1", "C-3"]
