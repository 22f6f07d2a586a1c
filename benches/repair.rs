//! Benchmark: genuine and plausible-only fixes per source configuration on the held-out suite, and fixes over the QuixBugs-layout fixtures and `datasets/bugs/`.
//!
//! `cargo bench --bench repair` runs `fix` on every bug of `datasets/suite/` (visible tests
//! only) once per configuration and judges each plausible patch with the bug's hidden tests
//! (`check.py --judge`). Env: `BENCH_CONFIGS` (comma-separated, default
//! `operators,templates,lm,all`: operators alone; + learned templates; + SmolLM2 cloze lines;
//! every source; `lm-gemma`: + Gemma 3 270M cloze lines instead), `BENCH_SUITE_FILTER` (substring of bug names), `BENCH_TIMEOUT` seconds per
//! bug (default 60), `BENCH_JOBS` validation workers (default: number of CPUs),
//! `BENCH_RANK=none` (the SmolLM2 ranking is on, as in `fix --rank auto`, when the model is
//! installed), `BENCH_LEGACY=1` also runs the QuixBugs-layout fixtures and `datasets/bugs/`.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

#[path = "repair/suite.rs"]
mod suite;

use deepdebug::eval::quixbugs::{discover, evaluate_program, EvalOptions, ProgramStatus};
use deepdebug::repair::defaults::SourceChoice;
use deepdebug::repair::fix::{fix, FixOptions, FixStatus, RankOptions};
use deepdebug::repair::learn::priors::Priors;
use deepdebug::sandbox::{DockerConfig, SandboxKind};
use std::path::Path;
use std::time::Duration;

struct Row {
    name: String,
    fixed: bool,
    class: String,
    seconds: f64,
    tried: usize,
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) { (values[mid - 1] + values[mid]) / 2.0 } else { values[mid] })
}

fn main() {
    let env_num = |key: &str| std::env::var(key).ok().and_then(|v| v.parse::<u64>().ok());
    let timeout = Duration::from_secs(env_num("BENCH_TIMEOUT").unwrap_or(60));
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let workers = env_num("BENCH_JOBS").map_or(cpus, |j| usize::try_from(j).unwrap_or(1).max(1));
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rank = if std::env::var("BENCH_RANK").is_ok_and(|v| v == "none") {
        None
    } else {
        deepdebug::model::smollm::find_gguf().map(RankOptions::optional)
    };
    println!(
        "ranking of plausible patches: {}",
        if rank.is_some() { "SmolLM2 (as `fix --rank auto`)" } else { "operator score" }
    );
    suite::run(manifest, timeout, workers, rank.as_ref());
    if std::env::var("BENCH_LEGACY").is_ok_and(|v| v == "1") {
        legacy(manifest, timeout, workers, rank.as_ref());
    }
}

/// The QuixBugs-layout fixtures (classified against the correct programs) and `datasets/bugs/`.
fn legacy(manifest: &Path, timeout: Duration, workers: usize, rank: Option<&RankOptions>) {
    // `fix`'s defaults (every installed source), with the bench's ranking.
    let mut sources = SourceChoice::default().resolve().expect("fix's default sources resolve");
    sources.rank = rank.cloned();
    let mut rows = Vec::new();

    // QuixBugs-layout fixtures: fix + classification against the correct programs.
    let quixbugs = manifest.join("quixbugs/fixtures");
    let options = EvalOptions {
        root: quixbugs.clone(),
        timeout,
        test_timeout: Duration::from_secs(2),
        python: None,
        jobs: 1,
        workers,
        generated_inputs: 60,
        per_call_timeout: Duration::from_secs(1),
        seed: 1,
        priors: Priors::default(),
        sources: sources.clone(),
        sandbox: SandboxKind::Local,
        docker: DockerConfig::default(),
        reports: None,
    };
    for name in discover(&quixbugs).expect("quixbugs/fixtures has the QuixBugs layout") {
        let r = evaluate_program(&options, &name);
        rows.push(Row {
            name: format!("quixbugs/{name}"),
            fixed: matches!(r.status, ProgramStatus::Genuine | ProgramStatus::PlausibleOnly),
            class: r.status.label().to_string(),
            seconds: r.fix_seconds,
            tried: r.candidates_tried,
        });
    }

    // Project-style bugs: plain `fix` on the whole suite.
    let bugs = manifest.join("datasets/bugs");
    let mut projects: Vec<_> = std::fs::read_dir(&bugs)
        .expect("datasets/bugs exists")
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.path())
        .collect();
    projects.sort();
    for repo in projects {
        let name = format!("bugs/{}", repo.file_name().unwrap_or_default().to_string_lossy());
        let fix_options = FixOptions { jobs: workers, ..FixOptions::new(repo, timeout, sources.clone()) };
        let row = match fix(&fix_options, &|_| {}) {
            Ok(outcome) => Row {
                name,
                fixed: matches!(outcome.status, FixStatus::Fixed { .. }),
                class: if matches!(outcome.status, FixStatus::Fixed { .. }) { "plausible" } else { "not fixed" }
                    .to_string(),
                seconds: outcome.elapsed.as_secs_f64(),
                tried: outcome.validated.len(),
            },
            Err(err) => Row { name, fixed: false, class: format!("error: {err}"), seconds: 0.0, tried: 0 },
        };
        rows.push(row);
    }

    println!("repair benchmark: {} bugs, {}s budget each, {workers} workers", rows.len(), timeout.as_secs());
    println!("{:<24} {:>6} {:>9} {:>11}  class", "bug", "fixed", "time (s)", "candidates");
    for r in &rows {
        println!(
            "{:<24} {:>6} {:>9.1} {:>11}  {}",
            r.name,
            if r.fixed { "yes" } else { "no" },
            r.seconds,
            r.tried,
            r.class
        );
    }
    let fixed: Vec<f64> = rows.iter().filter(|r| r.fixed).map(|r| r.seconds).collect();
    let found = fixed.len();
    let median = median(fixed).map_or_else(|| "n/a".to_string(), |m| format!("{m:.1}s"));
    println!("fixes found: {found}/{}; median time-to-fix: {median}", rows.len());
}
