import pytest

from timeparse.durations import format_duration, parse_duration, total_duration


@pytest.mark.parametrize("text,seconds", [
    ("1h30m", 5400), ("1h 1s", 3601), ("24h", 86400), ("0h5m", 300), ("1H", 3600),
    ("3m", 180), ("10s", 10),
])
def test_parse(text, seconds):
    assert parse_duration(text) == seconds


def test_roundtrip():
    assert parse_duration(format_duration(3725)) == 3725


def test_total_with_hours():
    assert total_duration(["1h", "45m", "15m"]) == "2h"


def test_trailing_garbage():
    with pytest.raises(ValueError):
        parse_duration("1h later")
