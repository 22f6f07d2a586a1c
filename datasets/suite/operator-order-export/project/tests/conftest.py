import pytest


@pytest.fixture
def orders():
    """One day's orders: paid, cancelled and shipped (with an extra field)."""
    return [
        {"id": 3, "customer": "ann", "status": "paid", "amount": 20.0},
        {"id": 1, "customer": "bob", "status": "cancelled", "amount": 99.0},
        {"id": 2, "customer": "cy", "status": "shipped", "amount": 5.5, "note": "gift"},
    ]
