from datetime import date

from tasks.deadlines import days_left, due_label, overdue, parse_date


def test_parse_date():
    assert parse_date("2024-03-15") == date(2024, 3, 15)


def test_due_today():
    assert due_label("2024-01-01", today=date(2024, 1, 1)) == "due today"


def test_days_left():
    assert days_left("2024-02-10", today=date(2024, 2, 1)) == 9


def test_overdue_sorted_by_deadline():
    tasks = [
        {"title": "taxes", "due": "2024-04-01"},
        {"title": "report", "due": "2024-02-01", "done": True},
        {"title": "dentist", "due": "2024-01-01"},
    ]
    assert overdue(tasks, today=date(2024, 5, 1)) == ["dentist", "taxes"]
