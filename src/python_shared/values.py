# deepdebug's shared value reprs: the Rust side prepends this file (concat! with include_str!)
# to the embedded scripts that show a program's values: src/pytest/plugin.py,
# src/debugger/tracer.py and src/debugger/dap/script.py. They run on the user's Python (3.8+),
# each deployed as one file, so they share this prelude instead of importing a module.
# ruff.toml lists the names defined here as builtins for those files' sake.
import re as _re

_DEEPDEBUG_ADDRESS = _re.compile(r" at 0x[0-9a-fA-F]+")


def unrepresentable(value, exc=None):
    """What stands for a value whose repr failed (`exc`: what it raised, None when it gave
    no string)."""
    if exc is None:
        return "<unrepresentable %s>" % type(value).__name__
    return "<unrepresentable %s: %s>" % (type(value).__name__, type(exc).__name__)


def plain_repr(value, limit=None):
    """repr(value) without memory addresses (` at 0x7f...`: they differ from run to run),
    `clipped` to `limit` when one is given; `unrepresentable` (never clipped) when the value's
    own __repr__ fails (a user's __repr__ may do anything)."""
    try:
        text = repr(value)
    except BaseException as exc:  # noqa: BLE001 - a broken __repr__ must not break the caller
        return unrepresentable(value, exc)
    if not isinstance(text, str):
        return unrepresentable(value)
    text = _DEEPDEBUG_ADDRESS.sub("", text)
    return text if limit is None else clipped(text, limit)


def clipped(text, limit):
    """`text` cut to `limit` characters, marked with "..." when it was cut."""
    return text if len(text) <= limit else text[:limit] + "..."
