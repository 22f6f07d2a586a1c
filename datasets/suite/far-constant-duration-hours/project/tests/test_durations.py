import pytest

from timeparse.durations import format_duration, parse_duration, total_duration


@pytest.mark.parametrize("text,seconds", [("2m 5s", 125), ("45s", 45), ("10m", 600)])
def test_minutes_and_seconds(text, seconds):
    assert parse_duration(text) == seconds


def test_bare_number_is_seconds():
    assert parse_duration("90") == 90


def test_hours():
    assert parse_duration("2h") == 7200


def test_garbage_rejected():
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_format():
    assert format_duration(5400) == "1h30m"
    assert format_duration(0) == "0s"


def test_total_of_short_items():
    assert total_duration(["45s", "15s", "1m"]) == "2m"
