"""Conversions between characters and Unicode code point notation ('U+00E9')."""
import re
import unicodedata

_NOTATION = re.compile(r"^U\+([0-9A-Fa-f]{4,6})$")


def to_notation(char):
    """'é' -> 'U+00E9'."""
    return f"U+{ord(char):04X}"


def from_notation(text):
    """'U+00E9' -> 'é'. Raises ValueError for malformed notation."""
    m = _NOTATION.match(text.strip())
    if not m:
        raise ValueError(f"not a code point: {text!r}")
    return chr(int(m.group(1)))


def expand(template):
    """Replace every '{U+XXXX}' placeholder in a template by its character."""
    return re.sub(r"\{(U\+[0-9A-Fa-f]{4,6})\}", lambda m: from_notation(m.group(1)), template)


def describe(char):
    """'é' -> 'U+00E9 LATIN SMALL LETTER E WITH ACUTE'."""
    return f"{to_notation(char)} {unicodedata.name(char, 'UNKNOWN')}"
