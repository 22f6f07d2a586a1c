import pytest

from minihttp.headers import content_length, parse_header_line, parse_headers


def test_simple_header():
    assert parse_header_line("Content-Type: text/html") == ("content-type", "text/html")


def test_missing_colon():
    with pytest.raises(ValueError):
        parse_header_line("garbage")


def test_repeated_headers_are_joined():
    block = "Accept: text/html\r\nAccept: application/json\r\n"
    assert parse_headers(block) == {"accept": "text/html, application/json"}


def test_host_with_port():
    assert parse_headers("Host: example.org:8080\r\n") == {"host": "example.org:8080"}


def test_content_length():
    assert content_length(parse_headers("Content-Length: 42\r\n")) == 42
