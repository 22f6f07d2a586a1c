from progress.report import percent, status_line


def test_one_third():
    assert percent(1, 3) == 33.3


def test_complete():
    assert percent(7, 7) == 100.0


def test_overshoot_clamped():
    assert percent(12, 10) == 100.0


def test_negative_clamped():
    assert percent(-3, 10) == 0.0


def test_small_fraction():
    assert percent(1, 1000) == 0.1


def test_two_thirds():
    assert percent(2, 3) == 66.7


def test_status_not_started():
    assert status_line("sync", 0, 5, 0.0) == "sync  [--------] 0.0%"
