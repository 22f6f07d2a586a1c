from expenses.importer import largest, over_budget, read_rows, totals_by_category

EXPORT = """date,category,amount,note
2024-03-01,Food,12.50,lunch
2024-03-01,Travel,3.20,bus
2024-03-02,food,30.00,groceries
"""


def test_read_rows_count():
    assert len(read_rows(EXPORT)) == 3


def test_first_row():
    assert read_rows(EXPORT)[0] == {"date": "2024-03-01", "category": "food",
                                    "amount": 12.5, "note": "lunch"}


def test_totals_by_category():
    assert totals_by_category(EXPORT) == {"food": 42.5, "travel": 3.2}


def test_empty_export():
    assert read_rows("date,category,amount,note\n") == []


def test_over_budget():
    totals = {"food": 320.0, "travel": 80.0, "fun": 150.5}
    budgets = {"food": 300, "travel": 100, "fun": 100, "rent": 900}
    assert over_budget(totals, budgets) == [("fun", 50.5), ("food", 20.0)]


def test_nothing_over_budget():
    assert over_budget({"food": 10.0}, {"food": 10, "fun": 5}) == []
