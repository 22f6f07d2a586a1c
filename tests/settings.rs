//! `[tool.deepdebug]` and `deepdebug.toml`: precedence under flags, errors, `--show-settings`, `exclude`.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::cli;

const CALC: &str = "def scale(x):\n    return x * 2\n\n\ndef double_plus_one(x):\n    return scale(x) + 2\n";
const TESTS: &str = "from calc import scale, double_plus_one\n\n\ndef test_scale():\n    assert scale(3) == 6 and scale(5) == 10\n\n\ndef test_double_plus_one():\n    assert double_plus_one(3) == 7\n";

fn show(root: &std::path::Path, extra: &[&str]) -> String {
    let mut args = vec!["fix", "--show-settings", "--repo", root.to_str().unwrap()];
    args.extend_from_slice(extra);
    cli::stdout_ok(&args, "")
}

fn line<'a>(shown: &'a str, key: &str) -> &'a str {
    shown
        .lines()
        .find(|l| l.split('=').next().is_some_and(|k| k.trim() == key))
        .unwrap_or_else(|| panic!("no {key} in {shown}"))
}

#[test]
fn flags_override_deepdebug_toml_which_overrides_pyproject_which_overrides_defaults() {
    let dir = common::project(&[
        ("pyproject.toml", "[project]\nname = 'calc'\n\n[tool.deepdebug]\ntimeout = '2m'\ntests = ['tests/test_calc.py']\njobs = 3\nrank = 'none'\n"),
        ("deepdebug.toml", "jobs = 1\nmodel = 'models/patcher'\n"),
    ]);
    let shown = show(dir.path(), &["--timeout", "45s"]);
    assert!(
        line(&shown, "timeout").contains("\"45s\"") && line(&shown, "timeout").ends_with("# command line"),
        "{shown}"
    );
    assert!(
        line(&shown, "tests").contains("tests/test_calc.py") && line(&shown, "tests").contains("[tool.deepdebug]"),
        "{shown}"
    );
    assert!(line(&shown, "jobs").contains("= 1 ") && line(&shown, "jobs").ends_with("deepdebug.toml"), "{shown}");
    assert!(line(&shown, "rank").contains("\"none\"") && line(&shown, "rank").contains("pyproject.toml"), "{shown}");
    assert!(line(&shown, "lm").ends_with("# default"), "{shown}");
    // Paths in a settings file are relative to the project.
    assert!(line(&shown, "model").contains(&dir.path().join("models/patcher").display().to_string()), "{shown}");
    // `--isolated` ignores both files.
    let isolated = show(dir.path(), &["--isolated"]);
    assert!(
        line(&isolated, "jobs").ends_with("# default") && isolated.starts_with("# settings files: none"),
        "{isolated}"
    );
}

#[test]
fn unknown_keys_and_bad_values_are_usage_errors_that_name_the_key_and_file() {
    let dir = common::project(&[("pyproject.toml", "[tool.deepdebug]\ntimeout = '60s'\ntest_timeout = '5s'\n")]);
    let out = cli::run(&["fix", "--repo", dir.path().to_str().unwrap()], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown field `test_timeout`")
            && stderr.contains("pyproject.toml")
            && stderr.contains("line 3"),
        "{stderr}"
    );
    let dir = common::project(&[("deepdebug.toml", "sandbox = 'vm'\n")]);
    cli::fails_with(
        &["fix", "--repo", dir.path().to_str().unwrap()],
        "sandbox = \"vm\": expected one of docker, local, none",
    );
    let dir = common::project(&[("deepdebug.toml", "exclude = ['src/[x.py']\n")]);
    cli::fails_with(&["fix", "--repo", dir.path().to_str().unwrap()], "exclude pattern `src/[x.py`");
}

fn fix_exit(root: &std::path::Path, extra: &[&str]) -> (Option<i32>, String) {
    let mut args =
        vec!["fix", "--json", "--lm", "none", "--rank", "none", "--timeout", "30s", "--repo", root.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = cli::run(&args, "");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn an_excluded_function_is_never_edited_and_a_flag_replaces_the_files_exclude_list() {
    // The bug is `+ 2` in `double_plus_one`; `scale` is guarded by its own test.
    let files = [("calc.py", CALC), ("tests/test_calc.py", TESTS)];
    let dir = common::project(&files);
    let (code, out) = fix_exit(dir.path(), &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("double_plus_one"), "{out}");
    let settings = "[tool.deepdebug]\nexclude = ['calc.py::double_plus_one']\n";
    let dir = common::project(&[files[0], files[1], ("pyproject.toml", settings)]);
    let (code, out) = fix_exit(dir.path(), &[]);
    assert_eq!(code, Some(3), "{out}");
    let report: serde_json::Value = serde_json::from_str(out.lines().next().unwrap_or("{}")).unwrap_or_default();
    let suspects = report["suspicious_functions"].as_array().cloned().unwrap_or_default();
    assert!(suspects.iter().all(|f| f["function"] != "double_plus_one"), "{out}");
    // A flag replaces the file's list: excluding only `scale` leaves the bug fixable.
    let (code, out) = fix_exit(dir.path(), &["--exclude", "calc.py::scale"]);
    assert_eq!(code, Some(0), "{out}");
    // A file glob excludes the whole file.
    let (code, out) = fix_exit(dir.path(), &["--exclude", "calc.py"]);
    assert_eq!(code, Some(3), "{out}");
}
