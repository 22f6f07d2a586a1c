"""A small reader for `.env` files."""

QUOTES = ("'", '"')


def parse_line(line):
    """Parse one line into (key, value), or None for blank and comment lines.

    Accepts 'KEY=value', 'KEY = value', 'export KEY=value' and quoted values.
    """
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    if line.startswith("export "):
        line = line[len("export "):]
    key, sep, value = line.partition("=")
    if not sep:
        raise ValueError(f"expected KEY=value, got {line!r}")
    key, value = key.strip(), value
    if not key.isidentifier():
        raise ValueError(f"invalid variable name {key!r}")
    if len(value) >= 2 and value[0] in QUOTES and value[-1] == value[0]:
        value = value[1:-1]
    return key, value


def load(text):
    """Parse a whole file into a dict; later assignments win."""
    env = {}
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            item = parse_line(line)
        except ValueError as exc:
            raise ValueError(f"line {number}: {exc}") from None
        if item:
            env[item[0]] = item[1]
    return env
