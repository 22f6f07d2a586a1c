"""src/pytest/plugin.py (with its prelude): the report's helpers, directly."""
import hashlib
import importlib.util
import json
import os
import sys

import pytest
from embedded import Broken, Stopping, load

PROJECT_MODULE = '''def double(x):
    return x * 2


def fails(n):
    local = [n] * 3
    return local[n]
'''


class BadStr(Exception):
    def __str__(self):
        raise ValueError("no")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The plugin loaded for a project at tmp_path/project, which has m.py, with m.py's `double`
    watched; and m imported from there."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "m.py").write_text(PROJECT_MODULE, encoding="utf-8")
    monkeypatch.setenv("DEEPDEBUG_ROOT", str(root))
    monkeypatch.setenv("DEEPDEBUG_WATCH", " m.py:1, m.py:x,bad,,sub/n.py:12")
    for name in ("DEEPDEBUG_REPORT", "DEEPDEBUG_COVERAGE", "DEEPDEBUG_TEST_TIMEOUT", "DEEPDEBUG_TEST_CPU"):
        monkeypatch.delenv(name, raising=False)
    plugin = load("src/pytest/plugin.py")
    spec = importlib.util.spec_from_file_location("deepdebug_project_m", str(root / "m.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return plugin, root, m


def test_watch_spec(project):
    plugin, root, _ = project
    real = os.path.realpath(str(root))
    assert plugin._WATCHED == {
        (os.path.join(real, "m.py"), 1): "m.py:1",
        (os.path.join(real, "sub", "n.py"), 12): "sub/n.py:12",
    }
    assert plugin._watch_keys("") == {} and plugin._watch_keys(None) == {}


def test_exact_reprs(project):
    plugin = project[0]
    assert plugin._exact_repr((1, "a")) == "(1, 'a')"
    assert plugin._exact_repr(object()) is None  # an address differs between runs
    assert plugin._exact_repr(Broken()) is None
    assert plugin._exact_repr(Stopping()) is None
    assert plugin._result_text([1]) == "[1]"
    long = list(range(200))
    assert plugin._result_text(long) == "#" + hashlib.sha1(repr(long).encode()).hexdigest()


def test_call_keys_are_the_arguments_at_the_call(project):
    plugin = project[0]

    def f(a, b=2, *args, c, **kw):
        return sys._getframe()

    def g(a, *, c):
        return sys._getframe()

    assert plugin._call_key(g(1, c=[3])) == "(1, [3])"
    assert plugin._call_key(g(object(), c=0)) is None
    assert plugin._call_key(g("x" * 500, c=0)) is None  # too long to compare
    assert plugin._call_key(f(1, 5, 6, c=3, d=4)) == "(1, 5, 3)"  # *args and **kw are not keys


def test_watched_functions_record_their_return_types_and_values(project):
    plugin, _, m = project
    sys.setprofile(plugin._watch_profile)
    try:
        m.double(2)
        m.double("ab")
        m.double(2)
        with pytest.raises(IndexError):
            m.fails(5)  # not watched
    finally:
        sys.setprofile(None)
    assert plugin._returns == {"m.py:1": {"int", "str"}}
    assert plugin._values == {"m.py:1": {"(2,)": "4", "('ab',)": "'abab'"}}
    assert plugin._calls == {}


def test_safe_reprs_are_bounded(project):
    plugin = project[0]
    assert plugin._safe_repr(list(range(100))) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, ...]"
    assert plugin._safe_repr([[[[1]]]]) == "[[[[...]]]]"
    text = plugin._safe_repr("x" * 1000)
    assert len(text) == 120 and "..." in text and text.startswith("'xxx")
    assert plugin._safe_repr(Broken()).startswith("<Broken instance at 0x")  # reprlib's own fallback
    assert plugin._safe_repr(Stopping()) == "<unrepresentable Stopping: Stop>"
    assert plugin._message(ValueError("m" * 3000)) == "m" * 2000
    assert plugin._message(BadStr()) == "BadStr()"


def test_paths_below_the_root(project):
    plugin, root, m = project
    assert plugin._below_root(m.__file__) and plugin._relpath(m.__file__) == "m.py"
    assert not plugin._below_root(os.__file__) and plugin._relpath(os.__file__) == os.__file__
    assert not plugin._below_root("<string>") and not plugin._below_root("")
    for hidden in (".venv/lib/x.py", "lib/site-packages/x.py"):
        assert not plugin._below_root(str(root / hidden))
    assert plugin._below_root(str(root / "sub" / "new.py"))  # need not exist


def test_failure_frames_are_the_project_s_with_locals(project):
    plugin, _, m = project
    try:
        m.fails(7)
    except IndexError:
        tb = sys.exc_info()[2]
    frames = plugin._frames(tb)
    assert frames == [{
        "file": "m.py", "line": 7, "function": "fails", "in_project": True,
        "locals": {"n": "7", "local": "[7, 7, 7]"},
    }]
    assert plugin._line_of(tb) == tb.tb_lineno


def test_the_report_and_settings(project, tmp_path):
    plugin = project[0]
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    plugin.configure(report=str(first), timeout=5, cpu=1.5, coverage=True, frames=False)
    assert (plugin._TIMEOUT, plugin._CPU, plugin._COVERAGE, plugin._FRAMES) == (5.0, 1.5, True, False)
    rec = plugin._record("t.py::a")
    rec["outcome"] = "failed"
    assert plugin._record("t.py::a") is rec and plugin.outcome_of("t.py::a") == "failed"
    assert plugin.outcome_of("t.py::b") is None
    plugin._emit(rec)
    plugin.configure(report=str(second))  # a new report forgets the tests seen
    assert plugin.outcome_of("t.py::a") is None
    plugin._emit({"kind": "session-finish", "exitstatus": 0})
    assert [json.loads(line)["nodeid"] for line in first.read_text().splitlines()] == ["t.py::a"]
    assert json.loads(second.read_text()) == {"kind": "session-finish", "exitstatus": 0}
    os.close(plugin._out)
    plugin._out = None


def test_after_a_hang_later_tests_get_a_shorter_limit(project):
    plugin = project[0]
    plugin.configure(timeout=30)
    assert plugin._limit() == 30
    plugin._hangs, plugin._slowest_pass = 1, 0.01
    assert plugin._limit() == 0.5
    plugin._slowest_pass = 0.2
    assert plugin._limit() == 2.0
    plugin._slowest_pass = 10
    assert plugin._limit() == 30
    plugin.reset()
    assert (plugin._hangs, plugin._slowest_pass, plugin._limit()) == (0, 0.0, 30)
