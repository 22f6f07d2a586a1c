import pytest

from shop.cart import Cart, cheapest, FREE_SHIPPING_THRESHOLD, SHIPPING_FEE


def test_empty_cart_costs_nothing():
    assert Cart().total() == 0.0


def test_adding_the_same_item_merges_quantities():
    cart = Cart()
    cart.add("tea", 3.0)
    cart.add("tea", 3.0, quantity=2)
    assert len(cart.items) == 1
    assert cart.subtotal() == 9.0


def test_small_orders_pay_shipping():
    cart = Cart()
    cart.add("tea", 3.0)
    assert cart.total() == round(3.0 + SHIPPING_FEE, 2)


def test_large_orders_ship_free():
    cart = Cart()
    cart.add("kettle", 80.0)
    assert cart.shipping() == 0.0


def test_orders_at_the_threshold_ship_free():
    cart = Cart()
    cart.add("teapot", FREE_SHIPPING_THRESHOLD)
    assert cart.total() == FREE_SHIPPING_THRESHOLD


def test_quantity_must_be_positive():
    with pytest.raises(ValueError):
        Cart().add("tea", 3.0, quantity=0)


def test_cheapest_items_first():
    cart = Cart()
    for name, price in [("a", 5.0), ("b", 1.0), ("c", 3.0)]:
        cart.add(name, price)
    assert [i.name for i in cheapest(cart.items, 2)] == ["b", "c"]
