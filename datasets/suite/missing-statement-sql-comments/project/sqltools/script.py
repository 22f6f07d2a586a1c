"""Split SQL migration scripts into statements for a simple migration runner."""


def split_script(text):
    """Split a script into (statements, comments).

    Statements end with ';' at the end of a line and are returned without
    surrounding whitespace. Full-line '--' comments are collected separately
    (without the dashes) and are not part of any statement.
    """
    statements, comments, current = [], [], []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("--"):
            comments.append(stripped[2:].strip())
        current.append(line)
        if stripped.endswith(";"):
            statements.append("\n".join(current).strip())
            current = []
    rest = "\n".join(current).strip()
    if rest:
        statements.append(rest)
    return statements, comments


def migration_header(comments):
    """Parse 'key: value' comments (e.g. 'version: 12') into a dict."""
    header = {}
    for comment in comments:
        key, sep, value = comment.partition(":")
        if sep:
            header[key.strip().lower()] = value.strip()
    return header
