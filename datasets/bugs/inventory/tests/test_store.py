import pytest

from stock.store import OutOfStock, Store


def test_add_accumulates():
    store = Store()
    store.add("apple", 2)
    store.add("apple", 3)
    assert store.available("apple") == 5


def test_add_rejects_non_positive():
    with pytest.raises(ValueError):
        Store().add("apple", 0)


def test_reserve_some():
    store = Store()
    store.add("pear", 4)
    assert store.reserve("pear", 1)
    assert store.available("pear") == 3


def test_reserve_everything():
    store = Store()
    store.add("plum", 2)
    assert store.reserve("plum", 2)
    assert store.available("plum") == 0


def test_reserve_too_many():
    store = Store()
    store.add("fig", 1)
    with pytest.raises(OutOfStock):
        store.reserve("fig", 2)
