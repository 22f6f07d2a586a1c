import pytest

from envfile.dotenv import load, parse_line


def test_simple_assignment():
    assert parse_line("DEBUG=1") == ("DEBUG", "1")


def test_comment_and_blank():
    assert parse_line("  # settings") is None
    assert parse_line("   ") is None


def test_export_prefix():
    assert parse_line("export PATH_PREFIX=/opt") == ("PATH_PREFIX", "/opt")


def test_spaces_around_equals():
    assert parse_line("APP_NAME = billing") == ("APP_NAME", "billing")


def test_load_reports_line_number():
    with pytest.raises(ValueError, match="line 2"):
        load("A=1\nnot an assignment\n")
