"""Canonical hex+ASCII dumps in the style of `hexdump -C` (16 bytes per line)."""

BYTES_PER_LINE = 8


def printable(chunk):
    """ASCII column: printable characters as-is, everything else as '.'."""
    return "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)


def format_line(offset, chunk):
    """One dump line: offset, two groups of up to eight hex bytes, ASCII column."""
    hexes = [f"{b:02x}" for b in chunk]
    left = " ".join(hexes[:8])
    right = " ".join(hexes[8:16])
    return f"{offset:08x}  {left:<23}  {right:<23}  |{printable(chunk)}|"


def hexdump(data):
    """All lines of the dump of `data` (bytes)."""
    return [format_line(offset, data[offset:offset + BYTES_PER_LINE])
            for offset in range(0, len(data), BYTES_PER_LINE)]


def find_offsets(data, needle):
    """Offsets (as dump-style hex strings) where `needle` occurs in `data`."""
    offsets, start = [], data.find(needle)
    while start != -1:
        offsets.append(f"{start:08x}")
        start = data.find(needle, start + 1)
    return offsets
