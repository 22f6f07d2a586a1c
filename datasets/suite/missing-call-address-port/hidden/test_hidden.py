import pytest

from netconf.address import format_address, parse_address, parse_upstreams


def test_ipv6_with_port():
    assert parse_address("[fe80::1]:9000") == ("fe80::1", 9000)


def test_ipv6_default_port():
    assert parse_address("[::1]", scheme="https") == ("::1", 443)


def test_port_zero_rejected():
    with pytest.raises(ValueError):
        parse_address("host:0")


def test_port_too_large_rejected():
    with pytest.raises(ValueError):
        parse_address("host:70000")


def test_non_numeric_port_rejected():
    with pytest.raises(ValueError):
        parse_address("host:http")


def test_upstreams():
    assert parse_upstreams("a:1, b:2,,c", scheme="ssh") == [("a", 1), ("b", 2), ("c", 22)]


def test_roundtrip():
    assert format_address(*parse_address(" web-1:8443 ")) == "web-1:8443"


def test_port_type_is_int():
    assert isinstance(parse_address("h:65535")[1], int)
