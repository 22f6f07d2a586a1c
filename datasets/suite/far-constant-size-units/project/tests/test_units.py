import pytest

from storage.units import human_size, over_quota, parse_size


def test_small_sizes_in_bytes():
    assert human_size(512) == "512 B"


def test_kibibytes():
    assert human_size(2560) == "2.5 KiB"


def test_parse_bare_bytes():
    assert parse_size("300") == 300


def test_parse_mebibytes():
    assert parse_size("2 MiB") == 2097152


def test_parse_rejects_unknown_unit():
    with pytest.raises(ValueError):
        parse_size("5 parsecs")


def test_over_quota_in_bytes():
    assert over_quota({"ann": 900, "bob": 1200, "cy": 1000}, "1000 B") == ["bob"]
