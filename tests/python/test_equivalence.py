"""src/eval/equivalence.py: canonical return values and AST equality."""
import itertools
import json
import textwrap

import pytest
from embedded import load, run_deployed

eq = load("src/eval/equivalence.py")


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


class Slots:
    __slots__ = ("a",)


def test_canonical_values():
    canon = eq.canon
    assert canon(0.1 + 0.2) == "0.3" and canon(1e-20 / 3) == "3.33333333e-21" and canon(2.0) == "2"
    assert canon([1, "a", None, True, b"x"]) == "[1, 'a', None, True, b'x']"
    assert canon((1,)) == "(1,)" and canon(()) == "(,)"
    assert canon({"b": 1, "a": 2}) == canon({"a": 2, "b": 1}) == "{'a': 2, 'b': 1}"
    assert canon({3, 1, 2}) == "set{1, 2, 3}" and canon(frozenset("ba")) == "frozenset{'a', 'b'}"
    assert canon(x * x for x in range(3)) == "iter[0, 1, 4]"
    assert canon(range(2)) == canon(iter([0, 1])) == "iter[0, 1]"
    assert canon(Point(1, [2.5])) == "Point{'x': 1, 'y': [2.5]}"
    assert canon(Slots()) == "Slots" and canon(len) == "builtin_function_or_method"


def test_canonical_values_are_bounded():
    nested = []
    for _ in range(60):
        nested = [nested]
    assert canon_depth(eq.canon(nested)) == eq.MAX_DEPTH + 1
    endless = eq.canon(itertools.count())
    assert endless.startswith("iter[0, 1, 2, ") and endless.endswith(", 9999, ...]")


def canon_depth(text):
    return text.count("[") - (1 if text.endswith("...]") else 0)


def write(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return str(path)


def test_ast_equality_ignores_docstrings_and_bare_strings(tmp_path):
    a = write(tmp_path, "a.py", '''
        """Module doc."""
        def f(x):
            """Doc."""
            "a bare string"
            return x + 1
        class C:
            """Only a docstring."""
    ''')
    b = write(tmp_path, "b.py", '''
        def f(x):
            return x + 1  # a comment
        class C:
            pass
    ''')
    c = write(tmp_path, "c.py", '''
        def f(x):
            return x - 1
        class C:
            pass
    ''')
    d = write(tmp_path, "d.py", '''
        def f(x):
            return "x + 1"
        class C:
            pass
    ''')
    assert eq.normalized_ast(a) == eq.normalized_ast(b)
    assert eq.normalized_ast(a) != eq.normalized_ast(c)
    assert eq.normalized_ast(b) != eq.normalized_ast(d)  # a string that is a value counts


def test_the_command_line(tmp_path, capsys):
    same = write(tmp_path, "same.py", "x = 1\n")
    other = write(tmp_path, "other.py", "x = 2\n")
    assert eq.main(["ast", same, same]) == 0 and capsys.readouterr().out == "equal\n"
    assert eq.main(["ast", same, other]) == 0 and capsys.readouterr().out == "different\n"
    assert eq.main(["ast", same]) == 2
    assert "Usage:" in capsys.readouterr().err
    bad = write(tmp_path, "bad.py", "def f(:\n")
    with pytest.raises(SyntaxError):
        eq.main(["ast", same, bad])


def test_running_a_program_on_inputs(tmp_path):
    package = tmp_path / "progs"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "half.py").write_text(textwrap.dedent('''
        def half(n):
            print("noise")
            if n < 0:
                while True:
                    pass
            return {n / 2, n // 2}
    '''), encoding="utf-8")
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("[4]\n\n[\"s\"]\n[-1]\n[5]\n", encoding="utf-8")
    done = run_deployed("src/eval/equivalence.py", tmp_path,
                        ["run", str(tmp_path), "progs", "half", str(inputs), "0.2"])
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"i": 0, "r": "ok:set{2}"},  # 2.0 == 2: one element
        {"i": 1, "r": "exc:TypeError"},
        {"i": 2, "r": "timeout"},
        {"i": 3, "r": "ok:set{2, 2.5}"},
    ]
    done = run_deployed("src/eval/equivalence.py", tmp_path,
                        ["run", str(tmp_path), "progs", "missing", str(inputs), "0.2"])
    assert json.loads(done.stdout)["r"].startswith("import:ModuleNotFoundError: ")
