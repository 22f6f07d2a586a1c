from purchasing.reorder import Product, needs_reorder, purchase_order


def test_exactly_at_reorder_level():
    assert needs_reorder(Product("A", on_hand=5, reorder_level=5, reorder_qty=1))


def test_plenty_of_stock():
    assert not needs_reorder(Product("A", on_hand=6, reorder_level=5, reorder_qty=1))


def test_discontinued_with_stock():
    assert not needs_reorder(Product("A", 50, 5, 1, discontinued=True))


def test_discontinued_at_level():
    assert not needs_reorder(Product("A", 5, 5, 1, discontinued=True))


def test_order_mixed():
    products = [
        Product("c", 0, 2, 8),
        Product("a", 2, 2, 3),
        Product("b", 1, 2, 3, discontinued=True),
        Product("d", 9, 2, 3),
    ]
    assert purchase_order(products) == [("a", 3), ("c", 10)]


def test_empty():
    assert purchase_order([]) == []
