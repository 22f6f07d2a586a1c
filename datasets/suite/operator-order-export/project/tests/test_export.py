from orders.export import billable, revenue, to_csv


def test_empty_day():
    assert revenue([]) == 0


def test_revenue_excludes_cancelled(orders):
    assert revenue(orders) == 25.5


def test_csv_header_only_for_empty_day():
    assert to_csv([]) == "id,customer,status,amount\n"


def test_all_cancelled(orders):
    assert billable([orders[1]]) == []
