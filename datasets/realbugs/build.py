#!/usr/bin/env python3
"""Builds the real-project bug suite (Python 3.11 stdlib + pip; network: PyPI only).

    python3 datasets/realbugs/build.py --out /work/realbugs --deepdebug path/to/deepdebug

For every package of packages.json:
  1. `pip download --no-binary :all: --no-deps NAME==VER` for each listed release, unpacked
     under OUT/src/;
  2. one venv per package (OUT/venvs/NAME) with pytest and the package's own dependencies;
     every tree gets a `.venv` symlink to it, which `deepdebug fix` picks up;
  3. every release but the first becomes OUT/releases/NAME-VER with a root conftest.py that
     puts `src/` on sys.path (src layouts) and deselects the tests that already fail there;
  4. real fixes: for each pair of consecutive releases, every function (or method) whose code
     changed (docstrings ignored) with the same signature and at most `max_changed_lines`
     changed lines is put back to its older version in the newer release; it is a bug when some
     test of the newer release fails on it (the developer's fix is the newer function);
  5. planted bugs: `deepdebug inject` on the newest release, a seeded choice of `count` kept
     heuristic bugs in distinct functions, round-robin over bug kinds, and of `neural` kept
     neural bugs (`--lm-bugs lm_functions`: SmolLM2 rewrites covered lines; `--model DIR`: a
     trained bug-creator) in other functions;
  6. every bug becomes OUT/bugs/ID (a copy of the release with the buggy function): its
     failing tests are split into visible (every other one, starting with the first) and
     hidden (deselected by the conftest unless REALBUGS_ALL=1), checked, and described in
     OUT/meta/ID.json; OUT/manifest.json lists them all.

Stages are cached: a rerun reuses downloads, venvs, mined candidates and inject output.
"""

from __future__ import annotations

import argparse
import difflib
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rbcommon import crashing as rbcommon_crashing  # noqa: E402
from rbcommon import (CONFTEST_MARK, HERE, conftest_block, copy_tree, func_text, functions, normalize,  # noqa: E402
                      outcomes, reindent, replace_lines, run_suite)


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


# ---------------------------------------------------------------- download, venv, releases

def sdist_path(out: Path, name: str, ver: str) -> Path | None:
    for n in {name, name.replace("-", "_"), name.replace("_", "-")}:
        for ext in ("tar.gz", "zip"):
            hits = glob.glob(str(out / "sdists" / f"{n}-{ver}.{ext}"))
            if hits:
                return Path(hits[0])
    return None


def download(out: Path, pkg: dict):
    (out / "sdists").mkdir(parents=True, exist_ok=True)
    for ver in pkg["versions"]:
        if sdist_path(out, pkg["name"], ver):
            continue
        log("download", pkg["name"], ver)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
                        f"{pkg['name']}=={ver}", "-d", str(out / "sdists")], check=True)


def unpack(out: Path, pkg: dict, ver: str) -> Path:
    dst = out / "src" / f"{pkg['name']}-{ver}"
    if dst.exists():
        return dst
    sd = sdist_path(out, pkg["name"], ver)
    tmp = out / "src" / f".tmp-{pkg['name']}-{ver}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(sd) as tf:
        tf.extractall(tmp, filter="data")
    (top,) = list(tmp.iterdir())
    top.rename(dst)
    tmp.rmdir()
    return dst


def venv(out: Path, pkg: dict) -> Path:
    d = out / "venvs" / pkg["name"]
    py = d / "bin" / "python"
    stamp = d / ".realbugs-deps.json"
    want = ["pytest"] + pkg.get("deps", [])
    if py.exists() and stamp.exists() and json.loads(stamp.read_text()) == want:
        return d
    log("venv", pkg["name"], want)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(d)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *want], check=True)
    stamp.write_text(json.dumps(want))
    return d


