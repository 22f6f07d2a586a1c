import pytest

from firewall.rules import parse_port, parse_ports


def test_port_one_is_valid():
    assert parse_port("1") == 1


def test_port_65535_is_valid():
    assert parse_port("65535") == 65535


def test_port_65536_invalid():
    with pytest.raises(ValueError):
        parse_port("65536")


def test_negative_invalid():
    with pytest.raises(ValueError):
        parse_port("-5")


def test_range_to_the_top():
    assert parse_ports("65533-65535") == [65533, 65534, 65535]


def test_range_from_one():
    assert parse_ports("1-3") == [1, 2, 3]


def test_reversed_range():
    with pytest.raises(ValueError):
        parse_ports("10-5")
