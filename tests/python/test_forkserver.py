"""src/pytest/forkserver.py: the hot swap's plan, the batch's state fingerprint and the child
protocol's helpers, directly (the server's process set-up only runs as a script)."""
import __future__
import functools
import importlib.util
import marshal
import os
import signal
import sys
import textwrap
import time
import types

import pytest
from embedded import load

PROJECT = textwrap.dedent('''\
    import functools


    def helper(x):
        return x + 1


    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*a):
            return fn(*a)
        return wrapper


    def opaque(fn):
        def wrapper(*a):
            return fn(*a)
        return wrapper


    @deco
    def decorated(x):
        return x * 2


    @opaque
    def hidden(x):
        return x * 3


    class Box:
        def __init__(self):
            self._v = 0

        @property
        def v(self):
            return self._v

        @v.setter
        def v(self, value):
            self._v = value

        @classmethod
        def make(cls):
            return cls()

        @staticmethod
        def twice(x):
            return 2 * x

        def __hidden(self):
            return "hidden"

        def reveal(self):
            return self.__hidden()
''')


def line_of(text, source=PROJECT):
    return source.splitlines().index(text) + 1


@pytest.fixture
def fs(monkeypatch):
    monkeypatch.setitem(sys.modules, "deepdebug_plugin", load("src/pytest/plugin.py", "deepdebug_plugin"))
    return load("src/pytest/forkserver.py")


