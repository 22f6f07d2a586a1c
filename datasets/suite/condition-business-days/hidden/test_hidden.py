from datetime import date

from workdays.calendar import add_business_days, business_days_between, is_business_day

EASTER_MONDAY = date(2024, 4, 1)


def test_saturday():
    assert not is_business_day(date(2024, 3, 9))


def test_sunday():
    assert not is_business_day(date(2024, 3, 10))


def test_weekday_holiday():
    assert not is_business_day(EASTER_MONDAY, holidays={EASTER_MONDAY})


def test_weekend_holiday():
    assert not is_business_day(date(2024, 12, 28), holidays={date(2024, 12, 28)})


def test_add_over_holiday_weekend():
    assert add_business_days(date(2024, 3, 28), 2, {EASTER_MONDAY}) == date(2024, 4, 2)


def test_between_two_weeks():
    assert business_days_between(date(2024, 3, 1), date(2024, 3, 15)) == 10


def test_friday_to_monday():
    assert business_days_between(date(2024, 3, 8), date(2024, 3, 11)) == 1
