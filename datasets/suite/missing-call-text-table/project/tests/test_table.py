import pytest

from reporting.table import column_widths, format_cell, render


def test_widths_from_text_cells():
    assert column_widths(["name", "city"], [["Ann", "Amsterdam"], ["Bartholomew", "Rome"]]) == [11, 9]


def test_ragged_row_rejected():
    with pytest.raises(ValueError):
        column_widths(["a", "b"], [["1"]])


def test_format_cell_alignment():
    assert format_cell(42, 5) == "   42"
    assert format_cell("ab", 4) == "ab  "


def test_render_with_numbers():
    table = render(["item", "qty"], [["apple", 3], ["kiwi", 12]])
    assert table == "item  | qty\n------+----\napple |   3\nkiwi  |  12"
