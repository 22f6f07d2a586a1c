from purchasing.reorder import Product, needs_reorder, purchase_order


def test_low_stock_is_reordered():
    assert needs_reorder(Product("A", on_hand=2, reorder_level=5, reorder_qty=10))


def test_discontinued_low_stock_not_reordered():
    assert not needs_reorder(Product("B", 0, 5, 10, discontinued=True))


def test_purchase_order():
    products = [
        Product("W-2", on_hand=40, reorder_level=10, reorder_qty=50),
        Product("W-1", on_hand=3, reorder_level=10, reorder_qty=50),
    ]
    assert purchase_order(products) == [("W-1", 57)]


def test_quantity_tops_up_stock():
    assert purchase_order([Product("X", on_hand=0, reorder_level=4, reorder_qty=6)]) == [("X", 10)]


def test_nothing_to_order():
    assert purchase_order([]) == []
