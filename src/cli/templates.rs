//! `deepdebug templates`: learn fix templates from mined fix pairs and write templates.json.

use anyhow::Context;
use deepdebug::exit_code::ExitCode;
use deepdebug::repair::learn::pairs::RowFilter;
use deepdebug::repair::learn::templates::{learn_from_jsonl, LearnConfig};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct TemplatesArgs {
    /// JSONL of mined fix pairs (`deepdebug mine` rows), optionally gzip-compressed.
    #[arg(long)]
    data: PathBuf,
    /// Where to write templates.json.
    #[arg(long)]
    out: PathBuf,
    /// Keep templates seen in at least this many distinct commits.
    #[arg(long, default_value_t = 3)]
    min_support: u32,
    /// Leave out rows whose `repo` contains PATTERN; repeatable. Giving it replaces the
    /// default, the GPL/LGPL projects (the templates ship with deepdebug).
    #[arg(long = "exclude-repo", value_name = "PATTERN", default_values_t = super::COPYLEFT_REPOS.map(String::from))]
    exclude_repo: Vec<String>,
    /// Also learn from test files (paths containing `test`).
    #[arg(long)]
    include_tests: bool,
    /// Leave out commits with more rows than this (broad refactors rather than bug fixes).
    #[arg(long, default_value_t = 30)]
    max_commit_rows: usize,
    /// Keep at most this many templates, the best supported.
    #[arg(long, default_value_t = 2000)]
    max_templates: usize,
}

pub fn run(args: &TemplatesArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let config = LearnConfig {
        filter: RowFilter { exclude_repos: args.exclude_repo.clone(), exclude_test_paths: !args.include_tests },
        min_support: args.min_support,
        max_commit_rows: args.max_commit_rows,
        max_templates: args.max_templates,
    };
    let file = learn_from_jsonl(&args.data, &config)?;
    std::fs::write(&args.out, file.to_json() + "\n")
        .with_context(|| format!("failed to write {}", args.out.display()))?;
    eprintln!(
        "{} templates (of {} found) from {} of {} kept pairs ({} read) in {:.1}s",
        file.templates.len(),
        file.templates_found,
        file.pairs_used,
        file.pairs_kept,
        file.pairs_read,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::Success)
}
