#!/usr/bin/env python3
"""Runs `deepdebug fix` on every bug of the real-project suite and judges each result.

    python3 datasets/realbugs/run.py --suite /work/realbugs --deepdebug target/debug/deepdebug \
        --timeout 60 [--filter SUBSTR] [--out results.json] [--pass-tests] [--title NAME] [-- extra fix args]

Per bug: `deepdebug fix --repo OUT/bugs/ID --timeout Ns --json` (the repository is never
modified). A reported patch is applied to a scratch copy and the whole suite, hidden and
visible tests, runs on it (REALBUGS_ALL=1):
  fixed          fix exited 0 with a patch;
  genuine        the patched module equals the developer's (real bugs: the newer release's function;
                 planted bugs: the original function) after normalization (AST, docstrings and
                 comments dropped), or the bug has hidden failing tests and the patch makes every
                 one pass with no regression;
  plausible-only fixed, not genuine;
  withheld       fix exited 3 (not fixed) but named a plausible patch it did not trust as a fix
                 (`suggestion` of the report): judged like a reported patch, counted apart;
  regression     the patch makes a test fail that passed on the buggy program (any test of the
                 whole suite);
  localization   rank of the buggy function among the report's `suspicious_functions` (top-1/5/10),
                 separately for crashing bugs (a visible failing test raised a non-assertion exception
                 inside the package) and assertion bugs;
  time           wall seconds of the `fix` process; overrun = wall - budget.
Writes OUT/results/ID.report.json per bug and a summary JSON (--out), prints a per-package table.

--pass-tests adds `--tests NODEID` for every visible failing test of the bug (meta `visible`) to
the `fix` command line (datasets/legacy: suites as found, where other tests fail already) and
prints a second table: refused (fix exited with an error code other than 0 and 3 = not fixed:
usage, environment, broken baseline, nothing to fix, internal error, interrupted, or killed),
fixed with no regression, genuine, plausible-only, regressions, largest overrun and the median
size of the regression guard (`guard.known` of the report; '-' when the report has none).
A bug's meta may carry `suite_args`, extra pytest arguments of the judge's suite runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rbcommon import copy_tree, normalize, outcomes, run_suite  # noqa: E402


def loc_rank(report: dict, meta: dict) -> int | None:
    for i, f in enumerate(report.get("suspicious_functions") or []):
        if f.get("file") != meta["path"] or meta["start_line"] is None:
            continue
        name = f.get("function", "")
        if not (name == meta["name"] or name.endswith("." + meta["name"]) or name == meta["function"]):
            continue
        if f.get("start_line", 0) <= meta["end_line"] and f.get("end_line", 0) >= meta["start_line"]:
            return i + 1
    return None


def judge(suite: Path, meta: dict, report: dict, work: Path) -> dict:
    bug = suite / "bugs" / meta["id"]
    patched = work / meta["id"]
    copy_tree(bug, patched)
    diff = report["patch"]["diff"]
    r = subprocess.run(["patch", "-p1", "--batch", "--no-backup-if-mismatch", "-s"], cwd=patched, input=diff,
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"judge_error": f"patch does not apply: {r.stdout[-300:]} {r.stderr[-300:]}"}
    buggy_code = (bug / meta["path"]).read_text()
    dev_code = buggy_code.replace(meta["buggy"], meta["fixed"], 1)
    patched_code = (patched / meta["path"]).read_text()
    touched = sorted({l[6:].strip() for l in diff.splitlines() if l.startswith("+++ b/")})
    ast_equal = touched == [meta["path"]] and normalize(patched_code) == normalize(dev_code)
    run = run_suite(patched / ".venv" / "bin" / "python", patched, suite, 300, all_tests=True,
                    extra_args=meta.get("suite_args"))
    failed = outcomes(run, "failed") | outcomes(run, "error")
    regressions = sorted(set(meta["baseline_passed_all"]) & failed)
    hidden_pass = bool(meta["hidden"]) and not (set(meta["hidden"]) & failed)
    still_failing = sorted(set(meta["failing"]) & failed)
    shutil.rmtree(patched, ignore_errors=True)
    return {
        "ast_equal": ast_equal,
        "hidden_pass": hidden_pass,
        "still_failing": still_failing,
        "regressions": regressions,
        "genuine": ast_equal or (hidden_pass and not regressions and not still_failing),
        "suite_hung": run["hung"],
        "touched": touched,
    }


def run_bug(args, suite: Path, meta: dict, work: Path, extra: list[str]) -> dict:
    bug = suite / "bugs" / meta["id"]
    cmd = [args.deepdebug, "fix", "--repo", str(bug), "--timeout", f"{args.timeout}s", "--json"]
    if getattr(args, "pass_tests", False):
        for nodeid in meta["visible"]:
            cmd += ["--tests", nodeid]
    cmd += extra
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    killed = False
    try:
        out, err = proc.communicate(timeout=args.timeout * 3 + 60)
    except subprocess.TimeoutExpired:
        killed = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    wall = time.monotonic() - start
    res = {"id": meta["id"], "package": meta["package"], "kind": meta["kind"], "crashing": meta["crashing"],
           "exit": proc.returncode, "killed": killed, "wall": round(wall, 2), "overrun": round(wall - args.timeout, 2),
           "command": " ".join(cmd)}
    results_dir = Path(args.results) if getattr(args, "results", None) else suite / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"{meta['id']}.stderr.txt").write_bytes(err)
    if killed or proc.returncode not in (0, 3):
        text = err.decode(errors="replace").strip()
        res["stderr_tail"] = text[-400:]
        res["refusal"] = next((l.strip() for l in text.splitlines() if l.lstrip().lower().startswith("error")),
                              text.splitlines()[-1].strip() if text else "")[:200]
    try:
        report = json.loads(out)
    except ValueError:
        report = None
        res["error"] = f"no JSON report (exit {proc.returncode}): {err.decode(errors='replace')[-600:]}"
    if report is not None:
        (results_dir / f"{meta['id']}.report.json").write_text(json.dumps(report, indent=1))
        res["status"] = report.get("status")
        guard = guard_size(report.get("guard"))
        if guard is not None:
            res["guard"] = guard
        res["search_end"] = report.get("search_end")
        res["fix_seconds"] = report.get("seconds")
        res["baseline_seconds"] = (report.get("baseline") or {}).get("seconds")
        seen = sorted(f["nodeid"] for f in (report.get("baseline") or {}).get("failing", []))
        res["baseline_failing"] = len(seen)
        res["baseline_mismatch"] = seen != sorted(meta["visible"])
        if res["baseline_mismatch"]:
            res["baseline_failing_seen"] = seen[:10]
        res["loc_rank"] = loc_rank(report, meta)
        res["validated"] = (report.get("candidates") or {}).get("validated")
        if report.get("validation"):
            res["validation"] = report["validation"]
        res["warnings"] = report.get("warnings", [])[:5]
        if proc.returncode == 0 and report.get("patch"):
            res["fixed"] = True
            res["patch"] = {k: report["patch"].get(k) for k in ("file", "line", "source", "description")}
            res.update(judge(suite, meta, report, work))
        elif proc.returncode == 3 and report.get("suggestion"):
            # A plausible patch `fix` did not trust enough to report as a fix: judged the same
            # way, to measure what withholding it gained or lost.
            sug = report["suggestion"]
            res["suggestion"] = {k: sug.get(k) for k in ("file", "line", "source", "description", "why")}
            res["suggestion"].update(judge(suite, meta, {"patch": sug}, work))
    res.setdefault("fixed", False)
    return res


def guard_size(guard) -> int | None:
    """Size of the report's regression guard: `known` tests (or a plain number)."""
    if isinstance(guard, bool) or guard is None:
        return None
    if isinstance(guard, (int, float)):
        return int(guard)
    if isinstance(guard, list):
        return len(guard)
    if isinstance(guard, dict):
        for k in ("known", "size", "tests"):
            v = guard.get(k)
            if isinstance(v, list):
                return len(v)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return int(v)
    return None


