//! Fault localization on the multi-module toy projects of `tests/fixtures/localize` (each names
//! its buggy function in `BUG` as `file::qualname`), with real baseline runs.
//!
//! `cargo test --test localize -- --ignored --nocapture` prints the top-1/top-5 function hit
//! rates over all of them (see docs/localization.md for the measured numbers).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use deepdebug::localize::{localize, Localization};
use deepdebug::project::{copy_tree, Project};
use deepdebug::pytest::{Pytest, RunSpec};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn fixture_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/localize")
}

/// The toy projects, by name.
fn fixtures() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_root())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().join("BUG").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The buggy function of fixture `name`: (file, qualname).
fn bug(name: &str) -> (String, String) {
    let text = std::fs::read_to_string(fixture_root().join(name).join("BUG")).unwrap();
    let (file, qualname) = text.trim().split_once("::").unwrap();
    (file.to_string(), qualname.to_string())
}

/// Localize fixture `name` from a baseline run in a scratch copy.
fn localize_fixture(name: &str) -> Localization {
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(&fixture_root().join(name), scratch.path()).unwrap();
    let project = Project::load(scratch.path()).unwrap();
    let pytest = Pytest::new(Path::new("python3")).unwrap();
    let baseline =
        pytest.run(&RunSpec::baseline(project.root(), Duration::from_secs(10), Duration::from_secs(120))).unwrap();
    assert!(baseline.failing().count() > 0, "{name}: the baseline passes:\n{}", baseline.output_tail);
    localize(&project, &baseline)
}

/// 0-based rank of the buggy function of `name` among the suspicious functions.
fn bug_rank(name: &str, localization: &Localization) -> Option<usize> {
    let (file, qualname) = bug(name);
    localization.functions.iter().position(|f| f.file == file && f.qualname == qualname)
}

/// 0-based rank of the first suspicious line inside the buggy function of `name`.
fn bug_line_rank(name: &str, localization: &Localization) -> Option<usize> {
    let (file, qualname) = bug(name);
    let function = localization.functions.iter().find(|f| f.file == file && f.qualname == qualname)?;
    let inside = |l: &&deepdebug::localize::SuspiciousLine| {
        l.file == file && (function.start_line..=function.end_line).contains(&l.line)
    };
    localization.lines.iter().position(|l| inside(&l))
}

#[test]
#[ignore = "a measurement: prints hit rates"]
fn hit_rates_on_the_toy_projects() {
    let names = fixtures();
    let mut hits = [0; 3];
    println!("| fixture | rank of the buggy function | of its first line | top functions |");
    println!("|---|---|---|---|");
    for name in &names {
        let localization = localize_fixture(name);
        let rank = bug_rank(name, &localization);
        for (hit, within) in hits.iter_mut().zip([1, 3, 5]) {
            *hit += usize::from(rank.is_some_and(|r| r < within));
        }
        let show = |rank: Option<usize>| rank.map_or("-".to_string(), |r| (r + 1).to_string());
        let top: Vec<&str> = localization.functions.iter().take(3).map(|f| f.qualname.as_str()).collect();
        println!("| {name} | {} | {} | {} |", show(rank), show(bug_line_rank(name, &localization)), top.join(", "));
    }
    println!("top-1 {}/{n}, top-3 {}/{n}, top-5 {}/{n}", hits[0], hits[1], hits[2], n = names.len());
}

#[test]
fn a_function_that_raised_ranks_first_and_one_that_computed_an_asserted_value_in_the_top_3() {
    for (name, within) in [
        ("name_error_behind_handlers", 1),
        ("attribute_error_in_a_model", 1),
        ("index_error_in_a_loop", 1),
        ("unbound_local_in_a_branch", 1),
        ("cart_discount_parametrized", 3),
        ("reorder_rule_three_calls_deep", 3),
    ] {
        let localization = localize_fixture(name);
        let rank = bug_rank(name, &localization);
        assert!(rank.is_some_and(|r| r < within), "{name}: rank {rank:?} in {:#?}", localization.functions);
    }
}
