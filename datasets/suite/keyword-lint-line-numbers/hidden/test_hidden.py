from stylecheck.lint import check_text, format_warnings


def test_line_numbers_of_several_warnings():
    source = "a = 1\n\tb = 2\nc = 3 \n"
    assert [(n, code) for n, _, code, _ in check_text(source)] == [(2, "W191"), (3, "W291")]


def test_last_line_without_newline():
    assert check_text("ok\nbad ")[0][:2] == (2, 4)


def test_long_line_number():
    source = "\n".join(["x"] * 4 + ["y" * 100])
    assert check_text(source)[0][0] == 5


def test_format():
    lines = format_warnings("app.py", check_text("def f():\n    return 1   \n"))
    assert lines == ["app.py:2:13: W291 trailing whitespace"]


def test_blank_lines_counted():
    assert check_text("\n\n\nz \n")[0][0] == 4