def refused(r: dict) -> bool:
    """fix gave up before repairing: an exit code other than 0 (fixed) and 3 (not fixed), or killed."""
    return bool(r.get("killed")) or r.get("exit") not in (0, 3)


def pass_tests_table(results: list[dict], timeout: int, title: str) -> str:
    groups: dict[str, list[dict]] = {}
    for r in results:
        groups.setdefault(r["package"], []).append(r)
    groups["ALL"] = results
    head = (f"{'package':<17}{'bugs':>5}{'refused':>8}{'fixed':>6}{'genu':>5}{'p-only':>7}{'regr':>5}"
            f"{'max over':>9}{'guard':>7}")
    lines = [f"{title}: {len(results)} bugs, {timeout}s budget, --tests VISIBLE (refused: exit other than 0/3 or killed;"
             f" fixed: with no regression; regr: patches with regressions; guard: median guard.known)",
             head, "-" * len(head)]
    for name, rs in groups.items():
        fixed = [r for r in rs if r["fixed"]]
        clean = [r for r in fixed if not r.get("regressions")]
        genuine = sum(1 for r in clean if r.get("genuine"))
        regr = sum(1 for r in fixed if r.get("regressions"))
        guards = [r["guard"] for r in rs if r.get("guard") is not None]
        guard = f"{statistics.median(guards):g}" if guards else "-"
        over = max(r["overrun"] for r in rs)
        lines.append(f"{name:<17}{len(rs):>5}{sum(1 for r in rs if refused(r)):>8}{len(clean):>6}{genuine:>5}"
                     f"{len(clean) - genuine:>7}{regr:>5}{over:>+8.1f}s{guard:>7}")
    withheld = [r["suggestion"] for r in results if r.get("suggestion") and "judge_error" not in r["suggestion"]]
    if withheld:
        good = sum(1 for s in withheld if s.get("genuine") and not s.get("regressions"))
        lines.append(f"withheld (exit 3 with a suggestion): {len(withheld)}, of which genuine {good},"
                     f" plausible-only {len(withheld) - good}")
    codes: dict[str, int] = {}
    for r in results:
        if refused(r):
            k = "killed" if r.get("killed") else f"exit {r.get('exit')}"
            codes[k] = codes.get(k, 0) + 1
    if codes:
        lines.append("refusals: " + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items())))
        messages: dict[str, int] = {}
        for r in results:
            if refused(r):
                tail = [l.strip() for l in (r.get("stderr_tail") or "").splitlines() if l.strip()]
                line = r.get("refusal") or next((l for l in tail if l.lower().startswith("error")), tail[-1] if tail else "")
                line = re.sub(r"\b\d+(\.\d+)?s\b", "Ns", line)  # "no tests ran in 0.05s"
                msg = f"{'killed' if r.get('killed') else 'exit ' + str(r.get('exit'))}: {line[:110] or '(no stderr)'}"
                messages[msg] = messages.get(msg, 0) + 1
        for msg, n in sorted(messages.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {n:>3} x {msg}")
    return "\n".join(lines)


PATHS = ("batch", "warm", "cold", "process", "container")


def speed_table(results: list[dict], title: str) -> str:
    """Validation speed per package: the median run's candidates/s, the share of candidates on
    each engine path, the failing tests' own time (a floor per candidate) and the top reasons
    for leaving the fast path. Runs whose binary reports no `validation` are left out."""
    groups: dict[str, list[dict]] = {}
    for r in results:
        if (r.get("validation") or {}).get("seconds"):
            groups.setdefault(r["package"], []).append(r)
    if not groups:
        return ""
    groups["ALL"] = [r for rs in groups.values() for r in rs]
    head = (f"{'package':<17}{'runs':>5}{'cand/s':>8}{'min':>7}" + "".join(f"{p:>10}" for p in PATHS)
            + f"{'test ms':>9}  top reasons off the fast path")
    lines = [f"{title}: validation speed (cand/s: median run; min: slowest run; path columns: share of candidates;"
             f" test ms: median of the failing tests' own baseline time)", head, "-" * len(head)]
    for name, rs in groups.items():
        rates = [r["validation"]["candidates_per_second"] for r in rs]
        counts = {p: 0 for p in PATHS}
        reasons: dict[str, int] = {}
        for r in rs:
            for p, v in (r["validation"].get("paths") or {}).items():
                counts[p] = counts.get(p, 0) + v["candidates"]
            for why, n in (r["validation"].get("left_fast_path") or {}).items():
                reasons[why] = reasons.get(why, 0) + n
        total = max(1, sum(counts.values()))
        test_ms = statistics.median([1000 * r["validation"].get("failing_tests_seconds", 0) for r in rs])
        top = ", ".join(f"{why} {n}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:3]) or "-"
        lines.append(f"{name:<17}{len(rs):>5}{statistics.median(rates):>8.1f}{min(rates):>7.1f}"
                     + "".join(f"{100 * counts[p] / total:>9.0f}%" for p in PATHS)
                     + f"{test_ms:>9.1f}  {top}")
    return "\n".join(lines)


def print_tables(summary: dict):
    title = summary.get("title") or "realbugs"
    print(table(summary["results"], summary["timeout"], title))
    if summary.get("pass_tests"):
        print()
        print(pass_tests_table(summary["results"], summary["timeout"], title))
    speed = speed_table(summary["results"], title)
    if speed:
        print()
        print(speed)


def pct(hits: int, n: int) -> str:
    return f"{hits}/{n}" if n else "-"


def table(results: list[dict], timeout: int, title: str = "realbugs") -> str:
    groups: dict[str, list[dict]] = {}
    for r in results:
        groups.setdefault(r["package"], []).append(r)
    groups["ALL"] = results
    real = [r for r in results if r["kind"] == "real"]
    planted = [r for r in results if r["kind"] != "real"]
    if real and planted:
        groups["ALL real"] = real
        groups["ALL planted"] = planted
    neural = [r for r in planted if r["kind"] in ("inject:neural", "inject:neural-lm")]
    if neural:
        groups["ALL heuristic"] = [r for r in planted if r not in neural]
        groups["ALL neural"] = neural
    head = (f"{'package':<17}{'bugs':>5}{'fixed':>6}{'genu':>5}{'(ast)':>6}{'p-only':>7}{'regr':>5}"
            f"  {'crash loc@1/5/10':<18}{'assert loc@1/5/10':<19}{'med ttf':>8}{'max over':>9}{'errors':>7}")
    lines = [f"{title}: {len(results)} bugs, {timeout}s budget (genu: genuine, of which (ast) equal to the developer's/original code;"
             f" loc: buggy function in the top 1/5/10 of suspicious_functions; errors: killed or no report)", head, "-" * len(head)]
    for name, rs in groups.items():
        fixed = [r for r in rs if r["fixed"]]
        genuine = sum(1 for r in fixed if r.get("genuine"))
        ast_equal = sum(1 for r in fixed if r.get("ast_equal"))
        regr = sum(1 for r in fixed if r.get("regressions"))

        def loc(crash: bool) -> str:
            sub = [r for r in rs if r["crashing"] == crash and "loc_rank" in r]
            if not sub:
                return "-"
            hits = [sum(1 for r in sub if r["loc_rank"] and r["loc_rank"] <= k) for k in (1, 5, 10)]
            return f"{hits[0]}/{hits[1]}/{hits[2]} of {len(sub)}"
        ttf = statistics.median([r["wall"] for r in fixed]) if fixed else None
        over = max(r["overrun"] for r in rs)
        errors = sum(1 for r in rs if r.get("error") or r.get("killed") or r.get("exit") not in (0, 3))
        lines.append(f"{name:<17}{len(rs):>5}{len(fixed):>6}{genuine:>5}{ast_equal:>6}{len(fixed) - genuine:>7}{regr:>5}"
                     f"  {loc(True):<18}{loc(False):<19}{(f'{ttf:.1f}s' if ttf is not None else '-'):>8}"
                     f"{over:>+8.1f}s{errors:>7}")
    return "\n".join(lines)


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=os.environ.get("REALBUGS_DIR", "/work/realbugs"))
    ap.add_argument("--deepdebug", default=os.environ.get("DEEPDEBUG", "deepdebug"))
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("BENCH_TIMEOUT", "60")))
    ap.add_argument("--filter", default=os.environ.get("BENCH_FILTER", ""),
                    help="comma-separated substrings of bug ids")
    ap.add_argument("--out", help="summary JSON (default RESULTS/summary.json)")
    ap.add_argument("--results", default=None,
                    help="directory for per-bug reports and stderr (default SUITE/results): two binaries measured side by side")
    ap.add_argument("--table-only", action="store_true", help="print the table of an existing summary")
    ap.add_argument("--pass-tests", action="store_true",
                    help="give fix the bug's visible failing tests (--tests NODEID each); adds the refusal/guard table")
    ap.add_argument("--title", default=None, help="name of the suite in the tables (default: realbugs)")
    ap.add_argument("--merge", nargs="+", metavar="SUMMARY",
                    help="merge summaries of partial runs (later ones win per bug) into --out and print the table")
    args = ap.parse_args(argv)
    suite = Path(args.suite).resolve()
    out = Path(args.out) if args.out else Path(args.results or suite / "results") / "summary.json"
    if args.merge:
        parts = [json.loads(Path(p).read_text()) for p in args.merge]
        by_id = {}
        for part in parts:
            for r in part["results"]:
                by_id[r["id"]] = r
        merged = dict(parts[-1])
        merged["results"] = sorted(by_id.values(), key=lambda r: r["id"])
        merged["merged_from"] = [{"file": p, "started": part["started"], "load_before": part["load_before"],
                                  "load_after": part["load_after"], "wall_seconds": part["wall_seconds"]}
                                 for p, part in zip(args.merge, parts)]
        out.write_text(json.dumps(merged, indent=1))
        print_tables(merged)
        return
    if args.table_only:
        s = json.loads(out.read_text())
        if args.title:
            s["title"] = args.title
        print_tables(s)
        return
    manifest = json.loads((suite / "manifest.json").read_text())
    filters = [f for f in args.filter.split(",") if f]
    ids = [b["id"] for b in manifest["bugs"] if not filters or any(f in b["id"] for f in filters)]
    work = Path(tempfile.mkdtemp(prefix="realbugs-judge-"))
    version = subprocess.run([args.deepdebug, "--version"], capture_output=True, text=True).stdout.strip()
    load_before = os.getloadavg()
    results = []
    started = time.time()
    for i, bug_id in enumerate(ids):
        meta = json.loads((suite / "meta" / f"{bug_id}.json").read_text())
        r = run_bug(args, suite, meta, work, extra)
        results.append(r)
        verdict = ("genuine" if r.get("genuine") else "plausible-only") if r["fixed"] else f"not fixed (exit {r['exit']})"
        extra_note = f" REGRESSIONS {len(r['regressions'])}" if r.get("regressions") else ""
        print(f"[{i + 1}/{len(ids)}] {bug_id:<26} {verdict:<22} {r['wall']:6.1f}s loc={r.get('loc_rank')} "
              f"{'crash' if meta['crashing'] else 'assert'}{extra_note}"
              f"{' baseline-mismatch' if r.get('baseline_mismatch') else ''}{' ERROR ' + r['error'][:200] if r.get('error') else ''}"
              f"{' REFUSED ' + r.get('stderr_tail', '')[-200:].replace(chr(10), ' | ') if args.pass_tests and refused(r) and not r.get('error') else ''}",
              flush=True)
    shutil.rmtree(work, ignore_errors=True)
    summary = {"format_version": 1, "deepdebug": args.deepdebug, "version": version, "timeout": args.timeout,
               "extra_args": extra, "pass_tests": args.pass_tests, "title": args.title or "realbugs",
               "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
               "wall_seconds": round(time.time() - started, 1), "load_before": load_before,
               "load_after": os.getloadavg(), "results": results}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1))
    print_tables(summary)
    print(f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}; summary: {out}")


if __name__ == "__main__":
    main()
