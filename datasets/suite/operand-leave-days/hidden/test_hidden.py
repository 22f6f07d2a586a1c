from datetime import date

import pytest

from hrtools.leave import days_in_request, remaining_allowance, requested_days


def test_single_day():
    assert requested_days(date(2024, 3, 8), date(2024, 3, 8)) == 1


def test_across_month_end():
    assert requested_days(date(2024, 2, 27), date(2024, 3, 2)) == 5


def test_days_in_request_includes_both_ends():
    assert days_in_request(date(2024, 4, 29), date(2024, 5, 1)) == [
        date(2024, 4, 29), date(2024, 4, 30), date(2024, 5, 1)]


def test_remaining_allowance():
    requests = [(date(2024, 6, 3), date(2024, 6, 7)), (date(2024, 8, 1), date(2024, 8, 1))]
    assert remaining_allowance(25, requests) == 19


def test_overdraft_refused():
    with pytest.raises(ValueError):
        remaining_allowance(2, [(date(2024, 1, 1), date(2024, 1, 3))])


def test_exact_allowance():
    assert remaining_allowance(3, [(date(2024, 1, 1), date(2024, 1, 3))]) == 0
