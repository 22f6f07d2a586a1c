//! `deepdebug priors`: learn operator priors from mined fix pairs and write priors.json.

use anyhow::Context;
use deepdebug::exit_code::ExitCode;
use deepdebug::repair::learn::pairs::RowFilter;
use deepdebug::repair::learn::priors::Priors;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct PriorsArgs {
    /// JSONL of mined fix pairs (rows with `before` and `after`), optionally gzip-compressed.
    #[arg(long)]
    data: PathBuf,
    /// Where to write priors.json (stdout when absent).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Leave out rows whose `repo` contains PATTERN; repeatable. Giving it replaces the
    /// default, the GPL/LGPL projects (learned priors ship with deepdebug).
    #[arg(long = "exclude-repo", value_name = "PATTERN", default_values_t = super::COPYLEFT_REPOS.map(String::from))]
    exclude_repo: Vec<String>,
}

pub fn run(args: &PriorsArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let filter = RowFilter { exclude_repos: args.exclude_repo.clone(), exclude_test_paths: false };
    let (_, file) = Priors::learn_from_rows(&args.data, &filter)?;
    let json = serde_json::to_string_pretty(&file)?;
    match &args.out {
        Some(path) => std::fs::write(path, json).with_context(|| format!("failed to write {}", path.display()))?,
        None => println!("{json}"),
    }
    eprintln!(
        "{} of {} fix pairs explained by one operator edit ({:.1}s)",
        file.explained,
        file.pairs,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::Success)
}
