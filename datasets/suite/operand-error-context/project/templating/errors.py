"""Friendly error messages for a template engine.

Parsers report positions as 1-based (line, column) pairs, like editors do.
"""


def source_line(source, lineno):
    """The text of line `lineno` (1-based) of the template source."""
    lines = source.split("\n")
    if not 1 <= lineno <= len(lines):
        raise IndexError(f"line {lineno} out of range")
    return lines[lineno]


def caret(column):
    """A '^' marker under 1-based `column`."""
    return " " * (column - 1) + "^"


def render_error(name, source, lineno, column, message):
    """Multi-line message pointing at the offending position."""
    return "\n".join([
        f"{name}:{lineno}:{column}: {message}",
        "    " + source_line(source, lineno),
        "    " + caret(column),
    ])


def position(source, offset):
    """Convert a 0-based character offset to a 1-based (line, column)."""
    before = source[:offset]
    lineno = before.count("\n") + 1
    column = offset - (before.rfind("\n") + 1) + 1
    return lineno, column
