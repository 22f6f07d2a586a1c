"""Align 'label: value' pairs for terminal output of settings and forms."""


def longest_label(labels):
    """The longest label (the first one on ties); '' for no labels."""
    if not labels:
        return ""
    return max(labels)


def align(pairs, separator=": "):
    """Render (label, value) pairs with the values lined up in one column."""
    width = len(longest_label([label for label, _ in pairs]))
    return [f"{label.rjust(width)}{separator}{value}" for label, value in pairs]


def wrap_value(value, width):
    """Split a long value into chunks of at most `width` characters on spaces."""
    lines, current = [], ""
    for word in value.split():
        candidate = f"{current} {word}" if current else word
        if len(candidate) > width and current:
            lines.append(current)
            current = word
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines
