import pytest

from templating.errors import position, render_error, source_line

SRC = "a\nbb\nccc"


def test_first_line():
    assert source_line(SRC, 1) == "a"


def test_last_line():
    assert source_line(SRC, 3) == "ccc"


def test_line_zero_rejected():
    with pytest.raises(IndexError):
        source_line(SRC, 0)


def test_past_end_rejected():
    with pytest.raises(IndexError):
        source_line(SRC, 4)


def test_single_line_source():
    assert source_line("only", 1) == "only"


def test_render_error_from_offset():
    line, col = position(SRC, SRC.index("cc"))
    assert render_error("t", SRC, line, col, "bad").split("\n")[1] == "    ccc"
