from datetime import date

import pytest

from cleaning.dates import normalise_column, parse_date


def test_day_month_name():
    assert parse_date("7 Mar 2023") == date(2023, 3, 7)


def test_invalid_day_raises():
    with pytest.raises(ValueError):
        parse_date("2023-02-30")


def test_empty_raises():
    with pytest.raises(ValueError):
        parse_date("   ")


def test_american_order_not_accepted():
    with pytest.raises(ValueError):
        parse_date("12/31/2023")


def test_normalise_column_with_bad_rows():
    assert normalise_column(["n/a", "31.12.1999", "", "2000-01-01"]) == (
        [None, "1999-12-31", None, "2000-01-01"], [0, 2])


def test_normalise_empty_column():
    assert normalise_column([]) == ([], [])
