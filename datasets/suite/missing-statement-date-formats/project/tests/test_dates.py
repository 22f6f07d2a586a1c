from datetime import date

import pytest

from cleaning.dates import normalise_column, parse_date


def test_iso():
    assert parse_date("2024-02-29") == date(2024, 2, 29)


def test_european_slashes():
    assert parse_date("05/03/2024") == date(2024, 3, 5)


def test_month_name():
    assert parse_date("Mar  7, 2023") == date(2023, 3, 7)


def test_garbage_raises():
    with pytest.raises(ValueError):
        parse_date("next tuesday")


def test_normalise_column_clean():
    assert normalise_column(["1.2.2020", "2020-02-02"]) == (["2020-02-01", "2020-02-02"], [])
