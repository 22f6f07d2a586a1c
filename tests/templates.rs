//! `deepdebug templates`: fix templates learned from a JSONL of mined pairs.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::cli::{fails_with, stdout_ok};

fn row(repo: &str, commit: &str, path: &str, before: &str, after: &str) -> String {
    let wrap = |body: &str| format!("def area(shape, scale):\n    size = 0\n{body}    return size\n");
    format!(
        "{}\n",
        serde_json::json!({"repo": repo, "commit": commit, "path": path, "before": wrap(before), "after": wrap(after)})
    )
}

#[test]
fn templates_are_learned_ranked_by_commit_support_and_written_as_json() {
    let keys = ("    size = len(shape.keys())\n", "    size = len(shape.items())\n");
    let none = ("    if scale == None:\n        size = 1\n", "    if scale is None:\n        size = 1\n");
    let rows = [
        row("a/one", "c1", "lib/geo.py", keys.0, keys.1),
        row("a/one", "c2", "lib/geo.py", keys.0, keys.1),
        row("b/two", "c3", "src/shape.py", keys.0, keys.1),
        row("b/two", "c4", "src/shape.py", none.0, none.1),
        row("b/two", "c5", "src/shape.py", none.0, none.1),
        // Left out: a test file and an excluded repository.
        row("b/two", "c6", "tests/test_shape.py", none.0, none.1),
        row("c/gpl", "c7", "src/shape.py", none.0, none.1),
    ];
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("pairs.jsonl");
    std::fs::write(&data, rows.concat()).unwrap();
    let out = dir.path().join("templates.json");
    stdout_ok(
        &[
            "templates",
            "--data",
            data.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--min-support",
            "2",
            "--exclude-repo",
            "c/gpl",
        ],
        "",
    );
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(file["format_version"], 1);
    assert_eq!((file["pairs_read"].as_u64(), file["pairs_kept"].as_u64()), (Some(7), Some(5)));
    let templates = file["templates"].as_array().unwrap();
    let shown: Vec<String> = templates
        .iter()
        .map(|t| format!("{} -> {} ({}, {})", t["before"], t["after"], t["commits"], t["repos"]))
        .collect();
    assert_eq!(
        shown,
        [
            r#"["$N0",".","keys"] -> ["$N0",".","items"] (3, 2)"#,
            r#"["$E0",".","keys"] -> ["$E0",".","items"] (3, 2)"#,
            r#"["$N0","==","None"] -> ["$N0","is","None"] (2, 1)"#,
            r#"["$E0","==","None"] -> ["$E0","is","None"] (2, 1)"#,
        ],
        "{file:#}"
    );
    assert_eq!(templates[0]["id"], 1);
    assert_eq!(templates[0]["kind"], "expression");
    assert_eq!(templates[0]["example"], "a/one@c1");
}

#[test]
fn a_row_that_is_not_json_is_reported_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("pairs.jsonl");
    std::fs::write(&data, format!("{}not json\n", row("a/one", "c1", "m.py", "    size = 1\n", "    size = 2\n")))
        .unwrap();
    let out = dir.path().join("templates.json");
    fails_with(&["templates", "--data", data.to_str().unwrap(), "--out", out.to_str().unwrap()], "line 2");
    assert!(!out.exists());
}
