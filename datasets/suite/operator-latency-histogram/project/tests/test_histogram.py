import pytest

from metrics.histogram import bucket_index, histogram, labels


def test_bucket_index():
    assert bucket_index(25, 10) == 2


def test_negative():
    with pytest.raises(ValueError):
        bucket_index(-1, 10)


def test_labels():
    assert labels(50, 3) == ["0-49", "50-99", "100+"]


def test_histogram():
    assert histogram([5, 12, 19, 250, 31], width=10, buckets=4) == [1, 2, 0, 2]
