from datetime import date

import pytest

from hrtools.leave import days_in_request, overlaps, remaining_allowance, requested_days


def test_end_before_start():
    with pytest.raises(ValueError):
        requested_days(date(2024, 5, 3), date(2024, 5, 1))


def test_one_week():
    assert requested_days(date(2024, 7, 1), date(2024, 7, 7)) == 7


def test_overlap():
    a = (date(2024, 1, 1), date(2024, 1, 5))
    b = (date(2024, 1, 5), date(2024, 1, 9))
    assert overlaps(a, b)


def test_no_overlap():
    a = (date(2024, 1, 1), date(2024, 1, 4))
    b = (date(2024, 1, 5), date(2024, 1, 9))
    assert not overlaps(a, b)
