import pytest

from minihttp.headers import parse_header_line, parse_headers


def test_date_header_with_times():
    assert parse_header_line("Date: Tue, 15 Nov 1994 08:12:31 GMT") == (
        "date", "Tue, 15 Nov 1994 08:12:31 GMT")


def test_url_value():
    assert parse_header_line("Referer: https://example.org/a?b=c") == (
        "referer", "https://example.org/a?b=c")


def test_empty_value():
    assert parse_header_line("X-Empty:") == ("x-empty", "")


def test_value_starting_with_colon():
    assert parse_header_line("X-Odd: :colon") == ("x-odd", ":colon")


def test_space_in_name_rejected():
    with pytest.raises(ValueError):
        parse_header_line("Bad Name: x")


def test_continuation_line():
    block = "Link: <https://a.example/1>;\r\n rel=next\r\nServer: demo\r\n"
    assert parse_headers(block) == {"link": "<https://a.example/1>; rel=next", "server": "demo"}


def test_name_only_colon_rejected():
    with pytest.raises(ValueError):
        parse_header_line(": value")
