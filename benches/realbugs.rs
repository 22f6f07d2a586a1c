//! Benchmark: `deepdebug fix` on real bugs of real PyPI projects (`datasets/realbugs/`) and on
//! the legacy suite of projects as they are found (`datasets/legacy/`).
//!
//! `cargo bench --profile dev --bench realbugs` builds the suite with
//! `datasets/realbugs/build.py` when `REALBUGS_DIR/manifest.json` is missing (downloads sdists
//! from PyPI, one venv per package, real fixes recovered from consecutive releases and bugs
//! planted by `deepdebug inject`), then runs `datasets/realbugs/run.py` with the binary cargo
//! built for this bench: `fix --timeout BENCH_TIMEOUT --json` per bug, each reported patch judged
//! on the whole suite with the hidden tests (genuine, plausible-only, regressions), the buggy
//! function's rank in the localization, time to fix and overrun of the budget, as a per-package
//! table, and a validation-speed table per package (candidates/s of the median run and the
//! slowest, the share of candidates on each engine path, the failing tests' own time, the top
//! reasons for leaving the fast path; from `--json`'s `validation`). Env: `REALBUGS_DIR` (default `/work/realbugs` if it exists, else
//! `target/realbugs`), `BENCH_TIMEOUT` seconds per bug (default 60), `BENCH_FILTER`
//! (comma-separated substrings of bug ids), `BENCH_FIX_ARGS` (extra `fix` arguments, split on
//! whitespace), `REALBUGS_PYTHON` (default `python3`, for the scripts), `DEEPDEBUG` (another
//! binary to run instead of this build's).
//!
//! The legacy suite (2014–2021 releases, test suites kept as found: tests that already fail,
//! nose idioms, old configs) runs with `run.py --pass-tests --title legacy` (`fix --tests` for
//! each visible failing test) and prints a `legacy` table: `BENCH_SUITE=legacy` runs it alone
//! (built with `datasets/legacy/build.py` into `LEGACY_DIR`, default `/work/legacybugs`, when
//! its manifest is missing); with `BENCH_SUITE` unset it runs as a second table after the
//! realbugs one when `LEGACY_DIR` is set or `/work/legacybugs/manifest.json` exists;
//! `BENCH_SUITE=realbugs` runs the realbugs suite only.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::Command;

/// One suite: its scripts directory, where it is built, and how run.py runs it.
struct Suite {
    name: &'static str,
    scripts: PathBuf,
    dir: PathBuf,
    /// The builder takes `--deepdebug` (for `deepdebug inject`).
    inject: bool,
    pass_tests: bool,
}

fn main() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("REALBUGS_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let binary = std::env::var_os("DEEPDEBUG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_deepdebug")));
    let realbugs = || Suite {
        name: "realbugs",
        scripts: manifest.join("datasets/realbugs"),
        dir: std::env::var_os("REALBUGS_DIR").map(PathBuf::from).unwrap_or_else(|| {
            let shared = PathBuf::from("/work/realbugs");
            if shared.join("manifest.json").is_file() {
                shared
            } else {
                manifest.join("target/realbugs")
            }
        }),
        inject: true,
        pass_tests: false,
    };
    let legacy_dir = std::env::var_os("LEGACY_DIR").map(PathBuf::from);
    let legacy = |dir: PathBuf| Suite {
        name: "legacy",
        scripts: manifest.join("datasets/legacy"),
        dir,
        inject: false,
        pass_tests: true,
    };
    let default_legacy = || legacy_dir.clone().unwrap_or_else(|| PathBuf::from("/work/legacybugs"));
    let suites = match std::env::var("BENCH_SUITE").as_deref() {
        Ok("legacy") => vec![legacy(default_legacy())],
        Ok("realbugs") => vec![realbugs()],
        Ok(other) if !other.is_empty() => panic!("BENCH_SUITE={other}: expected realbugs or legacy"),
        _ => {
            let mut suites = vec![realbugs()];
            if legacy_dir.is_some() || Path::new("/work/legacybugs/manifest.json").is_file() {
                suites.push(legacy(default_legacy()));
            }
            suites
        }
    };
    for suite in &suites {
        run_suite(manifest, &python, &binary, suite);
    }
}

fn run_suite(manifest: &Path, python: &str, binary: &Path, suite: &Suite) {
    println!("{} suite: {}; binary: {}", suite.name, suite.dir.display(), binary.display());
    if !suite.dir.join("manifest.json").is_file() {
        println!("building the suite (PyPI downloads, venvs, mining; tens of minutes on 2 cores)");
        let mut build = Command::new(python);
        build.arg(suite.scripts.join("build.py")).arg("--out").arg(&suite.dir);
        if suite.inject {
            build.arg("--deepdebug").arg(binary);
        }
        let status = build.status().expect("python3 runs build.py");
        assert!(status.success(), "{}/build.py failed: {status}", suite.scripts.display());
    }

    let timeout = std::env::var("BENCH_TIMEOUT").unwrap_or_else(|_| "60".to_string());
    let mut run = Command::new(python);
    run.arg(manifest.join("datasets/realbugs/run.py"))
        .arg("--suite")
        .arg(&suite.dir)
        .arg("--deepdebug")
        .arg(binary)
        .arg("--timeout")
        .arg(&timeout)
        .arg("--title")
        .arg(suite.name);
    if suite.pass_tests {
        run.arg("--pass-tests");
    }
    if let Ok(filter) = std::env::var("BENCH_FILTER") {
        run.arg("--filter").arg(filter);
    }
    if let Ok(extra) = std::env::var("BENCH_FIX_ARGS") {
        let extra: Vec<&str> = extra.split_whitespace().collect();
        if !extra.is_empty() {
            run.arg("--").args(extra);
        }
    }
    let status = run.status().expect("python3 runs datasets/realbugs/run.py");
    assert!(status.success(), "run.py failed on the {} suite: {status}", suite.name);
}
