"""Simple drift detection for sensor readings (None marks a dropped sample)."""


def rolling_baseline(readings, window=5):
    """Mean of the last `window` valid readings, or None if there are none."""
    valid = [r for r in readings if r is not None][-window:]
    if not valid:
        return None
    return sum(valid) / len(valid)


def find_anomalies(readings, baseline, tolerance):
    """Indexes of readings that drift from the baseline by more than `tolerance`,
    in either direction. Dropped samples are skipped."""
    anomalies = []
    for i, value in enumerate(readings):
        if value is None:
            continue
        drift = value - baseline
        if drift > tolerance:
            anomalies.append(i)
    return anomalies


def summarize(readings, baseline, tolerance):
    """Counts of valid, dropped and anomalous samples."""
    dropped = sum(1 for r in readings if r is None)
    return {
        "valid": len(readings) - dropped,
        "dropped": dropped,
        "anomalies": len(find_anomalies(readings, baseline, tolerance)),
    }
