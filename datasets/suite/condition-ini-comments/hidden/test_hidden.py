import pytest

from iniconf.reader import get, parse


def test_empty_text():
    assert parse("") == {"DEFAULT": {}}


def test_only_blank_lines():
    assert parse("\n   \n\t\n") == {"DEFAULT": {}}


def test_default_section_keys():
    assert parse("retries = 3\n\n[x]\n") == {"DEFAULT": {"retries": "3"}, "x": {}}


def test_indented_comment():
    assert parse("[s]\n   # note\nk=v") == {"DEFAULT": {}, "s": {"k": "v"}}


def test_value_with_hash_kept():
    assert parse("[s]\ncolor = #ff0000")["s"] == {"color": "#ff0000"}


def test_malformed_after_blank_line_reports_number():
    with pytest.raises(ValueError, match="line 3"):
        parse("[a]\n\noops")


def test_get_missing():
    assert get(parse("[a]\nx=1\n\n"), "a", "y", fallback="-") == "-"
