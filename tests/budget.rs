//! `fix --timeout` is a promise: on a 3,000-line module the search starts at once, uses the
//! budget, and the run ends within it; a suite slower than the budget is a clear error.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::project;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Slack allowed past `--timeout` (process start-up, a loaded CI machine); the goal is 2 s.
const SLACK: Duration = Duration::from_secs(4);

fn fix(root: &std::path::Path, timeout_s: u64, extra: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_deepdebug"))
        .args(["fix", "--json", "--rank", "none", "--lm", "none", "--repo"])
        .arg(root)
        .args(["--timeout", &format!("{timeout_s}s")])
        .args(extra)
        .output()
        .unwrap();
    (out, started.elapsed())
}

/// A module of about 3,300 lines: 190 similar helpers around `clamp_window`, whose last line
/// keeps one item too few; `expected` is what the failing test wants. With `slow`, the failing
/// test sleeps half a second, so that no machine can validate every candidate within the budget.
fn big_project(expected: &str, slow: bool) -> tempfile::TempDir {
    let mut module = String::from("\"\"\"A big module.\"\"\"\nimport math\n\n");
    for i in 0..190 {
        if i == 95 {
            module.push_str("\ndef clamp_window(items, start, size):\n    if start < 0:\n        start = 0\n    end = start + size\n    if end >= len(items):\n        end = len(items) - 1\n    return items[start:end]\n\n");
        }
        module.push_str(&format!(
            "\ndef helper_{i}(values, limit={}):\n    total = 0\n    count = 0\n    for index, value in enumerate(values):\n        if value < limit:\n            total += value * {}\n            count += 1\n        elif value == limit:\n            total -= 1\n        else:\n            total += index\n    if count == 0:\n        return 0\n    mean = total / count\n    return round(mean + math.sqrt(abs(total)), 3)\n\n",
            i % 7 + 1,
            i % 5 + 1
        ));
    }
    let mut tests = String::from("import time\nfrom pkg.big import *\n\n");
    for i in (0..190).step_by(3) {
        tests.push_str(&format!(
            "def test_helper_{i}():\n    assert helper_{i}([1, 2, 3, 9]) == helper_{i}([1, 2, 3, 9])\n\n"
        ));
    }
    tests.push_str("def test_window_inside():\n    assert clamp_window([1, 2, 3, 4, 5], 1, 2) == [2, 3]\n\n");
    let pause = if slow { "    time.sleep(0.5)\n" } else { "" };
    tests.push_str(&format!(
        "def test_window_end():\n{pause}    assert clamp_window([1, 2, 3, 4, 5], 3, 5) == {expected}\n"
    ));
    project(&[("pkg/__init__.py", ""), ("pkg/big.py", &module), ("tests/test_big.py", &tests)])
}

fn report(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_large_module_is_searched_at_once_for_the_whole_budget_and_the_run_ends_within_it() {
    // Two workers at half a second or more per candidate validate at most about 70 of the
    // several hundred candidates in 20 s, however fast the machine: the search must reach its
    // deadline rather than run out of candidates.
    let dir = big_project("[4, 5, 'x']", true);
    let (out, took) = fix(dir.path(), 20, &["--jobs", "2"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(took <= Duration::from_secs(20) + SLACK, "took {took:?} for --timeout 20s");
    let report = report(&out);
    assert_eq!(report["search_end"], "deadline", "the search stopped before the deadline");
    assert!(report["first_validation_seconds"].as_f64().is_some(), "no candidate was validated");
    let tried = report["tried"].as_array().unwrap().len();
    assert!(tried >= 3, "only {tried} candidates validated");
    // Generation is lazy: proposals are checked when drawn, so nearly all admitted candidates
    // are validated (a few may be in flight at the deadline).
    let generated: u64 = report["sources"].as_array().unwrap().iter().map(|s| s["generated"].as_u64().unwrap()).sum();
    assert!(generated as usize <= tried + 8, "{generated} admitted, {tried} validated");
}

#[test]
fn a_bug_in_a_large_module_is_fixed() {
    let dir = big_project("[4, 5]", false);
    let (out, _) = fix(dir.path(), 60, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let diff = report(&out)["patch"]["diff"].as_str().unwrap().to_string();
    assert!(diff.contains("+        end = len(items)\n"), "{diff}");
}

#[test]
fn a_suite_slower_than_the_budget_is_a_clear_error_within_the_budget() {
    let dir = project(&[
        ("calc.py", "def add(a, b):\n    return a - b\n"),
        ("test_calc.py", "import time\nfrom calc import add\n\ndef test_slow():\n    time.sleep(30)\n\ndef test_add():\n    assert add(1, 2) == 3\n"),
    ]);
    let (out, took) = fix(dir.path(), 6, &["--test-timeout", "60s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(stderr.contains("--timeout"), "{stderr}");
    assert!(took <= Duration::from_secs(6) + SLACK, "took {took:?} for --timeout 6s");
}
