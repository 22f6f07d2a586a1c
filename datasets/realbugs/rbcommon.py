"""Shared helpers of build.py and run.py: running a package's pytest suite and reading each
test's outcome, function extraction and normalization with `ast`. Python 3.11 stdlib only."""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# A pytest plugin (loaded with `-p rb_results`) that writes each test's outcome, the exception's
# type and where it was raised (innermost traceback frame) to $RB_RESULTS as JSON.
PLUGIN = r'''
import json, os
import pytest

_res = {}

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and call.excinfo is not None:
        rep.rb_exc = call.excinfo.typename
        try:
            rep.rb_where = str(call.excinfo.traceback[-1].path)
        except Exception:
            rep.rb_where = ""

def pytest_runtest_logreport(report):
    nid = report.nodeid
    if report.failed:
        if nid in _res and _res[nid]["outcome"] == "failed":
            return
        crash = getattr(report.longrepr, "reprcrash", None)
        msg = crash.message if crash is not None else str(report.longrepr)[-300:]
        _res[nid] = {"outcome": "failed", "when": report.when, "exc": getattr(report, "rb_exc", ""),
                     "where": getattr(report, "rb_where", ""), "message": msg[:300]}
    elif report.skipped:
        _res.setdefault(nid, {"outcome": "skipped"})
    elif report.when == "call":
        # unittest subtests report several times: the slowest report stands for the test
        _res.setdefault(nid, {"outcome": "passed", "duration": 0.0})
        _res[nid]["duration"] = max(_res[nid].get("duration", 0.0), round(report.duration, 3))

def pytest_collectreport(report):
    if report.failed:
        _res["<collect>" + report.nodeid] = {"outcome": "error", "message": str(report.longrepr)[-500:]}

def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("RB_RESULTS")
    if out:
        with open(out, "w") as f:
            json.dump(_res, f)
'''

# The root conftest.py block of a bug directory: deselects the bug's hidden tests and the tests
# that already fail on the clean release in this environment (REALBUGS_ALL=1 runs them all).
CONFTEST_MARK = "# --- realbugs ---"


def conftest_block(src: str, deselect: list[str]) -> str:
    lines = [CONFTEST_MARK]
    if src != ".":
        lines += [
            "# src layout: the tests import the package from this tree, as an editable install would.",
            "import os as _rb_os, sys as _rb_sys",
            f"_rb_sys.path.insert(0, _rb_os.path.join(_rb_os.path.dirname(_rb_os.path.abspath(__file__)), {src!r}))",
        ]
    lines += [
        "# Tests held out from `deepdebug fix` (hidden tests of the bug, tests broken in this environment);",
        "# REALBUGS_ALL=1 runs them too.",
        f"_REALBUGS_DESELECT = {json.dumps(sorted(deselect), indent=0)}",
        "",
        "",
        "def pytest_collection_modifyitems(config, items):",
        "    import os",
        "    if os.environ.get('REALBUGS_ALL') == '1':",
        "        return",
        "    drop = set(_REALBUGS_DESELECT)",
        "    gone = [i for i in items if i.nodeid in drop]",
        "    if gone:",
        "        config.hook.pytest_deselected(items=gone)",
        "        items[:] = [i for i in items if i.nodeid not in drop]",
        "",
    ]
    return "\n".join(lines)


def tools_dir(out: Path) -> Path:
    d = out / "tools"
    d.mkdir(parents=True, exist_ok=True)
    p = d / "rb_results.py"
    if not p.exists() or p.read_text() != PLUGIN:
        p.write_text(PLUGIN)
    return d


def _limit_suite():
    """A suite run on planted bugs may loop or allocate without end: 4 GiB of address space and
    20 CPU minutes at most, which still hold if this script is killed before its timeout."""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (1200, 1200))


