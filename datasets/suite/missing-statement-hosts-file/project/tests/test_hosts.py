import pytest

from netfiles.hosts import lookup, names_for, parse_hosts

HOSTS = """127.0.0.1 localhost
::1 localhost ip6-localhost
# office
192.168.1.10 printer printer.office   # the big one
"""


def test_parse():
    assert parse_hosts(HOSTS) == [
        ("127.0.0.1", ["localhost"]),
        ("::1", ["localhost", "ip6-localhost"]),
        ("192.168.1.10", ["printer", "printer.office"]),
    ]


def test_lookup_two_addresses():
    assert lookup(HOSTS, "LOCALHOST") == ["127.0.0.1", "::1"]


def test_names_for():
    assert names_for(HOSTS, "192.168.1.10") == ["printer", "printer.office"]


def test_address_without_names():
    with pytest.raises(ValueError):
        parse_hosts("10.0.0.1\n")


def test_indented_comment():
    assert parse_hosts("10.0.0.2 nas\n    # backup box\n") == [("10.0.0.2", ["nas"])]
