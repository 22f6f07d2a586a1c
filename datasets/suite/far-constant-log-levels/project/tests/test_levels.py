import pytest

from logscan.levels import at_least, count_by_level, parse

LOG = [
    "2024-05-01 10:00:00,001 INFO service started",
    "2024-05-01 10:00:05,120 WARNING disk 91% full",
    "2024-05-01 10:01:00,000 ERROR upload failed: timeout",
    "    continuation of a traceback",
    "2024-05-01 10:02:00,000 DEBUG cache hit ratio 0.93",
]


def test_parse_info():
    assert parse(LOG[0]) == ("2024-05-01 10:00:00,001", "INFO", "service started")


def test_parse_rejects_garbage():
    with pytest.raises(ValueError):
        parse(LOG[3])


def test_errors_only():
    assert at_least(LOG, "ERROR") == ["ERROR: upload failed: timeout"]


def test_default_threshold_is_warning():
    assert at_least(LOG) == ["WARNING: disk 91% full", "ERROR: upload failed: timeout"]