def run_suite(python: Path, repo: Path, out: Path, timeout: float, all_tests: bool = False,
              extra_args: list[str] | None = None) -> dict:
    """Runs the whole pytest suite of `repo` (cwd) and returns {"tests": {nodeid: {...}}, "seconds",
    "hung", "returncode"}."""
    tdir = tools_dir(out)
    fd, res_path = tempfile.mkstemp(prefix="rb-res-", suffix=".json")
    os.close(fd)
    os.unlink(res_path)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tdir) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["RB_RESULTS"] = res_path
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("REALBUGS_ALL", None)
    if all_tests:
        env["REALBUGS_ALL"] = "1"
    args = [str(python), "-m", "pytest", "-q", "-p", "rb_results", "-p", "no:cacheprovider"] + (extra_args or [])
    start = time.monotonic()
    proc = subprocess.Popen(args, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=_limit_suite)
    hung = False
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
    seconds = time.monotonic() - start
    tests = {}
    if os.path.exists(res_path):
        with open(res_path) as f:
            tests = json.load(f)
        os.unlink(res_path)
    return {"tests": tests, "seconds": seconds, "hung": hung, "returncode": proc.returncode,
            "output": output.decode(errors="replace")[-3000:]}


def outcomes(run: dict, kind: str) -> set[str]:
    return {k for k, v in run["tests"].items() if v["outcome"] == kind}


# ---------------------------------------------------------------- functions

def _strip_docstring(node):
    body = getattr(node, "body", None)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        node.body = body[1:] or [ast.Pass()]
    return node


def normalize(code: str) -> str | None:
    """AST dump with docstrings removed (comments and formatting are gone with the parse)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            _strip_docstring(node)
    return ast.dump(tree, include_attributes=False)


def functions(code: str) -> dict[str, dict]:
    """Top-level functions and methods (classes nested in classes too): qualname → {start, end
    (1-based, inclusive, decorators included), indent, node}."""
    tree = ast.parse(code)
    out = {}

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                out[prefix + node.name] = {"start": start, "end": node.end_lineno, "indent": node.col_offset,
                                           "node": node, "name": node.name}
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")
            elif isinstance(node, (ast.If, ast.Try)):
                # functions defined under `if sys.version_info ...:` keep their module-level name
                visit(node.body, prefix)
                visit(getattr(node, "orelse", []), prefix)
    visit(tree.body, "")
    return out


def func_text(code: str, info: dict) -> str:
    lines = code.splitlines(keepends=True)
    return "".join(lines[info["start"] - 1:info["end"]])


def reindent(text: str, old: int, new: int) -> str:
    if old == new:
        return text
    out = []
    for line in text.splitlines(keepends=True):
        if old > new:
            cut = min(old - new, len(line) - len(line.lstrip(" ")))
            out.append(line[cut:] if line.strip() else line)
        else:
            out.append(" " * (new - old) + line if line.strip() else line)
    return "".join(out)


def replace_lines(code: str, start: int, end: int, text: str) -> str:
    lines = code.splitlines(keepends=True)
    if not text.endswith("\n"):
        text += "\n"
    return "".join(lines[:start - 1]) + text + "".join(lines[end:])


def copy_tree(src: Path, dst: Path):
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc"))


def crashing(full: dict, test: str, src_root: Path, modules: list[str], test_prefix: str = "test_") -> bool:
    """Whether `test` of a suite run (`full`, as `run_suite` reads it) raised a non-assertion
    exception inside the package (under `src_root`, in one of `modules`, not in a test file
    named `test_prefix*` or under a tests directory)."""
    v = full["tests"].get(test, {})
    try:
        rel = Path(v.get("where", "")).resolve().relative_to(src_root).as_posix()
    except ValueError:
        return False
    in_pkg = rel.split("/")[0] in modules or rel.removesuffix(".py") in modules
    is_test = "/tests/" in f"/{rel}" or "/test/" in f"/{rel}" or Path(rel).name.startswith(test_prefix)
    return in_pkg and not is_test and v.get("exc") not in ("AssertionError", "Failed", "")
