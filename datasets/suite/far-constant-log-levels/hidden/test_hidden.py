from logscan.levels import at_least, count_by_level, parse

LINES = [
    "2024-01-02 03:04:05,006 WARNING low memory",
    "2024-01-02 03:04:06,000 WARNING low memory again",
    "2024-01-02 03:04:07,000 CRITICAL out of memory",
    "2024-01-02 03:04:08,000 INFO restarting",
    "2024-01-02 03:04:09,000 WARN not a python level",
]


def test_parse_warning():
    assert parse(LINES[0])[1] == "WARNING"


def test_count_by_level():
    assert count_by_level(LINES) == {"WARNING": 2, "CRITICAL": 1, "INFO": 1}


def test_warnings_and_above():
    assert at_least(LINES, "WARNING") == [
        "WARNING: low memory", "WARNING: low memory again", "CRITICAL: out of memory"]


def test_info_and_above():
    assert len(at_least(LINES, "INFO")) == 4


def test_critical_only():
    assert at_least(LINES, "CRITICAL") == ["CRITICAL: out of memory"]
