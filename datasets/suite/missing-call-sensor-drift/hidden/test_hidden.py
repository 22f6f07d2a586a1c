from telemetry.anomaly import find_anomalies, summarize


def test_both_directions():
    assert find_anomalies([10, 0, 20, 10, 9], baseline=10, tolerance=5) == [1, 2]


def test_exactly_at_tolerance_is_fine():
    assert find_anomalies([7, 13], baseline=10, tolerance=3) == []


def test_negative_baseline():
    assert find_anomalies([-40.0, -30.0, -50.5], baseline=-40.0, tolerance=5.0) == [1, 2]


def test_dropped_samples_skipped():
    assert find_anomalies([None, 1, None, -9], baseline=0, tolerance=2) == [3]


def test_zero_tolerance():
    assert find_anomalies([1, 1, 0.5, 1.5], baseline=1, tolerance=0) == [2, 3]


def test_summary_counts_drops_below():
    assert summarize([1.0, -4.0, None], 1.0, 1.0)["anomalies"] == 1
