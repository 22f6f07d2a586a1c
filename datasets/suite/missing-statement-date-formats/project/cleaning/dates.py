"""Normalise the messy date strings found in spreadsheet exports."""
from datetime import datetime

FORMATS = ("%Y-%m-%d", "%d/%m/%Y", "%d.%m.%Y", "%d %b %Y", "%b %d, %Y")


def parse_date(text):
    """Parse a date in any of FORMATS; raises ValueError if none matches."""
    text = " ".join(text.split())
    for fmt in FORMATS:
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            pass


def normalise_column(values):
    """ISO strings for parseable values; returns (cleaned, bad_row_indexes).
    Unparseable values become None."""
    cleaned, bad = [], []
    for i, value in enumerate(values):
        try:
            cleaned.append(parse_date(value).isoformat())
        except ValueError:
            cleaned.append(None)
            bad.append(i)
    return cleaned, bad
