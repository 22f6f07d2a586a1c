"""src/python_shared/values.py: the value reprs prepended to plugin.py, tracer.py and script.py."""
import ast
import pathlib

import pytest
from embedded import ROOT, SHARED, Broken, Stopping, embeddings, load


def _prelude():
    namespace = {}
    exec(compile(SHARED.read_text(encoding="utf-8"), str(SHARED), "exec"), namespace)
    return namespace


V = _prelude()


class Text(str):
    pass


class ReprsAsSubclass:
    def __repr__(self):
        return Text("subclass <thing at 0xABC>")


class Plain:
    pass


def test_addresses_are_stripped():
    assert repr(Plain()).startswith("<%s.Plain object at 0x" % __name__)
    assert V["plain_repr"](Plain()) == "<%s.Plain object>" % __name__
    assert V["plain_repr"](test_addresses_are_stripped) == "<function test_addresses_are_stripped>"
    assert V["plain_repr"]([Plain(), 1]) == "[<%s.Plain object>, 1]" % __name__
    assert V["plain_repr"](ReprsAsSubclass()) == "subclass <thing>"
    # Only " at 0x" and hex digits: other text stays.
    assert V["plain_repr"]("at 0x1f") == "'at 0x1f'"
    assert V["plain_repr"](" at 0xZZ") == "' at 0xZZ'"


def test_plain_values_keep_their_repr():
    for value in (1, -2.5, "it's", b"\x00", None, (1,), {"a": [1, {2}]}, frozenset()):
        assert V["plain_repr"](value) == repr(value)


def test_a_failing_repr_is_unrepresentable_not_an_error():
    assert V["plain_repr"](Broken()) == "<unrepresentable Broken: RuntimeError>"
    assert V["plain_repr"](Stopping()) == "<unrepresentable Stopping: Stop>"
    assert V["plain_repr"]([Broken()]) == "<unrepresentable list: RuntimeError>"
    assert V["unrepresentable"](Broken()) == "<unrepresentable Broken>"
    assert V["unrepresentable"](3, ValueError()) == "<unrepresentable int: ValueError>"


def test_clipping():
    assert V["clipped"]("abcdef", 6) == "abcdef"
    assert V["clipped"]("abcdefg", 6) == "abcdef..."
    assert V["clipped"]("", 0) == ""
    assert V["plain_repr"]("x" * 10, 5) == "'xxxx..."
    assert V["plain_repr"]("x" * 3, 5) == "'xxx'"
    # The marker of a failed repr is never cut.
    assert V["plain_repr"](Broken(), 5) == "<unrepresentable Broken: RuntimeError>"


def _names_used(path):
    tree = ast.parse(pathlib.Path(path).read_text(encoding="utf-8"))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def test_the_scripts_that_use_the_prelude_are_embedded_with_it():
    shared = {n for n in V if not n.startswith("_")}
    users = set()
    for script, parts in embeddings().items():
        if script == SHARED:
            continue
        uses = _names_used(script) & shared
        if uses:
            users.add(script.relative_to(ROOT).as_posix())
            assert parts == [SHARED, script], "%s uses %s but is embedded without values.py" % (script, uses)
        else:
            assert parts == [script], "%s is embedded with a prelude it does not use" % script
    assert users == {"src/pytest/plugin.py", "src/debugger/tracer.py", "src/debugger/dap/script.py"}


def test_ruff_knows_the_prelude_names():
    config = (ROOT / "ruff.toml").read_text(encoding="utf-8")
    line = next(line for line in config.splitlines() if line.startswith("builtins"))
    assert sorted(ast.literal_eval(line.split("=", 1)[1].strip())) == sorted(n for n in V if not n.startswith("_"))


@pytest.mark.parametrize("script", ["src/pytest/plugin.py", "src/debugger/tracer.py", "src/debugger/dap/script.py"])
def test_the_deployed_script_defines_the_prelude_names(script):
    module = load(script)
    for name in ("plain_repr", "unrepresentable", "clipped"):
        assert module.__dict__[name].__code__.co_filename == str(SHARED)
