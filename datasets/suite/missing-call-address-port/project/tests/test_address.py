import pytest

from netconf.address import format_address, parse_address, parse_upstreams


def test_default_port():
    assert parse_address("example.org") == ("example.org", 80)


def test_default_port_for_scheme():
    assert parse_address("db.internal", scheme="postgres") == ("db.internal", 5432)


def test_explicit_port():
    assert parse_address("cache:6380") == ("cache", 6380)


def test_missing_host():
    with pytest.raises(ValueError):
        parse_address(":80")


def test_format_ipv6():
    assert format_address("::1", 8080) == "[::1]:8080"
