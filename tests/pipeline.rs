//! Integration tests of `deepdebug pipeline`: the whole pipeline on a tiny corpus and two tiny
//! packages (tiny T5 presets), its repository/package split, and resumption.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;
use std::process::Output;

mod common;
use common::cli::deepdebug;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A corpus of 36 synthetic fix pairs over three repositories (one held out) plus an excluded
/// one, two packages with tests (one held out), and the config.
fn setup(root: &Path) {
    let ops = [("+", "-"), ("*", "+"), ("<", "<="), (">", ">="), ("==", "!=")];
    let mut rows: Vec<String> = (0..36)
        .map(|i| {
            let repo = ["alpha/one", "beta/two", "gamma/held"][i % 3];
            let (good, bad) = ops[i % ops.len()];
            let after = format!("def f{i}(a, b):\n    if a {good} b:\n        return a\n    return b\n");
            let before = after.replace(&format!("a {good} b"), &format!("a {bad} b"));
            serde_json::json!({"repo": repo, "path": "m.py", "before": before, "after": after, "context": "import os\n"})
                .to_string()
        })
        .collect();
    rows.push(
        r#"{"repo": "gpl/excluded", "before": "def g():\n    return 1\n", "after": "def g():\n    return 2\n"}"#.into(),
    );
    write(root, "corpus.jsonl", &(rows.join("\n") + "\n"));
    write(root, "pkgs/shapes/shapes.py", "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n\n\ndef is_square(w, h):\n    return w == h and w > 0\n");
    write(
        root,
        "pkgs/shapes/test_shapes.py",
        "from shapes import area, perimeter, is_square\n\n\ndef test_area():\n    assert area(2, 3) == 6\n\n\ndef test_perimeter():\n    assert perimeter(2, 3) == 10\n\n\ndef test_square():\n    assert is_square(2, 2)\n    assert not is_square(2, 3)\n    assert not is_square(0, 0)\n",
    );
    write(root, "pkgs/textops/textops.py", "def shout(s):\n    return s.upper() + \"!\"\n\n\ndef count_vowels(s):\n    n = 0\n    for c in s.lower():\n        if c in \"aeiou\":\n            n += 1\n    return n\n");
    write(
        root,
        "pkgs/textops/test_textops.py",
        "from textops import shout, count_vowels\n\n\ndef test_shout():\n    assert shout(\"hi\") == \"HI!\"\n\n\ndef test_vowels():\n    assert count_vowels(\"Banana\") == 3\n    assert count_vowels(\"xyz\") == 0\n",
    );
    let model =
        "preset = \"tiny\"\nsteps = 12\nbatch_size = 4\nvocab_size = 400\nmax_source_len = 256\nmax_target_len = 96\n";
    write(
        root,
        "pipeline.toml",
        &format!(
            "seed = 1\n[pairs]\ncorpus = [\"corpus.jsonl\"]\nexclude_repos = [\"gpl/\"]\ntest_repos = [\"gamma/\"]\n\
             [packages]\npaths = [\"pkgs/shapes\", \"pkgs/textops\"]\ntest = [\"textops\"]\n\
             [inject]\nper_function = 3\nneural_samples = 2\ntimeout = \"2m\"\n\
             [bug_creator]\n{model}[patcher]\n{model}[evaluate]\nsamples = 3\nmax_bugs = 3\ntest_timeout = \"5s\"\n"
        ),
    );
}

