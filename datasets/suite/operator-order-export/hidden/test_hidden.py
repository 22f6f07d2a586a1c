from orders.export import billable, revenue, to_csv

ORDERS = [
    {"id": 3, "customer": "ann", "status": "paid", "amount": 20.0},
    {"id": 1, "customer": "bob", "status": "cancelled", "amount": 99.0},
    {"id": 2, "customer": "cy", "status": "shipped", "amount": 5.5, "note": "gift"},
]


def test_csv():
    assert to_csv(ORDERS) == "id,customer,status,amount\n2,cy,shipped,5.5\n3,ann,paid,20.0\n"


def test_billable_keeps_order():
    assert [o["id"] for o in billable(ORDERS)] == [3, 2]


def test_no_cancelled():
    assert len(billable(ORDERS[:1] + ORDERS[2:])) == 2


def test_pending_is_billable():
    assert revenue([{"id": 9, "customer": "d", "status": "pending", "amount": 1.25}]) == 1.25


def test_only_cancelled_revenue():
    assert revenue(ORDERS[1:2]) == 0
