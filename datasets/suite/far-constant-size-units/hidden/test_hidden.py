from storage.units import human_size, over_quota, parse_size


def test_exactly_one_kib():
    assert human_size(1024) == "1 KiB"


def test_just_below_one_kib():
    assert human_size(1000) == "1000 B"


def test_gibibytes():
    assert human_size(3 * 1024 ** 3) == "3 GiB"


def test_mebibytes_fraction():
    assert human_size(1024 * 1024 * 5 // 2) == "2.5 MiB"


def test_parse_fractional_kib():
    assert parse_size("0.5 KiB") == 512


def test_parse_tib():
    assert parse_size("1TiB") == 1099511627776


def test_roundtrip():
    assert human_size(parse_size("7 MiB")) == "7 MiB"


def test_over_quota_kib():
    assert over_quota({"a": 1024, "b": 1025, "c": 1001}, "1 KiB") == ["b"]
