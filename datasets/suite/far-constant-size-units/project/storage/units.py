"""Binary size units (KiB, MiB, ...) for the quota dashboard."""
import re

UNIT = 1000
SUFFIXES = ["B", "KiB", "MiB", "GiB", "TiB"]
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]iB|B)?\s*$")


def human_size(n_bytes):
    """512 -> '512 B', 1536 -> '1.5 KiB' (one decimal, trailing '.0' dropped)."""
    size = float(n_bytes)
    for suffix in SUFFIXES:
        if size < UNIT or suffix == SUFFIXES[-1]:
            text = f"{size:.1f}".rstrip("0").rstrip(".")
            return f"{text} {suffix}"
        size /= UNIT


def parse_size(text):
    """'10 MiB' -> 10485760; a bare number means bytes."""
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"bad size {text!r}")
    number, suffix = float(m.group(1)), m.group(2) or "B"
    return int(number * UNIT ** SUFFIXES.index(suffix))


def over_quota(usage_by_user, quota_text):
    """Users whose usage in bytes exceeds the quota, sorted."""
    limit = parse_size(quota_text)
    return sorted(user for user, used in usage_by_user.items() if used > limit)
