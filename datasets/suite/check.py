#!/usr/bin/env python3
"""Verify the held-out bug suite, or judge one patched project.

Usage:
  python3 datasets/suite/check.py [BUGDIR ...] [--jobs N] [--record]
      Check every bug under datasets/suite/ (or only the given bug directories).
      For each bug, in temporary copies:
        (a) buggy project: the visible tests collect, at least one fails, at least one passes;
        (b) buggy project + fix.diff: every visible test passes;
        (c) fixed project + hidden tests (copied into tests/): every test passes;
        (d) buggy project + hidden tests: at least one hidden test fails;
        (e) the set of failing visible tests equals bug.json's "failing_tests", and is the
            same with and without the hidden tests present.
      It also checks bug.json (kind, file, function, line) against fix.diff (one changed or
      inserted line, at bug.json's line), the test counts (3-10 visible, 5-15 hidden), the
      test durations (warns above 0.2 s) and the number of bugs per kind (at least 7).
      Prints one line per bug and a summary; exits 1 on any problem.
      --record writes the observed failing visible tests into bug.json's "failing_tests"
      (authoring aid; review the result).

  python3 datasets/suite/check.py --judge BUGDIR PATCHED_PROJECT_DIR
      Copy PATCHED_PROJECT_DIR to a temporary directory, add BUGDIR/hidden/test_hidden.py to
      its tests/, run the whole test suite (visible + hidden) and print `genuine` (exit 0) if
      every test passes, else `plausible-only` (exit 1). Exit 2 on a usage error.

Tests run as `python3 -m pytest -p no:cacheprovider` from the project root (the way
`deepdebug fix` runs them), so the project root is on sys.path. Needs pytest and git (or patch).
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SUITE = os.path.dirname(os.path.abspath(__file__))
KINDS = ["api", "missing-call", "far-constant", "keyword", "operand", "condition",
         "missing-statement", "operator"]
MIN_PER_KIND = 7
SLOW_TEST_S = 0.2
PYTEST_TIMEOUT_S = 120


class Problem(Exception):
    pass


def copy_project(src, dst):
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".pytest_cache"))


def run_pytest(project):
    """Run the project's tests. Returns (rc, {test id: outcome}, {test id: seconds}, output).

    Test ids are `<file stem>::<test name>` (e.g. `test_parser::test_empty`); outcome is
    'passed', 'failed', 'error' or 'skipped'."""
    fd, xml_path = tempfile.mkstemp(suffix=".xml")
    os.close(fd)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
             "-o", "junit_family=xunit2", f"--junitxml={xml_path}"],
            cwd=project, env=env, capture_output=True, text=True, timeout=PYTEST_TIMEOUT_S)
        outcomes, times = {}, {}
        if os.path.getsize(xml_path):
            for case in ET.parse(xml_path).getroot().iter("testcase"):
                cls = case.get("classname", "")
                stem = cls.split(".")[-1] if cls else "?"
                tid = f"{stem}::{case.get('name')}"
                if case.find("failure") is not None:
                    outcome = "failed"
                elif case.find("error") is not None:
                    outcome = "error"
                elif case.find("skipped") is not None:
                    outcome = "skipped"
                else:
                    outcome = "passed"
                outcomes[tid] = outcome
                times[tid] = float(case.get("time") or 0)
        return proc.returncode, outcomes, times, proc.stdout + proc.stderr
    finally:
        os.unlink(xml_path)


def apply_diff(project, diff_path):
    git = subprocess.run(["git", "apply", "-p1", diff_path], cwd=project,
                         capture_output=True, text=True)
    if git.returncode == 0:
        return
    pat = subprocess.run(["patch", "-p1", "--quiet", "-i", diff_path], cwd=project,
                         capture_output=True, text=True)
    if pat.returncode != 0:
        raise Problem(f"fix.diff does not apply: {git.stderr.strip()} {pat.stdout.strip()}")


def diff_edit(diff_text):
    """Return (files, removed, added, line) for a one-edit unified diff; line is the
    1-based line of the removed line, or of the inserted line's position in the old file."""
    files, removed, added, line = [], 0, 0, None
    old = None
    for raw in diff_text.splitlines():
        if raw.startswith("--- "):
            continue
        if raw.startswith("+++ "):
            files.append(raw[4:].split("\t")[0].strip())
            continue
        if raw.startswith("@@"):
            old = int(raw.split()[1].lstrip("-").split(",")[0])
            continue
        if old is None:
            continue
        if raw.startswith("-"):
            removed += 1
            if line is None:
                line = old
            old += 1
        elif raw.startswith("+"):
            added += 1
            if line is None:
                line = old
        else:
            old += 1
    return files, removed, added, line


