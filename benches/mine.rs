//! Benchmark: `deepdebug mine` against a PyDriller pipeline on the same real repository.
//!
//! Run with `cargo bench --bench mine`. The repository is the release history of a PyPI
//! project rebuilt by `benches/make_history_repo.py` (cached under `target/bench-mine/`);
//! set `DEEPDEBUG_BENCH_PACKAGE` (default `requests`) to use another project and `PYTHON`
//! to pick the interpreter (PyDriller must be installed: `pip install pydriller`).
//!
//! Wall time and CPU time (user + system) are both reported: on a shared machine CPU time
//! is the steadier measure of work per commit; wall time shows the gain from threads.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use deepdebug::mine::{mine, MineConfig, MineReport};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

#[derive(Debug, Deserialize)]
struct Baseline {
    commits: u64,
    fix_commits: u64,
    pairs: u64,
    seconds: f64,
}

struct Measured {
    label: String,
    threads: String,
    seconds: f64,
    cpu_seconds: f64,
    commits: u64,
    fix_commits: u64,
    pairs: u64,
}

impl Measured {
    fn commits_per_s(&self) -> f64 {
        self.commits as f64 / self.seconds
    }
    fn pairs_per_s(&self) -> f64 {
        self.pairs as f64 / self.seconds
    }
    fn commits_per_cpu_s(&self) -> f64 {
        self.commits as f64 / self.cpu_seconds
    }
    fn pairs_per_cpu_s(&self) -> f64 {
        self.pairs as f64 / self.cpu_seconds
    }
}

/// CPU seconds (user + system) used so far by this process (`RUSAGE_SELF`) or by its
/// waited-for children (`RUSAGE_CHILDREN`).
fn cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string())
}

fn build_repo(root: &Path, package: &str) -> PathBuf {
    let out = root.join("target/bench-mine").join(format!("{package}-history"));
    let status = Command::new(python())
        .arg(root.join("benches/make_history_repo.py"))
        .args(["--package", package, "--out"])
        .arg(&out)
        .status()
        .expect("run benches/make_history_repo.py");
    assert!(status.success(), "building the benchmark repository failed");
    out
}

fn run_rust(repo: &Path, threads: Option<usize>) -> (f64, f64, MineReport) {
    let out = tempfile::TempDir::new().expect("temp dir");
    let config = MineConfig {
        repos: vec![repo.to_path_buf()],
        out_dir: out.path().to_path_buf(),
        threads,
        parquet: false,
        ..MineConfig::default()
    };
    let (start, cpu) = (Instant::now(), cpu_seconds(libc::RUSAGE_SELF));
    let report = mine(&config).expect("mining the benchmark repository");
    (start.elapsed().as_secs_f64(), cpu_seconds(libc::RUSAGE_SELF) - cpu, report)
}

/// The fastest (wall time) of `runs` runs.
fn best_rust(repo: &Path, threads: Option<usize>, runs: usize) -> Measured {
    let mut best: Option<(f64, f64, MineReport)> = None;
    for _ in 0..runs {
        let run = run_rust(repo, threads);
        if best.as_ref().is_none_or(|b| run.0 < b.0) {
            best = Some(run);
        }
    }
    let (seconds, cpu_seconds, report) = best.expect("at least one run");
    Measured {
        label: "deepdebug mine".into(),
        threads: threads.map_or_else(|| rayon::current_num_threads().to_string(), |n| n.to_string()),
        seconds,
        cpu_seconds,
        commits: report.totals.commits_walked,
        fix_commits: report.totals.fix_commits,
        pairs: report.totals.pairs_written,
    }
}

fn run_pydriller(root: &Path, repo: &Path) -> Option<Measured> {
    let cpu = cpu_seconds(libc::RUSAGE_CHILDREN);
    let output =
        Command::new(python()).arg(root.join("benches/pydriller_baseline.py")).arg("--repo").arg(repo).output().ok()?;
    // Includes interpreter start-up and the git processes GitPython spawns.
    let cpu_seconds = cpu_seconds(libc::RUSAGE_CHILDREN) - cpu;
    if !output.status.success() {
        eprintln!("pydriller baseline failed (pip install pydriller?):\n{}", String::from_utf8_lossy(&output.stderr));
        return None;
    }
    let b: Baseline = serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim()).ok()?;
    Some(Measured {
        label: "pydriller".into(),
        threads: "1".into(),
        seconds: b.seconds,
        cpu_seconds,
        commits: b.commits,
        fix_commits: b.fix_commits,
        pairs: b.pairs,
    })
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let package = std::env::var("DEEPDEBUG_BENCH_PACKAGE").unwrap_or_else(|_| "requests".to_string());
    let repo = build_repo(&root, &package);
    // Warm the page cache so neither tool pays for the first read of the pack files.
    let _ = run_rust(&repo, None);
    let mut rows = vec![best_rust(&repo, None, 3), best_rust(&repo, Some(1), 3)];
    rows.extend(run_pydriller(&root, &repo));

    println!("repository: {} ({package} release history)", repo.display());
    println!(
        "{:<15} {:>7} {:>7} {:>7} {:>7} {:>5} {:>5} {:>9} {:>8} {:>11} {:>9}",
        "tool",
        "threads",
        "wall s",
        "cpu s",
        "commits",
        "fixes",
        "pairs",
        "commits/s",
        "pairs/s",
        "commits/cpu",
        "pairs/cpu"
    );
    for m in &rows {
        println!(
            "{:<15} {:>7} {:>7.3} {:>7.3} {:>7} {:>5} {:>5} {:>9.1} {:>8.1} {:>11.1} {:>9.1}",
            m.label,
            m.threads,
            m.seconds,
            m.cpu_seconds,
            m.commits,
            m.fix_commits,
            m.pairs,
            m.commits_per_s(),
            m.pairs_per_s(),
            m.commits_per_cpu_s(),
            m.pairs_per_cpu_s()
        );
    }
    let Some(py) = rows.iter().find(|m| m.label == "pydriller") else { return };
    for rust in rows.iter().filter(|m| m.label != "pydriller") {
        println!(
            "speedup, {} thread(s): wall {:.1}x commits/s, {:.1}x pairs/s; per CPU second {:.1}x commits, {:.1}x pairs (goal >= 20x)",
            rust.threads,
            rust.commits_per_s() / py.commits_per_s(),
            rust.pairs_per_s() / py.pairs_per_s(),
            rust.commits_per_cpu_s() / py.commits_per_cpu_s(),
            rust.pairs_per_cpu_s() / py.pairs_per_cpu_s()
        );
    }
}
