"""Helpers for embedding source code in Markdown documents."""

FENCE = "```"


def clean_lines(text):
    """Split text into lines without trailing whitespace; drop trailing blank lines.

    Leading indentation is significant (it is code) and must be preserved.
    """
    lines = [line.strip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def dedent(lines):
    """Remove the indentation common to all non-blank lines."""
    widths = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    cut = min(widths, default=0)
    return [line[cut:] for line in lines]


def fence(code, lang=""):
    """Wrap code in a fenced block, normalising whitespace."""
    body = dedent(clean_lines(code))
    return "\n".join([FENCE + lang] + body + [FENCE]) + "\n"


def extract_blocks(markdown):
    """Return (lang, code) for every fenced block of a Markdown document."""
    blocks = []
    lang, current = None, None
    for line in markdown.split("\n"):
        if line.startswith(FENCE):
            if current is None:
                lang, current = line[len(FENCE):].strip(), []
            else:
                blocks.append((lang, "\n".join(current)))
                lang, current = None, None
        elif current is not None:
            current.append(line)
    return blocks