def failing(outcomes, stem=None):
    return sorted(t for t, o in outcomes.items()
                  if o in ("failed", "error") and (stem is None or t.split("::")[0] == stem))


def check_bug(bugdir, record=False):
    """Check one bug; returns (summary line, warnings). Raises Problem."""
    name = os.path.basename(bugdir.rstrip("/"))
    warnings = []
    bj_path = os.path.join(bugdir, "bug.json")
    try:
        bj = json.load(open(bj_path))
    except (OSError, ValueError) as e:
        raise Problem(f"bug.json: {e}")
    for key in ("kind", "file", "function", "line", "description"):
        if key not in bj:
            raise Problem(f"bug.json lacks {key!r}")
    if bj["kind"] not in KINDS:
        raise Problem(f"unknown kind {bj['kind']!r}")
    if not name.startswith(bj["kind"] + "-"):
        raise Problem(f"directory name does not start with kind {bj['kind']!r}")
    project = os.path.join(bugdir, "project")
    hidden = os.path.join(bugdir, "hidden", "test_hidden.py")
    diff_path = os.path.join(bugdir, "fix.diff")
    for p in (project, hidden, diff_path, os.path.join(project, bj["file"])):
        if not os.path.exists(p):
            raise Problem(f"missing {os.path.relpath(p, bugdir)}")
    if os.path.exists(os.path.join(project, "tests", "test_hidden.py")):
        raise Problem("project/tests/test_hidden.py must not exist (name reserved)")

    files, removed, added, line = diff_edit(open(diff_path).read())
    if files != ["b/" + bj["file"]]:
        raise Problem(f"fix.diff touches {files}, bug.json says {bj['file']}")
    want = (0, 1) if bj["kind"] == "missing-statement" else (1, 1)
    if (removed, added) != want:
        raise Problem(f"fix.diff removes {removed} and adds {added} lines, expected {want}")
    if line != bj["line"]:
        raise Problem(f"fix.diff edits line {line}, bug.json says {bj['line']}")

    with tempfile.TemporaryDirectory(prefix=f"suite-{name}-") as tmp:
        buggy = os.path.join(tmp, "buggy")
        copy_project(project, buggy)
        # (a) buggy, visible tests only
        rc, vis, times, out = run_pytest(buggy)
        if rc not in (0, 1) or not vis:
            raise Problem(f"(a) visible tests do not collect/run (rc {rc}):\n{out[-2000:]}")
        vis_fail = failing(vis)
        if not vis_fail:
            raise Problem("(a) no visible test fails on the buggy project")
        if len(vis_fail) == len(vis):
            raise Problem("(a) every visible test fails on the buggy project")
        if not 3 <= len(vis) <= 10:
            raise Problem(f"(a) {len(vis)} visible tests, expected 3-10")
        if any(o == "error" for o in vis.values()):
            warnings.append("a visible test errors (fixture/collection) instead of failing")
        # (b) fixed, visible tests
        fixed = os.path.join(tmp, "fixed")
        copy_project(project, fixed)
        apply_diff(fixed, os.path.abspath(diff_path))
        rc, fvis, ftimes, out = run_pytest(fixed)
        if rc != 0 or failing(fvis) or set(fvis) != set(vis):
            raise Problem(f"(b) visible tests do not all pass with fix.diff (rc {rc}):\n"
                          f"{out[-2000:]}")
        # (c) fixed + hidden
        shutil.copy(hidden, os.path.join(fixed, "tests", "test_hidden.py"))
        rc, fall, fatimes, out = run_pytest(fixed)
        nhidden = sum(1 for t in fall if t.startswith("test_hidden::"))
        if rc != 0 or failing(fall):
            raise Problem(f"(c) hidden tests fail on the fixed project (rc {rc}):\n{out[-2000:]}")
        if not 5 <= nhidden <= 15:
            raise Problem(f"(c) {nhidden} hidden tests, expected 5-15")
        # (d) buggy + hidden
        shutil.copy(hidden, os.path.join(buggy, "tests", "test_hidden.py"))
        rc, ball, _, out = run_pytest(buggy)
        hid_fail = failing(ball, "test_hidden")
        if rc not in (0, 1):
            raise Problem(f"(d) buggy project + hidden tests do not run (rc {rc}):\n{out[-2000:]}")
        if not hid_fail:
            raise Problem("(d) no hidden test fails on the buggy project")
        # (e) failing visible tests: stable, and as recorded in bug.json
        vis_fail_with_hidden = [t for t in failing(ball) if not t.startswith("test_hidden::")]
        if vis_fail_with_hidden != vis_fail:
            raise Problem(f"(e) failing visible tests change when hidden tests are present: "
                          f"{vis_fail} vs {vis_fail_with_hidden}")
        if record:
            bj["failing_tests"] = vis_fail
            with open(bj_path, "w") as f:
                json.dump(bj, f, indent=2)
                f.write("\n")
        elif bj.get("failing_tests") != vis_fail:
            raise Problem(f"(e) failing visible tests {vis_fail} differ from bug.json "
                          f"failing_tests {bj.get('failing_tests')}")
        slow = [t for tm in (times, fatimes) for t, s in tm.items() if s > SLOW_TEST_S]
        if slow:
            warnings.append(f"slow tests (> {SLOW_TEST_S}s): {sorted(set(slow))}")
    line = (f"visible {len(vis) - len(vis_fail)}/{len(vis)} pass buggy, hidden "
            f"{nhidden - len(hid_fail)}/{nhidden} pass buggy, all pass fixed")
    return line, warnings


