"""A tiny style checker for text and source files.

Each warning is a tuple (line_number, column, code, message); line numbers
start at 1 and columns at 1, as editors show them.
"""

MAX_LENGTH = 79


def check_line(text, max_length=MAX_LENGTH):
    """Warnings for one line, as (column, code, message) tuples."""
    found = []
    if len(text) > max_length:
        found.append((max_length + 1, "E501", f"line too long ({len(text)} > {max_length})"))
    stripped = text.rstrip()
    if stripped != text:
        found.append((len(stripped) + 1, "W291", "trailing whitespace"))
    if "\t" in text[: len(text) - len(text.lstrip())]:
        found.append((1, "W191", "indentation contains tabs"))
    return found


def check_text(source, max_length=MAX_LENGTH):
    """All warnings for a file's contents, in line order."""
    warnings = []
    for number, line in enumerate(source.split("\n")):
        for column, code, message in check_line(line, max_length):
            warnings.append((number, column, code, message))
    return warnings


def format_warnings(path, warnings):
    """'path:line:col: CODE message' lines."""
    return [f"{path}:{n}:{c}: {code} {msg}" for n, c, code, msg in warnings]
