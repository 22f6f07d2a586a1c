"""Validation and normalisation of uploaded file names."""
import re

ALLOWED = frozenset({"png", "jpg", "jpeg", "gif", "pdf", "gz"})
UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def split_extension(name):
    """Split 'report.final.PDF' into ('report.final', 'pdf').

    Names without a dot and dot-files such as '.env' have no extension.
    """
    dot = name.find(".")
    if dot <= 0:
        return name, ""
    return name[:dot], name[dot + 1:].lower()


def is_allowed(name):
    """True if the file's extension is on the allow-list."""
    return split_extension(name)[1] in ALLOWED


def safe_name(name):
    """Replace runs of unsafe characters in the stem by '_' and lower-case the extension."""
    stem, ext = split_extension(name.strip())
    stem = UNSAFE.sub("_", stem).strip("_") or "file"
    return f"{stem}.{ext}" if ext else stem


def unique_names(names):
    """Make names unique by appending ' (2)', ' (3)'... before the extension."""
    seen = {}
    result = []
    for name in names:
        count = seen.get(name, 0) + 1
        seen[name] = count
        if count == 1:
            result.append(name)
        else:
            stem, ext = split_extension(name)
            result.append(f"{stem} ({count})" + (f".{ext}" if ext else ""))
    return result
