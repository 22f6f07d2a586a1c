from datetime import date

import pytest

from tasks.deadlines import days_left, due_label, overdue, parse_date


@pytest.mark.parametrize("text,expected", [
    ("2023-12-31", date(2023, 12, 31)),
    ("2024-02-29", date(2024, 2, 29)),
    ("2024-10-02", date(2024, 10, 2)),
    (" 2025-01-07 ", date(2025, 1, 7)),
])
def test_parse(text, expected):
    assert parse_date(text) == expected


def test_invalid_date_rejected():
    with pytest.raises(ValueError):
        parse_date("2024-02-30")


def test_label_overdue():
    assert due_label("2024-03-04", today=date(2024, 3, 6)) == "2d overdue"


def test_days_left_across_month():
    assert days_left("2024-05-02", today=date(2024, 4, 30)) == 2


def test_overdue_not_yet():
    assert overdue([{"title": "x", "due": "2024-06-03"}], today=date(2024, 6, 2)) == []
