from datetime import date

from workdays.calendar import add_business_days, business_days_between, is_business_day


def test_weekday_is_business_day():
    assert is_business_day(date(2024, 3, 6))


def test_add_within_week():
    assert add_business_days(date(2024, 3, 4), 3) == date(2024, 3, 7)


def test_add_over_weekend():
    assert add_business_days(date(2024, 3, 7), 3) == date(2024, 3, 12)


def test_zero_days():
    assert add_business_days(date(2024, 3, 9), 0) == date(2024, 3, 9)