def package_files(tree: Path, pkg: dict) -> dict[str, Path]:
    """Source modules of the package (tests excluded), keyed by their path below `src`."""
    root = tree / pkg["src"]
    files = {}
    for mod in pkg["modules"]:
        if (root / f"{mod}.py").is_file():
            files[f"{mod}.py"] = root / f"{mod}.py"
        for p in sorted((root / mod).rglob("*.py")) if (root / mod).is_dir() else []:
            rel = p.relative_to(root).as_posix()
            if "/tests/" in f"/{rel}" or "/test/" in f"/{rel}" or p.name.startswith("test_") or p.name == "conftest.py":
                continue
            files[rel] = p
    return files


def write_conftest(tree: Path, pkg: dict, deselect: list[str]):
    p = tree / "conftest.py"
    existing = p.read_text() if p.exists() else ""
    if CONFTEST_MARK in existing:
        existing = existing[:existing.index(CONFTEST_MARK)]
    if "pytest_collection_modifyitems" in existing:
        raise SystemExit(f"{tree}: root conftest.py defines pytest_collection_modifyitems already")
    p.write_text(existing + conftest_block(pkg["src"], deselect))


def release(out: Path, cfg: dict, pkg: dict, ver: str, venv_dir: Path, timeout: float) -> tuple[Path, dict]:
    """The prepared newer release and its clean baseline (cached in OUT/releases/NAME-VER.json)."""
    tree = out / "releases" / f"{pkg['name']}-{ver}"
    meta_path = out / "releases" / f"{pkg['name']}-{ver}.json"
    if tree.exists() and meta_path.exists():
        return tree, json.loads(meta_path.read_text())
    copy_tree(unpack(out, pkg, ver), tree)
    link = tree / ".venv"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(venv_dir)
    write_conftest(tree, pkg, [])
    base = run_suite(venv_dir / "bin" / "python", tree, out, timeout)
    # Tests that fail on the clean release, and slow tests (the suite is trimmed so that its
    # baseline stays a small part of a 60 s budget), are deselected in every bug of the release.
    slow = sorted(t for t, v in base["tests"].items()
                  if v.get("duration", 0) > pkg.get("slow_test_s", cfg.get("slow_test_s", 1.0)))
    broken = sorted(outcomes(base, "failed") | outcomes(base, "error") | set(slow))
    write_conftest(tree, pkg, broken)
    check = run_suite(venv_dir / "bin" / "python", tree, out, timeout)
    meta = {"package": pkg["name"], "version": ver, "broken": broken, "slow": slow,
            "passed": len(outcomes(check, "passed")), "failed_after_deselect": sorted(outcomes(check, "failed")),
            "seconds": round(check["seconds"], 2), "hung": check["hung"]}
    if not outcomes(check, "passed"):
        meta["error"] = check["output"][-1500:]
    meta_path.write_text(json.dumps(meta, indent=1))
    log(f"release {pkg['name']}-{ver}: {meta['passed']} passing, {len(broken)} broken (deselected), "
        f"{meta['seconds']} s")
    return tree, meta


# ---------------------------------------------------------------- real fixes

def changed_lines(a: str, b: str) -> int:
    return sum(1 for l in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
               if (l.startswith("+") or l.startswith("-")) and not l.startswith(("+++", "---")))


def signature(node) -> str:
    import ast
    return ast.dump(node.args) + "|" + "|".join(ast.dump(d) for d in node.decorator_list)


