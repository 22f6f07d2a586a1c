"""Free/busy computation for scheduling a meeting across several calendars.
Times are minutes since midnight; intervals are (start, end) with start < end."""


def merge_busy(intervals):
    """Merge overlapping or touching busy intervals from any number of calendars.
    The input may come in any order; the result is sorted."""
    intervals = list(intervals)
    merged = []
    for start, end in intervals:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def free_windows(calendars, day_start=540, day_end=1020, min_length=30):
    """Windows of at least min_length minutes in which everybody is free."""
    busy = merge_busy(iv for calendar in calendars for iv in calendar)
    windows, cursor = [], day_start
    for start, end in busy:
        if start - cursor >= min_length:
            windows.append((cursor, min(start, day_end)))
        cursor = max(cursor, end)
    if day_end - cursor >= min_length:
        windows.append((cursor, day_end))
    return [(s, e) for s, e in windows if e - s >= min_length]


def fmt(minutes):
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
