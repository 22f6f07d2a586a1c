from timesheet.billing import invoice_lines, invoice_total


def test_default_rate():
    assert invoice_lines([("x", "08:00", "08:30")], {}) == [("x", 0.5, 50.0)]


def test_fractional_hours():
    assert invoice_lines([("y", "10:00", "10:20")], {"y": 90.0}) == [("y", 0.33, 30.0)]


def test_total_mixed_rates():
    entries = [("a", "09:00", "10:00"), ("b", "09:00", "12:00"), ("a", "14:00", "14:45")]
    assert invoice_total(entries, {"a": 80.0, "b": 120.0}) == 500.0


def test_rate_of_one():
    assert invoice_lines([("z", "09:00", "12:00")], {"z": 1.0}) == [("z", 3.0, 3.0)]


def test_zero_length_entry():
    assert invoice_lines([("q", "09:00", "09:00")], {"q": 99.0}) == [("q", 0.0, 0.0)]


def test_no_entries():
    assert invoice_total([], {}) == 0.0