def mine_pair(out: Path, cfg: dict, pkg: dict, old: str, new: str, tree: Path, rel_meta: dict,
              python: Path) -> list[dict]:
    cache = out / "mined" / f"{pkg['name']}-{old}-{new}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    old_files = package_files(unpack(out, pkg, old), pkg)
    new_files = package_files(tree, pkg)
    broken = set(rel_meta["broken"])
    found = []
    partial_path = cache.with_suffix(".partial.json")
    done = json.loads(partial_path.read_text()) if partial_path.exists() else {}
    cache.parent.mkdir(parents=True, exist_ok=True)
    for rel, new_path in new_files.items():
        if rel not in old_files:
            continue
        new_code = new_path.read_text()
        old_code = old_files[rel].read_text()
        if new_code == old_code:
            continue
        try:
            new_fns, old_fns = functions(new_code), functions(old_code)
        except SyntaxError:
            continue
        for qual, nf in new_fns.items():
            of = old_fns.get(qual)
            if of is None:
                continue
            new_text, old_text = func_text(new_code, nf), func_text(old_code, of)
            if normalize(reindent(new_text, nf["indent"], 0)) == normalize(reindent(old_text, of["indent"], 0)):
                continue
            if signature(nf["node"]) != signature(of["node"]):
                continue
            n = changed_lines(old_text, new_text)
            if n == 0 or n > cfg.get("max_changed_lines", 12):
                continue
            buggy_text = reindent(old_text, of["indent"], nf["indent"])
            mutant = replace_lines(new_code, nf["start"], nf["end"], buggy_text)
            try:
                compile(mutant, rel, "exec")
            except SyntaxError:
                continue
            key = f"{rel}:{qual}"
            if key in done:
                r = done[key]
            else:
                new_path.write_text(mutant)
                try:
                    run = run_suite(python, tree, out, cfg.get("suite_timeout_s", 120), all_tests=False)
                finally:
                    new_path.write_text(new_code)
                r = {"hung": run["hung"], "failed": sorted(outcomes(run, "failed") | outcomes(run, "error"))}
                done[key] = r
                partial_path.write_text(json.dumps(done))
            failing = sorted(set(r["failed"]) - broken)
            log(f"  {pkg['name']} {old}->{new} {rel}:{qual} ({n} lines): "
                f"{'hung' if r['hung'] else str(len(failing)) + ' failing'}")
            if r["hung"] or not failing or any(f.startswith("<collect>") for f in failing):
                continue
            found.append({"kind": "real", "path": (Path(pkg["src"]) / rel).as_posix(), "function": qual,
                          "old_version": old, "version": new, "buggy": buggy_text, "fixed": new_text,
                          "changed_lines": n, "failing": failing})
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(found, indent=1))
    return found


# ---------------------------------------------------------------- planted bugs

def inject(out: Path, pkg: dict, tree: Path, deepdebug: str) -> list[dict]:
    conf = pkg.get("inject") or {}
    if not conf.get("count"):
        return []
    dst = out / "inject" / pkg["name"]
    rows_path = dst / "bugs-shard-00000-of-00001.jsonl"
    if not rows_path.exists():
        dst.mkdir(parents=True, exist_ok=True)
        log("inject", pkg["name"])
        cmd = [deepdebug, "inject", "--repo", str(tree), "--out", str(dst), "--per-function",
               str(conf.get("per_function", 2)), "--seed", str(conf.get("seed", 0)), "--timeout",
               conf.get("timeout", "10m")]
        if conf.get("model"):
            cmd += ["--model", conf["model"]]
        if conf.get("neural") and conf.get("lm_functions"):
            cmd += ["--lm-bugs", str(conf["lm_functions"])]
        r = subprocess.run(cmd, capture_output=True, text=True)
        (dst / "inject.log").write_text(r.stdout + "\n--- stderr\n" + r.stderr)
        if r.returncode != 0:
            log(f"inject {pkg['name']} failed ({r.returncode}): {r.stderr[-800:]}")
            return []
    rows = [json.loads(l) for l in rows_path.read_text().splitlines() if l.strip()]
    return rows


def qualname(row: dict) -> str:
    f = row["function"]
    return f if "." in f or not row.get("class") else f"{row['class']}.{f}"


NEURAL_KINDS = ("neural", "neural-lm")


def pick_injected(rows: list[dict], conf: dict, avoid: set[tuple[str, str]], neural: bool) -> list[dict]:
    """A seeded choice of kept bugs in distinct functions, round-robin over bug kinds: the
    heuristic kinds, or (`neural`) the models' kinds."""
    rng = random.Random(conf.get("seed", 0) + (1000 if neural else 0))
    by_kind: dict[str, list[dict]] = {}
    for r in rows:
        if r.get("outcome") != "failed":  # hung mutants are left out
            continue
        if (r["kind"] in NEURAL_KINDS) != neural:
            continue
        by_kind.setdefault(r["kind"], []).append(r)
    for v in by_kind.values():
        rng.shuffle(v)
    kinds = sorted(by_kind)
    rng.shuffle(kinds)
    chosen, used = [], set(avoid)
    want = conf.get("neural" if neural else "count", 4) * 3  # extra: some fail the checks below
    while len(chosen) < want and any(by_kind.values()):
        for k in kinds:
            while by_kind[k]:
                r = by_kind[k].pop()
                key = (r["path"], qualname(r))
                if key in used:
                    continue
                used.add(key)
                chosen.append(r)
                break
            if len(chosen) >= want:
                break
    return chosen


