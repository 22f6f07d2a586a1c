from binview.hexdump import hexdump


def test_second_line_offset():
    lines = hexdump(bytes(20))
    assert [line[:8] for line in lines] == ["00000000", "00000010"]


def test_full_line_layout():
    line = hexdump(b"0123456789abcdef")[0]
    assert line == ("00000000  30 31 32 33 34 35 36 37  38 39 61 62 63 64 65 66"
                    "  |0123456789abcdef|")


def test_exactly_sixteen_bytes_is_one_line():
    assert len(hexdump(bytes(16))) == 1


def test_seventeen_bytes_is_two_lines():
    lines = hexdump(b"A" * 17)
    assert len(lines) == 2 and lines[1].endswith("|A|")


def test_empty():
    assert hexdump(b"") == []


def test_ascii_column_covers_whole_line():
    assert hexdump(b"The quick brown fox")[0].endswith("|The quick brown |")