@pytest.fixture
def project(fs, tmp_path, monkeypatch):
    """tmp_path/project/proj.py imported, and the server's map of project modules holding it."""
    root = tmp_path / "project"
    root.mkdir()
    path = root / "proj.py"
    path.write_text(PROJECT, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("proj", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(fs, "_ROOT", os.path.realpath(str(root)) + os.sep)
    monkeypatch.setattr(fs, "_BY_FILE", {os.path.realpath(str(path)): module})
    return module, path


def test_importing_changes_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, "deepdebug_plugin", load("src/pytest/plugin.py", "deepdebug_plugin"))
    stdout, stderr, path, fd1 = sys.stdout, sys.stderr, list(sys.path), os.fstat(1)
    fs = load("src/pytest/forkserver.py")
    assert (fs._PROTO, fs._REQUESTS) == (None, None)
    assert (sys.stdout, sys.stderr, sys.path) == (stdout, stderr, path)
    assert (os.fstat(1).st_ino, os.fstat(1).st_dev) == (fd1.st_ino, fd1.st_dev)


def test_future_flags_cover_every_feature(fs):
    for name in ("annotations", "division", "generator_stop"):
        assert fs._FUTURE_FLAGS & getattr(__future__, name).compiler_flag


def test_mangled_names(fs):
    class _Under:
        pass

    assert fs.mangled(_Under, "__x") == "_Under__x"
    assert fs.mangled(type("___", (), {}), "__x") == "__x"
    assert fs.mangled(_Under, "__init__") == "__init__" and fs.mangled(_Under, "_x") == "_x"
    assert fs.mangled(types.ModuleType("m"), "__x") == "__x"


def test_find_code_by_path_and_line(fs):
    source = textwrap.dedent("""\
        class C:
            def m(self):
                pass

            def m(self):
                return 1

        def f():
            def g():
                pass
    """)
    code = compile(source, "x.py", "exec")
    assert fs.find_code(code, ["C", "m"], 5).co_firstlineno == 5
    assert fs.find_code(code, ["C", "m"], 99) is None  # two candidates, neither at that line
    assert fs.find_code(code, ["f", "g"], 0).co_firstlineno == 9  # the only one
    assert fs.find_code(code, ["f", "h"], 9) is None


def test_live_functions_see_through_descriptors(fs, project):
    module, _ = project

    def names(path):
        return sorted(f.__code__.co_name for f in fs.live_functions(module, path))

    assert names(["helper"]) == ["helper"]
    assert names(["decorated"]) == ["decorated", "wrapper"]
    assert names(["hidden"]) == ["wrapper"]
    assert names(["Box", "v"]) == ["v", "v"]
    assert names(["Box", "make"]) == ["make"] and names(["Box", "twice"]) == ["twice"]
    assert names(["Box", "__hidden"]) == ["__hidden"]
    assert names(["Box", "missing"]) == [] and names(["nothing", "here"]) == []


def test_a_swap_from_the_patched_file(fs, project):
    module, path = project
    path.write_text(PROJECT.replace("return x + 1", "return x + 100"), encoding="utf-8")
    plan = fs.swap_plan({"file": "proj.py", "functions": [["helper", line_of("def helper(x):")]], "source": None})
    assert [(f.__name__, code.co_name) for f, code in plan] == [("helper", "helper")]
    for function, code in plan:
        function.__code__ = code
    assert module.helper(1) == 101


def test_a_swap_from_the_patched_statements(fs, project):
    module, _ = project
    # The module-level statements that hold the patched functions, from their first line on;
    # a property's setter is told from its getter by its line (its decorator's).
    start, setter = line_of("@deco"), line_of("    @v.setter")
    lines = PROJECT.splitlines(True)
    patched = "".join(lines[start - 1:]).replace("value\n", "value * 10\n").replace("x * 2", "x * 20")
    swap = {"file": "proj.py", "functions": [["Box.v", setter], ["decorated", start]], "source": [start, patched]}
    plan = fs.swap_plan(swap)
    assert [(code.co_name, code.co_firstlineno) for _, code in plan] == [("v", setter), ("decorated", start)]
    for function, code in plan:
        function.__code__ = code
    box = module.Box()
    box.v = 2
    assert (box.v, module.decorated(1)) == (20, 20)


@pytest.mark.parametrize("functions, source, why", [
    (["missing"], "def helper(x):\n    return x\n", "not-found"),
    (["helper", "fresh"], "def helper(x):\n    return x\n\ndef fresh():\n    pass\n", "not-live"),
    (["hidden"], "@opaque\ndef hidden(x):\n    return x\n", "decorator"),
    (["Box.reveal"], "class Box:\n    def reveal(self):\n        return super().__repr__()\n", "closure"),
])
def test_swaps_that_must_run_cold(fs, project, functions, source, why):
    lines = [source.splitlines().index(line) + 1 for line in source.splitlines() if line.lstrip().startswith("def ")]
    functions = [[name, line] for name, line in zip(functions, lines)]
    plan = fs.swap_plan({"file": "proj.py", "functions": functions, "source": [1, source]})
    assert plan == why and isinstance(plan, str)


def test_a_patch_that_does_not_compile_is_a_collection_error(fs, project):
    plan = fs.swap_plan({"file": "proj.py", "functions": [["helper", 5]], "source": [5, "def helper(x:\n"]})
    assert isinstance(plan, fs.Cold) and plan == "compile-error"
    assert plan.detail.startswith('File "%s", line 5' % project[1]) and "SyntaxError" in plan.detail
    assert fs.Cold("closure").detail is None


def test_a_module_not_imported_yet_needs_no_swap(fs, project):
    assert fs.swap_plan({"file": "other.py", "functions": [["f", 1]], "source": None}) == []


def test_the_future_flags_of_the_module_are_kept(fs, tmp_path, monkeypatch):
    path = tmp_path / "fut.py"
    path.write_text("from __future__ import annotations\n\n\ndef f(x: Undefined) -> int:\n    return x\n")
    spec = importlib.util.spec_from_file_location("fut", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    code = fs.patched_code({"source": [4, "def f(x: Undefined) -> str:\n    return x\n"]}, module, str(path),
                           [module.f])
    namespace = {}
    exec(code, namespace)  # the annotations are not evaluated: no NameError
    assert namespace["f"].__annotations__ == {"x": "Undefined", "return": "str"}
    assert namespace["f"].__code__.co_firstlineno == 4


@pytest.fixture
def watched(fs, monkeypatch):
    """A project module `proj` with state of each kind the fingerprint watches."""
    monkeypatch.setattr(fs, "_PROJECT_NAMES", frozenset({"proj"}))
    module = types.ModuleType("proj")
    module.CACHE = {}
    module.ITEMS = [1, (2, [3])]
    module.BUFFER = bytearray(b"ab")
    module.Thing = type("Thing", (), {"__module__": "proj", "count": 0})
    module.thing = module.Thing()

    @functools.lru_cache(maxsize=None)
    def cached(x):
        return x

    def plain():
        pass

    module.cached, module.plain = cached, plain
    watch = fs.Watch()
    watch.add(module.__dict__, 0)
    watch.seen = None
    return module, watch


def test_the_fingerprint_sees_state_a_test_leaves_and_the_snapshot_restores_it(fs, watched):
    module, watch = watched
    base = watch.fingerprint()
    snapshot = fs.Snapshot(watch)
    assert watch.fingerprint() == base
    changes = [
        lambda: module.CACHE.update(k=1),
        lambda: module.ITEMS[1][1].append(4),  # a list inside a tuple
        lambda: module.BUFFER.extend(b"c"),
        lambda: setattr(module.Thing, "count", 5),
        lambda: setattr(module.thing, "seen", True),
        lambda: module.cached(1),
        lambda: setattr(module.plain, "attribute", 1),
        lambda: setattr(module, "CACHE", {}),  # rebound
    ]
    for change in changes:
        change()
        assert watch.fingerprint() != base
        snapshot.restore(watch)
        assert watch.fingerprint() == base
    assert (module.CACHE, module.ITEMS, module.BUFFER, module.Thing.count) == ({}, [1, (2, [3])], b"ab", 0)
    assert module.cached.cache_info().currsize == 0 and vars(module.plain) == {} and vars(module.thing) == {}


def test_state_too_large_to_fingerprint(fs):
    watch = fs.Watch()
    watch.budget = 5
    with pytest.raises(fs._TooBig):
        watch.add({i: i for i in range(10)}, 0)


def test_put_back_and_same_entries(fs):
    value = object()
    saved = {"a": 1, "b": value}
    mapping = {"b": value, "a": 1}
    assert fs.same_entries(mapping, saved)
    mapping["c"] = 3
    assert not fs.same_entries(mapping, saved)
    fs.put_back(mapping, saved, None)
    assert list(mapping.items()) == list(saved.items())
    owner = type("Owner", (), {"kept": 1})
    proxy = vars(owner)
    saved = dict(proxy)
    owner.kept, owner.added = 2, 3
    fs.put_back(proxy, saved, owner)
    assert owner.kept == 1 and not hasattr(owner, "added")


def test_requests_travel_marshalled_through_a_pipe(fs):
    request = {"id": 1, "nodeids": ["t.py::a"], "swap": None, "deadline": 2.5}
    r, w = os.pipe()
    assert fs.hand_over(w, request)
    assert marshal.loads(fs.read_all(r)) == request
    os.close(r)
    r, w = os.pipe()
    os.close(r)
    assert not fs.hand_over(w, request)  # the child is gone


def test_waiting_for_a_child_and_its_deadline(fs):
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own group, one word, then it hangs
        try:
            os.setpgid(0, 0)
            os.write(done_w, b"e")
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(done_w)
    try:
        assert fs.wait_word(pid, done_r, 10) == (b"e", None, False)
        word, status, timed_out = fs.wait_word(pid, done_r, 0.2)
        assert (word, timed_out) == (None, True)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    finally:
        os.close(done_r)
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
