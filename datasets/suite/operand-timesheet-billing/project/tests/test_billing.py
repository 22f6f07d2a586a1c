import pytest

from timesheet.billing import hours_between, invoice_lines, invoice_total


def test_hours_between():
    assert hours_between("09:15", "12:45") == 3.5


def test_end_before_start():
    with pytest.raises(ValueError):
        hours_between("10:00", "09:00")


def test_hours_are_grouped_per_project():
    entries = [("web", "09:00", "11:00"), ("api", "11:00", "12:00"), ("web", "13:00", "13:30")]
    assert [(p, h) for p, h, _ in invoice_lines(entries, {})] == [("api", 1.0), ("web", 2.5)]


def test_cost_uses_project_rate():
    entries = [("audit", "09:00", "11:00")]
    assert invoice_lines(entries, {"audit": 150.0}) == [("audit", 2.0, 300.0)]
