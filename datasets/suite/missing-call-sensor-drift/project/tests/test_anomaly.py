from telemetry.anomaly import find_anomalies, rolling_baseline, summarize


def test_rolling_baseline_uses_last_valid_readings():
    assert rolling_baseline([100, None, 1, 2, 3], window=3) == 2


def test_rolling_baseline_empty():
    assert rolling_baseline([None, None]) is None


def test_spike_detected():
    assert find_anomalies([20.1, 20.3, 27.0, 20.0], baseline=20.0, tolerance=2.0) == [2]


def test_drop_detected():
    assert find_anomalies([20.1, 14.5, 20.0, 20.2], baseline=20.0, tolerance=2.0) == [1]


def test_summary():
    readings = [5.0, None, 5.1, 9.0, None]
    assert summarize(readings, 5.0, 1.0) == {"valid": 3, "dropped": 2, "anomalies": 1}