def bug_dirs(args):
    if args:
        return [os.path.abspath(a) for a in args]
    return sorted(os.path.join(SUITE, d) for d in os.listdir(SUITE)
                  if os.path.isfile(os.path.join(SUITE, d, "bug.json")))


def judge(bugdir, patched):
    hidden = os.path.join(bugdir, "hidden", "test_hidden.py")
    if not os.path.isfile(hidden) or not os.path.isdir(os.path.join(patched, "tests")):
        print(f"usage error: need {hidden} and {patched}/tests/", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="suite-judge-") as tmp:
        proj = os.path.join(tmp, "project")
        copy_project(patched, proj)
        shutil.copy(hidden, os.path.join(proj, "tests", "test_hidden.py"))
        rc, outcomes, _, out = run_pytest(proj)
    bad = failing(outcomes)
    if rc == 0 and outcomes and not bad:
        print("genuine")
        return 0
    print("plausible-only")
    for t in bad:
        print(f"  failing: {t}", file=sys.stderr)
    if not outcomes:
        print(out[-2000:], file=sys.stderr)
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bugs", nargs="*", help="bug directories (default: all)")
    ap.add_argument("--judge", nargs=2, metavar=("BUGDIR", "PATCHED_PROJECT_DIR"))
    ap.add_argument("--jobs", type=int, default=max(2, os.cpu_count() or 2))
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    if args.judge:
        return judge(*args.judge)

    dirs = bug_dirs(args.bugs)
    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futs = {pool.submit(check_bug, d, args.record): d for d in dirs}
        for fut in concurrent.futures.as_completed(futs):
            d = futs[fut]
            try:
                results[d] = ("ok",) + fut.result()
            except Problem as e:
                results[d] = ("FAIL", str(e), [])
            except Exception as e:  # noqa: BLE001 - report, keep checking the others
                results[d] = ("FAIL", f"{type(e).__name__}: {e}", [])
    problems = 0
    counts = {k: 0 for k in KINDS}
    for d in dirs:
        status, msg, warns = results[d]
        name = os.path.basename(d)
        kind = next((k for k in sorted(KINDS, key=len, reverse=True)
                     if name.startswith(k + "-")), None)
        if status == "ok" and kind:
            counts[kind] += 1
        problems += status != "ok"
        print(f"{status:4} {name}: {msg}")
        for w in warns:
            print(f"     warning: {w}")
    print()
    print("per kind: " + ", ".join(f"{k} {counts[k]}" for k in KINDS))
    if not args.bugs:
        short = [k for k in KINDS if counts[k] < MIN_PER_KIND]
        if short:
            print(f"kinds with fewer than {MIN_PER_KIND} passing bugs: {', '.join(short)}")
            problems += 1
    print(f"{len(dirs)} bugs checked, {sum(r[0] == 'ok' for r in results.values())} ok, "
          f"{sum(r[0] != 'ok' for r in results.values())} with problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
