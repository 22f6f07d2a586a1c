"""Filter lines written by Python's logging module with the format
'%(asctime)s %(levelname)s %(message)s'."""
import re

SEVERITY = {"DEBUG": 10, "INFO": 20, "WARN": 30, "ERROR": 40, "CRITICAL": 50}
_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ([A-Z]+) (.*)$")


def parse(line):
    """Return (timestamp, level, message); ValueError for malformed lines."""
    m = _LINE.match(line.rstrip("\n"))
    if not m or m.group(2) not in SEVERITY:
        raise ValueError(f"not a log line: {line!r}")
    return m.groups()


def at_least(lines, min_level="WARNING"):
    """Messages whose level is at least min_level; unparsable lines are skipped."""
    threshold = SEVERITY[min_level]
    selected = []
    for line in lines:
        try:
            _, level, message = parse(line)
        except ValueError:
            continue
        if SEVERITY[level] >= threshold:
            selected.append(f"{level}: {message}")
    return selected


def count_by_level(lines):
    """Level -> number of lines, for parsable lines only."""
    counts = {}
    for line in lines:
        try:
            level = parse(line)[1]
        except ValueError:
            continue
        counts[level] = counts.get(level, 0) + 1
    return counts
