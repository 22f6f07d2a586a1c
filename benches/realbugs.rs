//! Benchmark: `deepdebug fix` on real bugs of real PyPI projects (`datasets/realbugs/`).
//!
//! `cargo bench --profile dev --bench realbugs` builds the suite with
//! `datasets/realbugs/build.py` when `REALBUGS_DIR/manifest.json` is missing (downloads sdists
//! from PyPI, one venv per package, real fixes recovered from consecutive releases and bugs
//! planted by `deepdebug inject`), then runs `datasets/realbugs/run.py` with the binary cargo
//! built for this bench: `fix --timeout BENCH_TIMEOUT --json` per bug, each reported patch judged
//! on the whole suite with the hidden tests (genuine, plausible-only, regressions), the buggy
//! function's rank in the localization, time to fix and overrun of the budget, as a per-package
//! table. Env: `REALBUGS_DIR` (default `/work/realbugs` if it exists, else
//! `target/realbugs`), `BENCH_TIMEOUT` seconds per bug (default 60), `BENCH_FILTER`
//! (comma-separated substrings of bug ids), `BENCH_FIX_ARGS` (extra `fix` arguments, split on
//! whitespace), `REALBUGS_PYTHON` (default `python3`, for the scripts), `DEEPDEBUG` (another
//! binary to run instead of this build's).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scripts = manifest.join("datasets/realbugs");
    let python = std::env::var("REALBUGS_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let suite = std::env::var_os("REALBUGS_DIR").map(PathBuf::from).unwrap_or_else(|| {
        let shared = PathBuf::from("/work/realbugs");
        if shared.join("manifest.json").is_file() {
            shared
        } else {
            manifest.join("target/realbugs")
        }
    });
    let binary = std::env::var_os("DEEPDEBUG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_deepdebug")));
    println!("realbugs suite: {}; binary: {}", suite.display(), binary.display());

    if !suite.join("manifest.json").is_file() {
        println!("building the suite (PyPI downloads, venvs, mining; tens of minutes on 2 cores)");
        let status = Command::new(&python)
            .arg(scripts.join("build.py"))
            .arg("--out")
            .arg(&suite)
            .arg("--deepdebug")
            .arg(&binary)
            .status()
            .expect("python3 runs datasets/realbugs/build.py");
        assert!(status.success(), "build.py failed: {status}");
    }

    let timeout = std::env::var("BENCH_TIMEOUT").unwrap_or_else(|_| "60".to_string());
    let mut run = Command::new(&python);
    run.arg(scripts.join("run.py"))
        .arg("--suite")
        .arg(&suite)
        .arg("--deepdebug")
        .arg(&binary)
        .arg("--timeout")
        .arg(&timeout);
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
    assert!(status.success(), "run.py failed: {status}");
}
