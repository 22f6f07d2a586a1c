//! `fix` on legacy suites as they are found (issue 39, item 3): the fixture projects of
//! `tests/fixtures/legacy`, each fixed where `python -m pytest` runs the failing test, with
//! what pytest cannot collect or run left out of the regression guard as warnings.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::snapshot;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A copy of a fixture (`<tmp>/<name>`): the user's repository of the test.
fn copy_fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/legacy").join(name);
    let dir = tempfile::Builder::new().prefix("deepdebug-legacy-").tempdir().unwrap();
    let root = dir.path().join(name);
    for entry in walkdir::WalkDir::new(&source) {
        let entry = entry.unwrap();
        let target = root.join(entry.path().strip_prefix(&source).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
    (dir, root)
}

/// What one `fix --json` run gave.
struct Run {
    code: Option<i32>,
    report: Value,
    stderr: String,
    elapsed: Duration,
}

/// `fix --json` on a copy of fixture `name` with `tests` as `--tests` selectors; the copy must
/// be left exactly as it was.
fn fix(name: &str, tests: &[&str], budget_s: u64) -> Run {
    let (_dir, root) = copy_fixture(name);
    let before = snapshot(&root);
    let mut command = Command::new(common::cli::BIN);
    command.args(["fix", "--json", "--lm", "none", "--rank", "none", "--model", "none", "--timeout"]);
    command.arg(format!("{budget_s}s")).arg("--repo").arg(&root);
    for test in tests {
        command.args(["--tests", test]);
    }
    let start = Instant::now();
    let out = command.stdin(Stdio::null()).output().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(snapshot(&root), before, "`fix` without --apply changed the repository");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    Run { code: out.status.code(), report, stderr, elapsed }
}

impl Run {
    /// The run reported a patch whose diff removes `line`.
    fn assert_fixed(&self, line: &str) {
        assert_eq!(self.code, Some(0), "stderr:\n{}\nreport: {:#}", self.stderr, self.report);
        let diff = self.report["patch"]["diff"].as_str().unwrap();
        assert!(diff.contains(&format!("-{line}")), "the diff lacks `{line}`:\n{diff}");
    }

    /// Baseline-passing tests that checked the reported patch.
    fn checked(&self) -> u64 {
        self.report["guard"]["checked"].as_u64().unwrap_or_else(|| panic!("{:#}", self.report["guard"]))
    }

    fn uncollectable(&self) -> Vec<String> {
        let list = self.report["guard"]["left_out"]["uncollectable"].as_array().unwrap();
        list.iter().map(|u| u["nodeid"].as_str().unwrap().to_string()).collect()
    }

    fn warned(&self, text: &str) -> bool {
        self.report["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains(text))
    }
}

const DISCOUNT_BUG: &str = "    if total > THRESHOLD:";

#[test]
fn test_packages_pytest_cannot_collect_are_warnings_not_a_refusal_in_broken_elsewhere() {
    for tests in [&[][..], &["tests/test_pricing.py::test_discount_at_threshold"][..]] {
        let run = fix("broken_elsewhere", tests, 30);
        run.assert_fixed(DISCOUNT_BUG);
        let mut broken = run.uncollectable();
        broken.sort();
        assert_eq!(broken, ["tests/plugins", "tests/shells"], "{tests:?}");
        assert!(run.warned("tests/shells (Failed: Marks cannot be applied to fixtures."), "{:#}", run.report);
        // test_no_discount_below and test_shipping guard the patch.
        assert_eq!(run.checked(), 2, "{tests:?}: {:#}", run.report["guard"]);
        assert_eq!(run.report["guard"]["thin"], false);
    }
}

#[test]
fn test_files_named_outside_pytests_pattern_are_run_by_path_and_guard_in_tests_prefix() {
    let run = fix("tests_prefix", &["tests_pricing.py::test_discount_at_threshold"], 30);
    run.assert_fixed(DISCOUNT_BUG);
    assert_eq!(run.checked(), 3, "the file's three other tests: {:#}", run.report["guard"]);
    assert!(run.stderr.contains("guarded by 3 other tests"), "{}", run.stderr);
}

#[test]
fn nose_module_fixtures_run_and_ignored_setup_methods_leave_their_test_out_in_suffix_tests() {
    let run = fix("suffix_tests", &["inventory_tests.py::test_remove_everything"], 30);
    run.assert_fixed("        if count >= have:");
    // test_remove_too_many and test_module_store (setup_module ran) guard; TestNoseStyle's
    // test failed before any change (pytest 9 does not call `setup`).
    assert_eq!(run.checked(), 2, "{:#}", run.report["guard"]);
    assert_eq!(run.report["guard"]["left_out"]["failing"], 1);
    assert!(run.warned("already failed"), "{:#}", run.report["warnings"]);
}

#[test]
fn unittest_test_cases_inside_the_package_are_fixed_in_unittest_suite() {
    let run = fix("unittest_suite", &[], 30);
    run.assert_fixed("        return max(debits) if debits else 0");
    assert_eq!(run.checked(), 2, "{:#}", run.report["guard"]);
}

#[test]
fn the_projects_own_exit_first_and_plugin_flags_do_not_cut_the_baseline_in_ini_flags() {
    let run = fix("ini_flags", &[], 30);
    run.assert_fixed(DISCOUNT_BUG);
    // With `-x` honoured the baseline would stop at the failing test and nothing would guard.
    assert_eq!(run.report["guard"]["tests"], 3, "{:#}", run.report["guard"]);
    assert_eq!(run.checked(), 3);
}

#[test]
fn setup_cfg_discovery_adds_the_other_check_files_to_the_guard_in_setup_cfg_legacy() {
    let run = fix("setup_cfg_legacy", &["checks/pricing_check.py::test_discount_at_threshold"], 30);
    run.assert_fixed(DISCOUNT_BUG);
    // test_no_discount_below (the selected file) and test_shipping (found by python_files).
    assert_eq!(run.checked(), 2, "{:#}", run.report["guard"]);
}

#[test]
fn doctest_modules_and_missing_optional_dependencies_are_left_out_in_doctest_optional() {
    let run = fix("doctest_optional", &[], 30);
    run.assert_fixed("        if len(word) >= len(best):");
    let broken = run.uncollectable();
    assert!(broken.iter().any(|b| b == "tests/test_speedups.py"), "{broken:?}");
    assert!(broken.iter().any(|b| b == "textkit/fancy.py"), "{broken:?}");
    // test_count and the two doctests of words.py.
    assert_eq!(run.checked(), 3, "{:#}", run.report["guard"]);
}

#[test]
fn a_rest_of_the_suite_that_waits_on_the_network_shrinks_the_guard_not_the_search_in_slow_rest() {
    let budget = 30;
    let run = fix("slow_rest", &["tests/test_pricing.py::test_discount_at_threshold"], budget);
    run.assert_fixed(DISCOUNT_BUG);
    // A generous guard against a stuck run: `--timeout` is a promise (benches measure overruns).
    assert!(run.elapsed < Duration::from_secs(budget + 10), "{:?}", run.elapsed);
    let left = &run.report["guard"]["left_out"];
    assert!(left["timed_out"].as_u64().unwrap() > 0 || left["cut"] == true, "{left:#}");
    assert!(run.checked() >= 1, "test_no_discount_below guards: {:#}", run.report["guard"]);
}

#[test]
fn without_selectors_a_suite_longer_than_its_share_is_cut_once_failing_tests_are_found_in_slow_rest() {
    let run = fix("slow_rest", &[], 30);
    run.assert_fixed(DISCOUNT_BUG);
    assert!(run.elapsed < Duration::from_secs(40), "{:?}", run.elapsed);
    // The tests that hung on the network ran no project code: not repair targets.
    assert!(run.warned("hung without running project code"), "{:#}", run.report["warnings"]);
}

#[test]
fn a_selected_test_that_does_not_exist_is_a_clear_error_in_tests_prefix() {
    let run = fix("tests_prefix", &["tests_pricing.py::test_no_such_test"], 30);
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert!(run.stderr.contains("none of the tests given with --tests ran"), "{}", run.stderr);
}
