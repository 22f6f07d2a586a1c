from metrics.histogram import bucket_index, histogram, render


def test_bucket_boundary():
    assert bucket_index(20, 10) == 2


def test_fractional_latency():
    assert bucket_index(19.99, 10) == 1


def test_width_not_dividing():
    assert bucket_index(8, 3) == 2


def test_tiny_fractions_fall_in_first_bucket():
    assert histogram([0.2, 0.9, 1.0], width=1, buckets=2) == [2, 1]


def test_render():
    assert render([1, 2, 3, 15], width=10, buckets=2) == ["      0-9 ###", "      10+ #"]