fn pipeline(root: &Path, extra: &[&str]) -> (String, serde_json::Value) {
    let out: Output = deepdebug()
        .current_dir(root)
        .args(["pipeline", "--config", "pipeline.toml", "--out", "out"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let manifest = serde_json::from_str(&std::fs::read_to_string(root.join("out/manifest.json")).unwrap()).unwrap();
    (stderr, manifest)
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn the_whole_pipeline_runs_splits_by_repository_and_package_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    setup(root);
    let (stderr, manifest) = pipeline(root, &[]);
    let stages = manifest["stages"].as_object().unwrap();
    let names = ["pairs", "bug-creator", "packages", "inject", "rows", "patcher", "evaluate", "report"];
    assert_eq!(stages.keys().collect::<Vec<_>>().len(), names.len(), "{stderr}");
    for name in names {
        assert!(stages[name]["seconds"].as_f64().unwrap() >= 0.0, "{name}");
    }

    // Splits: corpus pairs by repository, bugs by package; the excluded repository nowhere.
    let pairs = &stages["pairs"]["figures"];
    assert_eq!(pairs["train_rows"], 24);
    assert_eq!(pairs["test_rows"], 12);
    assert_eq!(pairs["left_out_excluded_repo"], 1);
    let train_repos: Vec<String> =
        jsonl(&root.join("out/pairs/train.jsonl")).iter().map(|r| r["repo"].as_str().unwrap().into()).collect();
    assert!(train_repos.iter().all(|r| r == "alpha/one" || r == "beta/two"), "{train_repos:?}");
    assert!(jsonl(&root.join("out/pairs/test.jsonl")).iter().all(|r| r["repo"] == "gamma/held"));
    let test_bugs = jsonl(&root.join("out/rows/test-bugs.jsonl"));
    assert!(!test_bugs.is_empty());
    assert!(test_bugs.iter().all(|b| b["repo"].as_str().unwrap().ends_with("textops")));
    let rows = &stages["rows"]["figures"];
    assert_eq!(rows["train_packages"], serde_json::json!(["out/packages/shapes"]));
    let train_rows = jsonl(&root.join("out/rows/train.jsonl"));
    assert!(train_rows.iter().all(|r| !r.to_string().contains("count_vowels")), "a held-out function in training rows");
    assert!(train_rows.iter().any(|r| r["source"].as_str().is_some_and(|s| s.contains("# trace"))));
    assert!(stages["inject"]["figures"]["bugs"].as_u64().unwrap() > 0);

    // Evaluation: all eight loss cells, top-k with and without traces, and the report.
    let evaluation: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("out/evaluation.json")).unwrap()).unwrap();
    let losses = evaluation["losses"].as_array().unwrap();
    assert_eq!(losses.len(), 8);
    assert!(losses.iter().all(|l| l["loss"].as_f64().unwrap().is_finite() && l["rows"] == 12));
    let top_k = evaluation["top_k"].as_array().unwrap();
    assert_eq!(top_k.len(), 2);
    assert!(top_k.iter().all(|t| t["bugs"].as_u64().unwrap() + evaluation["unusable_bugs"].as_u64().unwrap() == 3));
    let report = std::fs::read_to_string(root.join("out/report.md")).unwrap();
    assert!(report.contains("| patch | forward |") && report.contains("| with |"), "{report}");
    assert!(root.join("out/report.json").is_file());
    // The packages the pipeline used are copies: the originals are untouched.
    assert!(std::fs::read_to_string(root.join("pkgs/textops/textops.py")).unwrap().contains("s.upper()"));

    // A rerun skips every finished stage.
    let (stderr, _) = pipeline(root, &[]);
    assert_eq!(stderr.matches("finished before: skipped").count(), 8, "{stderr}");

    // An interrupted run (the last two stages unfinished) resumes with them alone.
    let mut m = manifest.clone();
    let stages = m["stages"].as_object_mut().unwrap();
    stages.remove("evaluate");
    stages.remove("report");
    std::fs::write(root.join("out/manifest.json"), m.to_string()).unwrap();
    let (stderr, manifest) = pipeline(root, &[]);
    assert_eq!(stderr.matches("finished before: skipped").count(), 6, "{stderr}");
    assert!(stderr.contains("[evaluate] started") && stderr.contains("[report] started"), "{stderr}");
    assert_eq!(manifest["stages"].as_object().unwrap().len(), 8);

    // --from reruns a stage and everything after it.
    let (stderr, _) = pipeline(root, &["--from", "patcher"]);
    assert!(stderr.contains("[rows] finished before: skipped"), "{stderr}");
    assert!(stderr.contains("[patcher] started") && stderr.contains("[report] started"), "{stderr}");
}

#[test]
fn a_bad_config_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "pipeline.toml", "[pairs]\ncorpus = [\"c.jsonl\"]\n[patcher]\narch = \"gpt\"\n");
    let out = deepdebug()
        .current_dir(dir.path())
        .args(["pipeline", "--config", "pipeline.toml", "--out", "out"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("patcher.arch") && stderr.contains("gpt"), "{stderr}");
}
