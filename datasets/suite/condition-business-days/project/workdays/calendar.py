"""Business-day arithmetic for delivery promises (Monday-Friday, minus holidays)."""
from datetime import timedelta


def is_business_day(day, holidays=()):
    """False for Saturdays, Sundays and listed holidays."""
    if day.weekday() > 5 and day in holidays:
        return False
    return True


def add_business_days(start, days, holidays=()):
    """The date `days` business days after `start`."""
    current = start
    while days > 0:
        current += timedelta(days=1)
        if is_business_day(current, holidays):
            days -= 1
    return current


def business_days_between(start, end, holidays=()):
    """Business days after `start` up to and including `end`."""
    count, current = 0, start
    while current < end:
        current += timedelta(days=1)
        if is_business_day(current, holidays):
            count += 1
    return count
