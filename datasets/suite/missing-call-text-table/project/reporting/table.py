"""Plain-text tables for command-line reports."""


def column_widths(header, rows):
    """Width of each column: the longest header or cell text in it."""
    widths = [len(h) for h in header]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"row has {len(row)} cells, expected {len(header)}")
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    return widths


def format_cell(cell, width):
    """Numbers are right-aligned, everything else left-aligned."""
    text = str(cell)
    if isinstance(cell, (int, float)) and not isinstance(cell, bool):
        return text.rjust(width)
    return text.ljust(width)


def render(header, rows):
    """Render a table with a dashed rule under the header."""
    widths = column_widths(header, rows)
    lines = [" | ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines.append("-+-".join("-" * w for w in widths))
    for row in rows:
        lines.append(" | ".join(format_cell(c, w) for c, w in zip(row, widths)))
    return "\n".join(line.rstrip() for line in lines)