# ---------------------------------------------------------------- bug directories

def make_bug(out: Path, cfg: dict, pkg: dict, tree: Path, rel_meta: dict, python: Path, bug_id: str,
             spec: dict) -> dict | None:
    """spec: path (relative to the tree), function (qualname), buggy and fixed function text, kind..."""
    meta_path = out / "meta" / f"{bug_id}.json"
    bug = out / "bugs" / bug_id
    if meta_path.exists() and bug.exists():
        return json.loads(meta_path.read_text())
    copy_tree(tree, bug)
    target = bug / spec["path"]
    code = target.read_text()
    if spec["fixed"] not in code:
        log(f"{bug_id}: fixed function not found in {spec['path']}")
        shutil.rmtree(bug)
        return None
    buggy_code = code.replace(spec["fixed"], spec["buggy"], 1)
    target.write_text(buggy_code)
    timeout = cfg.get("suite_timeout_s", 120)
    full = run_suite(python, bug, out, timeout, all_tests=True)
    broken = set(rel_meta["broken"])
    failing = sorted((outcomes(full, "failed") | outcomes(full, "error")) - broken)
    if full["hung"] or not failing or any(f.startswith("<collect>") for f in failing):
        log(f"{bug_id}: skipped ({'hung' if full['hung'] else 'no failing test' if not failing else 'collection error'})")
        shutil.rmtree(bug)
        return None
    visible, hidden = failing[0::2], failing[1::2]
    write_conftest(bug, pkg, sorted(broken | set(hidden)))
    vis = run_suite(python, bug, out, timeout)
    vis_failing = sorted(outcomes(vis, "failed") | outcomes(vis, "error"))
    if vis_failing != visible:
        log(f"{bug_id}: visible failing tests differ: {vis_failing[:3]} vs {visible[:3]}; all visible")
        visible, hidden = failing, []
        write_conftest(bug, pkg, sorted(broken))
        vis = run_suite(python, bug, out, timeout)
        if sorted(outcomes(vis, "failed") | outcomes(vis, "error")) != visible:
            log(f"{bug_id}: skipped (flaky)")
            shutil.rmtree(bug)
            return None
    fns = functions(buggy_code)
    qual = spec["function"]
    info = fns.get(qual)
    # A test "crashes" when it raised something other than an assertion failure in the package's
    # own code (its innermost frame is a source module of the package, not a test file).
    src_root = (bug / pkg["src"]).resolve()

    def crashing(t: str) -> bool:
        return rbcommon_crashing(full, t, src_root, pkg["modules"], "test_")
    meta = {
        "id": bug_id, "package": pkg["name"], "version": rel_meta["version"], "kind": spec["kind"],
        "path": spec["path"], "function": qual, "name": qual.split(".")[-1],
        "start_line": info["start"] if info else None, "end_line": info["end"] if info else None,
        "old_version": spec.get("old_version"), "changed_lines": spec.get("changed_lines"),
        "description": spec.get("description"),
        "buggy": spec["buggy"], "fixed": spec["fixed"],
        "failing": failing, "visible": visible, "hidden": hidden,
        "crashing": any(crashing(t) for t in visible),
        "errors": {t: {k: full["tests"][t].get(k) for k in ("exc", "message")} for t in failing if t in full["tests"]},
        "baseline_passed_all": sorted(outcomes(full, "passed")),
        "suite_seconds": round(vis["seconds"], 2),
    }
    meta_path.parent.mkdir(parents=True, exist_ok=True)
    meta_path.write_text(json.dumps(meta, indent=1))
    log(f"{bug_id}: {spec['kind']} {spec['path']}:{qual}: {len(visible)} visible / {len(hidden)} hidden failing, "
        f"{'crash' if meta['crashing'] else 'assertion'}, suite {meta['suite_seconds']} s")
    return meta


