import pytest

from warehouse.stock import Stock


@pytest.fixture
def stock():
    """A warehouse with two SKUs in stock."""
    return Stock({"A-1": 5, "C-3": 2})
