from stylecheck.lint import check_line, check_text, format_warnings


def test_clean_line():
    assert check_line("x = 1") == []


def test_trailing_whitespace_column():
    assert check_line("x = 1  ") == [(6, "W291", "trailing whitespace")]


def test_long_line():
    assert check_line("a" * 10, max_length=8)[0][:2] == (9, "E501")


def test_clean_file():
    assert check_text("import os\n\nprint(os.sep)\n") == []


def test_warning_on_first_line():
    assert check_text("x = 1 \ny = 2\n") == [(1, 6, "W291", "trailing whitespace")]
