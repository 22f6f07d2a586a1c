from reporting.table import column_widths, render


def test_wide_number():
    assert column_widths(["n"], [[1234567]]) == [7]


def test_float_and_bool_cells():
    assert column_widths(["x", "ok"], [[3.25, True], [1.0, False]]) == [4, 5]


def test_none_cell():
    assert column_widths(["v"], [[None]]) == [4]


def test_no_rows():
    assert column_widths(["alpha", "b"], []) == [5, 1]


def test_render_mixed():
    table = render(["id", "price"], [[7, 10.5], [1001, 3]])
    assert table.split("\n") == ["id   | price", "-----+------", "   7 |  10.5", "1001 |     3"]


def test_render_text_only():
    assert render(["k"], [["v"]]) == "k\n-\nv"
