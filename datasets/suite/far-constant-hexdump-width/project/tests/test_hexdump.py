from binview.hexdump import find_offsets, format_line, hexdump, printable


def test_printable():
    assert printable(b"Hi\x00\n~") == "Hi..~"


def test_format_short_line():
    assert format_line(0, b"Hi!") == "00000000  48 69 21" + " " * 42 + "|Hi!|"


def test_short_input_is_one_line():
    assert hexdump(b"hello") == [format_line(0, b"hello")]


def test_line_count():
    assert len(hexdump(bytes(range(40)))) == 3


def test_find_offsets():
    assert find_offsets(b"abcabc", b"bc") == ["00000001", "00000004"]