def write_manifest(out: Path) -> dict:
    """OUT/manifest.json lists every bug directory with its meta file (several builders may run
    at once, on different packages)."""
    bugs = []
    for p in sorted((out / "meta").glob("*.json")):
        m = json.loads(p.read_text())
        if (out / "bugs" / m["id"]).is_dir():
            bugs.append({"id": m["id"], "package": m["package"], "kind": m["kind"]})
    manifest = {"format_version": 1, "bugs": bugs}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(HERE / "packages.json"))
    ap.add_argument("--out", default=os.environ.get("REALBUGS_DIR", "/work/realbugs"))
    ap.add_argument("--deepdebug", default=os.environ.get("DEEPDEBUG", "deepdebug"),
                    help="binary used for `deepdebug inject`")
    ap.add_argument("--only", help="comma-separated package names")
    ap.add_argument("--no-inject", action="store_true")
    args = ap.parse_args()
    cfg = json.loads(Path(args.config).read_text())
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    manifest = {"bugs": []}
    packages = cfg["packages"]
    if only:
        packages = [p for name in args.only.split(",") for p in packages if p["name"] == name]
    for pkg in packages:
        download(out, pkg)
        vdir = venv(out, pkg)
        python = vdir / "bin" / "python"
        mine = []
        versions = pkg["versions"]
        for old, new in zip(versions, versions[1:]):
            tree, rel_meta = release(out, cfg, pkg, new, vdir, cfg.get("suite_timeout_s", 120))
            if rel_meta.get("error") or rel_meta["hung"]:
                log(f"{pkg['name']}-{new}: suite does not run: {rel_meta.get('error', 'hung')[-400:]}")
                continue
            for spec in mine_pair(out, cfg, pkg, old, new, tree, rel_meta, python):
                mine.append((tree, rel_meta, spec))
        # Newest pairs first; one bug per (function, developer's version).
        seen, made = set(), []
        for tree, rel_meta, spec in reversed(mine):
            key = (spec["path"], spec["function"])
            if key in seen or len(made) >= pkg.get("max_real", 6):
                continue
            seen.add(key)
            bug_id = f"{pkg['name']}-real-{len(made) + 1:02d}"
            meta = make_bug(out, cfg, pkg, tree, rel_meta, python, bug_id, spec)
            if meta:
                made.append(meta)
        if not args.no_inject:
            newest = versions[-1]
            tree, rel_meta = release(out, cfg, pkg, newest, vdir, cfg.get("suite_timeout_s", 120))
            rows = inject(out, pkg, tree, args.deepdebug)
            conf = pkg.get("inject", {})
            for neural, tag, count in ((False, "inj", conf.get("count", 4)), (True, "neu", conf.get("neural", 0))):
                n = 0
                for row in pick_injected(rows, conf, seen, neural):
                    if n >= count:
                        break
                    spec = {"kind": f"inject:{row['kind']}", "path": row["path"], "function": qualname(row),
                            "buggy": row["buggy_function"], "fixed": row["fixed_function"], "line": row.get("line"),
                            "description": row.get("description")}
                    meta = make_bug(out, cfg, pkg, tree, rel_meta, python, f"{pkg['name']}-{tag}-{n + 1:02d}", spec)
                    if meta:
                        made.append(meta)
                        seen.add((spec["path"], spec["function"]))
                        n += 1
        manifest = write_manifest(out)
        log(f"{pkg['name']}: {sum(1 for m in made if m['kind'] == 'real')} real, "
            f"{sum(1 for m in made if m['kind'] != 'real')} planted")
    log(f"manifest: {len(manifest['bugs'])} bugs in {len({b['package'] for b in manifest['bugs']})} packages")


if __name__ == "__main__":
    main()
