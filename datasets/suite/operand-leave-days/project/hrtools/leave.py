"""Holiday (leave) requests. A request covers every day from `start` to `end`,
both included."""
from datetime import date, timedelta


def requested_days(start, end):
    """Number of calendar days covered by a leave request."""
    if end < start:
        raise ValueError("leave cannot end before it starts")
    return (end - start).days


def days_in_request(start, end):
    """The dates of the request, in order."""
    return [start + timedelta(days=i) for i in range(requested_days(start, end))]


def remaining_allowance(allowance, requests):
    """Allowance left after the given (start, end) requests; refuses overdrafts."""
    used = sum(requested_days(start, end) for start, end in requests)
    if used > allowance:
        raise ValueError(f"{used} days requested but only {allowance} available")
    return allowance - used


def overlaps(a, b):
    """True if two (start, end) requests share at least one day."""
    return a[0] <= b[1] and b[0] <= a[1]
