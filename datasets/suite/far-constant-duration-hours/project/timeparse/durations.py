"""Human-friendly durations such as '1h30m', '45s' or '2h 5m'."""
import re

_PART = re.compile(r"(\d+)\s*([hms])")
UNIT_SECONDS = {"h": 60, "m": 60, "s": 1}


def parse_duration(text):
    """Convert '1h30m', '90s', '2h 5m' or a bare number of seconds to seconds."""
    text = text.strip().lower()
    if text.isdigit():
        return int(text)
    pos, total = 0, 0
    for match in _PART.finditer(text):
        if text[pos:match.start()].strip():
            raise ValueError(f"bad duration {text!r}")
        total += int(match.group(1)) * UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos == 0 or text[pos:].strip():
        raise ValueError(f"bad duration {text!r}")
    return total


def format_duration(seconds):
    """Inverse of parse_duration: 5400 -> '1h30m', 61 -> '1m1s', 0 -> '0s'."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if v]
    return "".join(parts) or "0s"


def total_duration(items):
    """Sum a list of duration strings and format the result."""
    return format_duration(sum(parse_duration(item) for item in items))
