import pytest

from firewall.rules import parse_port, parse_ports, parse_rule


def test_ssh():
    assert parse_rule("tcp/22") == ("tcp", [22])


def test_list_and_range():
    assert parse_ports("443, 80,8000-8002") == [80, 443, 8000, 8001, 8002]


def test_port_zero_invalid():
    with pytest.raises(ValueError):
        parse_port("0")


def test_highest_port_is_valid():
    assert parse_rule("udp/65535") == ("udp", [65535])


def test_unknown_protocol():
    with pytest.raises(ValueError):
        parse_rule("icmp/8")
