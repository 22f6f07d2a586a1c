//! `deepdebug mine`: arguments and console output of fix-commit mining.

use anyhow::Context as _;
use clap::Args;
use deepdebug::exit_code::ExitCode;
use deepdebug::mine::{MineConfig, Shard};
use std::path::PathBuf;

#[derive(Args)]
pub struct MineArgs {
    /// Git repository (work tree or bare) to mine; repeatable.
    #[arg(long = "repo", value_name = "PATH", num_args = 1..)]
    repos: Vec<PathBuf>,
    /// File listing one repository path per line (blank lines and `#` comments ignored).
    #[arg(long, value_name = "FILE")]
    repos_from: Option<PathBuf>,
    /// Output directory for JSONL/Parquet shards, checkpoint and report.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// `I/N`: mine every N-th repository starting at I. `N` alone takes I from
    /// JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Worker threads (default: one per core).
    #[arg(long, short = 'j')]
    jobs: Option<usize>,
    /// Skip the Parquet copy of the JSONL shard.
    #[arg(long)]
    no_parquet: bool,
    /// Bytes of file skeleton kept per row.
    #[arg(long, default_value_t = 4096)]
    context_bytes: usize,
    /// Hide progress bars.
    #[arg(long, short)]
    quiet: bool,
}

fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::Usage
}

fn run_mine_inner(args: &MineArgs) -> ExitCode {
    let shard = match args.shard.as_deref().map(|s| Shard::parse(s, |v| std::env::var(v).ok())) {
        None => Shard::default(),
        Some(Ok(shard)) => shard,
        Some(Err(e)) => return usage(&format!("failed to {e}")),
    };
    let mut repos = args.repos.clone();
    if let Some(list) = &args.repos_from {
        match std::fs::read_to_string(list) {
            Ok(text) => repos.extend(
                text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(PathBuf::from),
            ),
            Err(e) => return usage(&format!("failed to read {}: {e}", list.display())),
        }
    }
    if repos.is_empty() {
        return usage("give at least one --repo PATH or --repos-from FILE");
    }
    if let Some(missing) = repos.iter().find(|r| !r.exists()) {
        return usage(&format!("repository path {} does not exist", missing.display()));
    }
    let config = MineConfig {
        repos,
        out_dir: args.out.clone(),
        shard,
        parquet: !args.no_parquet,
        progress: !args.quiet,
        threads: args.jobs,
        context_bytes: args.context_bytes,
        ..MineConfig::default()
    };
    match deepdebug::mine::mine(&config).context("mining failed") {
        Ok(report) => {
            let t = &report.totals;
            eprintln!(
                "shard {}: {} commits walked, {} fix commits, {} pairs written ({} trivial, {} duplicate dropped) in {:.1}s -> {}",
                shard, t.commits_walked, t.fix_commits, t.pairs_written, t.trivial_edits_dropped, t.duplicates_dropped,
                report.elapsed_seconds, report.jsonl
            );
            let failed = report.failed_repos();
            if failed > 0 {
                for r in report.repos.iter().filter(|r| r.outcome.is_failed()) {
                    if let deepdebug::mine::RepoOutcome::Failed { error } = &r.outcome {
                        eprintln!("error: {}: {error}", r.repo);
                    }
                }
                eprintln!("error: {failed} repositories failed; rerun to retry them (completed ones are skipped)");
                return ExitCode::Software;
            }
            ExitCode::Success
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::Software
        }
    }
}

pub fn run(args: &MineArgs) -> anyhow::Result<ExitCode> {
    Ok(run_mine_inner(args))
}
