#!/usr/bin/env python3
"""Builds the legacy real-bug suite: real projects' test suites *as they are found*
(Python 3.11 stdlib + pip; network: PyPI only).

    python3 datasets/legacy/build.py --out /work/legacybugs [--only NAME,...]

Same pipeline as datasets/realbugs/build.py (whose functions it imports), with these
differences, so that a bug tree is the project as its sdist ships it:
  * nothing is deselected in a release: tests that fail on the clean release in this
    environment (collection errors of modules importing missing optional deps, yield tests,
    tests of removed pytest features...) and slow tests stay in the suite; they are recorded as
    `broken` in OUT/releases/NAME-VER.json and in each bug's meta, and a bug's failing tests are
    those that fail on it but not on the clean release;
  * no test file is renamed and no config is touched; the only additions to a tree are the
    `.venv` symlink, and a root conftest.py block (appended to an existing root conftest.py)
    that deselects the bug's hidden tests (REALBUGS_ALL=1 runs them) and, for src layouts only,
    puts `src/` on sys.path;
  * the suite runs used for mining and judging add `--maxfail=1000000
    --continue-on-collection-errors` and the project's `suite_args` (test files pytest's default
    discovery skips: `tests.py`, `tests/*_tests.py`...), recorded as `suite_args` in the meta
    (run.py passes them when it judges a patch), so that `-x` in addopts and a module failing
    to import do not hide the other tests' outcomes; `deepdebug fix` gets the tree with none;
  * a bug with more than `max_failing` failing tests is skipped (the old function breaks the
    whole package);
  * no planted bugs: real fixes only (the developer's newer function is the oracle);
  * pairs of consecutive releases are mined newest first until `2 * max_real` distinct
    functions are found; a seeded (`seed`) shuffle of them picks the bugs;
  * every bug is checked: `.venv/bin/python -m pytest VISIBLE...` in the bug directory fails on
    the buggy function and passes on the developer's.

Stages are cached (downloads, venvs, releases, mined pairs, bug dirs, dropped candidates);
several builders may run on different packages at once (`--only`). A rebuild keeps the IDs of
existing bugs and removes those the configuration no longer picks.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RB_DIR = HERE.parent / "realbugs"
sys.path.insert(0, str(RB_DIR))
_spec = importlib.util.spec_from_file_location("realbugs_build", RB_DIR / "build.py")
rb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rb)
import rbcommon  # noqa: E402
from rbcommon import copy_tree, functions, outcomes  # noqa: E402
from rbcommon import crashing as rbcommon_crashing  # noqa: E402

log = rb.log

# Extra pytest arguments of every suite run of the builder and of run.py's judge: see above.
SUITE_ARGS = ["--maxfail=1000000", "--continue-on-collection-errors"]


# The package being built: its `suite_args` (test files that pytest's default discovery does not
# collect, e.g. `tests.py`) follow SUITE_ARGS.
_PKG_ARGS: list[str] = []


def expand(repo: Path, args: list[str]) -> list[str]:
    """`suite_args` entries with a `*` are globs of test files below the tree (sorted)."""
    res = []
    for a in args:
        if "*" in a:
            res += sorted(p.relative_to(repo).as_posix() for p in Path(repo).glob(a))
        else:
            res.append(a)
    return res


def suite_args(pkg: dict, repo: Path) -> list[str]:
    return SUITE_ARGS + expand(repo, pkg.get("suite_args", []))


def run_suite(python, repo, out, timeout, all_tests=False, extra_args=None):
    return rbcommon.run_suite(python, repo, out, timeout, all_tests=all_tests,
                              extra_args=SUITE_ARGS + expand(Path(repo), _PKG_ARGS) + list(extra_args or []))


# realbugs' mine_pair runs the suite through its module-level name
rb.run_suite = run_suite


def venv(out: Path, pkg: dict) -> Path:
    """realbugs' venv (pytest + deps, stamped), made without ensurepip: the builder's pip installs
    into it (`pip --python`), which is much faster on a loaded machine. No pip in the venv."""
    d = out / "venvs" / pkg["name"]
    py = d / "bin" / "python"
    stamp = d / ".realbugs-deps.json"
    want = ["pytest"] + pkg.get("deps", [])
    if py.exists() and stamp.exists() and json.loads(stamp.read_text()) == want:
        return d
    log("venv", pkg["name"], want)
    subprocess.run([sys.executable, "-m", "venv", "--clear", "--without-pip", str(d)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", *want], check=True)
    stamp.write_text(json.dumps(want))
    return d


def write_conftest(tree: Path, pkg: dict, deselect: list[str]):
    """The realbugs conftest block (appended to an existing root conftest.py), only when there
    is something to do: hidden tests to deselect or a src layout."""
    p = tree / "conftest.py"
    if not deselect and pkg["src"] == ".":
        if p.exists() and rbcommon.CONFTEST_MARK in p.read_text():
            text = p.read_text()
            text = text[:text.index(rbcommon.CONFTEST_MARK)]
            if text:
                p.write_text(text)
            else:
                p.unlink()
        return
    rb.write_conftest(tree, pkg, deselect)


def release(out: Path, cfg: dict, pkg: dict, ver: str, venv_dir: Path, timeout: float) -> tuple[Path, dict]:
    """The newer release as found (+ .venv, + src path) and its clean outcomes."""
    tree = out / "releases" / f"{pkg['name']}-{ver}"
    meta_path = out / "releases" / f"{pkg['name']}-{ver}.json"
    if tree.exists() and meta_path.exists():
        return tree, json.loads(meta_path.read_text())
    copy_tree(rb.unpack(out, pkg, ver), tree)
    link = tree / ".venv"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(venv_dir)
    write_conftest(tree, pkg, [])
    base = run_suite(venv_dir / "bin" / "python", tree, out, timeout)
    slow = sorted(t for t, v in base["tests"].items() if v.get("duration", 0) > cfg.get("slow_test_s", 1.0))
    broken = sorted(outcomes(base, "failed") | outcomes(base, "error"))
    meta = {"package": pkg["name"], "version": ver, "broken": broken, "slow": slow,
            "passed": len(outcomes(base, "passed")), "skipped": len(outcomes(base, "skipped")),
            "seconds": round(base["seconds"], 2), "hung": base["hung"], "returncode": base["returncode"]}
    if not outcomes(base, "passed"):
        meta["error"] = base["output"][-1500:]
    meta_path.parent.mkdir(parents=True, exist_ok=True)
    meta_path.write_text(json.dumps(meta, indent=1))
    log(f"release {pkg['name']}-{ver}: {meta['passed']} passing, {len(broken)} failing as found "
        f"(kept), {len(slow)} slow (kept), {meta['seconds']} s")
    return tree, meta


def pytest_rc(python: Path, bug: Path, nodeids: list[str], timeout: float) -> int:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("REALBUGS_ALL", None)
    try:
        r = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *nodeids], cwd=bug,
                           env=env, capture_output=True, timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return -1
    return r.returncode


def make_bug(out: Path, cfg: dict, pkg: dict, tree: Path, rel_meta: dict, python: Path, bug_id: str,
             spec: dict) -> dict | None:
    meta_path = out / "meta" / f"{bug_id}.json"
    bug = out / "bugs" / bug_id
    if meta_path.exists() and bug.exists():
        return json.loads(meta_path.read_text())
    drops_path = out / "meta" / "dropped" / f"{pkg['name']}.json"
    drops = json.loads(drops_path.read_text()) if drops_path.exists() else {}
    drop_key = f"{rel_meta['version']}:{spec['path']}:{spec['function']}"
    if drop_key in drops:
        return None
    copy_tree(tree, bug)
    target = bug / spec["path"]
    code = target.read_text()

    def drop(why: str):
        log(f"{bug_id}: skipped ({why})")
        shutil.rmtree(bug, ignore_errors=True)
        drops[drop_key] = why
        drops_path.parent.mkdir(parents=True, exist_ok=True)
        drops_path.write_text(json.dumps(drops, indent=1, sort_keys=True))
        return None
    if spec["fixed"] not in code:
        return drop(f"fixed function not found in {spec['path']}")
    buggy_code = code.replace(spec["fixed"], spec["buggy"], 1)
    target.write_text(buggy_code)
    timeout = cfg.get("suite_timeout_s", 120)
    full = run_suite(python, bug, out, timeout, all_tests=True)
    broken = set(rel_meta["broken"])
    failing = sorted((outcomes(full, "failed") | outcomes(full, "error")) - broken)
    if full["hung"] or not failing or any(f.startswith("<collect>") for f in failing):
        return drop("hung" if full["hung"] else "no failing test" if not failing else "collection error")
    if len(failing) > cfg.get("max_failing", 40):
        # the old function breaks the package as a whole; its suite also runs far slower
        return drop(f"{len(failing)} failing tests")
    visible, hidden = failing[0::2], failing[1::2]
    write_conftest(bug, pkg, hidden)
    vis = run_suite(python, bug, out, timeout)
    vis_failing = sorted((outcomes(vis, "failed") | outcomes(vis, "error")) - broken)
    if vis_failing != visible:
        log(f"{bug_id}: visible failing tests differ: {vis_failing[:3]} vs {visible[:3]}; all visible")
        visible, hidden = failing, []
        write_conftest(bug, pkg, [])
        vis = run_suite(python, bug, out, timeout)
        if sorted((outcomes(vis, "failed") | outcomes(vis, "error")) - broken) != visible:
            return drop("flaky")
    # The visible tests alone: fail on the buggy function, pass on the developer's.
    check_timeout = max(60, timeout)
    if pytest_rc(python, bug, visible, check_timeout) != 1:
        return drop("visible tests alone do not fail")
    target.write_text(code)
    fixed_rc = pytest_rc(python, bug, visible, check_timeout)
    target.write_text(buggy_code)
    if fixed_rc != 0:
        return drop(f"visible tests alone do not pass on the fix (rc {fixed_rc})")
    fns = functions(buggy_code)
    qual = spec["function"]
    info = fns.get(qual)
    src_root = (bug / pkg["src"]).resolve()

    def crashing(t: str) -> bool:
        return rbcommon_crashing(full, t, src_root, pkg["modules"], "test")
    meta = {
        "id": bug_id, "package": pkg["name"], "version": rel_meta["version"], "kind": spec["kind"],
        "path": spec["path"], "function": qual, "name": qual.split(".")[-1],
        "start_line": info["start"] if info else None, "end_line": info["end"] if info else None,
        "old_version": spec.get("old_version"), "changed_lines": spec.get("changed_lines"),
        "description": None, "buggy": spec["buggy"], "fixed": spec["fixed"],
        "failing": failing, "visible": visible, "hidden": hidden,
        "broken": sorted(broken), "suite_args": suite_args(pkg, bug),
        "crashing": any(crashing(t) for t in visible),
        "errors": {t: {k: full["tests"][t].get(k) for k in ("exc", "message")} for t in failing if t in full["tests"]},
        "baseline_passed_all": sorted(outcomes(full, "passed")),
        "suite_seconds": round(vis["seconds"], 2),
    }
    meta_path.parent.mkdir(parents=True, exist_ok=True)
    meta_path.write_text(json.dumps(meta, indent=1))
    log(f"{bug_id}: {spec['path']}:{qual} ({spec['old_version']}->{rel_meta['version']}): {len(visible)} visible / "
        f"{len(hidden)} hidden failing, {len(broken)} failing as found, "
        f"{'crash' if meta['crashing'] else 'assertion'}, suite {meta['suite_seconds']} s")
    return meta


def build_package(out: Path, cfg: dict, pkg: dict) -> list[dict]:
    _PKG_ARGS[:] = pkg.get("suite_args", [])
    rb.download(out, pkg)
    vdir = venv(out, pkg)
    python = vdir / "bin" / "python"
    timeout = cfg.get("suite_timeout_s", 120)
    max_real = pkg.get("max_real", 6)
    versions = pkg["versions"]
    # Newest pairs first, until twice the wanted number of distinct functions is found.
    found: dict[tuple[str, str], tuple[Path, dict, dict]] = {}
    for old, new in reversed(list(zip(versions, versions[1:]))):
        if len(found) >= 2 * max_real:
            break
        tree, rel_meta = release(out, cfg, pkg, new, vdir, timeout)
        if rel_meta.get("error") or rel_meta["hung"]:
            log(f"{pkg['name']}-{new}: suite does not run: {rel_meta.get('error', 'hung')[-400:]}")
            continue
        for spec in rb.mine_pair(out, cfg, pkg, old, new, tree, rel_meta, python):
            found.setdefault((spec["path"], spec["function"]), (tree, rel_meta, spec))
    keys = sorted(found)
    random.Random(pkg.get("seed", 0)).shuffle(keys)
    # Bugs made by an earlier run (with a smaller max_real, say) keep their IDs.
    existing = {}
    for mp in sorted((out / "meta").glob(f"{pkg['name']}-[0-9]*.json")):
        m = json.loads(mp.read_text())
        if m.get("package") == pkg["name"] and (out / "bugs" / m["id"]).is_dir():
            existing[(m["path"], m["function"])] = m
    used = {m["id"] for m in existing.values()}
    made = []
    for key in keys:
        if len(made) >= max_real:
            break
        if key in existing:
            made.append(existing[key])
            continue
        n = 1
        while f"{pkg['name']}-{n:02d}" in used:
            n += 1
        tree, rel_meta, spec = found[key]
        meta = make_bug(out, cfg, pkg, tree, rel_meta, python, f"{pkg['name']}-{n:02d}", spec)
        if meta:
            made.append(meta)
            used.add(meta["id"])
    # Bugs of an earlier run that this configuration no longer picks (a larger max_real mines
    # more pairs, which reshuffles the candidates) are removed, so that the set of bugs is the
    # one a fresh build makes (only the numbering may differ).
    keep = {m["id"] for m in made}
    for m in existing.values():
        if m["id"] not in keep:
            log(f"{m['id']}: no longer picked, removed")
            (out / "meta" / f"{m['id']}.json").unlink()
            shutil.rmtree(out / "bugs" / m["id"], ignore_errors=True)
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(HERE / "packages.json"))
    ap.add_argument("--out", default=os.environ.get("LEGACY_DIR", "/work/legacybugs"))
    ap.add_argument("--only", help="comma-separated package names")
    args = ap.parse_args()
    cfg = json.loads(Path(args.config).read_text())
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    packages = cfg["packages"]
    if args.only:
        names = args.only.split(",")
        unknown = set(names) - {p["name"] for p in packages}
        if unknown:
            raise SystemExit(f"not in {args.config}: {', '.join(sorted(unknown))}")
        packages = [p for name in names for p in packages if p["name"] == name]
    for pkg in packages:
        made = build_package(out, cfg, pkg)
        log(f"{pkg['name']}: {len(made)} bugs")
        manifest = rb.write_manifest(out)
    manifest = rb.write_manifest(out)
    log(f"manifest: {len(manifest['bugs'])} bugs in {len({b['package'] for b in manifest['bugs']})} packages")


if __name__ == "__main__":
    main()
